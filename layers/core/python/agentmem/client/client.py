"""``Client``: one connection to an agentmem service, and the module's default client.

The URL and key come from the arguments, else from ``AGENTMEM_URL`` (default
``http://127.0.0.1:8787``) and ``AGENTMEM_API_KEY``. The client sends every request
through a ``Transport`` and turns error answers into the typed errors of
``agentmem.client.errors``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import date, datetime
from os import PathLike
from typing import TYPE_CHECKING, Any, Self, TypeVar

from .models import ErasureReceipt, Health, Page, UsageRecord
from .rules import (
    API_PREFIX,
    ENV_API_KEY,
    MAX_PAGE_SIZE,
    USER_AGENT,
    Call,
    CursorWalk,
    Op,
    ParamValue,
    checked,
    json_object,
    page_call,
    page_of,
    prepare,
)
from .transport import HttpTransport, Transport, TransportResponse, segment

if TYPE_CHECKING:
    from .agent import Agent, Agents
    from .exports import EntryImportReport, Progress
    from .keys import Keys
    from .memory import Memories, Memory

ENV_URL = "AGENTMEM_URL"
DEFAULT_URL = "http://127.0.0.1:8787"


def connection(url: str | None, api_key: str | None) -> tuple[str, str | None]:
    """The service's URL and the key a client uses, the sync one and the async one alike: those given, else
    ``AGENTMEM_URL`` / ``AGENTMEM_API_KEY``, else the local server's address and no key."""
    return (url or os.environ.get(ENV_URL) or DEFAULT_URL).rstrip("/"), (
        api_key if api_key else (os.environ.get(ENV_API_KEY) or None))

T = TypeVar("T")


