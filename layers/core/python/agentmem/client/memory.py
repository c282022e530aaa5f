"""``Memory``: a named set of entries, and ``Memories``: the account's memories.

    company = Memory.from_name("company", create_if_missing=True)
    company.save("tone", "Warm, brief, no jargon.", description="How we write")
    for entry in company.list():            # one layer, without content
        print(entry.name, entry.description)
    company.read("tone").content
    company.forget("old-pricing")            # delete an ENTRY
    company.delete()                          # the MEMORY, to the trash

``Memory.list()`` on the class lists the account's memories; ``memory.list()`` on an
instance lists that memory's entries (``entries()`` is the same).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from os import PathLike
from typing import TYPE_CHECKING, Any, Protocol, overload

from .client import default_client
from .models import Entry, Found, HistoryItem, MemoryAttachment, MemoryInfo
from .rules import Call, Op, found_of, json_object, json_op
from .transport import TransportResponse, segment

if TYPE_CHECKING:
    from .client import Client
    from .exports import EntryImportReport, Progress
    from .rules import ParamValue

EntryList = list[Entry]
FoundEntries = Found[Entry]
MemoryInfoList = list[MemoryInfo]
HistoryList = list[HistoryItem]


class Memories:
    """The memories of the client's account: ``client.memories``."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def list(self, user: str | None = None, trash: bool = False) -> MemoryInfoList:
        """Every memory (of ``user`` when given); with ``trash=True`` those in the trash instead."""
        params: dict[str, ParamValue] = {"user": user, "trash": True if trash else None}
        return [*self._client.iterate("/memories", MemoryInfo.from_dict, params)]

    def get(self, name: str, *, user: str | None = None) -> Memory:
        """The memory ``name``; ``NotFound`` when there is none."""
        memory = Memory(name, user=user, client=self._client)
        memory.info()
        return memory

    def create(self, name: str, *, user: str | None = None) -> Memory:
        """Create the memory ``name`` (the account's, or ``user``'s), or return it if it exists."""
        memory = Memory(name, user=user, client=self._client)
        self._client.run(memory._info_op("PUT"))
        return memory

    def from_name(self, name: str, *, create_if_missing: bool = False, user: str | None = None) -> Memory:
        """``create`` when ``create_if_missing``, else ``get``."""
        return self.create(name, user=user) if create_if_missing else self.get(name, user=user)


class _ListMemories(Protocol):
    def __call__(
        self, user: str | None = None, client: Client | None = None, trash: bool = False
    ) -> MemoryInfoList: ...


class _ListEntries(Protocol):
    def __call__(self, *, user: str | None = None, limit: int | None = None) -> EntryList: ...


class _ClassOrInstanceList:
    """``Memory.list`` lists memories; ``memory.list`` lists one memory's entries."""

    @overload
    def __get__(self, instance: None, owner: type[Memory]) -> _ListMemories: ...

    @overload
    def __get__(self, instance: Memory, owner: type[Memory]) -> _ListEntries: ...

    def __get__(self, instance: Memory | None, owner: type[Memory]) -> _ListMemories | _ListEntries:
        if instance is None:
            return owner.list_memories
        return instance.entries


class MemoryRequests:
    """What a memory handle asks and what the answers mean, for ``Memory`` and ``AsyncMemory`` alike: each
    ``*_op`` is one request and its parser (``rules.Op``), which the sync handle runs and the async one awaits."""

    name: str
    user: str | None
    last_info: MemoryInfo | None

    def _info_op(self, method: str = "GET", *rest: str) -> Op[MemoryInfo]:
        return json_op(Call(method, self._path(*rest), self._scope()), self._remember)

    def _save_op(
        self, name: str, content: str, *, description: str | None, version: int | None, user: str | None,
        category: str | None, importance: float | None, visibility: str | None, expires_at: str | None,
        clear_expiry: bool,
    ) -> Op[Entry]:
        if clear_expiry and expires_at is not None:
            raise ValueError("pass expires_at or clear_expiry=True, not both")
        body: dict[str, Any] = {"content": content}
        optional: dict[str, Any] = {
            "description": description,
            "category": category,
            "importance": importance,
            "visibility": visibility,
            "expires_at": expires_at,
            "version": version,
        }
        body.update({key: value for key, value in optional.items() if value is not None})
        if clear_expiry:
            body["expires_at"] = None

        def parse(data: dict[str, Any]) -> Entry:
            entry = Entry.from_dict(data)
            if entry.content is None:
                entry = Entry.from_dict({**data, "content": content})  # stored word for word, or refused
            return entry

        return json_op(Call("PUT", self._entry_path(name), self._layer(user), body), parse)

    def _read_op(self, name: str, user: str | None, version: int | None) -> Op[Entry]:
        params: dict[str, ParamValue] = {**self._layer(user), "version": version}

        def parse(response: TransportResponse) -> Entry:
            data = json_object(response)
            etag = response.headers.get("etag", "").strip('W/"')
            if "version" not in data and etag.isdigit():
                data["version"] = int(etag)
            return Entry.from_dict(data)

        return Op(Call("GET", self._entry_path(name), params), parse)

    def _search_op(
        self, query: str, limit: int, user: str | None, mode: str | None, min_score: float | None
    ) -> Op[FoundEntries]:
        params: dict[str, ParamValue] = {"q": query, "limit": limit, "mode": mode, "min_score": min_score,
                                         **self._layer(user)}
        return json_op(Call("GET", self._path("search"), params), lambda data: found_of(data, Entry.from_dict))

    def _delete_entry_op(self, name: str, version: int | None, user: str | None) -> Op[None]:
        params: dict[str, ParamValue] = {**self._layer(user), "version": version}
        return Op(Call("DELETE", self._entry_path(name), params), lambda response: None)

    # --- helpers ------------------------------------------------------------------------

    def _path(self, *rest: str) -> str:
        return "/".join([f"/memories/{segment(self.name)}", *rest])

    def _entry_path(self, name: str) -> str:
        return self._path("entries", segment(name))

    def _scope(self) -> dict[str, ParamValue]:
        return {"user": self.user}

    def _layer(self, user: str | None) -> dict[str, ParamValue]:
        return {"user": user if user is not None else self.user}

    def _remember(self, data: dict[str, Any]) -> MemoryInfo:
        self.last_info = MemoryInfo.from_dict(data)
        return self.last_info


