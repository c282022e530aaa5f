"""JSON that Python reads but no part of the service can hold (SPEC §10, §12: never a 5xx for bad input):
integers of more than 4,300 digits, numbers too large for a float, NaN and Infinity, a name twice in one
object, nesting past 64, bytes that are not UTF-8. On every operation of the OpenAPI document that takes a
JSON body (REST, tools and MCP: an operation added tomorrow is in the list the day it lands), each is a
400 in the §10 shape naming where the value is, and nothing is stored. Both backends; the path parameters
name real resources, so a request that got past the check would reach the operation itself.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
import requests
from agentmem.api import openapi
from agentmem.api.app import app
from functional_support import Server, auth

DOCUMENT = openapi.document(app)
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}


def _schema(document: dict[str, Any], ref_or_schema: dict[str, Any]) -> dict[str, Any]:
    """The object schema of a request body (``$ref``, or ``anyOf`` [it, null])."""
    for option in ref_or_schema.get("anyOf", [ref_or_schema]):
        if "$ref" in option:
            return dict(document["components"]["schemas"][option["$ref"].rsplit("/", 1)[1]])
        if option.get("type") == "object":
            return option
    return {}


def json_body_operations(document: dict[str, Any]) -> dict[str, list[str]]:
    """``"METHOD /path"`` → the names of its body's fields, for every operation whose body is JSON."""
    found = {}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {})
            if "application/json" in content:
                fields = list(_schema(document, content["application/json"]["schema"]).get("properties", {}))
                found[f"{method.upper()} {path}"] = fields or ["anything"]
    return found


OPERATIONS = json_body_operations(DOCUMENT)


@dataclass(frozen=True)
class World:
    """A memory with entry `note`, an agent attaching it, and the agent's conversation `c1` with one message:
    what the path parameters name."""

    memory: str
    agent: str

    def parameters(self) -> dict[str, str]:
        return {"memory": self.memory, "name": "note", "agent": self.agent, "key": "c1", "tool": "memory__save"}


@pytest.fixture(scope="module")
def world(target: Server) -> World:
    run = uuid.uuid4().hex[:8]
    memory, agent = f"json-{run}", f"json-agent-{run}"
    with requests.Session() as s:
        s.headers.update(auth(target.key))
        assert s.put(target.url(f"/v1/memories/{memory}")).status_code == 201
        note = s.put(target.url(f"/v1/memories/{memory}/entries/note"), json={"content": "a note", "description": "d"})
        assert note.status_code == 201, note.text
        made = s.put(target.url(f"/v1/agents/{agent}"), json={"memories": [{"name": memory, "writable": True}]})
        assert made.status_code == 201, made.text
        appended = s.post(target.url(f"/v1/agents/{agent}/conversations/c1/messages"),
                          json={"messages": [{"role": "user", "content": "hello"}]})
        assert appended.status_code == 201, appended.text
    return World(memory=memory, agent=agent)


def _request(target: Server, world: World, operation: str, body: bytes) -> requests.Response:
    method, path = operation.split(" ", 1)
    parameters = world.parameters()
    for name in [p["name"] for p in DOCUMENT["paths"][path][method.lower()].get("parameters", [])]:
        if f"{{{name}}}" in path and name not in parameters:
            pytest.fail(f"{operation}: pin the path parameter {name!r} to a real resource in World.parameters")
    query = {p["name"]: parameters[p["name"]] for p in DOCUMENT["paths"][path][method.lower()].get("parameters", [])
             if p["in"] == "query" and p.get("required")}
    url = target.url(path.format(**parameters))
    headers = {**auth(target.key), **MCP_ACCEPT, "Content-Type": "application/json"}
    return requests.request(method, url, params=query, data=body, headers=headers, timeout=30)


