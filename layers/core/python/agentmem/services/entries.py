"""Entries: save, read, list, delete, history and search within one memory (SPEC §2, §6.1)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta

from ..domain.access import (
    AgentWrite,
    acting_user,
    check_layer_write,
    check_read_only,
    check_requested_visibility,
    entry_layer,
    layer_visibility,
    visible_layers,
)
from ..domain.clock import Clock, iso, utcnow
from ..domain.cursor import decode_cursor, encode_cursor
from ..domain.errors import InvalidError, NotFoundError
from ..domain.history import visible_history
from ..domain.models import Entry, EntryDraft, HistoryItem, Layer, Page, Principal, SaveResult, UpdatedBy, Visibility
from ..domain.recall import (
    ENTRY_KEYWORD_CANDIDATES,
    SEMANTIC_CANDIDATES,
    Calibration,
    Fallback,
    Mode,
    Signals,
    Stage,
    check_min_score,
    check_mode,
    fuse,
    pool,
)
from ..domain.rules import (
    CHECKPOINT_PREFIX,
    HISTORY_DAYS,
    LAYER_LIMIT,
    LIST_LIMIT_DEFAULT,
    LIST_LIMIT_MAX,
    SEARCH_LIMIT_DEFAULT,
    SEARCH_LIMIT_MAX,
    check_category,
    check_content,
    check_description,
    check_expires_at,
    check_importance,
    check_limit,
    check_name,
    check_version,
)
from ..domain.screening import decide_write, screen
from ..domain.search import Query, Ranked, check_query
from ..domain.text import entry_index_text
from ..ports.entries import EntryStore
from .memories import MemoryService
from .recall import PendingAnswer, Reranking, SemanticAnswer, SemanticSide, answered


@dataclass(frozen=True)
class SearchPage:
    """One page of a recall: the hits best first, the next page's cursor, the mode that answered, and why it
    fell back to keyword when it did."""

    items: list[Ranked]
    next_cursor: str | None
    mode: Mode = "keyword"
    fallback: Fallback | None = None
    stages: tuple[Stage, ...] = ()  # what ran, in order (keyword, semantic, fusion, rerank)
    index_lag: int | None = None  # entries of the searched layers not yet in the semantic index


@dataclass(frozen=True)
class SaveRequest:
    """The body of a save, before validation."""

    content: str
    description: str | None = None
    category: str | None = None
    importance: float | None = None
    visibility: Visibility | None = None
    expires_at: str | None = None  # None keeps the entry's expiry ...
    version: int | None = None
    clear_expiry: bool = False  # ... unless this asks to remove it


class EntryService:
    def __init__(
        self, store: EntryStore, memories: MemoryService, clock: Clock = utcnow, layer_limit: int = LAYER_LIMIT
    ) -> None:
        self.store = store
        self.memories = memories
        self.clock = clock
        self.layer_limit = layer_limit
        self.checkpoint_deleted: list[Callable[[Layer, Entry], None]] = []
        self.semantic: SemanticSide | None = None  # recall's semantic side (the composition root sets it)
        self.reranking: Reranking | None = None  # recall's re-ranking stage, mode=deep (the composition root sets it)
        self.calibration = Calibration()

    def save(
        self,
        principal: Principal,
        memory: str,
        name: str,
        request: SaveRequest,
        *,
        user: str | None = None,
        updated_by: UpdatedBy = "api",
        agent: AgentWrite | None = None,
    ) -> SaveResult:
        """Validate, screen, check who may write the layer, then write in one store transaction that
        checks the version.

        ``agent`` is set when an agent writes in one of its conversations (tools, MCP, the flush): with a
        user at hand, sensitive content meant for the account layer is forced into that user's layer
        instead of refused, and ``check_layer_write`` bounds the layers it may change.
        """
        check_name(name, allow_checkpoint=name.startswith(CHECKPOINT_PREFIX))
        now = self.clock()
        # every field checked in this order, and the draft built once where it lands (a dataclass replace
        # costs more than the rest of this Python together)
        content = check_content(request.content)
        description = check_description(request.description) if request.description is not None else None
        category = check_category(request.category) if request.category is not None else None
        importance = check_importance(request.importance) if request.importance is not None else None
        expires_at = check_expires_at(request.expires_at, now) if request.expires_at is not None else None
        expected = check_version(request.version) if request.version is not None else None
        now_text = iso(now)
        acting = acting_user(principal, user)
        try:
            record = self.memories.get(principal, memory, acting, counts=False, now=now_text)
        except NotFoundError as missing:  # the first mistake of many: say how to make the memory
            if memory.startswith("agent:"):  # an agent's own memory comes with the agent
                raise
            raise NotFoundError(f"{missing.message}: create it first with PUT /v1/memories/{memory} "
                                f"(Memory.create({memory!r}) in the SDK, `agentmem memories create {memory}`)",
                                **missing.details) from None
        layer = entry_layer(record, acting, principal)
        if name.startswith(CHECKPOINT_PREFIX):
            self._editing_a_checkpoint(layer, name, now_text)
        check_requested_visibility(principal, request.visibility)
        visibility = layer_visibility(layer, request.visibility)
        keep_read_only = request.visibility is None  # the store keeps a read_only entry so (EntryDraft)
        decision = decide_write(
            screen(name, description, content), target_user=layer.user_id,
            user_at_hand=agent.user if agent is not None else None,
        )
        if decision.user_id != layer.user_id:
            layer = entry_layer(record, decision.user_id, principal)
            visibility, keep_read_only = "private", False
        check_layer_write(principal, layer, "save", agent=agent)
        shared = self._shared_of_copy(layer, record.user_id is None, name, now_text)
        draft = EntryDraft(
            name=name, content=content, description=description, category=category, importance=importance,
            expires_at=expires_at, clear_expiry=request.clear_expiry, updated_by=updated_by, visibility=visibility,
            keep_read_only=keep_read_only and layer.user_id is None,
        )
        if draft.description is None and shared is not None:
            draft = self._copy_of_shared(draft, shared)
        entry, created = self.store.save(
            layer,
            draft,
            expected_version=expected,
            now=now_text,
            keep_history_until=iso(now + timedelta(days=HISTORY_DAYS)),
            layer_limit=self.layer_limit,
        )
        return SaveResult(entry=entry, created=created, forced=decision.forced)

    def _editing_a_checkpoint(self, layer: Layer, name: str, now: str) -> None:
        """A checkpoint is corrected like any entry (SPEC §4.4: an edit wins over the next summary), but
        only the service makes one: a ``context.`` name that is not a checkpoint of this layer is refused."""
        current = self.store.get(layer, name, now)
        if current is None or current.conversation is None:
            check_name(name)  # raises: names starting 'context.' are reserved for checkpoints

    def _shared_of_copy(self, layer: Layer, account_memory: bool, name: str, now: str) -> Entry | None:
        """A save into a user's layer of an account memory, of a name that layer does not hold yet, makes the
        user's own copy of the account's entry of that name, if there is one: that entry (read with the
        user's in one ``get_many``), once ``check_read_only`` has let the copy be made (never of a
        ``read_only`` one, by any path). None for any other save."""
        if layer.user_id is None or not account_memory:
            return None
        account = Layer(layer.account_id, layer.memory, None)
        found = self.store.get_many([(layer, name), (account, name)], now)
        own, shared = found.get((layer, name)), found.get((account, name))
        check_read_only(layer, name, own=own, shared=shared, agent=False)
        return shared if own is None else None

    @staticmethod
    def _copy_of_shared(draft: EntryDraft, shared: Entry) -> EntryDraft:
        """A user's first save of a name only the account has makes the user's own copy (SPEC §2.3),
        taking the account entry's description, category and importance unless the save gives them."""
        return replace(
            draft,
            description=shared.description,
            category=draft.category or shared.category,
            importance=draft.importance if draft.importance is not None else shared.importance,
        )

    def read(
        self, principal: Principal, memory: str, name: str, *, user: str | None = None, version: int | None = None
    ) -> Entry:
        check_name(name, allow_checkpoint=True)
        now = iso(self.clock())
        layer = self._layer(principal, memory, user, now)
        if version is not None:
            # every version, the current one too, has its snapshot in the history: one query, no entry read
            check_version(version)
            for item in self._visible_history(layer, name, now):
                if item.version == version and item.operation != "delete":
                    return Entry(
                        name=name, description=item.description, content=item.content, category=item.category,
                        importance=item.importance, visibility=item.visibility, version=item.version,
                        updated_by=item.updated_by, created_at=item.created_at or item.changed_at,
                        updated_at=item.changed_at, expires_at=item.expires_at, content_hash=item.content_hash,
                        memory=layer.memory, user_id=layer.user_id,
                    )
        entry = self.store.get(layer, name, now)
        if entry is not None and (version is None or entry.version == version):
            return entry  # no version asked, or the current one whose snapshot is past the keep time
        if version is None:
            raise NotFoundError(f"no entry named {name!r} in this layer")
        raise NotFoundError(f"version {version} of {name!r} is not kept (history lasts {HISTORY_DAYS} days)")

    def read_shadowed(self, principal: Principal, memory: str, name: str, *, user: str) -> Entry:
        """A user's view: their own copy when they have one, else the account's (SPEC §2.3)."""
        check_name(name)
        now = iso(self.clock())
        record = self.memories.get(principal, memory, acting_user(principal, user), counts=False, now=now)
        for layer in visible_layers(record, user, principal):
            entry = self.store.get(layer, name, now)
            if entry is not None:
                return entry
        raise NotFoundError(f"no entry named {name!r} for user {user!r}")

    def list_entries(
        self, principal: Principal, memory: str, *, user: str | None = None, limit: int | None = None,
        cursor: str | None = None, content: bool = False,
    ) -> Page:
        """One page of a layer, newest first; with ``content``, each entry read whole (an export's walk): one
        batch of reads for the page, and an entry deleted or expired since the listing is left out."""
        size = check_limit(limit, default=LIST_LIMIT_DEFAULT, maximum=LIST_LIMIT_MAX)
        now = iso(self.clock())
        layer = self._layer(principal, memory, user, now)
        page = self.store.list_layer(layer, now, limit=size, cursor=cursor)
        if not content or not page.items:
            return page
        whole = self.store.get_many([(layer, entry.name) for entry in page.items], now)
        return Page([whole[(layer, e.name)] for e in page.items if (layer, e.name) in whole], page.next_cursor)

    def layers(self, principal: Principal, memory: str, *, user: str | None = None) -> list[tuple[str | None, int]]:
        """The memory's layers that hold entries, as ``(user or None, entries held)``: every layer for an account
        key without ``user``; else the account layer and that user's only (a user key: its own user's)."""
        acting = acting_user(principal, user)
        record = self.memories.get(principal, memory, acting, counts=False)
        found = self.store.layers(principal.account_id, record.name)
        if principal.kind == "account" and acting is None:
            return found
        return [layer for layer in found if layer[0] is None or layer[0] == acting]

    def delete(
        self, principal: Principal, memory: str, name: str, *, user: str | None = None, version: int | None = None,
        updated_by: UpdatedBy = "api", agent: AgentWrite | None = None,
    ) -> Entry:
        check_name(name, allow_checkpoint=True)
        expected = check_version(version) if version is not None else None
        now = self.clock()
        now_text = iso(now)
        layer = self._layer(principal, memory, user, now_text)
        check_layer_write(principal, layer, "delete", agent=agent)
        deleted = self.store.delete(
            layer, name, expected_version=expected, now=now_text,
            keep_history_until=iso(now + timedelta(days=HISTORY_DAYS)), updated_by=updated_by, memory_live=True,
        )
        if name.startswith(CHECKPOINT_PREFIX):
            for forget in self.checkpoint_deleted:
                forget(layer, deleted)  # deleting a checkpoint forgets that part of the conversation for good
        return deleted

    def history(self, principal: Principal, memory: str, name: str, *, user: str | None = None) -> list[HistoryItem]:
        check_name(name, allow_checkpoint=True)
        now = iso(self.clock())
        layer = self._layer(principal, memory, user, now)
        items = self._visible_history(layer, name, now)
        # a live entry whose changes are all older than the keep time has an empty history, not a 404
        if not items and self.store.get(layer, name, now) is None:
            raise NotFoundError(f"no history for {name!r} in this layer")
        return items

    def _visible_history(self, layer: Layer, name: str, now: str) -> list[HistoryItem]:
        """An entry that expired takes its history with it, even once the name holds a new entry; a live or
        deleted one keeps every kept version, including versions that had an expiry of their own before it
        was lifted (domain/history.py)."""
        return visible_history(self.store.history(layer, name, now), now)

    def search(
        self, principal: Principal, memory: str, query: str, *, user: str | None = None, limit: int | None = None,
        mode: str | None = None,
    ) -> list[Ranked]:
        """Recall over the layers the caller sees; a user's copy shadows the account's."""
        return self.search_page(principal, memory, query, user=user, limit=limit, mode=mode).items

    def search_page(
        self, principal: Principal, memory: str, query: str, *, user: str | None = None, limit: int | None = None,
        cursor: str | None = None, mode: str | None = None, min_score: float | None = None,
    ) -> SearchPage:
        """One page of a search and the cursor of the next (None on the last page)."""
        acting = acting_user(principal, user)
        record = self.memories.get(principal, memory, acting, counts=False)
        return self.search_layers([visible_layers(record, acting, principal)], query, limit=limit, cursor=cursor,
                                  mode=mode, min_score=min_score)

    def search_layers(
        self, groups: Sequence[Sequence[Layer]], query: str, *, limit: int | None = None, cursor: str | None = None,
        mode: str | None = None, min_score: float | None = None,
    ) -> SearchPage:
        """One page of a recall over memories, each given as the layers the caller sees of it, the user's
        first: within a memory the user's copy shadows the account's, whether or not it matched.

        Keyword candidates come from the store (read-your-writes), semantic ones from the index; every
        semantic candidate is read again from the store (layer, expiry, deletion, the current version) before
        it may be returned, and the two lists are fused in ``domain/recall.py``."""
        size = check_limit(limit, default=SEARCH_LIMIT_DEFAULT, maximum=SEARCH_LIMIT_MAX)
        offset = decode_cursor(cursor) if cursor else 0
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidError("cursor is not one this service gave out", field="cursor")
        check_query(query)
        wanted_mode = check_mode(mode)
        floor = check_min_score(min_score)
        compiled = Query(query)
        now = iso(self.clock())  # one moment for the candidates, the re-check and the shadowing
        layers = [layer for group in groups for layer in group]
        pending = (self._semantic_candidates(layers, query, pool(SEMANTIC_CANDIDATES, offset, size))
                   if wanted_mode != "keyword" else None)
        found: dict[tuple[str, str | None, str], Entry] = {}
        keyword: dict[tuple[str, str | None, str], float] = {}
        names_of: dict[Layer, set[str]] = {}  # every name a layer holds, when the candidates told them all

        def by_words() -> None:
            keyword_pool = pool(ENTRY_KEYWORD_CANDIDATES, offset, size)
            candidates = self.store.search_candidates(layers, compiled.words, compiled.whole, now,
                                                      limit=keyword_pool)
            if self.store.candidates_are_whole_layers and (compiled.words or compiled.whole):
                names_of.update({layer: set() for layer in layers})
                for candidate in candidates:
                    held_by = Layer(layers[0].account_id, candidate.memory or "", candidate.user_id)
                    names_of.setdefault(held_by, set()).add(candidate.name)
            for ranked in compiled.rank(candidates, len(candidates)):
                key = (ranked.entry.memory or "", ranked.entry.user_id, ranked.entry.name)
                found[key], keyword[key] = ranked.entry, ranked.score

        stages: list[Stage] = []
        if wanted_mode != "semantic" and layers:
            by_words()  # while the semantic side embeds and searches
            stages.append("keyword")
        semantic = pending.answer() if pending is not None else None
        # counted once the semantic side has searched: what it applied of the queue first is indexed
        lag = self._index_lag(layers, semantic)
        how = answered(wanted_mode, semantic)
        if wanted_mode == "semantic" and how.mode == "keyword" and layers:
            by_words()  # the semantic side fell back: the words answer
            stages.append("keyword")
        cosine: dict[tuple[str, str | None, str], float] = {}
        if semantic is not None:
            allowed = set(layers)
            near: dict[tuple[str, str | None, str], float] = {}
            for hit in semantic.hits:
                user = hit.fields.get("user") or None
                key = (str(hit.fields.get("memory")), user, str(hit.fields.get("name")))
                if Layer(layers[0].account_id, key[0], user) in allowed:
                    near.setdefault(key, hit.score)
            # the store decides, never the index: one read of every candidate the words did not bring
            unread = [(Layer(layers[0].account_id, k[0], k[1]), k[2]) for k in near if k not in found]
            for (layer, name), current in self.store.get_many(unread, now).items():
                if current.conversation is None:
                    found[(layer.memory, layer.user_id, name)] = current
            cosine = {k: score for k, score in near.items() if k in found}
            if semantic.fallback is None and layers:
                stages.append("semantic")
        if "keyword" in stages and "semantic" in stages:
            stages.append("fusion")
        keep = self._unshadowed(groups, found, now, names_of)
        signals = {k: Signals(keyword.get(k), cosine.get(k), found[k].importance) for k in found if k in keep}
        deep = wanted_mode == "deep" and self.reranking is not None
        # deep: the default cut-off is the re-ranking stage's to make, so it reads the fused top whole
        fused = fuse(signals, how.mode, self.calibration, min_score=0.0 if deep and floor is None else floor,
                     keyword_scale=compiled.full_match())
        answered_mode, fallback = how.mode, how.fallback
        if wanted_mode == "deep" and self.reranking is None:
            answered_mode, fallback = "hybrid" if how.mode == "deep" else how.mode, fallback or "rerank_not_configured"
        elif self.reranking is not None and deep:
            cut = floor if floor is not None else (self.calibration.min_score if how.mode != "keyword" else 0.0)
            outcome = self.reranking.deepen(
                query, fused, lambda k: entry_index_text(k[2], found[k].description, found[k].content),
                mode=how.mode, fallback=how.fallback, cut=cut)
            answered_mode, fallback, fused = outcome.mode, outcome.fallback, outcome.ranked
            if outcome.reranked:
                stages.append("rerank")
        ranked_page = [Ranked(found[k], score) for k, score in fused]
        more = len(ranked_page) > offset + size
        return SearchPage(ranked_page[offset : offset + size], encode_cursor(offset + size) if more else None,
                          answered_mode, fallback, tuple(stages), lag)

    def _semantic_candidates(self, layers: Sequence[Layer], query: str, k: int) -> PendingAnswer:
        if self.semantic is None:
            return PendingAnswer(SemanticAnswer([], "not_configured"))
        if not layers:
            return PendingAnswer(SemanticAnswer([]))
        return self.semantic.start(query, self._semantic_scope(layers), k)

    def _index_lag(self, layers: Sequence[Layer], semantic: SemanticAnswer | None) -> int | None:
        """How many entries of the searched layers the semantic index has not caught up with (None: keyword mode,
        no semantic side configured, no layer to search, or an index that cannot tell)."""
        if semantic is None or semantic.fallback == "not_configured" or self.semantic is None or not layers:
            return None
        return self.semantic.lag(self._semantic_scope(layers))

    @staticmethod
    def _semantic_scope(layers: Sequence[Layer]) -> dict[str, str | list[str]]:
        """What the semantic side searches of ``layers``, and counts the lag of: the account's entries of their
        memories and layers."""
        return {"kind": "entry", "account": layers[0].account_id,
                "memory": sorted({layer.memory for layer in layers}),
                "user": sorted({layer.user_key for layer in layers})}

    def _unshadowed(
        self, groups: Sequence[Sequence[Layer]], found: Mapping[tuple[str, str | None, str], Entry], now: str,
        names_of: Mapping[Layer, set[str]],
    ) -> set[tuple[str, str | None, str]]:
        """The candidates a user sees: an account entry is hidden by the user's own copy of its name. The
        user's names come from the search's own read of their layer when it read it whole (``names_of``: no
        request of its own), else from the store (``existing_names``). A checkpoint never shadows: account
        candidates are never checkpoints, and no other entry may take a checkpoint's name."""
        keep = set(found)
        for group in groups:
            if len(group) > 1:
                mine, shared = group[0], group[1]
                names = [k[2] for k in found if k[0] == shared.memory and k[1] is None]
                if mine in names_of:
                    held = names_of[mine].intersection(names)
                else:
                    held = self.store.existing_names(mine, names, now) if names else set()
                keep -= {(shared.memory, None, name) for name in held}
        return keep

    def _layer(self, principal: Principal, memory: str, user: str | None, now: str) -> Layer:
        """The layer an entry call acts on, its memory looked up at the call's moment ``now``."""
        acting = acting_user(principal, user)
        return entry_layer(self.memories.get(principal, memory, acting, counts=False, now=now), acting, principal)