class Memory(MemoryRequests):
    """A handle on one memory, named ``name`` (``agent:{agent}`` names an agent's own memory).

    Entry methods act on one layer: the account's without ``user``, that user's with
    ``user=``. A memory created for a user (``user=`` here) has only that user's layer,
    and its entry methods use it unless told otherwise.

    Unlike the agent memory of the seed SDK, where ``delete(name, version=)`` removes an
    entry, ``delete()`` here moves the whole memory to the trash; remove one entry with
    ``forget(name, version=)`` (same as ``delete_entry``).
    """

    def __init__(self, name: str, *, user: str | None = None, client: Client | None = None) -> None:
        self.name = name
        self.user = user
        self._client = client
        self.last_info: MemoryInfo | None = None  # the memory as the last answer about it described it

    def __repr__(self) -> str:
        scope = f", user={self.user!r}" if self.user is not None else ""
        return f"Memory({self.name!r}{scope})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Memory) and (other.name, other.user) == (self.name, self.user)

    def __hash__(self) -> int:
        return hash((self.name, self.user))

    @property
    def client(self) -> Client:
        """The client this handle sends through (the default client when none was given)."""
        return self._client if self._client is not None else default_client()

    # --- finding and creating memories --------------------------------------------------

    @classmethod
    def from_name(
        cls,
        name: str,
        create_if_missing: bool = False,
        user: str | None = None,
        client: Client | None = None,
    ) -> Memory:
        """The memory ``name`` (``NotFound`` if absent), created first when ``create_if_missing``."""
        memories = Memories(client if client is not None else default_client())
        return memories.from_name(name, create_if_missing=create_if_missing, user=user)

    @classmethod
    def create(cls, name: str, user: str | None = None, client: Client | None = None) -> Memory:
        """Create the memory ``name`` for the account (or for ``user``); an existing one is returned."""
        return Memories(client if client is not None else default_client()).create(name, user=user)

    @classmethod
    def list_memories(
        cls, user: str | None = None, client: Client | None = None, trash: bool = False
    ) -> MemoryInfoList:
        """The account's memories (or ``user``'s); ``trash=True`` lists those in the trash."""
        return Memories(client if client is not None else default_client()).list(user=user, trash=trash)

    list = _ClassOrInstanceList()

    # --- the memory itself --------------------------------------------------------------

    def info(self) -> MemoryInfo:
        """The memory's current description: entry count, the agents attaching it, trash times."""
        return self.client.run(self._info_op())

    @overload
    def delete(self) -> MemoryInfo: ...

    @overload
    def delete(self, name: str, *, version: int | None = None, user: str | None = None) -> None: ...

    def delete(
        self, name: str | None = None, *, version: int | None = None, user: str | None = None
    ) -> MemoryInfo | None:
        """``delete("old-pricing", version=3)`` removes that ENTRY (as ``forget``);
        ``delete()`` with no name moves the MEMORY and its entries to the trash (``Attached``
        while agents attach it)."""
        if name is not None:
            self.delete_entry(name, version=version, user=user)
            return None
        if version is not None or user is not None:
            raise TypeError("version= and user= go with an entry's name: delete(name, version=...)")
        return self.client.run(self._info_op("DELETE"))

    def restore(self) -> MemoryInfo:
        """Bring the memory back from the trash (within 30 days)."""
        return self.client.run(self._info_op("POST", "restore"))

    def writable(self) -> MemoryAttachment:
        """This memory for an agent's ``memories=[...]``, attached writable.

        A plain ``Memory`` (or its name) there attaches it read-only: ``memories=[company,
        notes.writable()]``. Only a call acting for the memory's own scope may attach it writable.
        """
        return MemoryAttachment(self.name, writable=True)

    # --- entries ------------------------------------------------------------------------

    def save(
        self,
        name: str,
        content: str,
        *,
        description: str | None = None,
        version: int | None = None,
        user: str | None = None,
        category: str | None = None,
        importance: float | None = None,
        visibility: str | None = None,
        expires_at: str | None = None,
        clear_expiry: bool = False,
    ) -> Entry:
        """Create the entry ``name`` or replace it.

        With ``version=N`` the save lands only if the stored version is N (0: the entry must
        not exist), else ``Conflict`` with ``current_version``. A new entry needs a
        ``description``; saving without one keeps the current one. An expiry is kept too,
        unless ``expires_at`` sets a new one or ``clear_expiry=True`` removes it.
        """
        return self.client.run(self._save_op(
            name, content, description=description, version=version, user=user, category=category,
            importance=importance, visibility=visibility, expires_at=expires_at, clear_expiry=clear_expiry))

    def read(self, name: str, *, user: str | None = None, version: int | None = None) -> Entry:
        """The entry ``name`` with its content; an older version while history keeps it."""
        return self.client.run(self._read_op(name, user, version))

    def iter_entries(self, *, user: str | None = None, limit: int | None = None) -> Iterator[Entry]:
        """The layer's entries (without content), newest first, page by page as they are needed."""
        return self.client.iterate(self._path("entries"), Entry.from_dict, self._layer(user), limit=limit)

    def entries(self, *, user: str | None = None, limit: int | None = None) -> EntryList:
        """Every entry of one layer (at most ``limit``), without content, newest first."""
        return [*self.iter_entries(user=user, limit=limit)]

    def search(
        self, query: str, *, limit: int = 10, user: str | None = None, mode: str | None = None,
        min_score: float | None = None,
    ) -> FoundEntries:
        """The best entries for ``query`` (up to 100), with content, from the layers the caller sees: by meaning
        and words (``mode="hybrid"``, the default), or ``"keyword"`` / ``"semantic"`` alone; ``min_score``
        (0–1) leaves weaker hits out. A list, which also says how it was found (``Found``: ``mode``,
        ``fallback``, ``stages``, ``index_lag``)."""
        return self.client.run(self._search_op(query, limit, user, mode, min_score))

    def delete_entry(self, name: str, *, version: int | None = None, user: str | None = None) -> None:
        """Remove the entry ``name``; with ``version=N`` only if it is still at version N."""
        self.client.run(self._delete_entry_op(name, version, user))

    forget = delete_entry

    def history(self, name: str, *, user: str | None = None) -> HistoryList:
        """The entry's changes, newest first, as kept (30 days)."""
        path = self._entry_path(name) + "/history"
        return [*self.client.iterate(path, HistoryItem.from_dict, self._layer(user))]

    # --- export and import --------------------------------------------------------------

    def export(self, *, user: str | None = None, progress: Callable[[Progress], None] | None = None) -> Iterator[str]:
        """The memory as an export's lines (JSON Lines, a header first): every layer with an account key, or with
        ``user`` that user's layer only; each entry's current content, metadata, version and expiry.

            with open("company.jsonl", "w") as file:
                file.writelines(company.export())
        """
        from .exports import drive, export_lines, export_steps

        return export_lines(drive(export_steps(self.client.url, [self.name], user), self.client.run), progress)

    def import_entries(
        self, source: Iterable[str] | str | PathLike[str], *, dry_run: bool = False,
        progress: Callable[[Progress], None] | None = None,
    ) -> EntryImportReport:
        """Import an export of one memory (a path, or its lines) into this memory, layer by layer; idempotent.

        The whole file is checked first (``ExportFileError`` names the bad line; nothing is written). Each entry
        goes through the ordinary save: one whose content and metadata are already there is ``unchanged``, one
        that differs is saved as the next version, an expired one is left out, and one the service refuses
        (screening, layer rules) is reported with its reason while the rest goes on. ``dry_run``: what would
        change, nothing written."""
        from .exports import collect_report, drive, import_steps, lines_of, new_report, read_export, single_memory

        export = single_memory(read_export(lines_of(source)), self.name)
        steps = import_steps(export, dry_run=dry_run, into=self.name)
        return collect_report(drive(steps, self.client.run), new_report(export, dry_run), len(export.entries),
                              progress)