# a value of one field, as raw JSON: what the answer names and says
BAD_VALUES: dict[str, tuple[str, str, str]] = {  # id: (the value, where it is below the field, what the message says)
    "integer-4301-digits": ("9" * 4301, "", "4,301 digits"),
    "negative-integer-5000-digits": ("-" + "9" * 5000, "", "5,000 digits"),
    "float-1e999": ("1e999", "", "too large"),
    "float-400-digits": ("9" * 400 + ".5", "", "too large"),
    "nan": ("NaN", "", "NaN"),
    "infinity": ("Infinity", "", "Infinity"),
    "minus-infinity": ("-Infinity", "", "-Infinity"),
    "nan-in-a-list": ("[1, NaN]", "[1]", "NaN"),
    "huge-integer-in-an-object": ('{"deep": ' + "1" * 4400 + "}", ".deep", "4,400 digits"),
    "name-twice": ('{"twice": 1, "twice": 2}', ".twice", "twice"),
}
# the whole body: always `field: "body"`
BAD_BODIES: dict[str, tuple[bytes, str]] = {
    "nested-100000": (b'{"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
    "nested-65": (b'{"x": ' + b"[" * 64 + b"]" * 64 + b"}", "nested too deeply"),
    "not-utf8": (b'{"x": "caf\xe9"}', "UTF-8"),
    "lone-continuation-byte": (b'{"x": "\x80"}', "UTF-8"),
    "utf16": ('{"x": 1}'.encode("utf-16"), "UTF-8"),
    "nan-alone": (b"NaN", "NaN"),
    "array": (b"[{}]", "array"),
}


def _bad_requests(fields: list[str]) -> list[tuple[str, bytes, str, str]]:
    """(id, body, field, what the message says) of every bad body for an operation with these fields."""
    cases = []
    for name in fields:
        for value_id, (value, below, says) in BAD_VALUES.items():
            cases.append((f"{name}-{value_id}", f'{{"{name}": {value}}}'.encode(), f"{name}{below}", says))
        cases.append((f"{name}-twice", f'{{"{name}": 1, "{name}": 1}}'.encode(), name, "twice"))
    for body_id, (body, says) in BAD_BODIES.items():
        cases.append((body_id, body, "body", says))
    return cases


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_json_no_reader_can_hold_is_refused_and_nothing_is_stored(target: Server, world: World,
                                                                  operation: str) -> None:
    # Given the store as it is
    before = target.snapshot()
    wrong = []
    for case_id, body, field, says in _bad_requests(OPERATIONS[operation]):
        # When a body holding what no reader can hold is sent
        response = _request(target, world, operation, body)
        # Then a 400 in the §10 shape names where it is and what is wrong with it
        try:
            error = response.json()["error"]
            assert response.status_code == 400 and set(response.json()) == {"error"}
            assert error["code"] == "invalid" and error["field"] == field
            assert says in error["message"] and (field == "body" or field in error["message"])
        except (AssertionError, KeyError, ValueError, TypeError):
            wrong.append(f"{case_id}: {response.status_code} {response.text[:200]}")
    assert not wrong, "\n".join(wrong)
    # And nothing is stored
    assert target.snapshot() == before


def test_every_json_body_operation_is_covered(target: Server) -> None:
    # Given the OpenAPI document the server serves
    served = requests.get(target.url("/v1/openapi.json"), timeout=10).json()
    # Then the operations the tests send bad bodies to are its JSON-body operations, MCP and the tools among them
    assert json_body_operations(served) == OPERATIONS
    assert {"POST /v1/mcp", "POST /v1/agents/{agent}/tools/{tool}",
            "PUT /v1/memories/{memory}/entries/{name}", "POST /v1/agents/{agent}/conversations/{key}/messages"} \
        <= set(OPERATIONS)


def _append(target: Server, world: World, raw_result: str) -> requests.Response:
    body = '{"messages": [{"role": "tool_result", "tool_call_id": "t1", "result": ' + raw_result + "}]}"
    return _request(target, world, "POST /v1/agents/{agent}/conversations/{key}/messages", body.encode())


@pytest.mark.parametrize(("case_id", "raw", "value"), [
    ("integer-4300-digits", "9" * 4300, int("9" * 4300)),
    ("nested-64", "[" * 61 + "]" * 61, json.loads("[" * 61 + "]" * 61)),  # the body, messages and message: 3 more
    ("largest-float", "1.7976931348623157e308", 1.7976931348623157e308),
])
def test_json_at_the_limits_is_stored_and_read_back_whole(target: Server, world: World, case_id: str, raw: str,
                                                           value: Any) -> None:
    """The control: the limits are where the docs say, not lower, and the snapshot sees a change."""
    # Given the store as it is
    before = target.snapshot()
    # When a tool result at one of the limits is appended
    response = _append(target, world, raw)
    # Then it is stored, and read back as it was sent
    assert response.status_code == 201, response.text
    seq = response.json()["items"][0]["seq"]
    page = requests.get(target.url(f"/v1/agents/{world.agent}/conversations/c1/messages"),
                        params={"after": seq - 1, "limit": 1}, headers=auth(target.key), timeout=10)
    assert page.status_code == 200, page.text
    assert page.json()["items"][0]["result"] == value
    assert target.snapshot() != before
