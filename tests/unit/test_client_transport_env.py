"""The SDK's HTTP transport reads its environment once, when it is made: the proxy for the service's URL and
the CA bundle. Never ``~/.netrc``: an entry there for the service's host must not replace the key."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from agentmem.client.transport import HttpTransport


class Recording(ThreadingHTTPServer):
    """Answers every GET with ``{}`` and keeps what it was asked: (request line target, Authorization)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: Recording

    def do_GET(self) -> None:
        self.server.seen.append((self.path, self.headers.get("Authorization")))
        body = json.dumps({}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def servers() -> Iterator[tuple[Recording, Recording]]:
    """The service, and an HTTP proxy (which answers in the service's place and records the absolute URL)."""
    service, proxy = Recording(), Recording()
    for each in (service, proxy):
        threading.Thread(target=each.serve_forever, daemon=True).start()
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


def test_a_ca_bundle_of_the_environment_is_the_one_verified_against(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a CA bundle named in the environment
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/etc/company-ca.pem")
    # When a transport is made, then its session verifies against it; without one, against requests' own
    assert HttpTransport("https://memory.example.com")._session.verify == "/etc/company-ca.pem"
    monkeypatch.delenv("REQUESTS_CA_BUNDLE")
    assert HttpTransport("https://memory.example.com")._session.verify is True
