"""Model APIs' own shapes and transcripts through the SDK (``chat.context(format=...)``, ``append(format=...)``,
``Message.from_openai`` and the like, ``import_messages``) and over HTTP, against the real API handler
in-process on a temp data dir. What the context gives is checked by botocore and the anthropic and openai
packages' own types (tests/support/model_api_checks.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agentmem.api.app import lambda_handler
from agentmem.bootstrap import build_container, ensure_default_account, set_container
from agentmem.client import Agent, Client, Conversation, InProcessTransport, Invalid, Message, TransportResponse
from agentmem.client.transcripts import read_transcript
from agentmem.settings import Settings
from model_api_checks import anthropic_problems, bedrock_problems, openai_problems


class Recording:
    """The in-process transport, counting the appends it sends."""

    def __init__(self) -> None:
        self.inner = InProcessTransport(lambda_handler)
        self.appends: list[Any] = []

    def request(
        self, method: str, path: str, *, params: dict[str, str] | None, headers: dict[str, str], body: bytes | None
    ) -> TransportResponse:
        if method == "POST" and path.endswith("/messages"):
            self.appends.append(json.loads(body) if body else None)
        return self.inner.request(method, path, params=params, headers=headers, body=body)


@dataclass
class Service:
    client: Client
    transport: Recording
    support: Agent

    def chat(self, key: str = "ticket-7") -> Conversation:
        return self.support.conversation(key, user="user_42")

    def journal(self, key: str = "ticket-7") -> list[tuple[str, str, str | None]]:
        return [(m.role, m.content, m.tool_call_id) for m in self.chat(key).messages()]


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Service]:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    monkeypatch.setattr(Conversation, "retry_backoff_s", 0.0)
    container = build_container(Settings(data_dir=tmp_path / "data"))
    key = ensure_default_account(container)
    assert key is not None
    set_container(container)
    transport = Recording()
    client = Client("http://in-process", key, transport=transport)
    support = Agent.create("support", instructions="Answer billing questions.", client=client)
    yield Service(client, transport, support)
    set_container(None)


A_TURN = [
    Message.user("Which plan am I on?"),
    Message.tool_call("lookup_plan", "call_1", {"customer": "user_42"}),
    Message.tool_result("call_1", {"plan": "Team", "seats": 12}, "lookup_plan"),
    Message.assistant("You're on the Team plan, with 12 seats."),
]


# --- the context in each API's shape -------------------------------------------------------------------


def test_the_context_in_each_format_is_taken_by_that_api_as_it_is(service: Service) -> None:
    # Given a pinned profile, and turns with a tool call, one of them with two calls at once
    service.support.memory.save("profile-name", "The user's name is Ana.", description="The user's name",
                                category="user_profile", importance=0.9, user="user_42")
    chat = service.chat()
    chat.append(A_TURN)
    chat.append(Message.user("And the Pro plan?"), Message.tool_call("price", "c 2", {"plan": "Pro"}),
                Message.tool_call("price", "c3", {"plan": "Team"}), Message.tool_result("c 2", "40 EUR"),
                Message.tool_result("c3", "25 EUR"), Message.assistant("Pro is 40 EUR, Team 25 EUR."))
    # When the context is asked for in each API's shape
    bedrock = chat.context(format="bedrock")
    anthropic = chat.context(format="anthropic")
    openai = chat.context(format="openai")
    # Then each API's client library and rules take it as it is
    assert bedrock.system is not None and anthropic.system is not None
    assert bedrock_problems(bedrock.system, bedrock.messages) == []
    assert anthropic_problems(anthropic.system, anthropic.messages) == []
    assert openai_problems(openai.messages) == []
    # and it holds the same parts: the pinned block first among the system texts, every call and result
    assert "The user's name is Ana." in bedrock.system[0]["text"]
    assert openai.messages[0]["role"] == "system" and openai.messages[0]["content"] == bedrock.system[0]["text"]
    assert sum(len(m.get("tool_calls") or []) for m in openai.messages) == 3
    assert [m["role"] for m in openai.messages if m["role"] != "system"] == [
        "user", "assistant", "tool", "assistant", "user", "assistant", "tool", "tool", "assistant"]
    assert (bedrock.format, anthropic.format, openai.format, openai.system) == ("bedrock", "anthropic", "openai", None)
    # and the parts and the window are as they are without a format, which is unchanged
    plain = chat.context()
    assert plain.format is None and plain.system is None
    assert [m["role"] for m in plain.messages if m["role"] != "system"][:3] == ["user", "tool_call", "tool_result"]
    assert (bedrock.window, bedrock.tokens, bedrock.pinned) == (plain.window, plain.tokens, plain.pinned)


def test_a_bad_format_is_a_400_naming_it(service: Service) -> None:
    chat = service.chat()
    chat.append(A_TURN)
    for bad in ("Bedrock", "mcp", "converse"):
        with pytest.raises(Invalid) as caught:
            chat.context(format=bad)
        assert caught.value.field == "format"
        with pytest.raises(Invalid) as caught:
            chat.append({"role": "user", "content": "hi"}, format=bad)
        assert caught.value.field == "format"
    assert len(chat.messages()) == 4


# --- a loop hands over what it sent and got back ----------------------------------------------------------


def test_an_openai_loop_hands_over_its_messages_and_gets_them_back(service: Service) -> None:
    from openai.types.chat import ChatCompletionMessage

    chat = service.chat()
    # Given what an OpenAI loop sent, and the response's message as the openai package gives it
    sent = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Which plan am I on?"}]
    answer = ChatCompletionMessage.model_validate({"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "lookup_plan", "arguments": '{"customer": 42}'}}],
    }).model_dump(exclude_none=True)
    result = {"role": "tool", "tool_call_id": "call_1", "content": '{"plan": "Team"}'}
    # When it appends them as they are
    first = chat.append(sent, format="openai")
    chat.append(Message.from_openai(answer), Message.from_openai(result))
    # Then the journal holds their rows, and the system message was skipped, saying why
    assert service.journal() == [("user", "Which plan am I on?", None), ("tool_call", "", "call_1"),
                                 ("tool_result", '{"plan": "Team"}', "call_1")]
    assert [(s.index, "system message is not kept" in s.reason) for s in first.skipped] == [(0, True)]
    # and the context for the next call holds them as they were sent, after agentmem's own system messages
    context = chat.context(format="openai")
    assert [m for m in context.messages if m["role"] != "system"] == [
        sent[1], {**answer, "content": None, "tool_calls": [
            {**answer["tool_calls"][0], "function": {"name": "lookup_plan", "arguments": '{"customer": 42}'}}]},
        result]


def test_an_anthropic_loop_hands_over_its_messages_and_gets_them_back(service: Service) -> None:
    from anthropic.types import Message as AnthropicMessage

    chat = service.chat("ticket-8")
    question = {"role": "user", "content": [{"type": "text", "text": "Which plan am I on?"}]}
    response = AnthropicMessage.model_validate({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude", "stop_reason": "tool_use",
        "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 9},
        "content": [{"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "toolu_1", "name": "lookup_plan", "input": {"customer": 42}}],
    })
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "Team"}]}
    chat.append([question, response.model_dump(), result], format="anthropic")
    assert service.journal("ticket-8") == [("user", "Which plan am I on?", None), ("assistant", "Let me check.", None),
                                           ("tool_call", "", "toolu_1"), ("tool_result", "Team", "toolu_1")]
    assert chat.messages()[3].tool_name == "lookup_plan"  # a result appended with its call is named for it
    context = chat.context(format="anthropic")
    assert context.messages == [
        question,
        {"role": "assistant", "content": [{"type": "text", "text": "Let me check."},
                                          {"type": "tool_use", "id": "toolu_1", "name": "lookup_plan",
                                           "input": {"customer": 42}}]},
        result,
    ]


def test_a_bedrock_loop_hands_over_its_messages_and_gets_them_back(service: Service) -> None:
    chat = service.chat("ticket-9")
    question = {"role": "user", "content": [{"text": "Which plan am I on?"}]}
    output = {"role": "assistant", "content": [{"toolUse": {"toolUseId": "tooluse_1", "name": "lookup_plan",
                                                            "input": {"customer": 42}}}]}
    result = {"role": "user", "content": [{"toolResult": {"toolUseId": "tooluse_1",
                                                          "content": [{"json": {"plan": "Team"}}]}}]}
    rows = [*Message.from_bedrock(question), *Message.from_bedrock(output), *Message.from_bedrock(result)]
    chat.append(rows)
    assert chat.messages()[2].result == {"plan": "Team"}
    assert chat.context(format="bedrock").messages == [question, output, result]


# --- over HTTP ---------------------------------------------------------------------------------------------


def test_an_append_over_http_takes_format_and_says_what_it_skipped(service: Service) -> None:
    path = "/agents/support/conversations/http-1/messages"
    # When messages in Anthropic's shape are posted with format=anthropic, with a client_id beside the API's keys
    body = {"messages": [{"role": "user", "client_id": "q1", "content": [
        {"type": "text", "text": "What is on this receipt?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]}]}
    answer = service.client.request_json("POST", path, params={"format": "anthropic"}, body=body)
    # Then the text is stored, the image is skipped with its reason, and the format is said
    assert [(i["role"], i["content"], i["client_id"]) for i in answer["items"]] == [
        ("user", "What is on this receipt?", "q1")]
    assert answer["format"] == "anthropic" and answer["added"] == 1
    assert answer["skipped"] == [{"index": 0, "reason": "messages[0].content[1]: 'image' blocks are not kept "
                                                        "(the journal holds text and tool calls)"}]
    # and the same post again stores nothing twice
    again = service.client.request_json("POST", path, params={"format": "anthropic"}, body=body)
    assert again["added"] == 0 and len(service.support.conversation("http-1").messages()) == 1


def test_an_append_over_http_refuses_what_it_cannot_take_and_stores_nothing(service: Service) -> None:
    path = "/agents/support/conversations/http-2/messages"
    calls = [{"id": f"c{n}", "type": "function", "function": {"name": "f", "arguments": "{}"}} for n in range(41)]
    cases = {  # the body, the format, the field the 400 names
        "41-rows-from-one-message": ({"messages": [{"role": "assistant", "tool_calls": calls}]}, "openai",
                                     "messages"),
        "only-a-system-message": ({"messages": [{"role": "system", "content": "Be brief."}]}, "openai", "messages"),
        "no-messages": ({"messages": []}, "bedrock", "messages"),
        "not-a-list": ({"messages": {"role": "user"}}, "bedrock", "messages"),
        "an-item-not-an-object": ({"messages": ["hi"]}, "anthropic", "messages[0]"),
        "unknown-field": ({"messages": [{"role": "user", "content": "hi"}], "model": "x"}, "openai", "model"),
        "bad-format": ({"messages": [{"role": "user", "content": "hi"}]}, "gemini", "format"),
        "a-bedrock-string-content": ({"messages": [{"role": "user", "content": "hi"}]}, "bedrock",
                                     "messages[0].content"),
    }
    for case, (body, fmt, field) in cases.items():
        with pytest.raises(Invalid) as caught:
            service.client.request_json("POST", path, params={"format": fmt}, body=body)
        assert caught.value.field == field, case
    assert service.support.conversations() == []


# --- importing a transcript ----------------------------------------------------------------------------------


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def transcript(count: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for number in range(count // 2):
        rows += [{"role": "user", "content": f"Is invoice {number} paid?"},
                 {"role": "assistant", "content": f"Invoice {number} is paid."}]
    return rows


def test_a_2000_message_transcript_is_imported_in_chunks_once(service: Service, tmp_path: Path) -> None:
    # Given a JSONL transcript of 2,000 messages without client ids
    path = write_jsonl(tmp_path / "long.jsonl", transcript(2000))
    chat = service.chat("long")
    sent: list[int] = []
    # When it is imported
    report = chat.import_messages(path, on_progress=sent.append)
    # Then it went in appends of at most 40, and the journal holds every message in order
    assert (report.messages, report.rows, report.added, report.already_there) == (2000, 2000, 2000, 0)
    assert (report.first_seq, report.last_seq) == (1, 2000)
    assert len(service.transport.appends) == 50 and max(len(a["messages"]) for a in service.transport.appends) == 40
    assert sum(sent) == 2000
    journal = chat.messages()
    assert [m.content for m in journal] == [row["content"] for row in transcript(2000)]
    # When it is imported again
    again = chat.import_messages(path)
    # Then nothing is added: every row is already there
    assert (again.added, again.already_there, again.first_seq, again.last_seq) == (0, 2000, 1, 2000)
    assert len(chat.messages()) == 2000
    # and when the transcript grew, only what is new is added, after the rest
    grown = write_jsonl(tmp_path / "grown.jsonl", transcript(2010))
    more = chat.import_messages(grown)
    assert (more.added, more.already_there) == (10, 2000)
    assert [m.content for m in chat.messages(after=2000)] == [r["content"] for r in transcript(2010)[2000:]]


def test_an_openai_export_is_imported_with_what_it_skipped(service: Service, tmp_path: Path) -> None:
    # Given a Chat Completions request body, as sent: a system prompt, a question, a tool call and its answer
    export = {"model": "gpt-x", "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Which plan am I on?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "lookup_plan", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Team"},
        {"role": "assistant", "content": "You're on Team."},
    ]}
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export, indent=2))
    # When it is imported
    report = service.chat("export").import_messages(path, format="openai")
    # Then four rows are stored, the system message skipped with its place and reason
    assert (report.messages, report.rows, report.added) == (5, 4, 4)
    assert report.skipped == ["messages[0]: a system message is not kept in the journal: the context brings its "
                              "own system messages"]
    assert [r[0] for r in service.journal("export")] == ["user", "tool_call", "tool_result", "assistant"]


def test_an_anthropic_request_body_skips_its_system_prompt(service: Service) -> None:
    body = {"system": "Be brief.", "messages": [{"role": "user", "content": "Hi"},
                                                {"role": "assistant", "content": "Hello!"}]}
    report = read_transcript_from_text(json.dumps(body), "anthropic")
    assert (report.messages, len(report.rows)) == (2, 2)
    assert report.skipped[0].startswith("system: the request's system prompt is not kept")


def read_transcript_from_text(text: str, fmt: str) -> Any:
    import io

    return read_transcript(io.StringIO(text), fmt)


BAD_FILES: dict[str, tuple[str, str, str]] = {  # case → (format, the file's text, what the error says)
    "a-line-not-json": ("jsonl", '{"role": "user", "content": "a"}\n\n{"role": "user", "content": \n',
                        "line 3 is not JSON"),
    "a-bad-role": ("jsonl", '{"role": "user", "content": "a"}\n{"role": "system", "content": "b"}\n',
                   "line 2.role must be one of user, assistant, tool_call, tool_result"),
    "an-unknown-field": ("jsonl", '{"role": "user", "content": "a", "seq": 4}\n', "line 1: unknown field 'seq'"),
    "an-empty-user-message": ("jsonl", '{"role": "user", "content": "a"}\n{"role": "user"}\n',
                              "line 2.content must not be empty"),
    "a-client-id-twice": ("jsonl", '{"role": "user", "content": "a", "client_id": "x"}\n'
                                   '{"role": "user", "content": "b", "client_id": "x"}\n',
                          "line 2: client_id 'x' was already given at line 1"),
    "not-an-object": ("openai", '"hello"\n', "line 1 must be an object (a openai message)"),
    "openai-arguments-not-json": ("openai", json.dumps({"role": "assistant", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{nope"}}]}) + "\n",
        "line 1.tool_calls[0].function.arguments must be a JSON object as text"),
    "a-document-item": ("bedrock", json.dumps([{"role": "user", "content": [{"text": "a"}]},
                                               {"role": "user", "content": "b"}]),
                        "messages[1].content must be a list of content blocks"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_a_malformed_transcript_is_refused_naming_the_line_and_nothing_is_stored(
    service: Service, tmp_path: Path, case: str
) -> None:
    fmt, text, said = BAD_FILES[case]
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(Invalid) as caught:
        service.chat("bad").import_messages(path, format=fmt)
    assert said in caught.value.message, caught.value.message
    assert service.transport.appends == []


def test_derived_client_ids_are_stable_and_differ_by_place_and_content() -> None:
    rows = [{"role": "user", "content": "ok"}, {"role": "user", "content": "ok"}, {"role": "user", "content": "no"}]
    first = [r.client_id for r in read_transcript(rows).rows]
    assert first == [r.client_id for r in read_transcript(rows).rows]
    assert len(set(first)) == 3
    # a blank line does not move a message's place
    spaced = "\n".join(json.dumps(r) + "\n" for r in rows)
    assert [r.client_id for r in read_transcript_from_text(spaced, "jsonl").rows] == first


def test_the_openapi_document_lists_format_and_both_append_bodies(service: Service) -> None:
    spec = service.client.request_json("GET", "/openapi.json")
    conversation = "/v1/agents/{agent}/conversations/{key}"
    paths = spec["paths"]
    for operation in (paths[f"{conversation}/context"]["get"], paths[f"{conversation}/messages"]["post"]):
        [parameter] = [p for p in operation["parameters"] if p["name"] == "format"]
        assert parameter["in"] == "query" and "bedrock, anthropic or openai" in parameter["description"]
    body = spec["paths"][f"{conversation}/messages"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"oneOf": [{"$ref": "#/components/schemas/AppendBody"},
                              {"$ref": "#/components/schemas/ModelAppendBody"}]}
    assert {"AppendBody", "ModelAppendBody", "MessageBody"} <= set(spec["components"]["schemas"])