class Client:
    """A connection to agentmem.

    >>> client = Client()                      # AGENTMEM_URL / AGENTMEM_API_KEY
    >>> company = client.memory("company")
    >>> company.save("tone", "Warm, brief, no jargon.", description="How we write")

    A missing API key is reported (``ConfigurationError``) by the first request that
    needs one, not here, so building a client never fails.
    """

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        *,
        transport: Transport | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.url, self.api_key = connection(url, api_key)
        self.timeout = timeout
        self._transport = transport

    def __repr__(self) -> str:
        return f"Client(url={self.url!r})"

    @property
    def transport(self) -> Transport:
        if self._transport is None:
            self._transport = HttpTransport(self.url, self.timeout)
        return self._transport

    # --- raw requests -------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, ParamValue] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        auth: bool = True,
        content: bytes | None = None,
    ) -> TransportResponse:
        """Send ``method`` to ``/v1`` + ``path`` (segments already encoded); raise on an error status.

        ``params`` whose value is ``None`` are left out; ``body`` is sent as JSON unless ``None``;
        ``content`` is sent as raw bytes (a workspace file).
        """
        return self.send(Call(method, path, params, body, headers, auth, content))

    def send(self, call: Call) -> TransportResponse:
        """Send one ``Call`` (``rules.prepare``); its answer, or its typed error raised (``rules.checked``)."""
        sent = prepare(call, self.api_key)
        return checked(self.transport.request(
            sent.method, sent.path, params=sent.params, headers=sent.headers, body=sent.body))

    def run(self, op: Op[T]) -> T:
        """Send an ``Op``'s call and parse its answer."""
        return op.parse(self.send(op.call))

    def request_json(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, ParamValue] | None = None,
        body: Any = None,
        auth: bool = True,
    ) -> dict[str, Any]:
        """``request`` and the JSON object it answered (``{}`` for an empty body)."""
        return json_object(self.request(method, path, params=params, body=body, auth=auth))

    def page(
        self,
        path: str,
        parse: Callable[[Mapping[str, Any]], T],
        params: Mapping[str, ParamValue] | None = None,
        *,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> Page[T]:
        """One page of a list endpoint."""
        return page_of(json_object(self.send(page_call(path, params, cursor, limit))), parse)

    def iterate(
        self,
        path: str,
        parse: Callable[[Mapping[str, Any]], T],
        params: Mapping[str, ParamValue] | None = None,
        *,
        limit: int | None = None,
    ) -> Iterator[T]:
        """Every item of a list endpoint, following ``next_cursor``; at most ``limit`` items when given."""
        walk = CursorWalk(path, params, limit)
        while (call := walk.next_call()) is not None:
            yield from walk.take(page_of(json_object(self.send(call)), parse))

    # --- resources ----------------------------------------------------------------------

    def memory(self, name: str, *, user: str | None = None) -> Memory:
        """A handle on the memory ``name`` (no request is sent; see ``Memory``)."""
        from .memory import Memory

        return Memory(name, user=user, client=self)

    @property
    def memories(self) -> Memories:
        """The account's memories: ``client.memories.list()``, ``.create(name)``, ``.get(name)``."""
        from .memory import Memories

        return Memories(self)

    def agent(self, name: str, *, user: str | None = None) -> Agent:
        """A handle on the agent ``name`` (no request is sent; see ``Agent``)."""
        from .agent import Agent

        return Agent(name, user=user, client=self)

    @property
    def agents(self) -> Agents:
        """The account's agents: ``client.agents.list()``, ``.create(name, ...)``, ``.get(name)``,
        ``.from_name(name, create_if_missing=True, ...)``."""
        from .agent import Agents

        return Agents(self)

    @property
    def keys(self) -> Keys:
        """The account's API keys: ``client.keys.create(user=None)``, ``.list()``, ``.delete(key_id)``."""
        from .keys import Keys

        return Keys(self)

    def erase_user(self, user: str) -> ErasureReceipt:
        """Erase ``user`` for good (account key only): their layer of every memory, their own agents,
        their conversations' journals, checkpoints, workspaces and index documents, and their API keys.
        Returns what went, counted by kind."""
        return ErasureReceipt.from_dict(self.request_json("DELETE", f"/users/{segment(user)}"))

    def export(
        self, *, memories: Sequence[str] | None = None, user: str | None = None,
        progress: Callable[[Progress], None] | None = None,
    ) -> Iterator[str]:
        """The account's memories as an export's lines (JSON Lines, a header first): every memory and every layer
        (or only ``memories``); with ``user``, only that user's data (their layer of each memory, their own
        memories) — the answer to a user's data request. Memories in the trash and conversations are left out."""
        from .exports import drive, export_lines, export_steps

        return export_lines(drive(export_steps(self.url, memories, user), self.run), progress)

    def import_entries(
        self, source: Iterable[str] | str | PathLike[str], *, dry_run: bool = False,
        progress: Callable[[Progress], None] | None = None,
    ) -> EntryImportReport:
        """Import an export (a path, or its lines): memories created when missing, entries saved layer by layer
        as ``Memory.import_entries`` does; idempotent; ``dry_run`` writes nothing."""
        from .exports import collect_report, drive, import_steps, lines_of, new_report, read_export

        export = read_export(lines_of(source))
        return collect_report(drive(import_steps(export, dry_run=dry_run), self.run), new_report(export, dry_run),
                              len(export.entries), progress)

    def health(self) -> Health:
        """The service's liveness (needs no API key)."""
        return Health.from_dict(self.request_json("GET", "/health", auth=False))

    def usage(self, since: str | date | None = None) -> list[UsageRecord]:
        """Usage counters by operation and day, from ``since`` (a date or ``YYYY-MM-DD``) on."""
        day = since.date() if isinstance(since, datetime) else since
        day = day.isoformat() if isinstance(day, date) else day
        data = self.request_json("GET", "/usage", params={"since": day})
        return [UsageRecord.from_dict(item) for item in data.get("items") or [] if isinstance(item, dict)]

    # --- lifetime -----------------------------------------------------------------------

    def close(self) -> None:
        close = getattr(self._transport, "close", None)
        if callable(close):
            close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


_default_client: Client | None = None
_default_lock = threading.Lock()


def default_client() -> Client:
    """The client used when none is passed, built on first use from AGENTMEM_URL / AGENTMEM_API_KEY."""
    global _default_client
    with _default_lock:
        if _default_client is None:
            _default_client = Client()
        return _default_client


def set_default_client(client: Client | None) -> None:
    """Replace the default client (``None``: build a fresh one from the environment on next use)."""
    global _default_client
    with _default_lock:
        _default_client = client


__all__ = [
    "API_PREFIX", "DEFAULT_URL", "ENV_API_KEY", "ENV_URL", "MAX_PAGE_SIZE", "USER_AGENT", "Client", "ParamValue",
    "default_client", "set_default_client",
]
