"""The async SDK: ``AsyncClient`` and its handles ``AsyncMemory``, ``AsyncAgent``, ``AsyncConversation`` and
``AsyncWorkspace``, for code that runs on asyncio (every agent framework does).

    async with AsyncClient() as client:                       # AGENTMEM_URL / AGENTMEM_API_KEY
        company = await client.memories.create("company")
        await company.save("tone", "Warm, brief, no jargon.", description="How we write")
        support = await client.agents.from_name("support", create_if_missing=True, memories=[company.name])
        chat = support.conversation("ticket-7", user="user_42")
        await chat.append(Message.user("Hi, I'm Ana."))
        context = await chat.context()

Same names as the sync SDK with ``Async`` before them, the same methods (awaited), the same typed errors, the
same pagination (``iter_*`` are async iterators) and the same retries (an append that got no answer is sent again
with the same client ids). The request rules are not copied: both clients run the same ``rules.Op`` each handle's
``*Requests`` base builds (URL, query, headers, body, the answer's parsing), map error answers with the same
``rules.checked``, walk lists with the same ``rules.CursorWalk`` and wait as the same ``rules.RetryPolicy`` says;
only the sending is async (aiohttp or httpx), and the sleeping (``asyncio.sleep``).

HTTP is aiohttp's ``ClientSession`` when aiohttp is installed (``pip install "agentmem-server[async]"``) and no
proxy applies to the service's URL (``AiohttpTransport``), else httpx's ``AsyncClient`` (``AsyncHttpTransport``;
httpx is installed with the base package, and reads the environment's proxies): HTTP/1.1 keep-alive either way.
httpx's pool costs its caller's CPU in proportion to its open connections at every request, which at 64 tasks
made the async client slower than the sync one on one thread (``bench/integrations.py``).
``AsyncInProcessTransport`` calls the Lambda handler in-process, as the sync ``InProcessTransport`` does, for
tests.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from datetime import datetime
from os import PathLike
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeVar, Unpack
from urllib.parse import urlencode

from .agent import AgentRequests
from .agent_settings import AgentSettings, settings_body, warn_when_settings_differ
from .client import connection
from .conversation import ConversationRequests, MessageLike, append_bodies, appended
from .errors import AgentmemError, Conflict, NotFound, Unreachable, error_from_response
from .exports import (
    EntryImportReport,
    Progress,
    drive_async,
    export_steps,
    import_steps,
    lines_of,
    new_report,
    read_export,
    record,
    single_memory,
)
from .memory import MemoryRequests
from .models import (
    AgentInfo,
    AppendResult,
    Context,
    ConversationInfo,
    ConversationReceipt,
    Entry,
    Found,
    Health,
    HistoryItem,
    MemoryInfo,
    Message,
    MessageHit,
    Page,
    ToolResult,
    WorkspaceFile,
)
from .rules import (
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
from .transport import InProcessTransport, LambdaHandler, TransportResponse
from .workspace import _REDIRECTS, WorkspaceRequests, _is_relative

if TYPE_CHECKING:
    import ssl

    import aiohttp
    import httpx

T = TypeVar("T")


class AsyncTransport(Protocol):
    """Sends one request and returns the raw response, awaited."""

    async def request(
        self, method: str, path: str, *, params: dict[str, str] | None, headers: dict[str, str], body: bytes | None,
    ) -> TransportResponse: ...


class _OverHttp:
    """What both HTTP transports share: a request to the API is a ``send`` to its URL under ``base_url``."""

    base_url: str

    async def request(
        self, method: str, path: str, *, params: dict[str, str] | None, headers: dict[str, str], body: bytes | None,
    ) -> TransportResponse:
        return await self.send(method, self.base_url + path, params=params, headers=headers, body=body)

    async def send(
        self, method: str, url: str, *, params: dict[str, str] | None = None, headers: dict[str, str],
        body: bytes | None,
    ) -> TransportResponse:
        raise NotImplementedError


class AsyncHttpTransport(_OverHttp):
    """HTTP on one ``httpx.AsyncClient``: connections kept alive and shared by every task of the client, the
    environment's proxies and CA bundle as httpx reads them. ``AsyncClient`` uses it when a proxy applies to the
    service's URL, or when aiohttp is not installed (``default_transport``)."""

    name = "httpx"

    def __init__(self, base_url: str, timeout: float = 30.0, *, client: httpx.AsyncClient | None = None,
                 max_connections: int = 100) -> None:
        import httpx

        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._client = client or httpx.AsyncClient(
            timeout=timeout, follow_redirects=False,
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
        )

    async def send(
        self, method: str, url: str, *, params: dict[str, str] | None = None, headers: dict[str, str],
        body: bytes | None,
    ) -> TransportResponse:
        """One request to ``url`` (the API's, or a workspace link's)."""
        import httpx

        try:
            response = await self._client.request(method, url, params=params, headers=headers, content=body)
        except httpx.TimeoutException as exc:
            raise Unreachable(self.base_url, f"no answer within {self.timeout:g}s", timed_out=True) from exc
        except httpx.TransportError as exc:
            raise Unreachable(self.base_url, str(exc) or type(exc).__name__) from exc
        return TransportResponse(response.status_code, {k.lower(): v for k, v in response.headers.items()},
                                 response.content)

    async def aclose(self) -> None:
        await self._client.aclose()


