"""Nobody reaches what is not theirs, over every operation of the OpenAPI document (SPEC §2.3, §7, §10, §11).

The matrix is generated from ``/v1/openapi.json`` itself (and, for the agent tools and MCP's ``tools/call``,
from the agent's own tool listing in both dialects), so an operation or a tool added later is in it the day it
lands: ``REQUESTS`` must name a request for every operation of the document, or the first test fails.

Account ``acme`` holds a memory with an entry, an agent using it, user ``ana``'s private entry, conversation
(with a tool call) and workspace file, and keys. Each attacker calls every operation twice: once naming acme's
(or ana's) resources, once naming resources nobody holds. The rules, for every cell:

* another account (its account key, its account key with ``user=ana``, its user key for its own ``ana``), and
  user ``bob``'s key within acme against ana's things: the two answers are the same status and error code
  (another tenant's names are indistinguishable from names nobody holds: 404 not 403), no answer carries what
  is not the caller's, and nothing of acme's (or ana's) changed;
* a revoked key, a tampered key and no key: 401 on every operation but the public ones, and nothing changed;
* the tools and MCP rows run under every memory-write setting of the agent (``writable``,
  ``user_conversations_write_shared``, ``anonymous_private_writes``).
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agentmem.api.app import app, lambda_handler
from agentmem.api.openapi import document
from agentmem.bootstrap import ensure_default_account, set_container
from agentmem.client.transport import InProcessTransport

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "contract"))
import dynamodb_local  # tests/support
from contract_world import BUILDERS, FakeClock  # the contract suite's backends: embedded, aws

AGENT, MEMORY, ENTRY, ANA_ENTRY, CONVERSATION, FILE, TOOL_CALL = (
    "support", "company", "policy", "ana-note", "chat-ana", "ana.txt", "call-ana")
ACME_SECRET, ANA_SECRET = "ACME-ONLY-7d1f", "ANA-ONLY-93c2"  # written into acme's and ana's data, read nowhere else
GHOSTS = {"memory": "ghost-memory", "agent": "ghost-agent", "key": "ghost-chat", "name": "ghost-entry",
          "path": "ghost.txt", "tool_call_id": "ghost-call", "key_id": "key_0123456789abcdef",
          "user_id": "ghost-user", "link": "w/0123456789abcdef/0123456789abcdef/0123456789abcdef/0123456789abcdef/f/x"}
CONVERSATION_PATH = "/v1/agents/{agent}/conversations/{key}"
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
TOOLS_OP, MCP_OP = ("post", "/v1/agents/{agent}/tools/{tool}"), ("post", "/v1/mcp")
DIALECTS = ("noclick", "noorle")

FORGED = {"method": "GET", "expires": "4102444800", "signature": "0" * 64}
# a request that reaches the handler, for every operation: (query parameters, JSON body, or raw bytes);
# placeholders in braces are the names under test. Tools and MCP are expanded over every tool.
REQUESTS: dict[tuple[str, str], tuple[dict[str, str], Any]] = {
    ("get", "/v1/health"): ({}, None),
    ("get", "/v1/usage"): ({}, None),
    ("get", "/v1/keys"): ({}, None),
    ("post", "/v1/keys"): ({}, {"user": "{user_id}"}),
    ("delete", "/v1/keys/{key_id}"): ({}, None),
    ("delete", "/v1/users/{user_id}"): ({}, None),
    ("get", "/v1/memories"): ({"trash": "true"}, None),
    ("get", "/v1/memories/{memory}"): ({}, None),
    ("put", "/v1/memories/{memory}"): ({}, None),
    ("delete", "/v1/memories/{memory}"): ({}, None),
    ("post", "/v1/memories/{memory}/restore"): ({}, None),
    ("get", "/v1/memories/{memory}/entries"): ({"content": "true"}, None),
    ("get", "/v1/memories/{memory}/layers"): ({}, None),
    ("get", "/v1/memories/{memory}/entries/{name}"): ({}, None),
    ("put", "/v1/memories/{memory}/entries/{name}"): ({}, {"content": "overwritten", "description": "d"}),
    ("delete", "/v1/memories/{memory}/entries/{name}"): ({}, None),
    ("get", "/v1/memories/{memory}/entries/{name}/history"): ({}, None),
    ("get", "/v1/memories/{memory}/search"): ({"q": "refunds"}, None),
    ("get", "/v1/agents"): ({"trash": "true"}, None),
    ("get", "/v1/agents/{agent}"): ({}, None),
    ("put", "/v1/agents/{agent}"): ({}, {"memories": [{"name": "{memory}", "writable": True}]}),
    ("delete", "/v1/agents/{agent}"): ({}, None),
    ("post", "/v1/agents/{agent}/restore"): ({}, None),
    ("post", "/v1/agents/{agent}/purge"): ({}, None),
    ("get", "/v1/agents/{agent}/search"): ({"q": "refunds"}, None),
    ("get", "/v1/agents/{agent}/messages/search"): ({"q": "refunds"}, None),
    ("get", "/v1/agents/{agent}/conversations"): ({}, None),
    ("get", CONVERSATION_PATH): ({}, None),
    ("delete", CONVERSATION_PATH): ({"purge": "true"}, None),
    ("get", f"{CONVERSATION_PATH}/messages"): ({}, None),
    ("post", f"{CONVERSATION_PATH}/messages"): ({}, {"messages": [{"role": "user", "content": "hello"}]}),
    ("get", f"{CONVERSATION_PATH}/context"): ({}, None),
    ("get", f"{CONVERSATION_PATH}/tool-calls/{{tool_call_id}}"): ({}, None),
    ("get", f"{CONVERSATION_PATH}/checkpoint"): ({}, None),
    ("post", f"{CONVERSATION_PATH}/compact"): ({}, None),
    ("get", f"{CONVERSATION_PATH}/workspace/files"): ({}, None),
    ("get", f"{CONVERSATION_PATH}/workspace/files/{{path}}"): ({}, None),
    ("put", f"{CONVERSATION_PATH}/workspace/files/{{path}}"): ({}, b"overwritten"),
    ("delete", f"{CONVERSATION_PATH}/workspace/files/{{path}}"): ({}, None),
    ("post", f"{CONVERSATION_PATH}/workspace/links"): ({}, {"path": "{path}"}),
    ("get", "/v1/agents/{agent}/tools"): ({}, None),
    # a workspace link names the file's place in the store ({link}); the signature is the credential: forged here
    ("get", "/v1/links/{key}"): (FORGED, None),
    ("head", "/v1/links/{key}"): (FORGED, None),
    ("put", "/v1/links/{key}"): ({**FORGED, "method": "PUT", "size": "11"}, b"overwritten"),
    TOOLS_OP: ({}, None),  # expanded over every tool
    MCP_OP: ({"agent": "{agent}"}, None),  # expanded over tools/list and every tool's tools/call
}
# tool arguments that name what is under test, by argument name (a save asks for the account layer)
ARGUMENT_NAMES = {"name": "{name}", "key": "{name}", "memory": "{memory}", "conversation": "{key}",
                  "path": "{path}", "tool_call_id": "{tool_call_id}", "visibility": "shared"}


@dataclass
class Call:
    operation: tuple[str, str]
    method: str
    path: str  # a template
    params: dict[str, str]
    body: Any
    label: str


@dataclass
class Caller:
    name: str
    key: str | None
    user: str | None = None  # an account key acting for this user (``user=``)


@dataclass
class World:
    backend: str
    transport: InProcessTransport
    acme: str  # acme's account key
    names: dict[str, str]  # acme's and ana's names, as the path parameters take them
    bad: list[Caller]  # a revoked, a tampered and no key
    other_account: list[Caller]
    bob: list[Caller]  # bob's user key, also asking to act for ana (user=ana)
    tools: list[tuple[str, dict[str, Any]]]  # (tool name, arguments) over both dialects
    operations: set[tuple[str, str]]  # the document's


def send(world: World, caller: Caller, call: Call, names: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    params = {k: fill(v, names) for k, v in call.params.items()}
    if caller.user is not None:
        params["user"] = caller.user
    headers = {"Authorization": f"Bearer {caller.key}"} if caller.key is not None else {}
    body = call.body
    if isinstance(body, bytes):
        raw: bytes | None = body
    elif body is not None:
        raw, headers["Content-Type"] = json.dumps(fill(body, names)).encode(), "application/json"
    else:
        raw = None
    if call.operation == MCP_OP:
        headers.update(MCP_HEADERS)
    response = world.transport.request(call.method.upper(), fill(call.path, names), params=params,
                                       headers=headers, body=raw)
    return response.status, response.headers, response.body


def fill(template: Any, names: dict[str, str]) -> Any:
    if isinstance(template, str):
        for placeholder, value in names.items():
            template = template.replace("{" + placeholder + "}", value)
        return template
    if isinstance(template, dict):
        return {k: fill(v, names) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, names) for v in template]
    return template


def outcome(status: int, body: bytes) -> tuple[int, str]:
    """The status and the error code a caller learns (for MCP, the tool error's or JSON-RPC's)."""
    try:
        answer = json.loads(body)
    except ValueError:
        return status, ""
    if not isinstance(answer, dict):
        return status, ""
    if isinstance(answer.get("error"), dict):
        return status, str(answer["error"].get("code"))
    result = answer.get("result")
    if isinstance(result, dict) and result.get("isError"):
        error = (result.get("structuredContent") or {}).get("error") or {}
        return status, f"tool:{error.get('status')}:{error.get('code')}"
    return status, ""


def arguments_for(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments a tool takes: its required ones, and every one that names a memory, an entry or a file."""
    kinds = {"integer": 1, "number": 1, "boolean": False, "array": [], "object": {}}
    arguments: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        if name in ARGUMENT_NAMES:
            arguments[name] = ARGUMENT_NAMES[name]
        elif name in schema.get("required", []):
            arguments[name] = kinds.get(prop.get("type"), "refunds overwritten")
    return arguments


