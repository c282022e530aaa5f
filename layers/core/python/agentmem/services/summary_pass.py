"""The summary pass of one conversation (SPEC §4.3–4.5): flush → summarise → write checkpoint.

On AWS each step is a task of the Step Functions state machine (``functions/summarise``), which keeps
each step's result for the next; on the embedded backend the job runner calls ``run`` with the same
steps in one go. A step that fails is retried; nothing is lost, because nothing moves the conversation's
``folded_through`` mark but the last step, conditionally, after the checkpoint is written.

* Progressive: a pass reads the current checkpoint (an edit made through the API is the starting point)
  and only the messages that left the window since the last pass, at most ``MAX_FOLD`` of them.
* An edit wins: the checkpoint is written only at the version the pass read; an edit meanwhile fails the
  write, and the next pass starts from the edited text. Every line a person wrote into it is carried into
  each new summary, whichever summariser wrote it, until the conversation contradicts it or the person
  edits it away (``domain.checkpoint_edits``); the record keeps which lines those are.
* A deleted checkpoint forgets: the messages it covered, and those before its deletion, are behind the
  conversation's ``forgotten_through`` mark, which no pass reads before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..domain.agents import AgentRecord
from ..domain.clock import Clock, iso, utcnow
from ..domain.conversations import CheckpointWritten, ConversationRecord, ConversationRef, Message
from ..domain.errors import AgentmemError, VersionConflictError
from ..domain.models import EntryDraft, Layer, Principal
from ..domain.rules import HISTORY_DAYS, LAYER_LIMIT
from ..domain.screening import screen
from ..domain.screening_unicode import strip_invisible
from ..domain.summary_author import checkpoint_description
from ..domain.surfaces import check_surface, surface_rules
from ..foreground import GivingWay
from ..observability import logger
from ..ports.embedder import Embedder
from ..ports.entries import EntryStore
from ..ports.summariser import Summariser
from .agent_memory import CallContext
from .conversations import ConversationService, keeps_checkpoint
from .entries import SaveRequest

if TYPE_CHECKING:
    from ..domain.checkpoint_edits import ByHand
    from ..domain.flush import FactDraft

MAX_FOLD = 500  # messages one pass folds at most; the rest wait for the next pass
KNOWN_ENTRIES = 100  # the layer's most recently updated entries a flushed fact is compared with
EDIT_HISTORY_READ = 50  # versions of the checkpoint a pass reads back to find the lines a person wrote


@dataclass(frozen=True)
class Plan:
    ref: ConversationRef
    record: ConversationRecord
    agent: AgentRecord
    start: int  # fold the messages after this seq ...
    end: int  # ... up to this one


class _Known:
    """The agent's own layer as one flush pass compares its facts with: its ``KNOWN_ENTRIES`` most recently
    updated entries (name → (category, content)), read once in two statements, and each entry the pass saves
    read again and put first, as the next read of the layer would find it; the contents' vectors embedded once.
    A pass of many facts read the layer's hundred entries one by one for each fact, and embedded them again: in
    ``agentmem serve``, passes after an import held the CPU, and searches waited behind them."""

    def __init__(self, store: EntryStore, layer: Layer, now: str) -> None:
        self.store, self.layer, self.now = store, layer, now
        listed = store.list_layer(layer, now, limit=KNOWN_ENTRIES, cursor=None).items
        names = [e.name for e in listed if e.conversation is None]
        found = store.get_many([(layer, name) for name in names], now)
        self.entries: dict[str, tuple[str, str]] = {
            name: (entry.category, entry.content or "") for name in names if (entry := found.get((layer, name)))}
        self._vectors: dict[str, Sequence[float]] = {}

    def has(self, name: str) -> bool:
        """Whether the layer holds an entry of this name (among the known, else asked of the store)."""
        return name in self.entries or self.store.get(self.layer, name, self.now) is not None

    def reread(self, name: str) -> None:
        """The entry ``name`` as it is now (just saved: the layer's most recent), or gone from what is known."""
        entry = self.store.get(self.layer, name, self.now)
        self.entries.pop(name, None)
        if entry is not None and entry.conversation is None:
            self.entries = {name: (entry.category, entry.content or ""), **self.entries}
            for extra in list(self.entries)[KNOWN_ENTRIES:]:
                del self.entries[extra]

    def vectors(self, embedder: Embedder, texts: Sequence[str]) -> list[Sequence[float]]:
        """Each text's vector, embedding only those this pass has not embedded before."""
        new = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if new:
            self._vectors.update(zip(new, embedder.embed(new), strict=True))
        return [self._vectors[t] for t in texts]


def job_ref(job: Mapping[str, Any]) -> ConversationRef:
    return ConversationRef(str(job["account"]), str(job["agent"]), job.get("user") or None, str(job["conversation"]))


class SummaryPass:
    def __init__(
        self, conversations: ConversationService, summariser: Callable[[], Summariser], clock: Clock = utcnow,
        *, embedder: Callable[[], Embedder | None] = lambda: None,
    ) -> None:
        """``embedder`` (None: by words only) lets the flush find an entry that already says a fact by meaning."""
        self.conversations = conversations
        self.summariser = summariser
        self.clock = clock
        self.embedder = embedder

    @property
    def store(self) -> Any:
        return self.conversations.store

    def plan(self, job: Mapping[str, Any]) -> Plan | None:
        """What this pass folds, or None when there is nothing to fold (or nothing to fold it for)."""
        from ..domain.window import effective_cap, recent_window

        ref = job_ref(job)
        record = self.store.get(ref)
        agents = self.conversations.agent_memory.agents
        agent = agents.store.get_agent(ref.account_id, ref.agent, iso(self.clock()))
        if record is None or agent is None or agent.deleted_at is not None or not keeps_checkpoint(record):
            return None
        cap = effective_cap(agent.window_messages, record.window_messages)
        window = recent_window(self.store.tail(ref, cap), cap)
        first_in_window = window[0].seq if window else record.last_seq + 1
        start = max(record.folded_through, record.forgotten_through)
        end = min(first_in_window - 1, start + MAX_FOLD)
        if end <= start:
            return None
        return Plan(ref, record, agent, start, end)

    def _folded(self, plan: Plan) -> Sequence[Message]:
        """The messages the pass folds, as a sequence that gives way to the requests this process handles
        before each message it is iterated over (``foreground.GivingWay``): parsing them is most of a pass."""
        rows: list[Message] = []
        after = plan.start
        while after < plan.end:
            page = self.store.messages(plan.ref, after=after, limit=min(500, plan.end - after))
            if not page:
                break
            rows += [m for m in page if m.seq <= plan.end]
            after = page[-1].seq
        return GivingWay(rows)

    def _context(self, plan: Plan, job: Mapping[str, Any]) -> CallContext:
        surface = check_surface(job.get("surface") or "agent")
        principal = Principal(plan.ref.account_id, "system", "account")
        return CallContext(principal, plan.agent, plan.ref.user_id, surface, plan.ref.key,
                           surface_rules(surface, plan.ref.user_id))

    # --- the three steps ---------------------------------------------------------------------

    def flush(self, job: Mapping[str, Any]) -> dict[str, Any]:
        """Save the durable facts of the messages about to be folded into the agent's own memory."""
        from ..domain.flush import extract_facts

        plan = self.plan(job)
        if plan is None:
            return {"skip": True, "saved": []}
        ctx = self._context(plan, job)
        saved: list[str] = []
        forgotten: list[str] = []
        if ctx.rules.writes and plan.agent.capabilities.memory:
            folded = self._folded(plan)
            forgotten = self._forget(ctx, folded)
            known: _Known | None = None  # the layer as this pass sees it, read at its first fact
            for fact in GivingWay(extract_facts(folded)):
                known = known or self._known(ctx)
                name = self._same_as_existing(ctx, fact, known) or fact.name
                request = SaveRequest(content=fact.content, description=fact.description, category=fact.category,
                                      importance=fact.importance)
                try:
                    self.conversations.agent_memory.save(ctx, name, request, updated_by="system")
                    saved.append(name)
                except AgentmemError as error:  # screened out, a full layer: the fact is skipped, not the pass
                    logger.info("flush skipped a fact", extra={"fact": name, "reason": error.code})
                known.reread(name)
        return {"skip": False, "saved": saved, "forgotten": forgotten, "start": plan.start, "end": plan.end}

    def _forget(self, ctx: CallContext, folded: Sequence[Message]) -> list[str]:
        """Entries an earlier flush saved that these messages ask to forget go, as the checkpoint drops them."""
        from ..domain.flush import forgotten_names

        entries = self.conversations.agent_memory.entries
        layer = Layer(ctx.principal.account_id, ctx.agent.own_memory, ctx.user)
        page = entries.store.list_layer(layer, iso(self.clock()), limit=100, cursor=None)
        names = [e.name for e in page.items if e.conversation is None and e.updated_by == "system"]
        gone: list[str] = []
        for name in forgotten_names(folded, names):
            try:
                self.conversations.agent_memory.delete(ctx, name)
                gone.append(name)
            except AgentmemError as error:
                logger.info("flush could not forget an entry", extra={"entry": name, "reason": error.code})
        return gone

    def _known(self, ctx: CallContext) -> _Known:
        entries = self.conversations.agent_memory.entries
        return _Known(entries.store, Layer(ctx.principal.account_id, ctx.agent.own_memory, ctx.user),
                      iso(self.clock()))

    def _same_as_existing(self, ctx: CallContext, fact: FactDraft, known: _Known) -> str | None:
        """The name of an entry that already says this fact (by name, by its words, or by meaning with the
        embedder), to update rather than add (``domain.flush``): among the layer's ``KNOWN_ENTRIES`` most recently
        updated, as ``known`` holds them."""
        from ..domain.flush import closest, meaning_candidates, meaning_threshold, same_fact

        if known.has(fact.name):
            return fact.name
        for name, (_, content) in known.entries.items():
            if content and same_fact(content, fact.content):
                return name
        existing = {name: pair for name, pair in known.entries.items() if pair[1]}
        candidates = meaning_candidates(fact.name, fact.category, existing)
        embedder = self.embedder() if candidates else None
        threshold = meaning_threshold(embedder.name) if embedder is not None else None
        if embedder is None or threshold is None:
            return None
        try:
            vectors = known.vectors(embedder, [fact.content] + [existing[name][1] for name in candidates])
        except Exception as error:  # an embedder that fails leaves the match to the words
            logger.info("flush compared by words only", extra={"fact": fact.name, "reason": type(error).__name__})
            return None
        return closest(vectors[0], dict(zip(candidates, vectors[1:], strict=True)), threshold)

    def summarise(self, job: Mapping[str, Any], results: Mapping[str, Any]) -> dict[str, Any]:
        """The new summary from the current checkpoint and the folded messages, with the lines a person
        wrote into the checkpoint carried into it."""
        from ..domain.checkpoint_edits import carry

        plan = self._as_flushed(self.plan(job), results.get("flush") or {})
        if plan is None:
            return {"skip": True}
        checkpoint = self._checkpoint(plan)
        previous = checkpoint.content if checkpoint is not None else None
        rows = self._folded(plan)
        text, written_by = _written(self.summariser(), previous, rows)
        theirs = self._lines_by_hand(plan, checkpoint) if checkpoint is not None else []
        carried = carry(previous or "", text, theirs, rows)
        return {
            "skip": False, "summary": carried.text, "lines_by_hand": list(carried.lines_by_hand),
            "base_version": checkpoint.version if checkpoint else 0,
            "expected_folded_through": plan.record.folded_through, "start": plan.start, "end": plan.end,
            "tokens": sum(m.tokens for m in rows), "messages": len(rows), "summariser": written_by,
        }

    def _lines_by_hand(self, plan: Plan, checkpoint: Any) -> list[ByHand]:
        """The checkpoint's lines a person wrote: those the record keeps, and those of each edit since the
        last pass (its history says who wrote each version)."""
        from ..domain.checkpoint_edits import Version, lines_by_hand

        entries = self.conversations.agent_memory.entries
        layer = plan.ref.checkpoint_layer(plan.agent.own_memory)
        history = entries.store.history(layer, plan.ref.checkpoint_name, iso(self.clock()), limit=EDIT_HISTORY_READ)
        versions = [Version(h.version, h.updated_by, h.content, h.changed_at, h.operation == "delete")
                    for h in history]
        current = Version(checkpoint.version, checkpoint.updated_by, checkpoint.content or "", checkpoint.updated_at)
        return lines_by_hand(current, versions, carried=plan.record.lines_by_hand,
                             since=plan.record.checkpoint_version)

    def write_checkpoint(self, job: Mapping[str, Any], results: Mapping[str, Any]) -> dict[str, Any]:
        """Store the summary at the version it was made from, then move the folded mark."""
        made = results.get("summarise") or {}
        if made.get("skip", True):
            return {"skip": True}
        ref = job_ref(job)
        plan = self.plan(job)
        if plan is None:
            return {"skip": True}
        if plan.record.folded_through != made["expected_folded_through"] or plan.start != made["start"]:
            return {"skip": True, "reason": "another pass folded these messages"}
        now = self.clock()
        layer = ref.checkpoint_layer(plan.agent.own_memory)
        draft = EntryDraft(
            name=ref.checkpoint_name, content=safe_summary(made["summary"], ref.user_id) or "(nothing to keep)",
            description=checkpoint_description(ref.key, int(made["end"]), str(made.get("summariser") or "unknown")),
            category="checkpoint", importance=0.5, visibility="private" if ref.user_id else "shared",
            conversation=ref.key, updated_by="system",
        )
        entries = self.conversations.agent_memory.entries
        try:
            entry, _ = entries.store.save(
                layer, draft, expected_version=int(made["base_version"]), now=iso(now),
                keep_history_until=iso(now + timedelta(days=HISTORY_DAYS)), layer_limit=LAYER_LIMIT,
            )
        except VersionConflictError:
            current = entries.store.get(layer, ref.checkpoint_name, iso(now))
            if current is None or current.content != draft.content:
                # edited (or deleted) since the summary was made: the edit wins; the next pass starts from it
                return {"skip": True, "reason": "the checkpoint changed while the pass ran"}
            entry = current  # this step's own earlier attempt wrote it before failing: finish the job
        agent = plan.agent
        try:
            record = self.store.mark_folded(
                ref, expected_folded_through=int(made["expected_folded_through"]), folded_through=int(made["end"]),
                folded_tokens=int(made["tokens"]), folded_messages=int(made["messages"]), now=iso(now),
                thresholds=(agent.summary.tokens, agent.summary.messages),
                written=CheckpointWritten(entry.version, tuple(str(i) for i in made.get("lines_by_hand") or ())),
            )
        except VersionConflictError:
            return {"skip": True, "reason": "another pass folded these messages"}
        sealed = self.store.seal(ref)
        if record.due_since is not None:  # more than one pass's worth was waiting
            self.conversations.start_pass(record, reason="more")
        return {"skip": False, "checkpoint": entry.name, "version": entry.version, "covers_through_seq": made["end"],
                "sealed": sealed, "summariser": made.get("summariser")}

    @staticmethod
    def _as_flushed(plan: Plan | None, flushed: Mapping[str, Any]) -> Plan | None:
        """The plan cut to what the flush read: messages appended since then wait for the next pass, or
        their facts would be folded without ever being saved."""
        if plan is None or flushed.get("skip", True) or "end" not in flushed:
            return plan
        if plan.start != flushed.get("start"):
            return None  # another pass folded meanwhile
        end = min(plan.end, int(flushed["end"]))
        return replace(plan, end=end) if end > plan.start else None

    def _checkpoint(self, plan: Plan) -> Any:
        entries = self.conversations.agent_memory.entries
        layer = plan.ref.checkpoint_layer(plan.agent.own_memory)
        return entries.store.get(layer, plan.ref.checkpoint_name, iso(self.clock()))

    def run(self, job: Mapping[str, Any]) -> dict[str, Any]:
        """Every step in order, passing results along as the state machine does (the embedded runner)."""
        results: dict[str, Any] = {"flush": self.flush(job)}
        results["summarise"] = self.summarise(job, results)
        results["write_checkpoint"] = self.write_checkpoint(job, results)
        return {"job": dict(job), "results": results}


def _written(summariser: Summariser, previous: str | None, rows: Sequence[Message]) -> tuple[str, str]:
    """The summary and the name of what wrote it (a summariser that falls back names the fallback)."""
    named = getattr(summariser, "summarise_named", None)  # a duck-typed summariser may have only summarise
    if named is not None:
        text, by = named(previous, rows)
        return str(text), str(by)
    return summariser.summarise(previous, rows), str(getattr(summariser, "name", "unknown"))


def safe_summary(text: str, user_id: str | None) -> str:
    """A summary the service writes keeps no invisible character (a zero-width one, Unicode tags that hide
    text …) and no line that tries to steer the model; in the account's layer (a conversation with the account
    itself) it keeps no sensitive line either (SPEC §2.5)."""
    kept = []
    for line in strip_invisible(text).splitlines():
        found = screen(line)
        if found.injection or (user_id is None and found.sensitive):
            continue
        kept.append(line)
    return "\n".join(kept).strip()
