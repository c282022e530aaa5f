"""A small OpenAI-compatible Chat Completions server on 127.0.0.1 for tests and benchmarks: it checks what a
real one would (the path, the bearer token, a JSON body with a model and a system and a user message) and
answers like ``/v1/chat/completions``.

By default it answers what a model keeping the rules would: the extractive summary of the prompt's previous
summary and new messages (read back from the transcript rows the prompt holds), so a pass through it writes
a real summary. ``lossy=True`` answers a deliberately poor summary instead: the sections with only the last
two rows as recent topics (the adapter's own rules must put the remembered items back). A test can queue
what the next requests get instead: ``("status", 429, headers)``, ``("status", 500)``, ``("garbage",)``
(a 200 that is not JSON), ``("text", "...")`` (a 200 whose message is this text), ``("shape", {...})`` (a 200
with this JSON), ``("slow", seconds)`` (a summary, after a delay).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentmem.domain.conversations import Message
from agentmem.domain.summary import ExtractiveSummariser

_ROW = re.compile(r"^\[(\d+)\] (user|assistant|tool call [^:]*|tool result [^:]*): ?(.*)$")


def messages_of(prompt: str) -> tuple[str | None, list[Message]]:
    """The previous summary and the messages a summary prompt holds (rows read back from its transcript)."""
    before = prompt.split("<previous_summary>\n", 1)[1].split("\n</previous_summary>", 1)[0]
    rows = prompt.split("<new_messages>\n", 1)[1].split("\n</new_messages>", 1)[0]
    messages: list[Message] = []
    for line in rows.splitlines():
        found = _ROW.match(line)
        if found is None and messages:  # a row's text over several lines
            last = messages[-1]
            messages[-1] = Message(last.seq, last.turn, last.role, last.content + "\n" + line, last.created_at)
            continue
        if found is None:
            continue
        seq, who, text = int(found[1]), found[2], found[3]
        role = "tool_result" if who.startswith("tool result") else "tool_call" if who.startswith("tool call") else who
        messages.append(Message(seq, seq, role, text, "2026-01-01T00:00:00Z"))  # type: ignore[arg-type]
    return (None if before == "(none yet)" else before), messages


@dataclass
class FakeChatAPI:
    api_key: str | None = None
    lossy: bool = False
    script: list[tuple[Any, ...]] = field(default_factory=list)
    seen: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def next_step(self) -> tuple[Any, ...]:
        with self.lock:
            return self.script.pop(0) if self.script else ("ok",)

    def summary(self, body: dict[str, Any]) -> str:
        previous, messages = messages_of(body["messages"][-1]["content"])
        if self.lossy:
            topics = "\n".join(f"- {m.content[:80]}" for m in messages[-2:]) or "(none)"
            return ("# Conversation summary\n\n## Remembered\n(none)\n\n## Facts\n(none)\n\n## Decisions\n(none)\n\n"
                    f"## Open questions\n(none)\n\n## Recent topics\n{topics}")
        return ExtractiveSummariser().summarise(previous, messages)


def completion(text: str) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


class _Handler(BaseHTTPRequestHandler):
    server: Any

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _answer(self, status: int, body: bytes | str | dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode() if isinstance(body, dict) else body.encode() if isinstance(body, str) else body
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout)
            pass

    def do_POST(self) -> None:
        api: FakeChatAPI = self.server.api
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path != "/v1/chat/completions":
            return self._answer(404, {"error": {"message": f"no route {self.path}"}})
        if api.api_key and self.headers.get("Authorization") != f"Bearer {api.api_key}":
            return self._answer(401, {"error": {"message": "Incorrect API key provided"}})
        try:
            body = json.loads(raw)
            roles = [m["role"] for m in body["messages"]]
            assert isinstance(body["model"], str) and roles == ["system", "user"]
        except (ValueError, KeyError, TypeError, AssertionError):
            return self._answer(400, {"error": {"message": "invalid request"}})
        with api.lock:
            api.seen.append(body)
        step = api.next_step()
        if step[0] == "status":
            return self._answer(step[1], {"error": {"message": "scripted"}}, step[2] if len(step) > 2 else None)
        if step[0] == "garbage":
            return self._answer(200, b"<html>not json</html>")
        if step[0] == "shape":
            return self._answer(200, step[1])
        if step[0] == "text":
            return self._answer(200, completion(step[1]))
        if step[0] == "slow":
            time.sleep(step[1])
        return self._answer(200, completion(api.summary(body)))


@contextmanager
def serve_chat_api(api: FakeChatAPI | None = None) -> Iterator[FakeChatAPI]:
    """The server on a free port for the block; ``api.url`` is its base URL (``…/v1``)."""
    api = api or FakeChatAPI()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.api = api  # type: ignore[attr-defined]
    api.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