class AiohttpTransport(_OverHttp):
    """HTTP on one ``aiohttp.ClientSession`` (the ``async`` extra): connections kept alive and shared by every
    task of the client, up to ``max_connections`` at once (a task past them waits for one).

    httpx's pool spends its caller's CPU on every open connection at every request (each request looks at each
    connection, and asks each idle one's socket whether it is readable): against ``agentmem serve`` an entry
    read cost about 1.4 ms of the caller's CPU on one task and 8 ms with 64 tasks at once, where aiohttp's pool
    takes a fraction of that (``bench/integrations.py``). What it sends and answers is httpx's: no redirect
    followed, no cookie kept, the body decoded as its ``Content-Encoding`` says, ``Content-Length: 0`` and no
    ``Content-Type`` on a write without a body, repeated answer headers joined with ``", "``; a connection that
    fails or times out is ``Unreachable`` (timed out: ``no answer within`` ``timeout`` seconds, to connect or
    between two reads of the answer). Certificates are verified against ``REQUESTS_CA_BUNDLE``,
    ``CURL_CA_BUNDLE``, ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` when set (as the sync client and httpx read
    them), else ``certifi``'s bundle. It reads no proxy and no ``~/.netrc``: ``default_transport`` takes httpx
    when a proxy applies.

    The session is opened at the first request, on the event loop that sends it (aiohttp binds it to that
    loop); ``aclose`` closes it."""

    name = "aiohttp"

    def __init__(self, base_url: str, timeout: float = 30.0, *, session: aiohttp.ClientSession | None = None,
                 max_connections: int = 100) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_connections = max_connections
        self._session = session

    def _opened(self) -> aiohttp.ClientSession:
        if self._session is None:
            import aiohttp

            connector = aiohttp.TCPConnector(limit=self.max_connections, ssl=_tls_context())
            self._session = aiohttp.ClientSession(
                connector=connector, cookie_jar=aiohttp.DummyCookieJar(), trust_env=False,
                skip_auto_headers=("Content-Type",),  # (it would say octet-stream on a write without a body)
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=self.timeout, sock_read=self.timeout),
            )
        return self._session

    async def send(
        self, method: str, url: str, *, params: dict[str, str] | None = None, headers: dict[str, str],
        body: bytes | None,
    ) -> TransportResponse:
        """One request to ``url`` (the API's, its path already percent-encoded, or a workspace link's)."""
        import aiohttp
        from yarl import URL

        if params:
            url += ("&" if "?" in url else "?") + urlencode(params)
        try:
            async with self._opened().request(method, URL(url, encoded=True), headers=headers, data=body,
                                              allow_redirects=False) as response:
                payload = await response.read()
                answer: dict[str, str] = {}
                for key, value in response.headers.items():
                    name = key.lower()
                    answer[name] = f"{answer[name]}, {value}" if name in answer else value
                return TransportResponse(response.status, answer, payload)
        except TimeoutError as exc:  # (aiohttp's timeouts are TimeoutErrors too)
            raise Unreachable(self.base_url, f"no answer within {self.timeout:g}s", timed_out=True) from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise Unreachable(self.base_url, str(exc) or type(exc).__name__) from exc

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


