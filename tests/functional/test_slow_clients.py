"""``agentmem serve`` at its default settings against clients that would hold its connections: many
connections without a key, each declaring an 8 MB (or 900 KB) body and trickling it a byte every 4 s, all from one
address (127.0.0.2, on loopback), while another client (127.0.0.1) asks ``/v1/health``; and a client with a
key sending a large body at a slow but steady pace."""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest
import requests
from functional_support import Server, auth, running_server

ATTACKER = "127.0.0.2"  # loopback, another address than the health checks'
ATTACK_CONNECTIONS = 600
ATTACK_S = 16.0
TRICKLE_EVERY_S = 4.0
DECLARED = (8_388_608, 900_000)  # bytes: what the server reads at most (over the API's 1 MB), and under it
PROBES = 20
PROBE_EVERY_S = 0.75


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data_dir = tmp_path_factory.mktemp("slow-clients") / "data"
    with running_server(data_dir, workers=2, AGENTMEM_EMBEDDER="hashing") as (base_url, _proc, log):
        yield Server(base_url=base_url, key=(data_dir / "dev-key").read_text().strip(), data_dir=data_dir, log=log)


class Attack:
    """``ATTACK_CONNECTIONS`` connections from ``ATTACKER``, each sending a keyless request head that declares an
    8 MB body (or one of 900 KB), then a byte of it every ``TRICKLE_EVERY_S``; a connection the server closes is
    opened again, until ``stop``. What the server answered them is counted by status."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.heads = [b"PUT /v1/memories/m/entries/e HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % length for length in DECLARED]
        self.answers: Counter[str] = Counter()
        self.opened = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="attack", daemon=True)

    def __enter__(self) -> Attack:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.thread.join(30)

    def _open(self, selector: selectors.BaseSelector) -> None:
        sock = socket.socket()
        sock.bind((ATTACKER, 0))
        sock.settimeout(2)
        try:
            sock.connect(("127.0.0.1", self.port))
            sock.sendall(self.heads[self.opened % len(self.heads)])
        except OSError:
            sock.close()
            self.answers["refused to connect"] += 1
            return
        sock.setblocking(False)
        self.opened += 1
        selector.register(sock, selectors.EVENT_READ, time.monotonic())

    def _run(self) -> None:
        selector = selectors.DefaultSelector()
        try:
            while not self.stopping.is_set():
                while len(selector.get_map()) < ATTACK_CONNECTIONS and not self.stopping.is_set():
                    self._open(selector)
                for key, _ in selector.select(0.2):
                    self._read(selector, key.fileobj)  # type: ignore[arg-type]
                now = time.monotonic()
                for key in list(selector.get_map().values()):
                    if now - key.data >= TRICKLE_EVERY_S:
                        try:
                            key.fileobj.send(b"x")  # type: ignore[union-attr]
                            selector.modify(key.fileobj, selectors.EVENT_READ, now)
                        except OSError:
                            self._close(selector, key.fileobj)  # type: ignore[arg-type]
        finally:
            for key in list(selector.get_map().values()):
                self._close(selector, key.fileobj)  # type: ignore[arg-type]
            selector.close()

    def _read(self, selector: selectors.BaseSelector, sock: socket.socket) -> None:
        try:
            received = sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            received = b""
        if received.startswith(b"HTTP/1.1 "):
            self.answers[received[9:12].decode()] += 1
        elif not received:
            self.answers["closed"] += 1
        self._close(selector, sock)

    @staticmethod
    def _close(selector: selectors.BaseSelector, sock: socket.socket) -> None:
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(sock)
        sock.close()


def _probe(base_url: str) -> str:
    try:
        return str(requests.get(f"{base_url}/v1/health", headers={"Connection": "close"}, timeout=5).status_code)
    except requests.RequestException as error:
        return type(error).__name__


def test_keyless_slow_bodies_from_one_address_leave_health_checks_answered(server: Server) -> None:
    # Given the attack going on for a while: 600 connections without a key from one address, each trickling
    # an 8 MB body a byte every 4 s, each opened again once the server closes it
    port = int(server.base_url.rsplit(":", 1)[1])
    with Attack(port) as attack:
        time.sleep(2.0)
        # When another client asks /v1/health 20 times over the next 15 s
        probes = []
        for _ in range(PROBES):
            probes.append(_probe(server.base_url))
            time.sleep(PROBE_EVERY_S)
        remaining = ATTACK_S - 2.0 - PROBES * PROBE_EVERY_S
        if remaining > 0:
            time.sleep(remaining)
    # Then every health check was answered 200
    assert Counter(probes) == Counter({"200": PROBES}), (probes, attack.answers)
    # And the attacker's requests were refused without their bodies (401: no key; 413: over the API's 1 MB), or
    # its connections told the address has its share (503), or closed over that
    assert attack.opened >= ATTACK_CONNECTIONS
    assert attack.answers["401"] > 0 and attack.answers["413"] > 0, attack.answers
    # (a connection the kernel refused, its backlog full, is the attacker's loss too)
    assert set(attack.answers) <= {"401", "413", "503", "closed", "refused to connect"}, attack.answers
    print(f"\nhealth: {Counter(probes)}; attacker: {attack.opened} connections, answers {dict(attack.answers)}")


def test_a_keyed_client_sending_a_large_body_slowly_but_steadily_is_served(server: Server) -> None:
    # Given a 240 KB workspace file sent at 24 KB a second (a slow link), longer than the floor rate's 10 s window
    made = requests.put(f"{server.base_url}/v1/agents/uploader", headers=auth(server.key), json={}, timeout=10)
    assert made.status_code == 201
    target = "/v1/agents/uploader/conversations/c1/workspace/files/slow.bin"
    body = bytes(range(256)) * 940
    port = int(server.base_url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        # When it is sent with its length, 2,400 bytes every 0.1 s
        sock.sendall(f"PUT {target} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {server.key}\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode())
        for start in range(0, len(body), 2_400):
            sock.sendall(body[start:start + 2_400])
            time.sleep(0.1)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    # Then it is stored whole
    assert answer.startswith((b"HTTP/1.1 200", b"HTTP/1.1 201")), answer[:300]
    read_back = requests.get(f"{server.base_url}{target}", headers=auth(server.key), timeout=10)
    assert read_back.content == body
