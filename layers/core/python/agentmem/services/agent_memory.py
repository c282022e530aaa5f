"""The memory an agent's tool call touches (SPEC §3.3), under the rules of its surface (§7).

Every memory operation of the agent tools runs here, whatever the dialect that named it. An agent
acts with its own authority, bounded by these rules: its own memory it always may write (unless the
surface is read-only or its memory capability is off); an attached memory only when attached writable.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..domain.access import AgentWrite, acting_user, check_read_only
from ..domain.agents import AgentRecord
from ..domain.clock import iso
from ..domain.errors import ForbiddenError, NotFoundError, NoUserContextError
from ..domain.models import Entry, Layer, MemoryRecord, Principal, UpdatedBy
from ..domain.rules import check_name, check_user_id
from ..domain.surfaces import Surface, SurfaceRules, check_surface, surface_rules
from .agents import AgentService
from .entries import EntryService, SaveRequest, SearchPage


@dataclass(frozen=True)
class CallContext:
    """One tool call: which agent, talking with whom, where."""

    principal: Principal  # the caller's key
    agent: AgentRecord
    user: str | None  # the conversation's user; None: a conversation with the account itself
    surface: Surface
    conversation: str | None
    rules: SurfaceRules

    @property
    def writer(self) -> AgentWrite:
        """What ``check_layer_write`` needs to know of this conversation: its user, and whether the
        agent may save in the account layer there. The caller's key stays the principal of every call,
        so a user key's limits hold through the tools exactly as through the entries API."""
        return AgentWrite(self.user, self.agent.user_conversations_write_shared)


@dataclass(frozen=True)
class ReadResult:
    entry: Entry
    memory: str
    also_in: tuple[str, ...] = ()


@dataclass(frozen=True)
class AgentSaveResult:
    entry: Entry
    created: bool
    memory: str
    forced: str | None = None
    downgraded: str | None = None


