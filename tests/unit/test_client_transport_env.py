"""The SDK's HTTP transport: urllib3's pool alone when nothing stands between it and the service, a
``requests`` session through a proxy; either way its environment is read once, when it is made (the proxy for
the service's URL, the CA bundle), never ``~/.netrc`` (an entry there for the service's host must not replace
the key), and what the service sees and answers is what a ``requests`` session sends and gets."""

from __future__ import annotations

import datetime as dt
import gzip
import ipaddress
import json
import socket
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
from agentmem.client.errors import Unreachable
from agentmem.client.transport import HttpTransport
from serving import free_port  # tests/support, on sys.path through tests/conftest.py


class Recording(ThreadingHTTPServer):
    """Answers every request with ``{"ok": true}`` (gzipped when the path ends in ``/gzip``, with a header sent
    twice) and keeps what it was asked: (request line target, Authorization), and each request whole."""

    daemon_threads, block_on_close = True, False  # (a kept-alive connection does not hold the test's end)

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []
        self.requests: list[dict[str, Any]] = []
        self.scheme = "http"
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: Recording
    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        sent = self.rfile.read(length) if length else b""
        self.server.seen.append((self.path, self.headers.get("Authorization")))
        self.server.requests.append({"method": self.command, "target": self.path, "body": sent,
                                     "headers": {k.lower(): v for k, v in self.headers.items()}})
        body = json.dumps({"ok": True}).encode()
        zipped = self.path.endswith("/gzip")
        if zipped:
            body = gzip.compress(body)
        self.send_response(201 if self.command == "PUT" else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Twice", "a")
        self.send_header("X-Twice", "b")
        if zipped:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_PUT = do_POST = do_DELETE = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def servers() -> Iterator[tuple[Recording, Recording]]:
    """The service, and an HTTP proxy (which answers in the service's place and records the absolute URL)."""
    service, proxy = Recording(), Recording()
    for each in (service, proxy):
        threading.Thread(target=each.serve_forever, args=(0.05,), daemon=True).start()
    yield service, proxy
    for each in (service, proxy):
        each.shutdown()
        each.server_close()


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy",
                 "no_proxy", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NETRC"):
        monkeypatch.delenv(name, raising=False)


def get(transport: HttpTransport) -> int:
    return transport.request("GET", "/v1/health", params=None, headers={"Authorization": "Bearer am_key"},
                             body=None).status


def test_a_netrc_entry_for_the_host_never_replaces_the_key(
    servers: tuple[Recording, Recording], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service, _ = servers
    # Given a ~/.netrc with a login for the service's host
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password secret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    # When the SDK calls the service
    assert get(HttpTransport(service.url)) == 200
    # Then the request carries the key, not the login
    assert service.seen == [("/v1/health", "Bearer am_key")]


def test_the_proxy_is_the_one_of_the_environment_the_transport_was_made_in(
    servers: tuple[Recording, Recording], monkeypatch: pytest.MonkeyPatch
) -> None:
    service, proxy = servers
    # Given a proxy in the environment when the transport is made
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    through_proxy = HttpTransport(service.url)
    # and another transport made once NO_PROXY covers the service's host
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    direct = HttpTransport(service.url)
    # When the environment changes after both were made
    monkeypatch.delenv("HTTP_PROXY")
    monkeypatch.delenv("NO_PROXY")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # (nothing listens there)
    # Then each sends as its environment said when it was made
    assert get(through_proxy) == 200 and get(direct) == 200
    assert proxy.seen == [(service.url + "/v1/health", "Bearer am_key")]
    assert service.seen == [("/v1/health", "Bearer am_key")]


def test_a_ca_bundle_of_the_environment_is_the_one_verified_against(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a service on HTTPS whose certificate no public authority signed, and a bundle that holds it
    cert, key = _self_signed(tmp_path)
    service = Recording()
    service.scheme = "https"
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    service.socket = context.wrap_socket(service.socket, server_side=True)
    threading.Thread(target=service.serve_forever, daemon=True).start()
    try:
        # When a transport is made with the bundle named in the environment, then it reaches the service
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(cert))
        assert get(HttpTransport(service.url)) == 200
        # And one made without it does not (requests' own bundle does not hold the certificate)
        monkeypatch.delenv("REQUESTS_CA_BUNDLE")
        with pytest.raises(Unreachable, match=r"CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
            get(HttpTransport(service.url))
    finally:
        service.shutdown()
        service.server_close()


def _self_signed(where: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "agentmem test")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = where / "cert.pem", where / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


CALLS = [
    ("GET", "/v1/memories/agent%3Asupport/entries/refunds", {"user": "u 1", "version": "2"}, None),
    ("PUT", "/v1/memories/kb/entries/refunds", None, b'{"content": "30 days"}'),
    ("POST", "/v1/memories/kb/restore", None, None),
    ("DELETE", "/v1/memories/kb/entries/refunds", {"version": "3"}, None),
    ("GET", "/v1/health/gzip", None, None),
]


@pytest.mark.parametrize(("method", "path", "params", "body"), CALLS)
def test_the_service_sees_and_answers_what_a_requests_session_sends_and_gets(
    servers: tuple[Recording, Recording], method: str, path: str, params: dict[str, str] | None,
    body: bytes | None,
) -> None:
    service, _ = servers
    headers = {"Accept": "application/json", "User-Agent": "agentmem-python/test", "Authorization": "Bearer k"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    plain = requests.Session()
    plain.trust_env = False
    answers = []
    # When the same call goes through the transport (urllib3's pool) and through a plain requests session
    for transport in (HttpTransport(service.url), HttpTransport(service.url, session=plain)):
        answer = transport.request(method, path, params=params, headers=dict(headers), body=body)
        answers.append((answer.status, {k: v for k, v in answer.headers.items() if k != "date"}, answer.body))
    # Then the service saw the same request, byte for byte where it counts, and the answers read the same
    direct, through_requests = service.requests
    assert direct == through_requests
    assert answers[0] == answers[1]
    assert answers[0][2] == b'{"ok": true}' and answers[0][1]["x-twice"] == "a, b"


def test_a_refused_connection_and_a_late_answer_are_unreachable(servers: tuple[Recording, Recording]) -> None:
    # Given a port nothing listens on, and a service that accepts but never answers
    port = free_port()
    with pytest.raises(Unreachable) as refused:
        get(HttpTransport(f"http://127.0.0.1:{port}"))
    assert not refused.value.timed_out and refused.value.url == f"http://127.0.0.1:{port}"
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        with pytest.raises(Unreachable) as late:
            get(HttpTransport(f"http://127.0.0.1:{silent.getsockname()[1]}", 0.3))
    assert late.value.timed_out and "no answer within 0.3s" in str(late.value)
