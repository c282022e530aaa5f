"""The first mistakes a newcomer makes, each answered with what to do: a save into a memory never made, an
agent created twice (over HTTP with ``If-None-Match: *``, as the SDK and the CLI create)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agentmem.api.app import lambda_handler
from agentmem.bootstrap import build_container, ensure_default_account, set_container
from agentmem.client import Client, InProcessTransport, Memory, NotFound
from agentmem.local.events import build_rest_event
from agentmem.settings import Settings


@pytest.fixture
def key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    container = build_container(Settings(data_dir=tmp_path))
    secret = ensure_default_account(container)
    assert secret is not None
    set_container(container)
    yield secret
    set_container(None)


def _http(key: str, method: str, path: str, body: Any = None, **headers: str) -> tuple[int, dict[str, Any]]:
    event = build_rest_event(method, path, headers={"Authorization": f"Bearer {key}", **headers},
                             body=None if body is None else json.dumps(body).encode())
    answer = lambda_handler(event, None)
    return answer["statusCode"], json.loads(answer["body"]) if answer.get("body") else {}


def test_a_save_into_a_memory_never_made_says_how_to_make_it(key: str) -> None:
    # When an entry is saved into a memory nobody created, over HTTP
    status, body = _http(key, "PUT", "/v1/memories/company/entries/refunds", {"content": "Refund within 30 days."})
    # Then 404, and the message says how to create it, over HTTP, in the SDK and in the shell
    assert status == 404 and body["error"]["code"] == "not_found"
    assert body["error"]["message"] == (
        "no memory named 'company': create it first with PUT /v1/memories/company (Memory.create('company') in "
        "the SDK, `agentmem memories create company`)")
    # and the SDK's NotFound carries the same
    client = Client("http://in-process", key, transport=InProcessTransport(lambda_handler))
    with pytest.raises(NotFound, match=r"create it first with PUT /v1/memories/company"):
        Memory("company", client=client).save("refunds", "Refund within 30 days.", description="Refunds")
    # and once made as it says, the same save lands
    assert _http(key, "PUT", "/v1/memories/company")[0] == 201
    saved = _http(key, "PUT", "/v1/memories/company/entries/refunds",
                  {"content": "Refund within 30 days.", "description": "Refunds"})
    assert saved[0] == 201, saved


def test_reading_a_memory_never_made_is_a_plain_404(key: str) -> None:
    # a read is not a write: nothing to create, the message stays short
    status, body = _http(key, "GET", "/v1/memories/company/entries/refunds")
    assert (status, body["error"]["message"]) == (404, "no memory named 'company'")


def test_creating_an_agent_that_exists_over_http_says_it_exists(key: str) -> None:
    # Given an agent
    assert _http(key, "PUT", "/v1/agents/support", {"instructions": "v1"})[0] == 201
    # When it is created again over HTTP, create-only (If-None-Match: *)
    status, body = _http(key, "PUT", "/v1/agents/support", {"instructions": "v2"}, **{"If-None-Match": "*"})
    # Then 412 that says it exists, with its version, and nothing changed
    assert status == 412
    assert body["error"] == {"code": "precondition_failed", "message": "agent 'support' already exists (version 1)",
                             "current_version": 1}
    assert _http(key, "GET", "/v1/agents/support")[1]["instructions"] == "v1"
