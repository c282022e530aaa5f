"""Whether a request would be taken by Amazon Bedrock Converse, the Anthropic Messages API or OpenAI Chat
Completions, by each client library's own checks and then by the rules each API states for a conversation.

- Bedrock: botocore validates the ``converse`` parameters against the service model (a client with fake
  credentials behind a ``Stubber``: nothing is sent); the model's ``enum``, ``pattern`` and ``max`` that
  botocore itself leaves to the service are checked over the same shapes.
- Anthropic and OpenAI: the packages' typed parameters (``MessageParam``, ``TextBlockParam``,
  ``ChatCompletionMessageParam``) validated by pydantic, every lazy list read, and the validated value
  compared with the one given (pydantic drops a key a TypedDict does not have: this catches it).
- The conversation rules the types cannot say: user and assistant alternate and the user starts
  (Bedrock, Anthropic); each tool use is answered in the very next message, and each result answers a
  call of the message right before it (all three); no blank text.

Each function returns a list of problems (empty: it would be taken).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

import botocore.session
from botocore.exceptions import ParamValidationError
from botocore.model import Shape
from botocore.stub import Stubber
from pydantic import TypeAdapter, ValidationError

CONVERSE_ANSWER = {
    "output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}},
    "stopReason": "end_turn",
    "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
    "metrics": {"latencyMs": 1},
}
ANTHROPIC_ID = re.compile(r"[a-zA-Z0-9_-]+")
ANTHROPIC_NAME = re.compile(r"[a-zA-Z0-9_-]{1,128}")
OPENAI_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


# --- Bedrock Converse ------------------------------------------------------------------------------


@cache
def _bedrock() -> Any:
    session = botocore.session.get_session()
    return session.create_client("bedrock-runtime", region_name="us-east-1", aws_access_key_id="testing",
                                 aws_secret_access_key="testing")


def _shape_problems(value: Any, shape: Shape, where: str) -> list[str]:
    """What botocore leaves to the service: enums, patterns, maximum lengths."""
    problems: list[str] = []
    kind = shape.type_name
    if kind == "structure" and isinstance(value, Mapping):
        for name, member in shape.members.items():  # type: ignore[attr-defined]
            if name in value:
                problems += _shape_problems(value[name], member, f"{where}.{name}")
    elif kind == "list" and isinstance(value, list):
        for number, item in enumerate(value):
            problems += _shape_problems(item, shape.member, f"{where}[{number}]")  # type: ignore[attr-defined]
    elif kind == "string" and isinstance(value, str):
        if shape.enum and value not in shape.enum:
            problems.append(f"{where}: {value!r} is not one of {shape.enum}")
        pattern = shape.metadata.get("pattern")
        if pattern and not re.fullmatch(pattern, value):
            problems.append(f"{where}: {value!r} does not match {pattern}")
        if "max" in shape.metadata and len(value) > shape.metadata["max"]:
            problems.append(f"{where}: longer than {shape.metadata['max']}")
    return problems


def bedrock_problems(system: Sequence[Any], messages: Sequence[Any]) -> list[str]:
    client = _bedrock()
    params = {"modelId": "anthropic.claude-3-haiku-20240307-v1:0", "system": list(system), "messages": list(messages)}
    problems: list[str] = []
    with Stubber(client) as stubber:
        stubber.add_response("converse", CONVERSE_ANSWER, None)
        try:
            client.converse(**params)
        except ParamValidationError as error:
            problems.append(f"botocore: {error}")
    shape = client.meta.service_model.operation_model("Converse").input_shape
    problems += _shape_problems(params, shape, "converse")
    problems += _alternation(messages)
    for number, message in enumerate(messages):
        for block in message.get("content", []):
            if "text" in block and not str(block["text"]).strip():
                problems.append(f"messages[{number}]: a blank text block")
    uses = [[b["toolUse"]["toolUseId"] for b in m.get("content", []) if "toolUse" in b] for m in messages]
    results = [[b["toolResult"]["toolUseId"] for b in m.get("content", []) if "toolResult" in b] for m in messages]
    problems += _answered(uses, results)
    return problems


# --- Anthropic Messages -------------------------------------------------------------------------------


def _read(value: Any) -> Any:
    """A validated value with pydantic's lazy iterables read (which validates their items)."""
    if isinstance(value, Mapping):
        return {key: _read(item) for key, item in value.items()}
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, Iterable):
        return [_read(item) for item in value]
    return value