def _tls_context() -> ssl.SSLContext:
    """Certificates verified against the environment's bundle (``AiohttpTransport``), else certifi's."""
    import ssl

    bundle = (os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
              or os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR"))
    if bundle and os.path.isdir(bundle):
        return ssl.create_default_context(capath=bundle)
    if bundle:
        return ssl.create_default_context(cafile=bundle)
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


def default_transport(base_url: str, timeout: float) -> AiohttpTransport | AsyncHttpTransport:
    """What ``AsyncClient`` sends through: ``AiohttpTransport`` when aiohttp is installed (the ``async`` extra)
    and no proxy applies to ``base_url`` (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY`` with ``NO_PROXY``, as
    the sync client reads them), else ``AsyncHttpTransport`` (httpx, which speaks to proxies)."""
    from importlib.util import find_spec
    from urllib.parse import urlsplit

    from requests.utils import get_environ_proxies

    scheme = urlsplit(base_url).scheme.lower()
    proxies = get_environ_proxies(base_url)
    if find_spec("aiohttp") is not None and scheme in ("http", "https") and not (
            proxies.get(scheme) or proxies.get("all")):
        return AiohttpTransport(base_url, timeout)
    return AsyncHttpTransport(base_url, timeout)


class AsyncInProcessTransport:
    """The API's Lambda handler called in-process (``InProcessTransport``'s events), awaited: for tests."""

    def __init__(self, handler: LambdaHandler, *, context: object | None = None) -> None:
        self._sync = InProcessTransport(handler, context=context)

    async def request(
        self, method: str, path: str, *, params: dict[str, str] | None, headers: dict[str, str], body: bytes | None,
    ) -> TransportResponse:
        return self._sync.request(method, path, params=params, headers=headers, body=body)


class AsyncClient:
    """A connection to agentmem for asyncio code: ``Client``'s arguments and environment, its methods awaited.

    Use one per event loop and share it between tasks (``async with AsyncClient() as client:``); its
    connections are kept alive. A missing API key is ``ConfigurationError`` at the first request needing one.
    """

    def __init__(
        self, url: str | None = None, api_key: str | None = None, *, transport: AsyncTransport | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.url, self.api_key = connection(url, api_key)
        self.timeout = timeout
        self._transport = transport

    def __repr__(self) -> str:
        return f"AsyncClient(url={self.url!r})"

    @property
    def transport(self) -> AsyncTransport:
        if self._transport is None:
            self._transport = default_transport(self.url, self.timeout)
        return self._transport

    # --- raw requests (the same rules as Client's) ----------------------------------------------

    async def send(self, call: Call) -> TransportResponse:
        sent = prepare(call, self.api_key)
        return checked(await self.transport.request(
            sent.method, sent.path, params=sent.params, headers=sent.headers, body=sent.body))

    async def run(self, op: Op[T]) -> T:
        return op.parse(await self.send(op.call))

    async def request(
        self, method: str, path: str, *, params: Mapping[str, ParamValue] | None = None, body: Any = None,
        headers: Mapping[str, str] | None = None, auth: bool = True, content: bytes | None = None,
    ) -> TransportResponse:
        """As ``Client.request``: ``/v1`` + ``path``; an error status raised as its typed error."""
        return await self.send(Call(method, path, params, body, headers, auth, content))

    async def request_json(
        self, method: str, path: str, *, params: Mapping[str, ParamValue] | None = None, body: Any = None,
        auth: bool = True,
    ) -> dict[str, Any]:
        return json_object(await self.request(method, path, params=params, body=body, auth=auth))

    async def page(
        self, path: str, parse: Callable[[Mapping[str, Any]], T], params: Mapping[str, ParamValue] | None = None,
        *, cursor: str | None = None, limit: int | None = None,
    ) -> Page[T]:
        return page_of(json_object(await self.send(page_call(path, params, cursor, limit))), parse)

    async def iterate(
        self, path: str, parse: Callable[[Mapping[str, Any]], T], params: Mapping[str, ParamValue] | None = None,
        *, limit: int | None = None,
    ) -> AsyncIterator[T]:
        """Every item of a list endpoint, following ``next_cursor`` (at most ``limit``)."""
        walk = CursorWalk(path, params, limit)
        while (call := walk.next_call()) is not None:
            for item in walk.take(page_of(json_object(await self.send(call)), parse)):
                yield item

    # --- resources --------------------------------------------------------------------------

    def memory(self, name: str, *, user: str | None = None) -> AsyncMemory:
        return AsyncMemory(name, user=user, client=self)

    @property
    def memories(self) -> AsyncMemories:
        return AsyncMemories(self)

    def agent(self, name: str, *, user: str | None = None) -> AsyncAgent:
        return AsyncAgent(name, user=user, client=self)

    @property
    def agents(self) -> AsyncAgents:
        return AsyncAgents(self)

    def export(
        self, *, memories: Sequence[str] | None = None, user: str | None = None,
        progress: Callable[[Progress], None] | None = None,
    ) -> AsyncIterator[str]:
        """``Client.export``: the account's memories (or ``memories``; or ``user``'s data only) as an export's
        lines, an async iterator."""
        return _export_lines(drive_async(export_steps(self.url, memories, user), self.run), progress)

    async def import_entries(
        self, source: Iterable[str] | str | PathLike[str], *, dry_run: bool = False,
        progress: Callable[[Progress], None] | None = None,
    ) -> EntryImportReport:
        """``Client.import_entries``: an export imported, memories created when missing; idempotent."""
        export = read_export(lines_of(source))
        return await _report(drive_async(import_steps(export, dry_run=dry_run), self.run),
                             new_report(export, dry_run), len(export.entries), progress)

    async def health(self) -> Health:
        return Health.from_dict(await self.request_json("GET", "/health", auth=False))

    # --- lifetime ---------------------------------------------------------------------------

    async def aclose(self) -> None:
        close = getattr(self._transport, "aclose", None)
        if callable(close):
            await close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


async def _export_lines(items: AsyncIterator[Any], progress: Callable[[Progress], None] | None
                        ) -> AsyncIterator[str]:
    async for item in items:
        if isinstance(item, Progress):
            if progress is not None:
                progress(item)
        else:
            yield item


async def _report(items: AsyncIterator[Any], report: EntryImportReport, total: int,
                  progress: Callable[[Progress], None] | None) -> EntryImportReport:
    async for item in items:
        record(report, item, total, progress)
    return report


async def _collect(items: AsyncIterator[T]) -> list[T]:
    return [item async for item in items]


# --- memories -------------------------------------------------------------------------------------


class AsyncMemories:
    """The account's memories: ``client.memories``."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def list(self, user: str | None = None, trash: bool = False) -> list[MemoryInfo]:
        params: dict[str, ParamValue] = {"user": user, "trash": True if trash else None}
        return await _collect(self._client.iterate("/memories", MemoryInfo.from_dict, params))

    async def get(self, name: str, *, user: str | None = None) -> AsyncMemory:
        memory = AsyncMemory(name, user=user, client=self._client)
        await memory.info()
        return memory

    async def create(self, name: str, *, user: str | None = None) -> AsyncMemory:
        memory = AsyncMemory(name, user=user, client=self._client)
        await self._client.run(memory._info_op("PUT"))
        return memory

    async def from_name(self, name: str, *, create_if_missing: bool = False, user: str | None = None
                        ) -> AsyncMemory:
        return await (self.create(name, user=user) if create_if_missing else self.get(name, user=user))


class AsyncMemory(MemoryRequests):
    """``Memory``, awaited: a handle on one memory (building it sends nothing)."""

    def __init__(self, name: str, *, user: str | None = None, client: AsyncClient) -> None:
        self.name = name
        self.user = user
        self.client = client
        self.last_info: MemoryInfo | None = None

    def __repr__(self) -> str:
        scope = f", user={self.user!r}" if self.user is not None else ""
        return f"AsyncMemory({self.name!r}{scope})"

    async def info(self) -> MemoryInfo:
        return await self.client.run(self._info_op())

    async def delete(self) -> MemoryInfo:
        """Move the memory and its entries to the trash (remove one entry with ``forget``)."""
        return await self.client.run(self._info_op("DELETE"))

    async def restore(self) -> MemoryInfo:
        return await self.client.run(self._info_op("POST", "restore"))

    async def save(
        self, name: str, content: str, *, description: str | None = None, version: int | None = None,
        user: str | None = None, category: str | None = None, importance: float | None = None,
        visibility: str | None = None, expires_at: str | None = None, clear_expiry: bool = False,
    ) -> Entry:
        return await self.client.run(self._save_op(
            name, content, description=description, version=version, user=user, category=category,
            importance=importance, visibility=visibility, expires_at=expires_at, clear_expiry=clear_expiry))

    async def read(self, name: str, *, user: str | None = None, version: int | None = None) -> Entry:
        return await self.client.run(self._read_op(name, user, version))

    def iter_entries(self, *, user: str | None = None, limit: int | None = None) -> AsyncIterator[Entry]:
        return self.client.iterate(self._path("entries"), Entry.from_dict, self._layer(user), limit=limit)

    async def entries(self, *, user: str | None = None, limit: int | None = None) -> list[Entry]:
        return await _collect(self.iter_entries(user=user, limit=limit))

    async def search(
        self, query: str, *, limit: int = 10, user: str | None = None, mode: str | None = None,
        min_score: float | None = None,
    ) -> Found[Entry]:
        return await self.client.run(self._search_op(query, limit, user, mode, min_score))

    async def delete_entry(self, name: str, *, version: int | None = None, user: str | None = None) -> None:
        await self.client.run(self._delete_entry_op(name, version, user))

    forget = delete_entry

    async def history(self, name: str, *, user: str | None = None) -> list[HistoryItem]:
        path = self._entry_path(name) + "/history"
        return await _collect(self.client.iterate(path, HistoryItem.from_dict, self._layer(user)))

    list = entries  # as ``memory.list()`` on a sync handle: the layer's entries

    def export(self, *, user: str | None = None, progress: Callable[[Progress], None] | None = None
               ) -> AsyncIterator[str]:
        """``Memory.export``: the memory as an export's lines, an async iterator."""
        return _export_lines(drive_async(export_steps(self.client.url, [self.name], user), self.client.run),
                             progress)

    async def import_entries(
        self, source: Iterable[str] | str | PathLike[str], *, dry_run: bool = False,
        progress: Callable[[Progress], None] | None = None,
    ) -> EntryImportReport:
        """``Memory.import_entries``: an export of one memory imported into this one (the file is read whole and
        checked first)."""
        export = single_memory(read_export(lines_of(source)), self.name)
        steps = import_steps(export, dry_run=dry_run, into=self.name)
        return await _report(drive_async(steps, self.client.run), new_report(export, dry_run), len(export.entries),
                             progress)


# --- agents ---------------------------------------------------------------------------------------


class AsyncAgents:
    """The account's agents: ``client.agents``."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def list(self, user: str | None = None, trash: bool = False) -> list[AgentInfo]:
        params: dict[str, ParamValue] = {"user": user, "trash": True if trash else None}
        return await _collect(self._client.iterate("/agents", AgentInfo.from_dict, params))

    async def get(self, name: str, *, user: str | None = None) -> AsyncAgent:
        agent = AsyncAgent(name, user=user, client=self._client)
        await agent.info()
        return agent

    async def create(self, name: str, *, user: str | None = None, **settings: Unpack[AgentSettings]) -> AsyncAgent:
        agent = AsyncAgent(name, user=user, client=self._client)
        await self._client.run(agent._info_op("PUT", body=settings_body(settings, drop_none=True),
                                              headers={"If-None-Match": "*"}))
        return agent

    async def from_name(self, name: str, *, create_if_missing: bool = False, user: str | None = None,
                        **settings: Unpack[AgentSettings]) -> AsyncAgent:
        """``Agents.from_name``, awaited: an agent found is returned as stored, with a ``SettingsDifferWarning``
        when the settings given differ from its stored ones."""
        try:
            found = await self.get(name, user=user)
        except NotFound:
            if not create_if_missing:
                raise
        else:
            warn_when_settings_differ(found.name, found.last_info, settings)
            return found
        try:
            return await self.create(name, user=user, **settings)
        except Conflict:  # created meanwhile by someone else: use theirs
            found = await self.get(name, user=user)
            warn_when_settings_differ(found.name, found.last_info, settings)
            return found


class AsyncAgent(AgentRequests):
    """``Agent``, awaited (building one sends nothing; ``last_info`` is the agent as last described)."""

    def __init__(self, name: str, *, user: str | None = None, client: AsyncClient) -> None:
        self.name = name
        self.user = user
        self.client = client
        self.last_info: AgentInfo | None = None

    def __repr__(self) -> str:
        scope = f", user={self.user!r}" if self.user is not None else ""
        return f"AsyncAgent({self.name!r}{scope})"

    async def info(self) -> AgentInfo:
        return await self.client.run(self._info_op())

    async def update(self, *, version: int | None = None, **settings: Unpack[AgentSettings]) -> AgentInfo:
        headers = {"If-Match": f'"{version}"'} if version is not None else {}
        return await self.client.run(self._info_op("PUT", body=settings_body(settings, drop_none=False),
                                                   headers=headers))

    async def delete(self) -> AgentInfo:
        return await self.client.run(self._info_op("DELETE"))

    async def restore(self) -> AgentInfo:
        return await self.client.run(self._info_op("POST", "restore"))

    @property
    def memory(self) -> AsyncMemory:
        """The agent's own memory (``agent:{name}``)."""
        return AsyncMemory(f"agent:{self.name}", user=self.user, client=self.client)

    async def search(
        self, query: str, *, user: str | None = None, limit: int | None = None, surface: str | None = None,
        mode: str | None = None, min_score: float | None = None,
    ) -> Found[Entry]:
        return await self.client.run(self._search_op(query, user, limit, surface, mode, min_score))

    async def tools(self, dialect: str = "noclick", format: str = "mcp", *, surface: str | None = None,
                    user: str | None = None) -> list[dict[str, Any]]:
        params = self._tools_params(dialect, format, surface, user)
        return await _collect(self.client.iterate(self._path("tools"), dict, params))

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, conversation: str | None = None,
        user: str | None = None, surface: str | None = None,
    ) -> ToolResult:
        return await self.client.run(self._call_tool_op(name, arguments, conversation, user, surface))

    def conversation(self, key: str, *, user: str | None = None) -> AsyncConversation:
        return AsyncConversation(self, key, user=user if user is not None else self.user)

    def workspace(self, conversation: str, *, user: str | None = None) -> AsyncWorkspace:
        return AsyncWorkspace(self, conversation, user=user if user is not None else self.user)

    async def conversations(self, *, user: str | None = None) -> list[ConversationInfo]:
        return await _collect(self.client.iterate(self._path("conversations"), ConversationInfo.from_dict,
                                                  self._acting(user)))

    async def search_messages(
        self, query: str, *, user: str | None = None, conversation: str | None = None, limit: int | None = None,
        surface: str | None = None, mode: str | None = None, min_score: float | None = None,
        after: str | datetime | None = None, before: str | datetime | None = None,
    ) -> Found[MessageHit]:
        return await self.client.run(
            self._search_messages_op(query, user, conversation, limit, surface, mode, min_score, after, before))


# --- conversations --------------------------------------------------------------------------------


class AsyncConversation(ConversationRequests):
    """``Conversation``, awaited: appends are stored durably when they return, and one that got no answer (the
    service unreachable, a 5xx, a 429) is sent again with the same client ids, as ``RetryPolicy`` says."""

    agent: AsyncAgent

    def __init__(self, agent: AsyncAgent, key: str, *, user: str | None = None) -> None:
        self.agent = agent
        self.key = key
        self.user = user

    def __repr__(self) -> str:
        scope = f", user={self.user!r}" if self.user is not None else ""
        return f"AsyncConversation({self.agent.name!r}, {self.key!r}{scope})"

    @property
    def client(self) -> AsyncClient:
        return self.agent.client

    async def append(
        self, *messages: MessageLike | Sequence[MessageLike], surface: str | None = None,
        window_messages: int | None = None, format: str | None = None,
    ) -> AppendResult:
        bodies, skipped = append_bodies(messages, surface, window_messages, format)
        return appended([await self._append_once(body) for body in bodies], skipped)

    async def _append_once(self, body: dict[str, Any]) -> AppendResult:
        policy = self._retry_policy()
        attempt = 1
        while True:
            try:
                return await self.client.run(self._append_op(body))
            except AgentmemError as error:
                wait = policy.wait_before_retry(attempt, error)
                if wait is None:
                    raise
                await asyncio.sleep(wait)
                attempt += 1

    async def messages_page(self, *, after: int | None = None, limit: int | None = None) -> Page[Message]:
        return await self.client.run(self._messages_page_op(after, limit))

    async def iter_messages(self, *, after: int | None = None, limit: int | None = None) -> AsyncIterator[Message]:
        from .conversation import READ_PAGE_MAX

        if limit is not None and limit <= 0:
            return
        yielded = 0
        cursor = after
        while True:
            size = READ_PAGE_MAX if limit is None else min(READ_PAGE_MAX, limit - yielded)
            page = await self.messages_page(after=cursor, limit=size)
            for message in page:
                yield message
                yielded += 1
            if page.next_cursor is None or not page.items or (limit is not None and yielded >= limit):
                return
            cursor = int(page.next_cursor)

    async def messages(self, *, after: int | None = None, limit: int | None = None) -> list[Message]:
        return await _collect(self.iter_messages(after=after, limit=limit))

    async def context(self, surface: str | None = None, *, format: str | None = None) -> Context:
        return await self.client.run(self._context_op(surface, format))

    async def search(self, query: str, *, limit: int | None = None, surface: str | None = None,
                     mode: str | None = None) -> Found[MessageHit]:
        return await self.agent.search_messages(query, user=self.user, conversation=self.key, limit=limit,
                                                surface=surface, mode=mode)

    async def info(self) -> ConversationInfo:
        return await self.client.run(self._info_op())

    async def delete(self, *, purge: bool = False) -> ConversationReceipt:
        return await self.client.run(self._delete_op(purge))


# --- workspaces -----------------------------------------------------------------------------------


class AsyncWorkspace(WorkspaceRequests):
    """``Workspace``, awaited: ``write``, ``read``, ``files``, ``url`` and ``delete``. Files up to
    ``direct_write_max`` go through the API, larger ones through an upload link, as the sync handle does."""

    agent: AsyncAgent

    def __init__(self, agent: AsyncAgent, key: str, *, user: str | None = None) -> None:
        self.agent = agent
        self.key = key
        self.user = user

    def __repr__(self) -> str:
        scope = f", user={self.user!r}" if self.user is not None else ""
        return f"AsyncWorkspace({self.agent.name!r}, {self.key!r}{scope})"

    @property
    def client(self) -> AsyncClient:
        return self.agent.client

    async def write(self, path: str, data: bytes | str) -> WorkspaceFile:
        payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        if len(payload) <= self.direct_write_max:
            return await self.client.run(self._put_op(path, payload))
        body = {"path": path, "method": "PUT", "size_bytes": len(payload), "expires_in_s": 3600}
        link = await self.client.run(self._link_op(body))
        await self._link("PUT", str(link.get("url", "")), {str(k): str(v) for k, v in
                                                           (link.get("headers") or {}).items()}, payload)
        found = await self.info(path)
        return found

    async def read(self, path: str) -> bytes:
        response = await self.client.send(self._get_call(path))
        location = response.headers.get("location")
        if response.status in _REDIRECTS and location:
            return (await self._link("GET", location, {}, None)).body
        return response.body

    def iter_files(self, prefix: str | None = None, *, expires_in_s: int | None = None
                   ) -> AsyncIterator[WorkspaceFile]:
        return self.client.iterate(self._path("files"), WorkspaceFile.from_dict,
                                   self._files_params(prefix, expires_in_s))

    async def files(self, prefix: str | None = None, *, expires_in_s: int | None = None) -> list[WorkspaceFile]:
        return await _collect(self.iter_files(prefix, expires_in_s=expires_in_s))

    async def info(self, path: str) -> WorkspaceFile:
        async for found in self.iter_files(path):
            if found.path == path:
                return found
        raise NotFound(f"no file {path!r} in the workspace of conversation {self.key!r}", 404, "not_found",
                       {"path": path})

    async def url(self, path: str, expires_in_s: int = 3600) -> str:
        data = await self.client.run(self._link_op({"path": path, "method": "GET", "expires_in_s": expires_in_s}))
        return str(data.get("url", ""))

    async def delete(self, path: str) -> None:
        await self.client.run(self._delete_op(path))

    async def _link(self, method: str, url: str, headers: dict[str, str], body: bytes | None) -> TransportResponse:
        """One request to a link, without a key (a relative one through the client's transport)."""
        from urllib.parse import parse_qsl, urlsplit

        from .rules import USER_AGENT

        sent = {"User-Agent": USER_AGENT, **headers}
        if _is_relative(url):
            parts = urlsplit(url)
            query = dict(parse_qsl(parts.query, keep_blank_values=True))
            response = await self.client.transport.request(method, parts.path, params=query or None, headers=sent,
                                                           body=body)
        else:
            transport = self.client.transport
            if isinstance(transport, AiohttpTransport | AsyncHttpTransport):
                response = await transport.send(method, url, headers=sent, body=body)
            else:
                link = default_transport(url, self.client.timeout)
                try:
                    response = await link.send(method, url, headers=sent, body=body)
                finally:
                    await link.aclose()
        if response.status >= 400:
            raise error_from_response(response.status, response.headers, response.body)
        return response



__all__ = [
    "AiohttpTransport", "AsyncAgent", "AsyncAgents", "AsyncClient", "AsyncConversation", "AsyncHttpTransport",
    "AsyncInProcessTransport",
    "AsyncMemories", "AsyncMemory", "AsyncTransport", "AsyncWorkspace",
]
