"""Requests first (agentmem/foreground.py): the local server counts a request while its handler works on it,
not while a client is still sending its body; and a summary pass running in the background of that process waits
while a request is handled, then finishes."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from agentmem import foreground
from agentmem.bootstrap import Container, build_container, ensure_default_account, set_container
from agentmem.foreground import FOREGROUND, in_background
from agentmem.local.http_guard import GuardedHTTPServer
from agentmem.local.server import make_server
from agentmem.settings import Settings
from functional_support import auth


@dataclass
class Served:
    container: Container
    httpd: GuardedHTTPServer
    key: str

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def call(self, method: str, path: str, body: Any = None) -> requests.Response:
        return requests.request(method, self.base_url + path, json=body, headers=auth(self.key), timeout=30)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    container = build_container(Settings(data_dir=tmp_path / "data", embedder="hashing"))
    key = ensure_default_account(container)
    assert key is not None
    httpd = make_server(container, port=0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield Served(container, httpd, key)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)
        set_container(None)


def test_the_server_counts_a_request_while_its_handler_works_on_it(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    handlers = served.httpd.RequestHandlerClass
    handler = handlers.handler  # type: ignore[attr-defined]
    seen: list[bool] = []

    def watching(event: Any, context: Any) -> Any:
        seen.append(FOREGROUND.busy())
        return handler(event, context)

    monkeypatch.setattr(handlers, "handler", staticmethod(watching))
    assert served.call("GET", "/v1/health").status_code == 200
    assert seen == [True]
    assert not FOREGROUND.busy()


def test_a_client_still_sending_its_body_holds_no_background_work_back(served: Served) -> None:
    assert served.call("PUT", "/v1/memories/notes", {}).status_code in (200, 201)
    key = served.key
    sock = socket.create_connection(("127.0.0.1", served.httpd.server_address[1]), timeout=10)
    try:
        body = json.dumps({"content": "a note sent slowly", "description": "Note"}).encode()
        sock.sendall(b"PUT /v1/memories/notes/entries/slow HTTP/1.1\r\nHost: localhost\r\n"
                     b"Authorization: Bearer " + key.encode() + b"\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body) + body[:5])
        time.sleep(0.3)
        assert not FOREGROUND.busy()  # the head and a few bytes are here; the handler has not started
        sock.sendall(body[5:])
        answer = sock.recv(4096)
        assert answer.split(b"\r\n", 1)[0] == b"HTTP/1.1 201 Created"
    finally:
        sock.close()


def test_a_summary_pass_in_the_background_waits_while_a_request_is_handled(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    container, key = served.container, served.key
    monkeypatch.setattr(foreground, "GIVE_WAY_S", 30.0)  # (however slow the machine, it waits for the request)
    assert served.call("PUT", "/v1/agents/helper", {}).status_code in (200, 201)
    # (short messages, under the threshold that starts a pass by itself: 20 of them leave the window)
    messages = [{"role": "user" if n % 2 == 0 else "assistant",
                 "content": "I moved to Lisbon last spring." if n == 0 else f"we talked about the garden, part {n}"}
                for n in range(40)]
    assert served.call("POST", "/v1/agents/helper/conversations/c1/messages?user=ana",
                       {"messages": messages}).status_code in (200, 201)
    job = _pass_job(container, key)
    done = threading.Event()
    outcome: dict[str, Any] = {}

    def background_pass() -> None:
        with in_background():
            outcome.update(container.summary_pass.run(job))
        done.set()

    with FOREGROUND.serving():  # a request is being handled
        thread = threading.Thread(target=background_pass)
        thread.start()
        assert not done.wait(0.5)  # the pass waits for it
    assert done.wait(30)  # then goes on, and finishes
    thread.join(10)
    assert outcome["results"]["write_checkpoint"]["covers_through_seq"] == 20
    assert "profile-location" in outcome["results"]["flush"]["saved"]


def _account(container: Container, key: str) -> str:
    return container.keys.authenticate(f"Bearer {key}").account_id


def _pass_job(container: Container, key: str) -> dict[str, Any]:
    return {"account": _account(container, key), "agent": "helper", "user": "ana", "conversation": "c1",
            "surface": "agent", "reason": "threshold"}
