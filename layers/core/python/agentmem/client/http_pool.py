"""The SDK's HTTP when nothing stands between it and the service: urllib3's connection pool, which ``requests``
is built on, without the session around it.

A ``requests`` call spends most of its CPU on the session's machinery (merging its settings into every call,
hooks, cookies, building a ``Response``): against ``agentmem serve`` an entry read took about 0.36 ms of the
caller's CPU through a session and 0.18 ms through the pool alone. The pool sends what a session sends (its
``Accept-Encoding``, ``Connection: keep-alive``, ``Content-Length: 0`` on a body-less write), verifies
certificates against the same bundle (``certifi``'s, or the environment's), follows no redirect, retries
nothing, and fails as it does (``Unreachable``; timed out when the answer did not come in time).
``HttpTransport`` uses it unless a proxy applies to the service's URL (``requests`` then speaks to the proxy,
HTTP or SOCKS alike) or a session of the caller's own is given.
"""

from __future__ import annotations

import os
from typing import Any

from .errors import Unreachable

_READ_ONLY = frozenset({"GET", "HEAD"})  # the methods a session sends without a Content-Length of 0


class DirectPool:
    """Keep-alive connections to one service, through urllib3 alone."""

    def __init__(self, base_url: str, timeout: float, bundle: str | None) -> None:
        import urllib3
        from requests.utils import DEFAULT_ACCEPT_ENCODING  # (what a session asks for, as it writes it)

        where: dict[str, Any]
        if bundle and os.path.isdir(bundle):
            where = {"ca_cert_dir": bundle}
        else:
            import certifi  # (requests' own bundle, which it verifies against when given none)

            where = {"ca_certs": bundle or certifi.where()}
        # requests' adapter: 10 connections kept per host, none waited for
        self._pool = urllib3.PoolManager(num_pools=10, maxsize=10, block=False, cert_reqs="CERT_REQUIRED", **where)
        self._timeout = urllib3.Timeout(connect=timeout, read=timeout)
        self._retries = urllib3.Retry(0, read=False, redirect=False)  # (requests' adapter: none)
        self._always = {"Accept-Encoding": DEFAULT_ACCEPT_ENCODING, "Connection": "keep-alive"}
        self.base_url = base_url
        self.timeout = timeout

    def request(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None
    ) -> tuple[int, dict[str, str], bytes]:
        """(status, headers with lower-cased names, body decoded as its Content-Encoding says)."""
        from urllib3.exceptions import HTTPError, MaxRetryError, ReadTimeoutError

        sent = {**self._always, **headers}
        if body is None and method not in _READ_ONLY:
            sent["Content-Length"] = "0"
        try:
            response = self._pool.request(method, url, body=body, headers=sent, redirect=False,
                                          retries=self._retries, timeout=self._timeout)
        except ReadTimeoutError as exc:
            raise Unreachable(self.base_url, f"no answer within {self.timeout:g}s", timed_out=True) from exc
        except MaxRetryError as exc:  # the first failure to connect (no retry): its reason says which
            raise Unreachable(self.base_url, str(exc.reason or exc)) from exc
        except (HTTPError, OSError) as exc:  # the connection lost before the whole answer came
            raise Unreachable(self.base_url, str(exc) or type(exc).__name__) from exc
        return response.status, {name.lower(): value for name, value in response.headers.itermerged()}, response.data

    def close(self) -> None:
        self._pool.clear()
