"""Talking to chosen workers of ``agentmem serve --workers N``: which worker process answers a connection is
read from ``/proc`` (the server-side socket of the connection, found in ``/proc/net/tcp``, is among that
worker's open files), so a test can save through one worker and read through another, with nothing in the
API saying which worker answered."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from functional_support import Server


@dataclass(frozen=True)
class Workers:
    """A running ``agentmem serve --workers N``."""

    server: Server
    process: subprocess.Popen[bytes]  # the supervisor


def worker_pids(supervisor: int) -> set[int]:
    """The processes whose parent is ``supervisor``: its workers."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # after "pid (command)": state, ppid, ...
        if int(fields[1]) == supervisor:
            pids.add(int(entry.name))
    return pids


def wait_for_workers(supervisor: int, count: int, *, other_than: frozenset[int] | set[int] = frozenset(),
                     timeout: float = 30.0) -> set[int]:
    """The supervisor's workers once there are ``count`` of them (none of ``other_than``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = worker_pids(supervisor)
        if len(pids) == count and not pids & other_than:
            return pids
        time.sleep(0.05)
    raise AssertionError(f"the server did not have {count} workers in {timeout} s: {worker_pids(supervisor)}")


def _socket_inode(server_port: int, client_port: int) -> str | None:
    """The inode of the server's end of the connection from ``client_port`` (IPv4 loopback)."""
    local, remote = f":{server_port:04X}", f":{client_port:04X}"
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1].endswith(local) and fields[2].endswith(remote) and fields[3] == "01":  # ESTABLISHED
            return fields[9]
    return None


def serving_pid(pids: set[int], server_port: int, client_port: int) -> int | None:
    """Which of ``pids`` holds the server's end of the connection from ``client_port``."""
    inode = _socket_inode(server_port, client_port)
    if inode is None:
        return None
    target = f"socket:[{inode}]"
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    return pid
            except OSError:
                continue
    return None


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: Any


class Connection:
    """One kept-alive connection to the server (so every request on it reaches the same worker)."""

    def __init__(self, base_url: str, key: str) -> None:
        url = urlsplit(base_url)
        self.host, self.port = url.hostname or "127.0.0.1", int(url.port or 80)
        self.key = key
        self.http = http.client.HTTPConnection(self.host, self.port, timeout=60)
        self.http.connect()
        self.client_port = int(self.http.sock.getsockname()[1])

    def request(self, method: str, path: str, body: Any = None, *, key: str | None = None) -> Answer:
        headers = {"Authorization": f"Bearer {key or self.key}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        self.http.request(method, path, body=data, headers=headers)
        response = self.http.getresponse()
        raw = response.read()
        parsed = json.loads(raw) if raw and "json" in (response.getheader("Content-Type") or "") else raw
        return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, parsed)

    def close(self) -> None:
        self.http.close()


def connections_by_worker(base_url: str, key: str, supervisor: int, *, each: int = 1,
                          timeout: float = 30.0) -> dict[int, list[Connection]]:
    """``each`` connections answered by every worker, by worker pid (the others are closed). A worker just
    started answers once it has built its container: until then the others take every connection."""
    pids = worker_pids(supervisor)
    found: dict[int, list[Connection]] = {pid: [] for pid in pids}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(len(held) >= each for held in found.values()):
            return found
        conn = Connection(base_url, key)
        assert conn.request("GET", "/v1/health").status == 200  # accepted (and answered) by one worker
        pid = serving_pid(pids, conn.port, conn.client_port)
        if pid is not None and len(found[pid]) < each:
            found[pid].append(conn)
        else:
            conn.close()
    raise AssertionError(f"connections did not reach every worker: {({p: len(c) for p, c in found.items()})}")


@contextmanager
def slow_summariser(delay_s: float) -> Iterator[str]:
    """An OpenAI-compatible chat completions endpoint that answers a summary after ``delay_s``; its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            time.sleep(delay_s)
            body = json.dumps({"choices": [{"message": {"role": "assistant", "content": "- The customer asked."}}]})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
