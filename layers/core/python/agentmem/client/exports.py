"""Export and import of memories (SPEC §6.3), written once for ``Client`` and ``AsyncClient``.

An export is JSON Lines: a header line, then for each memory a ``memory`` line followed by one ``entry`` line per
entry of each of its layers (the account layer, each user's layer), with the entry's current content, its
metadata, its version and its expiry::

    {"format": "agentmem-export", "format_version": 1, "exported_at": "...", "source": {...}, "scope": {...}}
    {"type": "memory", "memory": "company", "owner": null}
    {"type": "entry", "memory": "company", "layer": null, "name": "tone", "content": "...", "version": 3, ...}

The walks are written as *steps*: generators that yield the requests they need (``rules.Op``) and get each
answer back (or its typed error thrown in), and yield what they make (a line of the export, an import's outcome,
progress). ``drive`` runs them on the blocking client, ``drive_async`` on the async one: the same walk, the same
requests, the same decisions; only the sending differs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .errors import AgentmemError, Conflict, Forbidden, Invalid, NotFound, RateLimited, Rejected
from .memory import MemoryRequests
from .models import Health, MemoryInfo, Page
from .rules import Call, CursorWalk, Op, RetryPolicy, json_object, json_op, page_of
from .transport import segment

FORMAT = "agentmem-export"
FORMAT_VERSION = 1
VISIBILITIES = ("shared", "read_only", "private")

# what one import step can be refused for, entry by entry; anything else (unreachable, 401, 5xx) stops the import
REFUSALS: tuple[type[AgentmemError], ...] = (Invalid, Forbidden, NotFound, Conflict, Rejected)


@dataclass(frozen=True)
class Progress:
    """``done`` of ``total`` entries (a step's report, for a progress bar)."""

    done: int
    total: int


Step = Generator[Any, Any, None]
"""Yields ``Op`` (answered by the driver), ``str`` (a line of an export), ``EntryImportOutcome`` or ``Progress``."""


# --- reading a file -----------------------------------------------------------------------------------------


class ExportFileError(ValueError):
    """The file is not an export this version reads: ``line`` is its 1-based line number."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


@dataclass(frozen=True)
class MemoryLine:
    memory: str
    owner: str | None  # the user owning the memory; None: the account's
    line: int = 0


@dataclass(frozen=True)
class EntryLine:
    memory: str
    layer: str | None  # the user whose layer holds it; None: the account layer
    name: str
    content: str
    description: str
    category: str | None
    importance: float | None
    visibility: str | None
    version: int
    expires_at: str | None
    line: int = 0


@dataclass(frozen=True)
class ExportFile:
    """A checked export. Its conversations (a user's export holds them) are counted, not imported."""

    header: dict[str, Any]
    memories: list[MemoryLine]
    entries: list[EntryLine]
    conversations: int = 0
    messages: int = 0


def _optional(record: dict[str, Any], key: str, kind: type | tuple[type, ...], line: int) -> Any:
    value = record.get(key)
    if value is not None and (not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool)):
        raise ExportFileError(line, f"{key!r} has the wrong type")
    return value


def _required(record: dict[str, Any], key: str, kind: type | tuple[type, ...], line: int) -> Any:
    if key not in record or record[key] is None:
        what = str(record.get("type", "entry"))
        raise ExportFileError(line, f"{'an' if what[:1] in 'aeiou' else 'a'} {what} line without {key!r}")
    return _optional(record, key, kind, line)


def _check_header(record: Any) -> dict[str, Any]:
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise ExportFileError(1, f"not an agentmem export (the first line must be the header, format {FORMAT!r})")
    version = record.get("format_version")
    if version != FORMAT_VERSION:
        raise ExportFileError(1, f"format version {version!r}: this agentmem reads version {FORMAT_VERSION}")
    return record


def read_export(lines: Iterable[str]) -> ExportFile:
    """The whole file checked before anything is written: its header, then every line. A line that is not JSON,
    not a known record, misses a field, repeats an entry or names a memory no earlier line introduced raises
    ``ExportFileError`` naming it. Blank lines are skipped."""
    header: dict[str, Any] | None = None
    memories: dict[str, MemoryLine] = {}
    entries: list[EntryLine] = []
    seen: set[tuple[str, str | None, str]] = set()
    conversations = messages = 0
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            if header is None:
                raise ExportFileError(number, "empty: an export starts with its header line")
            continue
        try:
            record = json.loads(text)
        except (ValueError, RecursionError) as error:  # RecursionError: brackets nested past the parser's depth
            if header is None:
                raise ExportFileError(number, "not an agentmem export (the first line is not JSON)") from None
            why = error.msg if isinstance(error, json.JSONDecodeError) else "nested too deep"
            raise ExportFileError(number, f"not JSON ({why})") from None
        if header is None:
            header = _check_header(record)
            continue
        if not isinstance(record, dict):
            raise ExportFileError(number, "not a JSON object")
        kind = record.get("type")
        if kind == "memory":
            name = _required(record, "memory", str, number)
            memories[name] = MemoryLine(name, _optional(record, "owner", str, number), number)
        elif kind == "entry":
            entry = _entry_line(record, number)
            if entry.memory not in memories:
                raise ExportFileError(number, f"an entry of memory {entry.memory!r} before its memory line")
            key = (entry.memory, entry.layer, entry.name)
            if key in seen:
                raise ExportFileError(number, f"entry {entry.name!r} appears twice in the same layer")
            seen.add(key)
            entries.append(entry)
        elif kind == "conversation":
            _required(record, "agent", str, number)
            _required(record, "key", str, number)
            conversations += 1
        elif kind == "message":
            _required(record, "agent", str, number)
            _required(record, "conversation", str, number)
            _required(record, "seq", int, number)
            _required(record, "role", str, number)
            messages += 1
        else:
            raise ExportFileError(number, f"unknown record type {kind!r} (expected 'memory', 'entry', "
                                          f"'conversation' or 'message')")
    if header is None:
        raise ExportFileError(1, "empty: an export starts with its header line")
    return ExportFile(header, list(memories.values()), entries, conversations, messages)


def _entry_line(record: dict[str, Any], line: int) -> EntryLine:
    visibility = _optional(record, "visibility", str, line)
    if visibility is not None and visibility not in VISIBILITIES:
        raise ExportFileError(line, f"visibility {visibility!r} is not one of {', '.join(VISIBILITIES)}")
    version = _required(record, "version", int, line)
    if version < 1:
        raise ExportFileError(line, "'version' must be 1 or more")
    importance = _optional(record, "importance", (int, float), line)
    return EntryLine(
        memory=_required(record, "memory", str, line), layer=_optional(record, "layer", str, line),
        name=_required(record, "name", str, line), content=_required(record, "content", str, line),
        description=_required(record, "description", str, line), category=_optional(record, "category", str, line),
        importance=None if importance is None else float(importance), visibility=visibility, version=version,
        expires_at=_optional(record, "expires_at", str, line), line=line,
    )


# --- writing a file -----------------------------------------------------------------------------------------


def dump(record: dict[str, Any]) -> str:
    """One line of an export: compact JSON, Unicode as is, ending in a newline."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def header_line(source: dict[str, Any], user: str | None, exported_at: str) -> str:
    return dump({"format": FORMAT, "format_version": FORMAT_VERSION, "exported_at": exported_at,
                 "source": source, "scope": {"user": user}})


def memory_line(name: str, owner: str | None) -> str:
    return dump({"type": "memory", "memory": name, "owner": owner})


ENTRY_FIELDS = ("name", "description", "content", "content_hash", "category", "importance", "visibility", "version",
                "expires_at", "created_at", "updated_at", "updated_by")


MESSAGE_FIELDS = ("seq", "turn", "role", "content", "tool_name", "tool_call_id", "arguments", "result", "client_id",
                  "created_at")
MESSAGES_PAGE = 1000


def entry_line(memory: str, layer: str | None, entry: dict[str, Any]) -> str:
    return dump({"type": "entry", "memory": memory, "layer": layer, **{key: entry.get(key) for key in ENTRY_FIELDS}})


def content_hash(content: str) -> str:
    """The hash the service keeps of an entry's content."""
    return "sha256:" + hashlib.sha256(content.encode("utf-8")).hexdigest()


def _now_iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _moment(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


# --- the requests the walks make -----------------------------------------------------------------------------


class MemoryOps(MemoryRequests):
    """A memory's requests without a client: what a walk yields for the driver to send."""

    def __init__(self, name: str, user: str | None = None) -> None:
        self.name = name
        self.user = user
        self.last_info = None

    def layers_op(self, user: str | None) -> Op[list[tuple[str | None, int]]]:
        return json_op(Call("GET", self._path("layers"), {"user": user}),
                       lambda data: [(item.get("user"), int(item.get("entry_count") or 0))
                                     for item in data.get("items") or [] if isinstance(item, dict)])

    def content_walk(self, layer: str | None) -> CursorWalk:
        return CursorWalk(self._path("entries"), {"user": layer, "content": True})


def _page_op(call: Call) -> Op[Page[dict[str, Any]]]:
    return Op(call, lambda response: page_of(json_object(response), dict))


def _health_op() -> Op[Health]:
    return json_op(Call("GET", "/health", auth=False), Health.from_dict)


def _walk(walk: CursorWalk) -> Generator[Any, Any, list[dict[str, Any]]]:
    items: list[dict[str, Any]] = []
    while (call := walk.next_call()) is not None:
        items.extend(walk.take((yield _page_op(call))))
    return items


def _is_checkpoint(entry: dict[str, Any]) -> bool:
    return bool(entry.get("conversation")) or str(entry.get("name", "")).startswith("context.")


# --- export -------------------------------------------------------------------------------------------------


def export_steps(url: str, memories: Sequence[str] | None = None, user: str | None = None) -> Step:
    """The export's lines: of the named ``memories`` (every memory of the account when ``None``), each with all
    its layers, or with ``user`` only that user's layers (and that user's own memories); a user's whole export
    (``user`` without ``memories``) ends with their conversations, each with its journal's messages. Checkpoints
    stay with their conversations; memories in the trash are not exported."""
    health: Health = yield _health_op()
    listed: list[dict[str, Any]] = yield from _walk(CursorWalk("/memories"))
    infos = [MemoryInfo.from_dict(item) for item in listed]
    if memories is not None:
        by_name = {info.name: info for info in infos}
        for name in [name for name in memories if name not in by_name]:  # not listed: the API's answer (404)
            info = yield MemoryOps(name)._info_op()
            by_name[info.name] = info
        infos = [by_name[name] for name in dict.fromkeys(memories)]
    plan: list[tuple[MemoryInfo, list[tuple[str | None, int]]]] = []
    for info in infos:
        if user is not None and info.user_id not in (None, user):
            continue
        ops = MemoryOps(info.name, info.user_id)
        layers: list[tuple[str | None, int]] = yield ops.layers_op(user)
        if user is not None:
            layers = [layer for layer in layers if layer[0] == user]
            if not layers and info.user_id != user:
                continue  # nothing of this user's in it
        plan.append((info, layers))
    conversations: list[tuple[str, str]] = []
    if user is not None and memories is None:  # all of a user's data holds their conversations too (SPEC §6.3)
        for agent in (yield from _walk(CursorWalk("/agents", {"user": user}))):
            path = f"/agents/{segment(str(agent['name']))}/conversations"
            for conversation in (yield from _walk(CursorWalk(path, {"user": user}))):
                conversations.append((str(agent["name"]), str(conversation["key"])))
    total = sum(held for _, layers in plan for _, held in layers)
    yield Progress(0, total)
    yield header_line({"url": url, "backend": health.backend, "version": health.version}, user, _now_iso())
    done = 0
    for info, layers in plan:
        yield memory_line(info.name, info.user_id)
        ops = MemoryOps(info.name, info.user_id)
        for layer, _held in layers:
            # a layer is at most 500 entries: read whole, written oldest first, so that an import (which saves in
            # the file's order) leaves the layer listed newest first as it was
            entries: list[dict[str, Any]] = yield from _walk(ops.content_walk(layer))
            for entry in reversed(entries):
                if not _is_checkpoint(entry):
                    yield entry_line(info.name, layer, entry)
                    done += 1
            yield Progress(done, max(total, done))
    for agent_name, key in conversations:
        yield dump({"type": "conversation", "agent": agent_name, "user": user, "key": key})
        path = f"/agents/{segment(agent_name)}/conversations/{segment(key)}/messages"
        after: str | None = None
        while True:
            page = yield _page_op(Call("GET", path, {"user": user, "after": after, "limit": MESSAGES_PAGE}))
            for message in page.items:
                yield dump({"type": "message", "agent": agent_name, "user": user, "conversation": key,
                            **{field: message.get(field) for field in MESSAGE_FIELDS}})
            if page.next_cursor is None or page.next_cursor == after:
                break
            after = page.next_cursor


# --- import -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EntryImportOutcome:
    """What the import did with one entry line (or would do, in a dry run).

    ``action``: ``created`` (a new entry, version 1 or the next after a deleted one), ``updated`` (saved as a new
    version of the entry there), ``unchanged`` (same content hash and metadata: skipped), ``expired`` (its expiry
    has passed: not brought back), ``refused`` (the service refused it: ``reason`` says why). ``exported_version`` is
    the version in the file; ``version`` the one the service assigned (``None`` in a dry run or when refused)."""

    memory: str
    layer: str | None
    name: str
    action: str
    exported_version: int
    version: int | None = None
    reason: str | None = None
    line: int = 0


@dataclass
class EntryImportReport:
    """What an import did: the memories it created, each entry's outcome, and the conversations (and their
    messages) of a user's export, which an import leaves out."""

    dry_run: bool = False
    memories_created: list[str] = field(default_factory=list)
    outcomes: list[EntryImportOutcome] = field(default_factory=list)
    conversations_left_out: int = 0
    messages_left_out: int = 0

    @property
    def counts(self) -> dict[str, int]:
        counted = {action: 0 for action in ("created", "updated", "unchanged", "expired", "refused")}
        for outcome in self.outcomes:
            counted[outcome.action] += 1
        return counted

    @property
    def refused(self) -> list[EntryImportOutcome]:
        return [outcome for outcome in self.outcomes if outcome.action == "refused"]

    @property
    def ok(self) -> bool:
        """Every entry imported, skipped as unchanged, or left out as expired."""
        return not self.refused


def _same(line: EntryLine, there: dict[str, Any]) -> bool:
    def close(a: Any, b: Any) -> bool:
        return a == b or (isinstance(a, float) and isinstance(b, (int, float)) and math.isclose(a, b))

    return (
        there.get("content_hash") == content_hash(line.content)
        and there.get("description") == line.description
        and (line.category is None or there.get("category") == line.category)
        and (line.importance is None or close(line.importance, there.get("importance")))
        and (line.visibility is None or there.get("visibility") == line.visibility)
        and _moment(there.get("expires_at")) == _moment(line.expires_at)
    )


def _reason(error: AgentmemError) -> str:
    return f"{error.code}: {error.message}" if error.code else error.message


def import_steps(export: ExportFile, *, dry_run: bool = False, into: str | None = None) -> Step:
    """Import ``export``: each memory created when missing (an agent's own memory must come with its agent), each
    entry saved through the ordinary save (screening and the layer rules apply), with ``version`` set so a
    concurrent change is refused rather than overwritten. With ``into``, every entry goes to that memory."""
    now = datetime.now(UTC)
    unusable: dict[str, str] = {}  # memory → why its entries cannot be imported
    absent: set[str] = set()  # memories a dry run would create (nothing to read there yet)
    owners: dict[str, str | None] = {}
    for memory in export.memories:
        name = into or memory.memory
        if name in owners:
            continue
        ops = MemoryOps(name, None if into else memory.owner)
        try:
            info: MemoryInfo = yield ops._info_op()
            owners[name] = info.user_id
            continue
        except NotFound:
            pass
        except REFUSALS as error:
            unusable[name] = _reason(error)
            continue
        owners[name] = ops.user
        if name.startswith("agent:"):
            unusable[name] = f"agent {name[6:]!r} does not exist here: create the agent first, then import again"
        elif dry_run:
            absent.add(name)
            yield EntryImportOutcome(name, None, "", "memory", 0)
        else:
            try:
                yield ops._info_op("PUT")
                yield EntryImportOutcome(name, None, "", "memory", 0)
            except REFUSALS as error:
                unusable[name] = _reason(error)
    groups: dict[tuple[str, str | None], list[EntryLine]] = {}
    for entry in export.entries:
        name = into or entry.memory
        groups.setdefault((name, owners.get(name) or entry.layer), []).append(entry)
    for (name, layer), lines in groups.items():
        there: dict[str, dict[str, Any]] = {}
        if name not in unusable and name not in absent:
            ops = MemoryOps(name, owners.get(name))
            try:
                there = {item["name"]: item for item in (yield from _walk(ops.content_walk(layer)))}
            except REFUSALS as error:
                unusable[name] = _reason(error)
        for line in lines:
            yield (yield from _import_one(name, layer, line, there.get(line.name), unusable.get(name), now, dry_run))


def _import_one(
    memory: str, layer: str | None, line: EntryLine, there: dict[str, Any] | None, unusable: str | None,
    now: datetime, dry_run: bool,
) -> Generator[Any, Any, EntryImportOutcome]:
    def outcome(action: str, version: int | None = None, reason: str | None = None) -> EntryImportOutcome:
        return EntryImportOutcome(memory, layer, line.name, action, line.version, version, reason, line.line)

    if unusable is not None:
        return outcome("refused", reason=unusable)
    expires = _moment(line.expires_at)
    if expires is not None and expires <= now:
        return outcome("expired")
    if there is not None and _same(line, there):
        return outcome("unchanged", int(there.get("version") or 0))
    action = "created" if there is None else "updated"
    if dry_run:
        return outcome(action)
    save = MemoryOps(memory, layer)._save_op(
        line.name, line.content, description=line.description, version=0 if there is None else int(there["version"]),
        user=layer, category=line.category, importance=line.importance, visibility=line.visibility,
        expires_at=line.expires_at, clear_expiry=line.expires_at is None and there is not None
        and there.get("expires_at") is not None,
    )
    try:
        saved = yield save
    except REFUSALS as error:
        return outcome("refused", reason=_reason(error))
    return outcome(action, saved.version)


# --- drivers ------------------------------------------------------------------------------------------------


RATE_LIMITED = RetryPolicy(attempts=8, backoff_s=0.5, max_wait_s=10.0)
"""How long a walk waits when the service says it is going too fast (429, with ``Retry-After``): a long import
on AWS meets the account's usage plan. Only a 429 is sent again: it was not applied, while a save that got no
answer may have been (sent again with its version, it would be refused as a conflict it caused itself)."""


def _wait_after(attempt: int, error: AgentmemError) -> float | None:
    return RATE_LIMITED.wait_before_retry(attempt, error) if isinstance(error, RateLimited) else None


def drive(steps: Step, run: Callable[[Op[Any]], Any]) -> Iterator[Any]:
    """Run ``steps`` on a blocking client's ``run``: each ``Op`` sent and answered (its typed error thrown back
    in), everything else yielded."""
    answer: Any = None
    error: AgentmemError | None = None
    while True:
        try:
            item = steps.throw(error) if error is not None else steps.send(answer)
        except StopIteration:
            return
        answer, error = None, None
        if isinstance(item, Op):
            for attempt in range(1, RATE_LIMITED.attempts + 1):
                try:
                    answer, error = run(item), None
                    break
                except AgentmemError as failed:
                    error = failed
                    wait = _wait_after(attempt, failed)
                    if wait is None:
                        break
                    time.sleep(wait)
        else:
            yield item


async def drive_async(steps: Step, run: Callable[[Op[Any]], Awaitable[Any]]) -> AsyncIterator[Any]:
    """``drive`` on the async client: each ``Op`` awaited."""
    answer: Any = None
    error: AgentmemError | None = None
    while True:
        try:
            item = steps.throw(error) if error is not None else steps.send(answer)
        except StopIteration:
            return
        answer, error = None, None
        if isinstance(item, Op):
            for attempt in range(1, RATE_LIMITED.attempts + 1):
                try:
                    answer, error = await run(item), None
                    break
                except AgentmemError as failed:
                    error = failed
                    wait = _wait_after(attempt, failed)
                    if wait is None:
                        break
                    await asyncio.sleep(wait)
        else:
            yield item


def export_lines(items: Iterable[Any], progress: Callable[[Progress], None] | None) -> Iterator[str]:
    """The lines among a driven export's items; its ``Progress`` goes to ``progress``."""
    for item in items:
        if isinstance(item, Progress):
            if progress is not None:
                progress(item)
        else:
            yield item


def new_report(export: ExportFile, dry_run: bool) -> EntryImportReport:
    return EntryImportReport(dry_run=dry_run, conversations_left_out=export.conversations,
                             messages_left_out=export.messages)


def collect_report(items: Iterable[Any], report: EntryImportReport, total: int,
                   progress: Callable[[Progress], None] | None) -> EntryImportReport:
    """A driven import's outcomes gathered into its report (``progress`` told after each entry)."""
    for item in items:
        record(report, item, total, progress)
    return report


def record(
    report: EntryImportReport, item: EntryImportOutcome, total: int, progress: Callable[[Progress], None] | None,
) -> None:
    """One outcome of a driven import into ``report`` (``progress`` told after each entry)."""
    if item.action == "memory":
        report.memories_created.append(item.memory)
        return
    report.outcomes.append(item)
    if progress is not None:
        progress(Progress(len(report.outcomes), total))


def lines_of(source: Iterable[str] | Any) -> Iterator[str]:
    """The lines of ``source``: a path (``str`` or ``os.PathLike``) read as UTF-8, or lines already."""
    import os

    if isinstance(source, (str, os.PathLike)):
        with open(source, encoding="utf-8") as handle:
            yield from handle
    else:
        yield from source


def single_memory(export: ExportFile, into: str) -> ExportFile:
    """An export about to go into one memory ``into``: it must hold only one memory's entries."""
    names = {memory.memory for memory in export.memories}
    if len(names) > 1:
        raise ValueError(f"the export holds {len(names)} memories ({', '.join(sorted(names))}): import it with "
                         f"Client.import_entries (or `agentmem import`), or export one memory to import into {into!r}")
    return export

