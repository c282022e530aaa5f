"""Requests first (agentmem/foreground.py): the local server counts a request while its handler works on it,
not while a client is still sending its body; and a summary pass running in the background of that process waits
while a request is handled, then finishes."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agentmem import foreground
from agentmem.bootstrap import Container, build_container, ensure_default_account, set_container
from agentmem.foreground import FOREGROUND, in_background
from agentmem.local.server import make_server
from agentmem.settings import Settings


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Container, int, str]]:
    container = build_container(Settings(data_dir=tmp_path / "data", embedder="hashing"))
    key = ensure_default_account(container)
    assert key is not None
    httpd = make_server(container, port=0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield container, int(httpd.server_address[1]), key
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)
        set_container(None)


def _call(port: int, key: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        payload = None if body is None else json.dumps(body).encode()
        connection.request(method, path, body=payload, headers={"Authorization": f"Bearer {key}",
                                                                 "Content-Type": "application/json"})
        answer = connection.getresponse()
        data = answer.read()
        return answer.status, json.loads(data) if data else None
    finally:
        connection.close()


def test_the_server_counts_a_request_while_its_handler_works_on_it(
    served: tuple[Container, int, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, port, key = served
    from agentmem.api import app

    seen: list[bool] = []
    handler = app.lambda_handler

    def watching(event: Any, context: Any) -> Any:
        seen.append(FOREGROUND.busy())
        return handler(event, context)

    monkeypatch.setattr(app, "lambda_handler", watching)
    # (the server bound the handler when it was made: the bound class calls it through its attribute)
    import agentmem.local.server as server_module

    bound = [c for c in server_module.ApiRequestHandler.__subclasses__() if getattr(c, "handler", None) is handler]
    assert bound
    for cls in bound:
        monkeypatch.setattr(cls, "handler", staticmethod(watching))
    status, _ = _call(port, key, "GET", "/v1/health")
    assert status == 200
    assert seen == [True]
    assert not FOREGROUND.busy()


def test_a_client_still_sending_its_body_holds_no_background_work_back(served: tuple[Container, int, str]) -> None:
    _, port, key = served
    assert _call(port, key, "PUT", "/v1/memories/notes", {})[0] in (200, 201)
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
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
    served: tuple[Container, int, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    container, port, key = served
    monkeypatch.setattr(foreground, "GIVE_WAY_S", 30.0)  # (however slow the machine, it waits for the request)
    assert _call(port, key, "PUT", "/v1/agents/helper", {})[0] in (200, 201)
    # (short messages, under the threshold that starts a pass by itself: 20 of them leave the window)
    messages = [{"role": "user" if n % 2 == 0 else "assistant",
                 "content": "I moved to Lisbon last spring." if n == 0 else f"we talked about the garden, part {n}"}
                for n in range(40)]
    assert _call(port, key, "POST", "/v1/agents/helper/conversations/c1/messages?user=ana",
                 {"messages": messages})[0] in (200, 201)
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