class AgentMemory:
    def __init__(self, agents: AgentService, entries: EntryService) -> None:
        self.agents = agents
        self.entries = entries

    def context(
        self, principal: Principal, agent: str, *, user: str | None = None, surface: str | None = None,
        conversation: str | None = None,
    ) -> CallContext:
        acting = acting_user(principal, user)
        record = self.agents.get(principal, agent, acting)
        if record.user_id is not None:
            acting = record.user_id  # a user's agent talks with its user only
        if conversation is not None:
            check_user_id(conversation, field="conversation")
        where = check_surface(surface)
        return CallContext(principal, record, acting, where, conversation, surface_rules(where, acting))

    def _now(self) -> str:
        return iso(self.entries.clock())

    # --- which memory -----------------------------------------------------------------

    def _memory(self, ctx: CallContext, name: str) -> MemoryRecord:
        record = self.entries.memories.store.get_memory(
            ctx.principal.account_id, name, self._now(), counts=False
        )
        if record is None or record.deleted_at is not None:
            raise NotFoundError(f"memory {name!r} is gone", field="memory")
        return record

    def readable(self, ctx: CallContext) -> list[MemoryRecord]:
        """Its own memory first, then each attached one in attachment order (a browser sees none of
        the account's)."""
        names = [ctx.agent.own_memory, *(a.memory for a in ctx.agent.memories)]
        self.entries.memories.store.read_ahead(ctx.principal.account_id, names, self._now())
        memories = [self._memory(ctx, ctx.agent.own_memory)]
        for attachment in ctx.agent.memories:
            record = self._memory(ctx, attachment.memory)
            if record.user_id is None and not ctx.rules.account_memories:
                continue
            memories.append(record)
        return memories

    def _target(self, ctx: CallContext, memory: str | None, *, write: bool) -> MemoryRecord:
        name = memory or ctx.agent.own_memory
        if name != ctx.agent.own_memory:
            attachment = ctx.agent.attachment(name)
            if attachment is None:
                raise NotFoundError(
                    f"agent {ctx.agent.name!r} does not attach a memory named {name!r}; it reads "
                    f"{', '.join(m.name for m in self.readable(ctx))}", field="memory",
                )
            record = self._memory(ctx, name)
            if record.user_id is None and not ctx.rules.account_memories:
                raise NotFoundError(
                    f"memory {name!r} is the account's, and the {ctx.surface} surface never sees the account's "
                    "memories", field="memory",
                )
            if write and record.user_id is None and not ctx.rules.account_memories_writable:
                raise ForbiddenError(
                    f"memory {name!r} is the account's, and an anonymous {ctx.surface} client only reads the "
                    "account's memories", memory=name, reason="read_only_surface",
                )
            if write and not attachment.writable:
                raise ForbiddenError(f"memory {name!r} is attached read-only to agent {ctx.agent.name!r}",
                                     memory=name, reason="attached_read_only")
            return record
        return self._memory(ctx, name)

    def _check_write(self, ctx: CallContext) -> None:
        if not ctx.agent.capabilities.memory:
            raise ForbiddenError(
                f"agent {ctx.agent.name!r} has the memory capability off: no tool creates or changes an entry",
                reason="memory_capability_off",
            )
        if ctx.rules.read_only:
            raise ForbiddenError(
                f"memory is read-only on the {ctx.surface} surface: nothing is written there",
                reason="read_only_surface",
            )

    def _layer_user(self, ctx: CallContext, record: MemoryRecord) -> str | None:
        """The layer the agent reads first: a user's memory has only its user's."""
        return record.user_id if record.user_id is not None else ctx.user

    # --- the operations -------------------------------------------------------------------

    def read(self, ctx: CallContext, name: str, memory: str | None = None) -> ReadResult:
        check_name(name)
        candidates = [self._target(ctx, memory, write=False)] if memory else self.readable(ctx)
        found: list[tuple[MemoryRecord, Entry]] = []
        for record in candidates:
            entry = self._read_one(ctx, record, name)
            if entry is not None:
                found.append((record, entry))
        if not found:
            where = memory or ", ".join(r.name for r in candidates)
            raise NotFoundError(f"no entry named {name!r} in {where}")
        record, entry = found[0]
        return ReadResult(entry, record.name, tuple(r.name for r, _ in found[1:]))

    def _read_one(self, ctx: CallContext, record: MemoryRecord, name: str) -> Entry | None:
        try:
            user = self._layer_user(ctx, record)
            if record.user_id is None and user is not None:
                return self.entries.read_shadowed(ctx.principal, record.name, name, user=user)
            return self.entries.read(ctx.principal, record.name, name, user=user)
        except NotFoundError:
            return None

    def search(
        self, ctx: CallContext, query: str, *, limit: int | None = None, memory: str | None = None,
        cursor: str | None = None, mode: str | None = None, min_score: float | None = None,
    ) -> SearchPage:
        records = [self._target(ctx, memory, write=False)] if memory else self.readable(ctx)
        groups: list[list[Layer]] = []
        for record in records:
            user = self._layer_user(ctx, record)
            layers = [Layer(record.account_id, record.name, user)]
            if record.user_id is None and user is not None:
                layers.append(Layer(record.account_id, record.name, None))
            groups.append(layers)
        return self.entries.search_layers(groups, query, limit=limit, cursor=cursor, mode=mode,
                                          min_score=min_score)

    def save(
        self, ctx: CallContext, name: str, request: SaveRequest, memory: str | None = None, *,
        updated_by: UpdatedBy = "agent",
    ) -> AgentSaveResult:
        check_name(name)
        self._check_write(ctx)
        record = self._target(ctx, memory, write=True)
        downgraded = None
        if record.user_id is not None:
            user: str | None = record.user_id
        elif ctx.user is None:
            user = None
            if request.visibility == "private":
                if ctx.surface == "mcp" and ctx.agent.anonymous_private_writes == "shared":
                    downgraded = "no_user_context"
                else:
                    raise NoUserContextError(
                        "a private entry needs a user, and this conversation has none"
                        + (" (an anonymous MCP client)" if ctx.surface == "mcp" else "")
                        + "; save it shared, or talk to the agent as a user", field="visibility",
                    )
        elif request.visibility == "shared" and ctx.agent.user_conversations_write_shared:
            user = None
        else:
            user = ctx.user
        if user is None:  # a save into a user's layer is checked by the entries service, as every path's is
            self._refuse_read_only(ctx, record, name, user)
        request = replace(request, visibility="private" if user is not None else "shared")
        result = self.entries.save(
            ctx.principal, record.name, name, request, user=user, updated_by=updated_by, agent=ctx.writer
        )
        return AgentSaveResult(result.entry, result.created, record.name, result.forced, downgraded)

    def delete(
        self, ctx: CallContext, name: str, *, version: int | None = None, memory: str | None = None
    ) -> Entry:
        check_name(name)
        self._check_write(ctx)
        record = self._target(ctx, memory, write=True)
        user = self._layer_user(ctx, record)
        if record.user_id is None and user is not None:
            own = self._entry(Layer(record.account_id, record.name, user), name)
            if own is None and self._entry(Layer(record.account_id, record.name, None), name) is not None:
                raise ForbiddenError(
                    f"{name!r} is the account's entry; in a user's conversation the agent deletes only that "
                    "user's entries", reason="account_entry",
                )
        self._refuse_read_only(ctx, record, name, user)
        return self.entries.delete(ctx.principal, record.name, name, user=user, version=version,
                                   updated_by="agent", agent=ctx.writer)

    def _entry(self, layer: Layer, name: str) -> Entry | None:
        return self.entries.store.get(layer, name, self._now())

    def _refuse_read_only(self, ctx: CallContext, record: MemoryRecord, name: str, user: str | None) -> None:
        """``read_only`` entries are the API's and the console's (``domain/access.py`` ``check_read_only``): an
        agent never changes them, nor makes a user's copy that would hide one."""
        if record.user_id is not None:
            return
        layer = Layer(record.account_id, record.name, user)
        own = self._entry(layer, name) if user is not None else None
        shared = self._entry(Layer(record.account_id, record.name, None), name) if own is None else None
        check_read_only(layer, name, own=own, shared=shared, agent=True)