def _typed_problems(adapter: TypeAdapter[Any], value: Any, what: str) -> list[str]:
    try:
        taken = _read(adapter.validate_python(value))
    except ValidationError as error:
        return [f"{what}: {error}"]
    if taken != value:
        return [f"{what}: keys the type does not have, or values changed: {json.dumps(value)[:400]}"]
    return []


@cache
def _anthropic() -> tuple[TypeAdapter[Any], TypeAdapter[Any]]:
    from anthropic.types import MessageParam, TextBlockParam

    return TypeAdapter(list[MessageParam]), TypeAdapter(list[TextBlockParam])


def anthropic_problems(system: Sequence[Any], messages: Sequence[Any]) -> list[str]:
    message_type, system_type = _anthropic()
    problems = _typed_problems(system_type, list(system), "system")
    problems += _typed_problems(message_type, list(messages), "messages")
    problems += _alternation(messages)
    uses: list[list[str]] = []
    results: list[list[str]] = []
    for number, message in enumerate(messages):
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        kinds = [block.get("type") for block in blocks]
        last_result = max((n for n, kind in enumerate(kinds) if kind == "tool_result"), default=-1)
        if last_result > 0 and "text" in kinds[:last_result]:
            problems.append(f"messages[{number}]: a text block before a tool_result")
        for block in blocks:
            if block.get("type") == "text" and not str(block.get("text")).strip():
                problems.append(f"messages[{number}]: a blank text block")
            if block.get("type") == "tool_use" and not (
                    ANTHROPIC_ID.fullmatch(block["id"]) and ANTHROPIC_NAME.fullmatch(block["name"])):
                problems.append(f"messages[{number}]: tool_use id or name {block['id']!r} {block['name']!r}")
        uses.append([b["id"] for b in blocks if b.get("type") == "tool_use"])
        results.append([b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"])
    problems += _answered(uses, results)
    return problems


# --- OpenAI Chat Completions ------------------------------------------------------------------------


@cache
def _openai() -> TypeAdapter[Any]:
    from openai.types.chat import ChatCompletionMessageParam

    return TypeAdapter(list[ChatCompletionMessageParam])


def openai_problems(messages: Sequence[Any]) -> list[str]:
    problems = _typed_problems(_openai(), list(messages), "messages")
    pending: list[str] = []  # the calls of the last assistant message not answered yet
    for number, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in pending:
                problems.append(f"messages[{number}]: a tool message answers no call right before it")
            else:
                pending.remove(message["tool_call_id"])
            continue
        if pending:
            problems.append(f"messages[{number}]: calls {pending} are not answered before it")
        pending = []
        for call in message.get("tool_calls") or []:
            if not OPENAI_NAME.fullmatch(call["function"]["name"]):
                problems.append(f"messages[{number}]: function name {call['function']['name']!r}")
            if not isinstance(json.loads(call["function"]["arguments"]), dict):
                problems.append(f"messages[{number}]: arguments are not a JSON object")
            pending.append(call["id"])
        if len(set(pending)) != len(pending):
            problems.append(f"messages[{number}]: one call id twice")
    if pending:
        problems.append(f"the last calls {pending} are not answered")
    return problems


# --- rules of a conversation ------------------------------------------------------------------------


def _alternation(messages: Sequence[Any]) -> list[str]:
    roles = [message.get("role") for message in messages]
    problems = [f"messages[{n}]: {role} after {role}" for n, role in enumerate(roles) if n and roles[n - 1] == role]
    if roles and roles[0] != "user":
        problems.append(f"the first message is the {roles[0]}'s")
    return problems


def _answered(uses: Sequence[list[str]], results: Sequence[list[str]]) -> list[str]:
    """Each message's tool uses answered by the very next message's results, and no result without one."""
    problems: list[str] = []
    for number, asked in enumerate(uses):
        after = results[number + 1] if number + 1 < len(results) else []
        if sorted(asked) != sorted(after) and asked:
            problems.append(f"messages[{number}]: tool uses {asked} answered by {after}")
        if len(set(asked)) != len(asked):
            problems.append(f"messages[{number}]: one tool use id twice")
    for number, answered in enumerate(results):
        before = uses[number - 1] if number > 0 else []
        if answered and sorted(answered) != sorted(before):
            problems.append(f"messages[{number}]: tool results {answered} answer {before}")
    return problems
