"""The request rules of the SDK, written once for the sync ``Client`` and the ``AsyncClient``: what a call sends
(URL, query, headers, body), what an answer means (a typed error, or the model it parses into), how a list is
walked page by page (cursors), and when a call that got no answer is sent again (retries and their waits).

Everything here is pure: no I/O, no sleeping. A client sends the ``Prepared`` request through its transport
(blocking or awaited), hands the answer to ``checked``, and parses it with the ``Op``'s parser; a walk over a list
asks a ``CursorWalk`` what to fetch next; a retry loop asks a ``RetryPolicy`` how long to wait, or to give up.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .errors import AgentmemError, ConfigurationError, RateLimited, ServerError, Unreachable, error_from_response
from .models import Found, Page
from .transport import TransportResponse

T = TypeVar("T")
ParamValue = str | float | bool | None

ENV_API_KEY = "AGENTMEM_API_KEY"
API_PREFIX = "/v1"
MAX_PAGE_SIZE = 100
USER_AGENT = "agentmem-python"


def query_value(value: str | float | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class Call:
    """One request as a handle states it: ``path`` under ``/v1`` (segments already encoded); ``params`` whose
    value is ``None`` are left out; ``body`` is sent as JSON unless ``None``; ``content`` as raw bytes."""

    method: str
    path: str
    params: Mapping[str, ParamValue] | None = None
    body: Any = None
    headers: Mapping[str, str] | None = None
    auth: bool = True
    content: bytes | None = None


@dataclass(frozen=True)
class Prepared:
    """What a transport sends: method, full path, query (or ``None``), headers and body bytes."""

    method: str
    path: str
    params: dict[str, str] | None
    headers: dict[str, str]
    body: bytes | None


def prepare(call: Call, api_key: str | None) -> Prepared:
    """The request for ``call``, with the key's ``Authorization`` (``ConfigurationError`` without a key)."""
    headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
    if call.auth:
        if not api_key:
            raise ConfigurationError(
                f"no API key: pass api_key= to Client or set {ENV_API_KEY} "
                f"(an account key is printed by `agentmem serve`)"
            )
        headers["Authorization"] = f"Bearer {api_key}"
    payload: bytes | None = None
    if call.body is not None:
        payload = json.dumps(call.body).encode("utf-8")
        headers["Content-Type"] = "application/json"
    elif call.content is not None:
        payload = call.content
        headers["Content-Type"] = "application/octet-stream"
    headers.update(call.headers or {})
    query = {key: query_value(value) for key, value in (call.params or {}).items() if value is not None}
    return Prepared(call.method.upper(), API_PREFIX + call.path, query or None, headers, payload)


def checked(response: TransportResponse) -> TransportResponse:
    """The answer, or its typed error (``NotFound``, ``Conflict``, ... ``ServerError``) raised."""
    if response.status >= 400:
        raise error_from_response(response.status, response.headers, response.body)
    return response


def json_object(response: TransportResponse) -> dict[str, Any]:
    """The JSON object an answer holds (``{}`` for an empty body or anything else)."""
    data = response.json()
    return data if isinstance(data, dict) else {}


def items_of(data: Mapping[str, Any], parse: Callable[[Mapping[str, Any]], T]) -> list[T]:
    """A list answer's ``items``, each parsed."""
    return [parse(item) for item in data.get("items") or [] if isinstance(item, Mapping)]


def found_of(data: Mapping[str, Any], parse: Callable[[Mapping[str, Any]], T]) -> Found[T]:
    """A search's answer: its ``items``, each parsed, and how it was answered (``Found``)."""
    return Found.of(items_of(data, parse), data)


def page_of(data: Mapping[str, Any], parse: Callable[[Mapping[str, Any]], T]) -> Page[T]:
    """One page of a list answer: its items and ``next_cursor`` (``None`` on the last)."""
    cursor = data.get("next_cursor")
    return Page(items_of(data, parse), str(cursor) if cursor else None)


@dataclass(frozen=True)
class Op(Generic[T]):
    """A call and what its answer parses into: the unit both clients run (``client.run(op)``)."""

    call: Call
    parse: Callable[[TransportResponse], T]


def json_op(call: Call, parse: Callable[[dict[str, Any]], T]) -> Op[T]:
    """An ``Op`` whose answer is a JSON object parsed by ``parse``."""
    return Op(call, lambda response: parse(json_object(response)))


def page_call(path: str, params: Mapping[str, ParamValue] | None, cursor: str | None, limit: int | None) -> Call:
    """The ``GET`` of one page of a list endpoint."""
    return Call("GET", path, {**(params or {}), "limit": limit, "cursor": cursor})


@dataclass
class CursorWalk:
    """Every item of a list endpoint, following ``next_cursor``, at most ``limit`` items when given: ask
    ``next_call()`` for the next page's request (``None``: done), give its page to ``take``, yield what it
    returns. A cursor seen before ends the walk (it would loop forever)."""

    path: str
    params: Mapping[str, ParamValue] | None = None
    limit: int | None = None
    _cursor: str | None = None
    _yielded: int = 0
    _done: bool = False
    _seen: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._done = self.limit is not None and self.limit <= 0

    def next_call(self) -> Call | None:
        if self._done:
            return None
        size = min(self.limit, MAX_PAGE_SIZE) if self.limit is not None else None
        return page_call(self.path, self.params, self._cursor, size)

    def take(self, page: Page[T]) -> list[T]:
        items = page.items
        if self.limit is not None:
            items = items[: self.limit - self._yielded]
        self._yielded += len(items)
        if (self.limit is not None and self._yielded >= self.limit) or page.next_cursor is None \
                or page.next_cursor in self._seen:
            self._done = True
        else:
            self._seen.add(page.next_cursor)
            self._cursor = page.next_cursor
        return items


@dataclass(frozen=True)
class RetryPolicy:
    """When a call that got no answer (unreachable, a 5xx, a 429) is sent again: ``attempts`` tries in all, the
    first wait ``backoff_s``, doubled each time, a 429's ``Retry-After`` taken instead, none above ``max_wait_s``."""

    attempts: int = 3
    backoff_s: float = 0.2
    max_wait_s: float = 5.0

    def wait_before_retry(self, attempt: int, error: Exception) -> float | None:
        """The seconds to wait before try ``attempt + 1`` after ``error`` on try ``attempt``; ``None``: raise it."""
        if not isinstance(error, (Unreachable, ServerError, RateLimited)) or attempt >= self.attempts:
            return None
        hint = error.retry_after if isinstance(error, RateLimited) else None
        wait = self.backoff_s * (2 ** (attempt - 1))
        return min(hint if hint is not None else wait, self.max_wait_s)


RETRYABLE: tuple[type[AgentmemError], ...] = (Unreachable, ServerError, RateLimited)