def calls(world: World, *, tools_only: bool = False) -> list[Call]:
    """Every operation of the document as a request, the tools and MCP once per tool."""
    out = []
    for (method, path), (params, body) in REQUESTS.items():
        if (method, path) not in world.operations:
            continue
        if path.startswith("/v1/links/"):
            out.append(Call((method, path), method, path.replace("{key}", "{link}"), params, body,
                            f"{method.upper()} {path}"))
        elif (method, path) == TOOLS_OP:
            out += [Call(TOOLS_OP, method, path.replace("{tool}", tool), params, {"arguments": args},
                         f"tool {tool}") for tool, args in world.tools]
        elif (method, path) == MCP_OP:
            out.append(Call(MCP_OP, method, path, params, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                            "mcp tools/list"))
            out += [Call(MCP_OP, method, path, params, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                                        "params": {"name": tool, "arguments": args}},
                         f"mcp tools/call {tool}") for tool, args in world.tools]
        elif not tools_only:
            out.append(Call((method, path), method, path, params, body, f"{method.upper()} {path}"))
    return out


def acme_state(world: World) -> dict[str, Any]:
    """Everything of acme's account layer and of ana's, read with acme's key: what no attacker may change."""
    def get(path: str, **params: str) -> Any:
        response = world.transport.request("GET", path, params=params,
                                           headers={"Authorization": f"Bearer {world.acme}"}, body=None)
        return response.status, json.loads(response.body) if response.body else None

    def stable(value: Any) -> Any:  # what a read changes (last use, a signed link) is left out
        if isinstance(value, dict):
            return {k: stable(v) for k, v in value.items() if k not in ("last_used_at", "usage", "url")}
        if isinstance(value, (list, tuple)):
            return [stable(v) for v in value]
        return value

    state: dict[str, Any] = {"memories": get("/v1/memories", trash="true"), "agents": get("/v1/agents", trash="true"),
                             "keys": get("/v1/keys")}
    for user in ({}, {"user": "ana"}):
        entries = get(f"/v1/memories/{MEMORY}/entries", **user)
        state[f"entries{user}"] = entries
        for item in (entries[1] or {}).get("items", []):
            state[f"entry {item['name']} {user}"] = get(f"/v1/memories/{MEMORY}/entries/{item['name']}", **user)
        state[f"conversations{user}"] = get(f"/v1/agents/{AGENT}/conversations", **user)
    conversation = f"/v1/agents/{AGENT}/conversations/{CONVERSATION}"
    state["messages"] = get(f"{conversation}/messages", user="ana")
    state["files"] = get(f"{conversation}/workspace/files", user="ana")
    state["file"] = world.transport.request("GET", f"{conversation}/workspace/files/{FILE}", params={"user": "ana"},
                                            headers={"Authorization": f"Bearer {world.acme}"}, body=None).body
    stable_state: dict[str, Any] = stable(state)
    return stable_state


