"""How the SDK reaches the service: over HTTP, or straight into the Lambda handler in-process.

A ``Transport`` takes one request (method, path already percent-encoded, query
parameters, headers, body) and returns the raw response; it never interprets
statuses. The ``Client`` turns error statuses into typed errors.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote, urlencode

from .errors import Unreachable

if TYPE_CHECKING:
    import requests

    from .http_pool import DirectPool


def segment(value: str) -> str:
    """One path segment, percent-encoded (``agent:support`` → ``agent%3Asupport``)."""
    return quote(value, safe="")


@dataclass(frozen=True)
class TransportResponse:
    """A raw response: status, headers (keys lower-cased) and body bytes."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def __post_init__(self) -> None:
        if any(key != key.lower() for key in self.headers):
            object.__setattr__(self, "headers", {k.lower(): v for k, v in self.headers.items()})

    def json(self) -> Any:
        """The body parsed as JSON (``None`` for an empty body)."""
        return json.loads(self.body.decode("utf-8")) if self.body else None


class Transport(Protocol):
    """Sends one request and returns the raw response."""

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None,
        headers: dict[str, str],
        body: bytes | None,
    ) -> TransportResponse: ...


class HttpTransport:
    """HTTP with connections kept alive between calls: through urllib3's pool alone when nothing stands
    between the SDK and the service (``http_pool.DirectPool``: half the caller's CPU of a ``requests`` call),
    through a ``requests.Session`` when a proxy applies to the service's URL, or when one is given.

    The environment is read once, here: the proxy for the service's URL (``HTTPS_PROXY``, ``HTTP_PROXY``,
    ``ALL_PROXY``, with ``NO_PROXY``) and the CA bundle (``REQUESTS_CA_BUNDLE``, ``CURL_CA_BUNDLE``). ``requests``
    would otherwise read them again on every call (``trust_env``: about 0.2 ms of the caller's CPU a call, more
    than the local server takes to answer an entry read), and would look the host up in ``~/.netrc`` each time,
    whose entry for it would replace the key's ``Authorization`` header with a Basic one. A session given to
    it is used as it is."""

    def __init__(
        self, base_url: str, timeout: float = 30.0, *, session: requests.Session | None = None
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._pool: DirectPool | None = None
        if session is None:
            session, self._pool = _connections_for(self.base_url, timeout)
        self._session = session

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None,
        headers: dict[str, str],
        body: bytes | None,
    ) -> TransportResponse:
        if self._pool is not None:
            url = self.base_url + path + ("?" + urlencode(params) if params else "")
            return TransportResponse(*self._pool.request(method, url, headers, body))
        import requests

        assert self._session is not None
        try:
            response = self._session.request(
                method,
                self.base_url + path,
                params=params,
                headers=headers,
                data=body,
                timeout=self.timeout,
                allow_redirects=False,
            )
        except requests.ConnectionError as exc:  # includes ConnectTimeout
            raise Unreachable(self.base_url, str(exc) or type(exc).__name__) from exc
        except requests.Timeout as exc:
            raise Unreachable(self.base_url, f"no answer within {self.timeout:g}s", timed_out=True) from exc
        return TransportResponse(
            response.status_code,
            {key.lower(): value for key, value in response.headers.items()},
            response.content,
        )

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
        if self._session is not None:
            self._session.close()


def _connections_for(base_url: str, timeout: float) -> tuple[requests.Session | None, DirectPool | None]:
    """What reaches ``base_url``, the environment read once (see ``HttpTransport``): urllib3's pool when no
    proxy applies to an http(s) URL, else a session that reads the environment no more."""
    import os
    from urllib.parse import urlsplit

    from requests.utils import get_environ_proxies  # imported here: importing the SDK stays cheap

    bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
    proxies = get_environ_proxies(base_url)  # {} when NO_PROXY covers the URL
    scheme = urlsplit(base_url).scheme.lower()
    if scheme in ("http", "https") and not (proxies.get(scheme) or proxies.get("all")):
        from .http_pool import DirectPool

        return None, DirectPool(base_url, timeout, bundle)
    import requests

    session = requests.Session()
    session.trust_env = False
    session.proxies.update(proxies)
    if bundle:
        session.verify = bundle
    return session, None


@dataclass
class LocalLambdaContext:
    """Enough of a Lambda context object for handlers (and Powertools) run in-process."""

    function_name: str = "agentmem-api"
    function_version: str = "$LATEST"
    invoked_function_arn: str = "arn:aws:lambda:local:000000000000:function:agentmem-api"
    memory_limit_in_mb: int = 1024
    aws_request_id: str = "local"
    log_group_name: str = "/aws/lambda/agentmem-api"
    log_stream_name: str = "local"

    def get_remaining_time_in_millis(self) -> int:
        return 900_000


LambdaHandler = Callable[[dict[str, Any], Any], Mapping[str, Any]]


class InProcessTransport:
    """Calls the API's Lambda handler directly with an API Gateway REST event: no socket, same code."""

    def __init__(self, handler: LambdaHandler, *, context: object | None = None) -> None:
        self._handler = handler
        self._context = context if context is not None else LocalLambdaContext()

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None,
        headers: dict[str, str],
        body: bytes | None,
    ) -> TransportResponse:
        from agentmem.local.events import build_rest_event, decode_lambda_response

        if path.startswith("/v1/links/"):  # a workspace link: served beside the API, as `agentmem serve` does
            return self._link(method, path, params, headers, body)
        event = build_rest_event(method, path, urlencode(params or {}), headers, body)
        result = self._handler(event, self._context)
        status, pairs, raw = decode_lambda_response(result)
        merged: dict[str, str] = {}
        for key, value in pairs:
            name = key.lower()
            merged[name] = f"{merged[name]}, {value}" if name in merged else value
        return TransportResponse(status, merged, raw)

    @staticmethod
    def _link(
        method: str, path: str, params: dict[str, str] | None, headers: dict[str, str], body: bytes | None
    ) -> TransportResponse:
        from agentmem.bootstrap import get_container
        from agentmem.local.links import serve_link_bytes
        from agentmem.local.server import link_store

        target = f"{path}?{urlencode(params)}" if params else path
        status, answer_headers, payload = serve_link_bytes(
            link_store(get_container()), method, target, headers, body
        )
        return TransportResponse(status, answer_headers, payload)