@pytest.fixture(scope="module", autouse=True)
def _stop_dynamodb_local() -> Iterator[None]:
    yield
    dynamodb_local.stop_shared()


@pytest.fixture(params=list(BUILDERS))
def world(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    """acme's data on a fresh backend (a data dir, or a table on DynamoDB Local), served in process."""
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    with BUILDERS[request.param](tmp_path, FakeClock()) as container:
        yield from _world(container, request.param)


def _world(container: Any, backend: str) -> Iterator[World]:
    acme = ensure_default_account(container)
    assert acme is not None
    set_container(container)
    transport = InProcessTransport(lambda_handler)

    def as_acme(method: str, path: str, body: Any = None, key: str = acme, **params: str) -> Any:
        raw = body if isinstance(body, bytes) else (json.dumps(body).encode() if body is not None else None)
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        response = transport.request(method, path, params=params, headers=headers, body=raw)
        assert response.status < 300, (method, path, response.status, response.body)
        return json.loads(response.body) if response.body else None

    as_acme("PUT", f"/v1/memories/{MEMORY}")
    as_acme("PUT", f"/v1/memories/{MEMORY}/entries/{ENTRY}",
            {"content": f"Refunds within 30 days. {ACME_SECRET}", "description": "Refund policy"})
    as_acme("PUT", f"/v1/agents/{AGENT}", {"memories": [{"name": MEMORY, "writable": True}],
                                           "instructions": f"Be kind. {ACME_SECRET}"})
    as_acme("PUT", f"/v1/memories/{MEMORY}/entries/{ANA_ENTRY}",
            {"content": f"Ana's refunds note {ANA_SECRET}", "description": "Ana's note"}, user="ana")
    conversation = f"/v1/agents/{AGENT}/conversations/{CONVERSATION}"
    as_acme("POST", f"{conversation}/messages", {"messages": [
        {"role": "user", "content": f"My refunds question {ANA_SECRET}"},
        {"role": "tool_call", "tool_name": "memory__search", "tool_call_id": TOOL_CALL,
         "arguments": {"query": "refunds"}},
        {"role": "tool_result", "tool_call_id": TOOL_CALL, "result": f"found {ANA_SECRET}"},
    ]}, user="ana")
    as_acme("PUT", f"{conversation}/workspace/files/{FILE}", ANA_SECRET.encode(), user="ana")
    ana_key = as_acme("POST", "/v1/keys", {"user": "ana"})
    bob_key = as_acme("POST", "/v1/keys", {"user": "bob"})["secret"]
    revoked = as_acme("POST", "/v1/keys", {})
    as_acme("DELETE", f"/v1/keys/{revoked['id']}")
    tampered = acme[:-1] + ("A" if acme[-1] != "A" else "B")
    _, other = container.keys.ensure_account("globex")
    assert other is not None
    other_user = as_acme("POST", "/v1/keys", {"user": "ana"}, key=other)["secret"]
    tools = []
    for dialect in DIALECTS:
        listing = as_acme("GET", f"/v1/agents/{AGENT}/tools", dialect=dialect)
        tools += [(tool["name"], arguments_for(tool["inputSchema"])) for tool in listing["items"]]
    listing = as_acme("GET", f"{conversation}/workspace/files", user="ana")
    link = listing["items"][0]["url"].split("/v1/links/", 1)[-1].split("?", 1)[0]  # ana's file's place
    names = {"memory": MEMORY, "agent": AGENT, "key": CONVERSATION, "name": ENTRY, "path": FILE,
             "tool_call_id": TOOL_CALL, "key_id": ana_key["id"], "user_id": "ana", "link": link}
    yield World(
        backend=backend, transport=transport, acme=acme, names=names,
        bad=[Caller("revoked key", revoked["secret"]), Caller("tampered key", tampered), Caller("no key", None)],
        other_account=[Caller("globex's account key", other), Caller("globex's account key as ana", other, "ana"),
                       Caller("globex's user key for its ana", other_user)],
        bob=[Caller("acme's user key for bob", bob_key), Caller("acme's user key for bob, as ana", bob_key, "ana")],
        tools=tools, operations=document_operations(),
    )
    set_container(None)


def document_operations() -> set[tuple[str, str]]:
    return {(method, path) for path, ops in document(app)["paths"].items() for method in ops}


def public_operations() -> set[tuple[str, str]]:
    return {(method, path) for path, ops in document(app)["paths"].items()
            for method, op in ops.items() if op.get("security") == []}


def test_every_operation_of_the_document_is_in_the_matrix() -> None:
    missing = document_operations() - set(REQUESTS)
    assert not missing, f"operations of the document with no request in the matrix: {sorted(missing)}"


def probe(world: World, attackers: list[Caller], targets: dict[str, str], swapped: set[str],
          secrets: tuple[str, ...], call_list: list[Call]) -> tuple[list[str], int]:
    """Each attacker calls each request naming ``targets``, then with the names in ``swapped`` replaced by names
    nobody holds; the two answers must match, and neither may carry any of ``secrets``."""
    ghosts = {k: GHOSTS[k] if k in swapped else v for k, v in targets.items()}
    problems, cells = [], 0
    for caller, call in itertools.product(attackers, call_list):
        real_status, _, real_body = send(world, caller, call, targets)
        ghost_status, _, ghost_body = send(world, caller, call, ghosts)
        cells += 1
        real, ghost = outcome(real_status, real_body), outcome(ghost_status, ghost_body)
        cell = f"{caller.name}: {call.label}"
        if real != ghost:
            problems.append(f"{cell}: {real} naming theirs, {ghost} naming nobody's")
        if real_status >= 500:
            problems.append(f"{cell}: {real_status}")
        leaked = [s for s in secrets if s.encode() in real_body]
        if leaked:
            problems.append(f"{cell}: the answer carries {leaked}: {real_body[:200]!r}")
    return problems, cells


def changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return [f"{what}: {before.get(what)} -> {after.get(what)}" for what in sorted(set(before) | set(after))
            if before.get(what) != after.get(what)]


def test_the_isolation_matrix(world: World) -> None:
    problems: list[str] = []
    cells = 0
    everything = calls(world)
    before = acme_state(world)
    # a revoked key, a tampered key and no key: 401 everywhere but the public operations
    public = public_operations()
    for caller, call in itertools.product(world.bad, everything):
        status, _, body = send(world, caller, call, world.names)
        cells += 1
        expected = status != 401 if call.operation in public else status == 401
        if not expected or ACME_SECRET.encode() in body or ANA_SECRET.encode() in body:
            problems.append(f"{caller.name}: {call.label}: {status}")
    assert acme_state(world) == before
    # every memory-write setting of the agent: the whole document once, then the tools and MCP again
    settings = list(itertools.product((True, False), (False, True), ("refuse", "shared")))
    if world.backend == "aws":  # the rules are the same code on both: the first and the most permissive there
        settings = [settings[0], (True, True, "shared")]
    for number, (writable, shared_writes, anonymous) in enumerate(settings):
        response = world.transport.request(
            "PUT", f"/v1/agents/{AGENT}", params={}, body=json.dumps({
                "memories": [{"name": MEMORY, "writable": writable}], "user_conversations_write_shared": shared_writes,
                "anonymous_private_writes": anonymous}).encode(),
            headers={"Authorization": f"Bearer {world.acme}", "Content-Type": "application/json"})
        assert response.status in (200, 201), response.body  # 201: an attacker removed it, reported below
        setting = f"writable={writable}, user_conversations_write_shared={shared_writes}, " \
                  f"anonymous_private_writes={anonymous}"
        call_list = calls(world, tools_only=number > 0)
        before = acme_state(world)
        # another account: every name of acme's is a name nobody holds
        found, n = probe(world, world.other_account, world.names, set(world.names), (ACME_SECRET, ANA_SECRET),
                         call_list)
        problems += [f"[{setting}] {p}" for p in found]
        cells += n
        problems += [f"[{setting}] another account changed acme's {what}"
                     for what in changed(before, acme_state(world))]
        # bob in acme: ana's conversation, file, entry, key and user id are names nobody holds
        ana = {**world.names, "name": ANA_ENTRY}
        found, n = probe(world, world.bob, ana, {"key", "name", "path", "tool_call_id", "key_id", "user_id", "link"},
                         (ANA_SECRET,), call_list)
        problems += [f"[{setting}] {p}" for p in found]
        cells += n
        problems += [f"[{setting}] bob changed acme's {what}" for what in changed(before, acme_state(world))]
    print(f"isolation matrix: {cells} cells, {len(everything)} requests per caller, {len(world.tools)} tools")
    assert not problems, f"{len(problems)} of {cells} cells are wrong:\n" + "\n".join(problems[:80])
