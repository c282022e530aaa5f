"""Recall speed and memory on the embedded backend: entry recall, journal search as the journal grows, the
indexing rate and how soon a save is found by meaning.

    .venv/bin/python bench/recall_speed.py                # the journal grows to 1,000,000 messages (over an hour)
    .venv/bin/python bench/recall_speed.py --quick        # the journal stops at 100,000 messages (~10 min)
    .venv/bin/python bench/recall_speed.py --max 10000    # stop the journal at 10,000 messages (~2 min)
    .venv/bin/python bench/recall_speed.py --long-share 0 # short messages only (the journal before passages)
    .venv/bin/python bench/recall_speed.py --quick --data-dir /tmp/j  # keep the journal; run again: search it again

Everything runs in this process, through the services (no HTTP), on one embedded container in a temporary
data dir, with the configured embedder (the offline default: wordllama, 256 dimensions):

1. **Entry recall.** 20 memories × 500 entries (``bench/corpus.py``) and 500 in the agent's own memory; the
   agent attaches 10 of the 20, so ``agent_memory.search`` looks in 11 memories. After ``catch_up()``,
   a few hundred queries (1–3 words taken from the entries, and paraphrased questions whose words the
   entries mostly lack) time the agent's search and ``entries.search_page`` over one memory, top 10.
2. **Journal search.** One agent and one user; generated conversations (templates with names, places,
   numbers, references, topics) grow the same data dir 1,000 → 10,000 → 100,000 → 1,000,000 messages
   (40 messages an append, 200 a conversation). ``--long-share`` of them (default 15%) are an assistant's
   long answers of ``--long-chars`` characters (default 1,000–6,000, log-uniform): an opening, paragraphs,
   lists and often a code block, from the same words; each is cut into passages, and each passage is a
   vector of its own beside the message's whole. The mix is recorded at each size: the share of long
   messages, characters per message, the journal's vectors and passages per long message. At each size,
   after ``catch_up()``: the first (cold) query, with the semantic deadline lifted, then ~200 queries
   (keyword queries and natural-language questions drawn from the messages so far) in hybrid, keyword and
   semantic mode; p50/p99, which mode answered (a semantic side over its deadline answers by keyword,
   "fallback: timeout"), the process's resident memory (VmRSS) and its peak (VmHWM), and the database's
   size on disk.
3. **Indexing rate.** Messages and characters per second of the appends alone, and of ``catch_up()`` alone
   (embedding and writing vectors), at each step; entries per second for the entries.
4. **Freshness.** 20 times: save a new entry, then poll ``entries.search_page(mode="semantic")`` until it
   is among the hits and the semantic side answered; the median time from the save.

The agent's summary thresholds are set to their maximum, so no summary pass runs while the journal grows
(this measures recall, not summarising). The load average is recorded at the start, before each of the
journal's sizes and at the end (the machine may be shared). Prints the tables and targets, writes
``bench/results/recall_speed.json`` (after each of the journal's sizes too, marked ``partial``) and plots
journal latency against size into ``docs/img/recall_latency.png``. A benchmark: nothing is asserted; a
failing phase is reported and the rest still runs.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import datetime as dt
import gc
import io
import json
import os
import pickle
import platform
import random
import sqlite3
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any, cast

from corpus import ADJECTIVES, DAYS, MONTHS, NOUNS, PEOPLE, PLACES, VERBS, Corpus, EntryData
from report import print_targets

ROOT = Path(__file__).resolve().parent.parent
AGENT = "bench"
USER = "ana"
MEMORIES = 20
PER_MEMORY = 500
ATTACHED = 10
SIZES = (1_000, 10_000, 100_000, 1_000_000)
QUICK_MAX = 100_000
CHUNK = 40  # messages per append (the most one call takes)
CONVERSATION = 200  # messages per conversation
LIMIT = 10  # the API's default page
ENTRY_QUERIES = 300
JOURNAL_QUERIES = 200
WARMUP = 10
PROFILED = 50  # hybrid searches profiled at each of the journal's sizes (where the time goes)
FRESHNESS = 20
FRESHNESS_WAIT_S = 10.0
FRESH_MEMORY = "fresh"
COLD_DEADLINE_S = 600.0  # the first query after a catch-up may load the index into memory: let it finish
MODES = ("hybrid", "keyword", "semantic")
# the journal is also searched in hybrid bounded in time: after its middle message's time (the newer half)
BOUNDED = "hybrid, newer half"
MIB = 1024 * 1024
STATE_FILE = "recall_speed_state.pickle"  # what --data-dir keeps to go on from (Bench.keep)

TARGETS = {
    "entry_p50_ms": 10.0,
    "entry_p99_ms": 30.0,
    "journal_p50_ms": 30.0,
    "journal_p99_ms": 100.0,
    "peak_rss_mb": 1536.0,  # 1.5 GiB
    "index_msgs_per_s": 2000.0,
}


def log(message: str) -> None:
    print(f"  · {message}", file=sys.stderr, flush=True)


# --- measuring ----------------------------------------------------------------------------------------------


def percentiles(samples_ns: Sequence[int]) -> dict[str, float]:
    if not samples_ns:
        return {"n": 0}
    values = sorted(samples_ns)

    def at(q: float) -> float:
        return round(values[min(len(values) - 1, int(q * len(values)))] / 1e6, 3)

    return {"n": len(values), "p50_ms": at(0.50), "p90_ms": at(0.90), "p99_ms": at(0.99),
            "max_ms": round(values[-1] / 1e6, 3), "mean_ms": round(sum(values) / len(values) / 1e6, 3)}


def memory_mb() -> dict[str, float]:
    """The process's resident memory now (VmRSS) and at its peak so far (VmHWM), in MiB."""
    out: dict[str, float] = {}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out["rss_mb" if key == "VmRSS" else "peak_rss_mb"] = round(int(value.split()[0]) / 1024, 1)
    except OSError:
        pass
    return out


def disk_mb(path: Path) -> float:
    return round(sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / MIB, 1)


def answered_as(page: Any) -> str:
    mode = str(getattr(page, "mode", "?"))
    fallback = getattr(page, "fallback", None)
    return f"{mode} (fallback: {fallback})" if fallback else mode


@dataclass
class Series:
    """The timings of one kind of search in one mode, the modes that answered, and the hits."""

    samples_ns: list[int] = field(default_factory=list)
    cpu_ns: list[int] = field(default_factory=list)  # the process's CPU time in each search, summed over threads
    answered: dict[str, int] = field(default_factory=dict)
    hits: int = 0

    def add(self, elapsed_ns: int, page: Any, cpu_ns: int | None = None) -> None:
        self.samples_ns.append(elapsed_ns)
        if cpu_ns is not None:
            self.cpu_ns.append(cpu_ns)
        label = answered_as(page)
        self.answered[label] = self.answered.get(label, 0) + 1
        self.hits += len(getattr(page, "items", []))

    def summary(self) -> dict[str, Any]:
        n = len(self.samples_ns)
        cpu = percentiles(self.cpu_ns)
        return percentiles(self.samples_ns) | {
            "cpu_p50_ms": cpu.get("p50_ms"), "cpu_p99_ms": cpu.get("p99_ms"), "answered": self.answered,
            "mean_hits": round(self.hits / n, 2) if n else 0.0}


def run_queries(search: Callable[[str, str], Any], queries: Sequence[str], modes: Sequence[str]) -> dict[str, Any]:
    """Each query once in each mode (untimed warm-up first); the summary of each mode. The mode that asks a query
    first reads its pages into the caches for the others (the database's words, the messages found), so each mode
    goes first for its share of the queries, in turns."""
    for query in queries[:WARMUP]:
        for mode in modes:
            search(query, mode)
    gc.collect()
    series = {mode: Series() for mode in modes}
    clock, cpu = time.perf_counter_ns, time.process_time_ns
    for turn, query in enumerate(queries):
        for mode in (*modes[turn % len(modes):], *modes[:turn % len(modes)]):
            start, start_cpu = clock(), cpu()
            page = search(query, mode)
            series[mode].add(clock() - start, page, cpu() - start_cpu)
    return {mode: s.summary() for mode, s in series.items()}


class InlinePool:
    """An executor that runs what it is given at once, in the calling thread (so that one profile sees the
    semantic side too; the two sides then run one after the other)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        from concurrent.futures import Future

        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as error:
            future.set_exception(error)
        return future


def profile_searches(search: Callable[[str, str], Any], queries: Sequence[str], mode: str = "hybrid",
                     top: int = 30) -> dict[str, Any]:
    """Where a search's time goes: cProfile of ``len(queries)`` searches, the semantic side run inline (in the
    same thread) so that it is in the profile; the functions with the most time of their own and in all."""
    import cProfile
    import io
    import pstats

    import agentmem.services.recall as recall

    pool = recall._POOL
    recall._POOL = InlinePool()  # type: ignore[assignment]
    profiler = cProfile.Profile()
    try:
        start = time.perf_counter()
        profiler.enable()
        for query in queries:
            search(query, mode)
        profiler.disable()
        seconds = time.perf_counter() - start
    finally:
        recall._POOL = pool
    out: dict[str, Any] = {"searches": len(queries), "mode": mode, "seconds": round(seconds, 3),
                           "ms_per_search": round(seconds * 1000 / max(1, len(queries)), 2)}
    for key in ("tottime", "cumulative"):
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).strip_dirs().sort_stats(key).print_stats(top)
        out[key] = [line for line in text.getvalue().splitlines() if line.strip()][-(top + 1):]
    return out


@contextmanager
def deadline(container: Any, seconds: float) -> Iterator[None]:
    """Lift the semantic side's deadline for a while (the cold query that loads the index)."""
    side = getattr(container.entries, "semantic", None)
    before = getattr(side, "deadline_s", None)
    if before is not None:
        side.deadline_s = seconds  # type: ignore[union-attr]
    try:
        yield
    finally:
        if before is not None:
            side.deadline_s = before  # type: ignore[union-attr]


# --- the service ------------------------------------------------------------------------------------------------


class Bench:
    """One embedded container in ``data_dir``, an account and the benchmark's agent."""

    def __init__(self, data_dir: Path, secret: str | None = None) -> None:
        from agentmem.bootstrap import build_container, ensure_default_account
        from agentmem.settings import Settings

        self.data_dir = data_dir
        self.container = build_container(Settings(data_dir=data_dir))
        ensure_default_account(self.container)
        if secret is None:
            _, secret = self.container.keys.create_account("bench")
        self.secret = secret
        self.account = self.container.keys.authenticate("Bearer " + secret)
        self.index = self.container.search_index
        self.embedder = self.container.embedder
        self.messages = 0
        self.conversations = 0
        self.journal_vectors_from = 0  # the index's vectors before the first message (the entries')
        self._in_conversation = CONVERSATION

    def keep(self, journal: Journal) -> None:
        """Record what a later run on the same data dir (``--data-dir``) needs to go on: the account's key, the
        journal's size and its generator (the next messages and the queries' sample)."""
        state = {"secret": self.secret, "messages": self.messages, "conversations": self.conversations,
                 "journal_vectors_from": self.journal_vectors_from, "in_conversation": self._in_conversation,
                 "journal": journal}
        path = self.data_dir / STATE_FILE
        path.with_suffix(".tmp").write_bytes(pickle.dumps(state))
        path.with_suffix(".tmp").replace(path)

    @classmethod
    def resume(cls, data_dir: Path) -> tuple[Bench, Journal]:
        """The bench and journal a run with ``--data-dir`` left in ``data_dir`` (``keep``)."""
        state = _StateUnpickler(io.BytesIO((data_dir / STATE_FILE).read_bytes())).load()
        bench = cls(data_dir, state["secret"])
        bench.messages, bench.conversations = state["messages"], state["conversations"]
        bench.journal_vectors_from, bench._in_conversation = state["journal_vectors_from"], state["in_conversation"]
        return bench, state["journal"]

    def catch_up(self) -> dict[str, Any]:
        """Apply the whole queue, timed; how many queue items it applied and the vectors after."""
        if self.index is None:
            return {"error": "no search index (the semantic side is off)"}
        pending = self.index.pending() if hasattr(self.index, "pending") else None
        start = time.perf_counter()
        applied = cast(Any, self.index).catch_up()  # (the embedded index's: apply the queue now)
        seconds = time.perf_counter() - start
        out = {"pending_before": pending, "applied": applied, "seconds": round(seconds, 3)}
        if hasattr(self.index, "pending"):
            out["pending_after"] = self.index.pending()
        if hasattr(self.index, "vectors"):
            out["vectors"] = self.index.vectors()
        return out

    def put_agent(self, attached: Sequence[str]) -> None:
        from agentmem.domain.agents import Attachment
        from agentmem.services.agents import AgentSettings

        self.container.agents.put(self.account, AGENT, AgentSettings(
            memories=tuple(Attachment(m) for m in attached),
            summary_tokens=1_000_000, summary_messages=10_000,  # no summary pass while the journal grows
        ))

    def context(self) -> Any:
        return self.container.agent_memory.context(self.account, AGENT, user=None)

    def save(self, memory: str, entry: EntryData) -> None:
        from agentmem.services.entries import SaveRequest

        self.container.entries.save(
            self.account, memory, entry.name,
            SaveRequest(content=entry.content, description=entry.description, category=entry.category,
                        importance=entry.importance),
            user=None,
        )

    def append(self, journal: Journal, until: int) -> float:
        """Append generated messages until the journal holds ``until``; the seconds spent in the appends."""
        from agentmem.domain.conversations import MessageDraft, Role

        append = self.container.conversations.append
        clock = time.perf_counter_ns
        spent = 0
        while self.messages < until:
            if self._in_conversation >= CONVERSATION:
                self.conversations += 1
                self._in_conversation = 0
                journal.start_conversation()
            count = min(CHUNK, until - self.messages, CONVERSATION - self._in_conversation)
            drafts = [MessageDraft(cast(Role, role), text) for role, text in journal.messages(count)]
            start = clock()
            append(self.account, AGENT, f"conv-{self.conversations:05d}", drafts, user=USER)
            spent += clock() - start
            self.messages += count
            self._in_conversation += count
        return spent / 1e9


class _StateUnpickler(pickle.Unpickler):
    """The journal's classes are this module's, whether it runs as a script (``__main__``) or is imported."""

    def find_class(self, module: str, name: str) -> Any:
        if module in ("__main__", "recall_speed"):
            module = __name__
        return super().find_class(module, name)


# --- generated journal --------------------------------------------------------------------------------------


class Picker:
    """Words with Zipf-like frequencies (a few common, a long tail); which are common is chosen by the seed."""

    def __init__(self, words: Sequence[str], rng: random.Random, exponent: float = 0.9) -> None:
        self.words = list(words)
        rng.shuffle(self.words)
        self.cumulative = list(accumulate(1.0 / (rank ** exponent) for rank in range(1, len(self.words) + 1)))
        self.total = self.cumulative[-1]

    def __call__(self, rng: random.Random) -> str:
        return self.words[bisect.bisect(self.cumulative, rng.random() * self.total)]


USER_TEMPLATES = (
    "Can you remind me when {p} flies to {l}? I think it was {day} the {d} of {month}.",
    "I paid {amt} euros for the {a} {n} at {l} on {day}.",
    "{p} said the {topic} {n} has to be ready by {month} {d}, order {ref}.",
    "What was the name of the {n} that {p} recommended near {l}?",
    "We moved the {topic} meeting with {p} to {time} on {day}; the room is {num}.",
    "My {n} broke again, the {a} one I bought in {l} for {amt} euros.",
    "Please {v} the {topic} {n} and tell {p} it costs {amt} euros.",
    "Did {p} ever send the {n} about the {topic}? The reference was {ref}.",
    "I'm thinking of visiting {l} in {month} with {p}, maybe for {num} days.",
    "Note for later: {p}'s {n} number is {ref}, and the {n2} is kept in {l}.",
    "How is the {topic} going? {p} wanted to {v} the {n2} before {day}.",
    "ok thanks, and the {a} {n}?",
)
ASSISTANT_TEMPLATES = (
    "Noted: {p} flies to {l} on {day} {d} {month}, booking reference {ref}.",
    "I'll {v} the {a} {n} for the {topic} and let {p} know by {day}.",
    "The {n} in {l} cost {amt} euros; the receipt says order {ref}.",
    "{p} recommended the {a} {n} at {l}; it opens at {time}.",
    "Done. The {topic} {n} moved to {month} {d}, room {num}, with {p} and {p2}.",
    "You told me earlier that {p} prefers the {a} {n2} over the {n}.",
    "There are {num} of the {n} left in {l}; shall I {v} one for {p}?",
    "Reminder set: {v} the {n} for {p} at {time} on {day}.",
    "The {topic} plan: {v} the {n}, then {p} checks the {n2} in {l} by {month} {d}.",
    "Sure. {p} is in {l} until {day}; the {a} {n} arrives with order {ref}.",
)
KEYWORD_QUERIES = ("{p} {l}", "{n} {l}", "{ref}", "{topic} {n}", "{p} {n}", "{l} {month}", "{a} {n2}",
                   "{p} {topic}", "{n}", "{p} {l} {month}")
QUESTIONS = (
    "When does {p} fly to {l}?",
    "How much did I pay for the {n} in {l}?",
    "What did {p} say about the {topic}?",
    "Which {n} did {p} recommend?",
    "Where is the {n2} kept?",
    "What is {p}'s {n} number?",
    "When is the {topic} meeting with {p}?",
    "What do we know about {p}'s trip to {l} in {month}?",
    "How much money went on the {a} {n}?",
    "is {p} travelling anywhere soon",
    "what was the order reference for the {n}",
    "remind me what {p} wanted done before {day}",
)

# An assistant's long answer in a technical conversation (LONG_SHARE of the messages, LONG_CHARS long): an opening,
# paragraphs of sentences, a list or two and often a code block, built from the same words as the short messages.
LONG_SHARE = 0.15
LONG_CHARS = (1_000, 6_000)
LONG_OPENINGS = (
    "Here is what I found about the {topic} {n} that {p} asked for.",
    "Short answer: the {a} {n} in {l} is the problem, and order {ref} is where it started.",
    "I went through the {topic} notes again; this is the whole picture as of {day} {d} {month}.",
    "Good question. The {n} and the {n2} behave differently here, so let me take them one at a time.",
    "Sure, here is a plan for the {topic} {n}, with what {p} and {p2} each need to do.",
)
LONG_SENTENCES = (
    "The {a} {n} depends on the {n2}, so {p} should {v} it before {day}.",
    "First {v} the {n}; then check that the {a} {n2} still matches order {ref}.",
    "In {l} the {n} took {num} minutes on average, which is about {amt} euros a month at the current rate.",
    "If the {n2} is missing, the {topic} step fails quietly and nothing is written until {time}.",
    "{p} tried this on {day} and saw the {a} {n} come back empty {num} times out of {amt}.",
    "That is why I would not {v} the {n} again; it only moves the {n2} from {l} to somewhere else.",
    "The numbers from {month} agree: {num} requests, {amt} euros, and one {a} {n} that never arrived.",
    "You can keep the {n2} as it is, but the {topic} {n} needs its own {a} limit.",
    "Note that {p2} changed the {n} in {month}, so anything older than order {ref} uses the old {n2}.",
    "The safest order is to {v} the {n2} first, wait until {time}, and only then {v} the {n}.",
    "Nothing in {l} needs to change for this; the {a} {n} is read from the same place as before.",
    "As far as I can tell the {n} was never {a}; it was the {n2} that {p} set up on {day}.",
)
LONG_ITEMS = (
    "{v} the {a} {n} ({ref})",
    "ask {p} whether the {n2} in {l} is still needed",
    "check the {topic} {n} against order {ref} before {day}",
    "move the {n} to {l}, {num} at a time",
    "keep the {a} {n2} for {p2} until {month} {d}",
    "budget {amt} euros for the {n} and {num} hours for the {n2}",
)
LONG_CODE = (
    "```python\n{n}s = load_{n2}(\"{ref}\", place=\"{l}\")\nfor {n} in {n}s:\n"
    "    if {n}.{a}:\n        {v}({n}, limit={num})\nprint(len({n}s), \"{topic} done\")\n```",
    "```bash\n{v}-{n} --from {l} --order {ref} --limit {num}\ngrep -c {n2} {topic}.log\n```",
    "```json\n{{\"{n}\": \"{a}\", \"place\": \"{l}\", \"order\": \"{ref}\", \"limit\": {num}, "
    "\"owner\": \"{p}\"}}\n```",
    "```sql\nSELECT {n}, count(*) FROM {topic}\nWHERE place = '{l}' AND amount > {amt}\nGROUP BY {n};\n```",
)
LONG_CLOSINGS = (
    "Tell me if you want me to {v} the {n} now or wait for {p}.",
    "That should be everything for the {topic}; the next step is {p}'s.",
    "I can write this up for {p2} if it helps.",
)


class Journal:
    """Conversations of generated messages, and a uniform sample of their slots to draw queries from."""

    SAMPLE = 4000

    def __init__(self, seed: int, long_share: float = LONG_SHARE,
                 long_chars: tuple[int, int] = LONG_CHARS) -> None:
        self.rng = random.Random(seed)
        self.long_share = long_share
        self.long_chars = long_chars
        self.long = 0  # long messages made so far
        self.chars = 0  # characters of every message made so far
        self.people = Picker(PEOPLE, self.rng)
        self.places = Picker(PLACES, self.rng)
        self.nouns = Picker(NOUNS, self.rng)
        self.verbs = Picker(VERBS, self.rng)
        self.adjectives = Picker(ADJECTIVES, self.rng)
        self.sample: list[dict[str, str]] = []
        self.seen = 0
        self.topic = "plan"
        self.cast: list[str] = []
        self.spots: list[str] = []

    def start_conversation(self) -> None:
        rng = self.rng
        self.topic = self.nouns(rng)
        self.cast = [self.people(rng) for _ in range(3)]
        self.spots = [self.places(rng) for _ in range(2)]

    def _slots(self) -> dict[str, str]:
        rng = self.rng
        return {
            "p": rng.choice(self.cast) if rng.random() < 0.7 else self.people(rng),
            "p2": self.people(rng),
            "l": rng.choice(self.spots) if rng.random() < 0.6 else self.places(rng),
            "n": self.nouns(rng), "n2": self.nouns(rng), "a": self.adjectives(rng), "v": self.verbs(rng),
            "topic": self.topic, "day": rng.choice(DAYS), "month": rng.choice(MONTHS), "d": str(rng.randint(1, 28)),
            "num": str(rng.randint(2, 480)), "amt": f"{rng.randint(5, 2400)}",
            "time": f"{rng.randint(7, 20)}:{rng.choice(('00', '15', '30', '45'))}",
            "ref": f"{rng.choice('ABCDEFGHKLMNPRSTWXZ')}{rng.choice('ABCDEFGHKLMNPRSTWXZ')}-{rng.randint(1000, 99999)}",
        }

    def messages(self, count: int) -> list[tuple[str, str]]:
        rng = self.rng
        out = []
        for _ in range(count):
            slots = self._slots()
            if rng.random() < self.long_share:
                role, text = "assistant", self.long_message(slots)
                self.long += 1
            else:
                role = "user" if rng.random() < 0.5 else "assistant"
                text = rng.choice(USER_TEMPLATES if role == "user" else ASSISTANT_TEMPLATES).format(**slots)
            self.chars += len(text)
            out.append((role, text))
            self.seen += 1  # reservoir sampling (algorithm R): a uniform sample of every message so far
            if len(self.sample) < self.SAMPLE:
                self.sample.append(slots)
            else:
                slot = rng.randrange(self.seen)
                if slot < self.SAMPLE:
                    self.sample[slot] = slots
        return out

    def long_message(self, slots: dict[str, str]) -> str:
        """An assistant's long answer: its length drawn from ``long_chars`` (log-uniform: more short ones than
        long), an opening, then paragraphs, lists and at most one code block until the length is reached. Its
        first sentences use ``slots`` (the words a query may be drawn from); the rest draw words of their own."""
        rng = self.rng
        low, high = self.long_chars
        target = int(low * (high / low) ** rng.random()) if high > low else low

        def fill(template: str) -> str:
            return template.format(**(slots if rng.random() < 0.15 else self._slots()))

        blocks = [rng.choice(LONG_OPENINGS).format(**slots) + " " + rng.choice(LONG_SENTENCES).format(**slots)]
        size = len(blocks[0])
        code = rng.random() < 0.7
        while size < target:
            kind = rng.random()
            if code and kind < 0.2:
                block = fill(rng.choice(LONG_CODE))
                code = False
            elif kind < 0.45:
                numbered = rng.random() < 0.5
                items = rng.sample(LONG_ITEMS, rng.randint(3, min(6, len(LONG_ITEMS))))
                block = "\n".join((f"{i}. " if numbered else "- ") + fill(item)
                                   for i, item in enumerate(items, start=1))
            else:
                block = " ".join(fill(rng.choice(LONG_SENTENCES)) for _ in range(rng.randint(2, 6)))
            if size + len(block) > high:
                break
            blocks.append(block)
            size += len(block) + 2
        if size + 80 < high:
            blocks.append(fill(rng.choice(LONG_CLOSINGS)))
        return "\n\n".join(blocks)

    def queries(self, count: int, seed: int) -> list[str]:
        """Half keyword queries, half natural-language questions, from the slots of messages seen so far."""
        rng = random.Random(seed)
        out = []
        for i in range(count):
            slots = rng.choice(self.sample)
            template = rng.choice(KEYWORD_QUERIES if i % 2 == 0 else QUESTIONS)
            out.append(template.format(**slots))
        return out


# --- entries ------------------------------------------------------------------------------------------------

PARAPHRASES = {
    "refund": "getting my money back", "flight": "plane journey", "doctor": "physician", "invoice": "bill to pay",
    "hotel": "place to stay", "meeting": "get-together", "car": "automobile", "apartment": "flat I rent",
    "salary": "monthly pay", "holiday": "time off", "vacation": "time off work", "budget": "spending plan",
    "deadline": "due date", "contract": "signed agreement", "lawyer": "attorney", "recipe": "way to cook",
    "dinner": "evening meal", "breakfast": "morning meal", "laptop": "notebook computer", "phone": "mobile",
    "bug": "software defect", "error": "mistake", "ticket": "support case", "doctor's": "physician's",
    "mortgage": "home loan", "rent": "monthly housing cost", "delivery": "shipping", "shipment": "parcel sent",
    "complaint": "grievance", "discount": "price reduction", "price": "cost", "teacher": "instructor",
    "student": "pupil", "child": "kid", "dog": "puppy", "garden": "backyard", "kitchen": "cooking area",
    "weather": "forecast for rain", "wedding": "marriage ceremony", "birthday": "anniversary of birth",
    "gym": "fitness centre", "exercise": "workout", "medicine": "medication", "pharmacy": "chemist",
    "insurance": "cover policy", "bank": "lender", "loan": "borrowed money", "trip": "journey",
    "train": "rail", "bus": "coach ride", "restaurant": "place to eat", "meal": "food", "email": "mail message",
    "calendar": "schedule", "appointment": "booking with someone", "hospital": "clinic ward",
    "employee": "staff member", "manager": "boss", "customer": "client", "supplier": "vendor", "warehouse": "depot",
}
PARAPHRASE_TEMPLATES = (
    "what did we decide about the {0}?",
    "anything on {0} and {1}?",
    "how should I handle the {0}",
    "remind me of the rules for {0}",
    "who looks after {0}?",
    "notes about {0} for next week",
)


def entry_queries(entries: Sequence[EntryData], memory_of: Callable[[int], str], count: int,
                  seed: int) -> list[tuple[str, str]]:
    """(memory, query) pairs: two thirds 1–3 words from an entry, a third paraphrased questions."""
    words = [(memory_of(layer), q) for layer, q in Corpus.queries(list(entries), count - count // 3, seed)]
    rng = random.Random(seed + 1)
    questions: list[tuple[str, str]] = []
    while len(questions) < count // 3:
        entry = rng.choice(entries)
        text = f"{entry.description} {entry.content}".lower()
        found = sorted({w.strip(".,;:'") for w in text.split()} & PARAPHRASES.keys())
        if not found:
            continue
        picked = rng.sample(found, min(2, len(found)))
        template = rng.choice(PARAPHRASE_TEMPLATES if len(picked) > 1 else
                              [t for t in PARAPHRASE_TEMPLATES if "{1}" not in t])
        questions.append((memory_of(entry.layer), template.format(*(PARAPHRASES[w] for w in picked))))
    mixed = words + questions
    rng.shuffle(mixed)
    return mixed


def bench_entries(bench: Bench, corpus: Corpus, seed: int) -> dict[str, Any]:
    from agentmem.domain.agents import own_memory_name

    own = own_memory_name(AGENT)
    names = [f"m{i:02d}" for i in range(MEMORIES)]

    def memory_of(layer: int) -> str:
        return names[layer] if layer < MEMORIES else own

    for name in names:
        bench.container.memories.create(bench.account, name)
    bench.put_agent(names[:ATTACHED])
    entries = corpus.entries(MEMORIES + 1, PER_MEMORY)  # layer 20: the agent's own memory
    ctx = bench.context()
    log(f"entries: saving {len(entries):,} entries in {MEMORIES + 1} memories")
    from agentmem.domain.errors import RejectedInjectionError
    from agentmem.services.entries import SaveRequest

    rejected: list[str] = []  # a generated text that the write screening takes for an injection is left out
    start = time.perf_counter()
    for entry in entries:
        try:
            if entry.layer < MEMORIES:
                bench.save(names[entry.layer], entry)
            else:
                bench.container.agent_memory.save(ctx, entry.name, SaveRequest(
                    content=entry.content, description=entry.description, category=entry.category,
                    importance=entry.importance))
        except RejectedInjectionError:
            rejected.append(entry.name)
    save_s = time.perf_counter() - start
    if rejected:
        log(f"entries: {len(rejected)} rejected by the write screening (left out): {', '.join(rejected[:5])}")
    caught = bench.catch_up()
    log(f"entries: saved in {save_s:.1f} s, caught up in {caught.get('seconds', '?')} s")
    out: dict[str, Any] = {
        "entries": len(entries) - len(rejected), "rejected_by_screening": rejected,
        "memories": MEMORIES + 1, "agent_searches": ATTACHED + 1,
        "save": {"seconds": round(save_s, 2), "entries_per_s": round(len(entries) / save_s, 1)},
        "catch_up": caught | ({"entries_per_s": round(caught["applied"] / caught["seconds"], 1)}
                              if caught.get("seconds") else {}),
    }
    agent_layers = set(range(ATTACHED)) | {MEMORIES}
    queries = entry_queries([e for e in entries if e.layer in agent_layers], memory_of, ENTRY_QUERIES, seed)
    out["queries"] = len(queries)
    out["query_examples"] = [q for _, q in queries[:8]]
    ctx = bench.context()
    search = bench.container.agent_memory.search
    with deadline(bench.container, COLD_DEADLINE_S):  # the first query loads each memory's vectors
        start = time.perf_counter()
        search(ctx, queries[0][1], limit=LIMIT, mode="hybrid")
        out["agent_cold_ms"] = round((time.perf_counter() - start) * 1000, 2)
    log(f"entries: {len(queries)} queries × {len(MODES)} modes, agent over {ATTACHED + 1} memories")
    out["agent"] = run_queries(lambda q, mode: search(ctx, q, limit=LIMIT, mode=mode), [q for _, q in queries],
                               MODES)
    memory_of_query = dict((q, m) for m, q in queries)
    page = bench.container.entries.search_page
    log("entries: the same queries on one memory (entries.search_page)")
    out["one_memory"] = run_queries(
        lambda q, mode: page(bench.account, memory_of_query[q], q, limit=LIMIT, mode=mode),
        [q for _, q in queries], MODES)
    return out


def _words(text: str) -> list[str]:
    return text.split()


PROBE_WORDS = _words(
    "saxophone glacier origami volcano lighthouse porcupine telescope marmalade harpsichord tornado "
    "submarine avalanche cathedral chameleon trombone iceberg kaleidoscope labyrinth meteorite narwhal "
    "octopus pyramid quicksand rhinoceros sombrero tambourine umbrella vineyard walrus xylophone "
    "zeppelin accordion bonsai cactus dinosaur eclipse flamingo gondola hammock igloo"
)


def probe_entry(corpus: Corpus, i: int) -> EntryData:
    """A new entry of the freshness probe: a corpus entry's fields, with words no other entry uses as its text,
    so that a semantic search for its text ranks it first."""
    base = corpus.entry(MEMORIES + 1, PER_MEMORY - FRESHNESS + i)
    rng = random.Random(f"probe:{i}")
    words = rng.sample(PROBE_WORDS, 4)
    content = (f"The {words[0]} and the {words[1]} stay in the {words[2]} until the {words[3]} arrives; "
               f"a note about {words[0]} {words[1]} {words[2]} {words[3]}.")
    return EntryData(layer=base.layer, name=f"probe-{i:02d}-{words[0]}", description=f"{words[0]} {words[1]}",
                     content=content, category=base.category, importance=base.importance)


def bench_freshness(bench: Bench, corpus: Corpus) -> dict[str, Any]:
    """Save a new entry, poll a semantic search until it is found; the time from the save, 20 times. The entries
    go to a memory of their own, filled first to 20 short of a layer's 500."""
    page = bench.container.entries.search_page
    bench.container.memories.create(bench.account, FRESH_MEMORY)
    for index in range(PER_MEMORY - FRESHNESS):
        bench.save(FRESH_MEMORY, corpus.entry(MEMORIES + 1, index))
    bench.catch_up()
    found_ms: list[float] = []
    saves_ms: list[float] = []
    polls: list[int] = []
    misses = 0
    answered: dict[str, int] = {}
    for i in range(FRESHNESS):
        entry = probe_entry(corpus, i)
        query = entry.content
        start = time.perf_counter()
        bench.save(FRESH_MEMORY, entry)
        saves_ms.append((time.perf_counter() - start) * 1000)
        tries = 0
        while True:
            tries += 1
            result = page(bench.account, FRESH_MEMORY, query, limit=20, mode="semantic")
            label = answered_as(result)
            answered[label] = answered.get(label, 0) + 1
            if result.mode == "semantic" and not getattr(result, "fallback", None) and any(
                    r.entry.name == entry.name for r in result.items):
                found_ms.append((time.perf_counter() - start) * 1000)
                break
            if time.perf_counter() - start > FRESHNESS_WAIT_S:
                misses += 1
                break
            time.sleep(0.002)
        polls.append(tries)
    ordered = sorted(found_ms)
    return {
        "saves": FRESHNESS, "found": len(found_ms), "not_found_within_s": FRESHNESS_WAIT_S if misses else None,
        "misses": misses,
        "median_ms": round(ordered[len(ordered) // 2], 2) if ordered else None,
        "max_ms": round(ordered[-1], 2) if ordered else None,
        "save_median_ms": round(sorted(saves_ms)[len(saves_ms) // 2], 2),
        "polls_median": sorted(polls)[len(polls) // 2], "answered": answered,
    }


# --- journal ------------------------------------------------------------------------------------------------


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def mix(bench: Bench, journal: Journal, vectors: int | None) -> dict[str, Any]:
    """The journal so far: its share of long messages, characters per message, and the vectors it holds (a
    message's whole, and a long one's passages beside it)."""
    out: dict[str, Any] = {"long_messages": journal.long, "long_share": round(journal.long / max(1, journal.seen), 4),
                           "chars_per_message": round(journal.chars / max(1, journal.seen), 1)}
    if vectors is not None:
        held = vectors - bench.journal_vectors_from
        out |= {"journal_vectors": held, "vectors_per_message": round(held / max(1, bench.messages), 3),
                # a short message is one vector (its whole); a long one its whole and its passages
                "passages_per_long_message": round((held - bench.messages) / journal.long, 2) if journal.long else 0}
    return out


def journal_step(bench: Bench, journal: Journal, size: int, seed: int) -> dict[str, Any]:
    before = bench.messages
    chars_before = journal.chars
    log(f"journal: appending {size - before:,} messages (to {size:,})")
    load_before = load_average()
    append_s = bench.append(journal, size)
    added = bench.messages - before
    added_chars = journal.chars - chars_before
    log(f"journal: appended in {append_s:.1f} s; catching up")
    caught = bench.catch_up()
    log(f"journal: caught up in {caught.get('seconds', '?')} s ({caught.get('vectors', '?')} vectors)")
    gc.collect()
    step: dict[str, Any] = {
        "messages": bench.messages, "conversations": bench.conversations, "added": added,
        "added_chars": added_chars, "load_average_before": load_before,
        "append": {"seconds": round(append_s, 2), "messages_per_s": round(added / append_s, 1) if append_s else 0,
                   "chars_per_s": round(added_chars / append_s) if append_s else 0},
        "catch_up": caught | ({"messages_per_s": round(added / caught["seconds"], 1),
                               "chars_per_s": round(added_chars / caught["seconds"])}
                              if caught.get("seconds") else {}),
        "mix": mix(bench, journal, caught.get("vectors")),
    }
    queries = journal.queries(JOURNAL_QUERIES, seed + size)
    step["query_examples"] = queries[:6]
    search = bench.container.conversations.search_page

    middle = cast(Any, bench.container.stores.conversations).db.connection().execute(
        "SELECT created_at FROM messages WHERE id >= ? ORDER BY id LIMIT 1", (max(1, bench.messages // 2),)).fetchone()

    def ask(query: str, mode: str) -> Any:
        if mode == BOUNDED:  # (the first such search reads the journal's times: the warm-up's)
            return search(bench.account, AGENT, query, user=USER, limit=LIMIT, mode="hybrid",
                          after=middle[0] if middle else None)
        return search(bench.account, AGENT, query, user=USER, limit=LIMIT, mode=mode)

    graphs = getattr(bench.index, "graphs", None)  # the embedded index's saved graphs (vector_graphs.py)
    step["saved_graphs_at_start"] = len(graphs.partitions()) if graphs is not None else None
    with deadline(bench.container, COLD_DEADLINE_S):
        start = time.perf_counter()
        cold = ask(queries[0], "hybrid")
        step["cold_ms"] = round((time.perf_counter() - start) * 1000, 2)
        step["cold_answered"] = answered_as(cold)
        # the first search bounded in time: it reads the times of the journal's rows its saved graph does not hold
        # (all of them, about 2 s at a million, when none are; `agentmem serve`'s indexer reads them once caught up)
        start = time.perf_counter()
        bounded = ask(queries[1 % len(queries)], BOUNDED)
        step["cold_bounded_ms"] = round((time.perf_counter() - start) * 1000, 2)
        step["cold_bounded_answered"] = answered_as(bounded)
    step["after_cold"] = memory_mb()
    log(f"journal: cold query {step['cold_ms']} ms, then bounded in time {step['cold_bounded_ms']} ms "
        f"({step['saved_graphs_at_start']} saved graphs at the start); "
        f"{len(queries)} queries × {len(MODES) + 1} modes")
    step["search"] = run_queries(ask, queries, (*MODES, BOUNDED))
    gc.collect()
    try:
        step["profile"] = profile_searches(ask, queries[:PROFILED])
    except Exception as error:
        step["profile"] = {"error": failure(error)}
    step["memory"] = memory_mb()
    saving = getattr(bench.index, "save_graphs", None)
    if callable(saving):  # as `agentmem serve` does as it stops: a process that starts loads them, not builds them
        step["graphs_saved"] = saving(force=True)
        for row in step["graphs_saved"]:
            log(f"journal: saved a graph of {row['vectors']:,} vectors ({row['bytes'] / 2**20:,.0f} MiB) "
                f"in {row['seconds']} s")
    step["disk_mb"] = disk_mb(bench.data_dir)
    return step


# --- the report -----------------------------------------------------------------------------------------------


def cell(row: dict[str, Any], key: str) -> str:
    value = row.get(key)
    return f"{value:>8.2f}" if isinstance(value, int | float) else f"{'–':>8}"


def answered_text(row: dict[str, Any]) -> str:
    return ", ".join(f"{k} ×{v}" for k, v in row.get("answered", {}).items()) or "–"


def print_tables(results: dict[str, Any]) -> None:
    entries = results.get("entries", {})
    print()
    if "agent" in entries:
        print(f"Entry recall: {entries['entries']:,} entries in {entries['memories']} memories, "
              f"{entries['queries']} queries, top {LIMIT}")
        print(f"  saves {entries['save']['entries_per_s']:,.0f} entries/s; catch-up "
              f"{entries['catch_up'].get('entries_per_s', 0):,.0f} entries/s; "
              f"first (cold) agent query {entries['agent_cold_ms']} ms")
        print(f"  {'search':<34} {'mode':<9} {'p50 ms':>8} {'p99 ms':>8} {'hits':>6}   answered as")
        for key, label in (("agent", f"agent, {entries['agent_searches']} memories"),
                           ("one_memory", "one memory (entries.search_page)")):
            for mode, row in entries[key].items():
                print(f"  {label:<34} {mode:<9} {cell(row, 'p50_ms')} {cell(row, 'p99_ms')} "
                      f"{row.get('mean_hits', 0):>6.1f}   {answered_text(row)}")
        print()
    elif "error" in entries:
        print(f"Entry recall failed: {entries['error']}\n")
    steps = results.get("journal", {}).get("steps", [])
    if steps:
        print(f"Journal search: one agent, one user, {JOURNAL_QUERIES} queries per size, top {LIMIT}")
        print(f"  {'messages':>10} {'mode':<9} {'p50 ms':>8} {'p99 ms':>8} {'CPU p50':>8} {'CPU p99':>8} {'hits':>6}"
              "   answered as")
        for step in steps:
            for mode, row in step["search"].items():
                print(f"  {step['messages']:>10,} {mode:<9} {cell(row, 'p50_ms')} {cell(row, 'p99_ms')} "
                      f"{cell(row, 'cpu_p50_ms')} {cell(row, 'cpu_p99_ms')} "
                      f"{row.get('mean_hits', 0):>6.1f}   {answered_text(row)}")
        print("  (CPU: the process's CPU time during one search, summed over its threads: the two sides run side "
              "by side, so it may exceed the wall time; it leaves out the waits for a core of a shared machine)")
        print()
        profile = steps[-1].get("profile", {})
        if "tottime" in profile:
            print(f"Where the time goes at {steps[-1]['messages']:,} messages: cProfile of {profile['searches']} "
                  f"{profile['mode']} searches, semantic side inline, {profile['ms_per_search']} ms a search")
            for line in profile["tottime"][:16]:
                print(f"  {line}")
            print()
        print("Journal mix: long messages (an assistant's answers cut into passages) among short ones")
        print(f"  {'messages':>10} {'long':>9} {'share':>6} {'chars/msg':>10} {'journal vectors':>16} "
              f"{'vectors/msg':>12} {'passages/long':>14}")
        for step in steps:
            m = step.get("mix", {})
            print(f"  {step['messages']:>10,} {m.get('long_messages', 0):>9,} {m.get('long_share', 0):>6.1%} "
                  f"{m.get('chars_per_message', 0):>10,.0f} {m.get('journal_vectors', 0):>16,} "
                  f"{m.get('vectors_per_message', 0):>12.2f} {m.get('passages_per_long_message', 0):>14.1f}")
        print()
        print("Journal size, memory and indexing")
        print(f"  {'messages':>10} {'vectors':>10} {'cold ms':>9} {'bounded':>8} {'RSS MiB':>8} {'peak MiB':>9} "
              f"{'disk MiB':>9} {'append msg/s':>13} {'append chars/s':>15} {'catch-up msg/s':>15} "
              f"{'catch-up chars/s':>17}")
        for step in steps:
            mem = step.get("memory", {})
            print(f"  {step['messages']:>10,} {step['catch_up'].get('vectors', 0):>10,} {step['cold_ms']:>9.1f} "
                  f"{cell(step, 'cold_bounded_ms')} {mem.get('rss_mb', 0):>8.0f} {mem.get('peak_rss_mb', 0):>9.0f} "
                  f"{step['disk_mb']:>9.0f} "
                  f"{step['append']['messages_per_s']:>13,.0f} {step['append'].get('chars_per_s', 0):>15,.0f} "
                  f"{step['catch_up'].get('messages_per_s', 0):>15,.0f} "
                  f"{step['catch_up'].get('chars_per_s', 0):>17,.0f}")
        print()
    if results.get("journal", {}).get("error"):
        print(f"Journal stopped: {results['journal']['error']}\n")
    fresh = results.get("freshness", {})
    if "median_ms" in fresh:
        print(f"Freshness: save → found by semantic search, median {fresh['median_ms']} ms, max {fresh['max_ms']} ms "
              f"({fresh['found']}/{fresh['saves']} found; median {fresh['polls_median']} polls; "
              f"the save itself {fresh['save_median_ms']} ms)")
        print()
    elif "error" in fresh:
        print(f"Freshness failed: {fresh['error']}\n")


def checks(results: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    agent = results.get("entries", {}).get("agent", {}).get("hybrid", {})
    if "p50_ms" in agent:
        out.append({"target": f"entry recall, agent over 11 memories, hybrid p50 ≤ {TARGETS['entry_p50_ms']:g} ms",
                    "value": agent["p50_ms"], "unit": "ms", "met": agent["p50_ms"] <= TARGETS["entry_p50_ms"]})
        out.append({"target": f"entry recall, agent over 11 memories, hybrid p99 ≤ {TARGETS['entry_p99_ms']:g} ms",
                    "value": agent["p99_ms"], "unit": "ms", "met": agent["p99_ms"] <= TARGETS["entry_p99_ms"]})
    steps = results.get("journal", {}).get("steps", [])
    if steps:
        last = steps[-1]
        at = f"at {last['messages']:,}" + ("" if last["messages"] >= SIZES[-1] else f" (target: {SIZES[-1]:,})")
        for mode in ("hybrid", "keyword"):
            row = last["search"].get(mode, {})
            if "p50_ms" not in row:
                continue
            out.append({"target": f"journal {mode} p50 ≤ {TARGETS['journal_p50_ms']:g} ms {at}", "value": row["p50_ms"],
                        "unit": "ms", "met": row["p50_ms"] <= TARGETS["journal_p50_ms"]})
            out.append({"target": f"journal {mode} p99 ≤ {TARGETS['journal_p99_ms']:g} ms {at}", "value": row["p99_ms"],
                        "unit": "ms", "met": row["p99_ms"] <= TARGETS["journal_p99_ms"]})
        hybrid = last["search"].get("hybrid", {})
        fallbacks = sum(v for k, v in hybrid.get("answered", {}).items() if not k.startswith("hybrid"))
        out.append({"target": f"journal hybrid answered by hybrid (no fallback) {at}", "value": fallbacks,
                    "unit": "fallbacks", "met": fallbacks == 0})
        peak = max(s.get("memory", {}).get("peak_rss_mb", 0) for s in steps)
        out.append({"target": f"peak resident memory ≤ {TARGETS['peak_rss_mb'] / 1024:g} GiB {at}", "value": peak,
                    "unit": "MiB", "met": peak <= TARGETS["peak_rss_mb"]})
        appended = sum(s["added"] for s in steps)
        append_s = sum(s["append"]["seconds"] for s in steps)
        catch_s = sum(s["catch_up"].get("seconds", 0) for s in steps)
        if append_s:
            rate = round(appended / append_s, 1)
            out.append({"target": f"appends ≥ {TARGETS['index_msgs_per_s']:,.0f} messages/s", "value": rate,
                        "unit": "msg/s", "met": rate >= TARGETS["index_msgs_per_s"]})
        if catch_s:
            rate = round(appended / catch_s, 1)
            chars = sum(s.get("added_chars", 0) for s in steps)
            out.append({"target": f"catch-up (embed + store vectors) ≥ {TARGETS['index_msgs_per_s']:,.0f} messages/s",
                        "value": rate, "unit": "msg/s", "met": rate >= TARGETS["index_msgs_per_s"],
                        "chars_per_s": round(chars / catch_s)})
    return out


def value_text(check: dict[str, Any]) -> str:
    value = check["value"]
    if check["unit"] == "msg/s":
        chars = check.get("chars_per_s")
        return f"{value:,.0f} msg/s" + (f" ({chars / 1e6:,.2f} M chars/s)" if chars else "")
    if check["unit"] == "MiB":
        return f"{value:,.0f} MiB"
    if check["unit"] == "fallbacks":
        return f"{value} fell back"
    return f"{value:.2f} ms"


def plot(results: dict[str, Any], path: Path, before: dict[str, Any] | None = None) -> bool:
    """Journal latency against size: hybrid and keyword p50/p99 (wall), hybrid's CPU time per search at p50, and
    ``before``'s hybrid p50/p99 (an earlier results file) in grey."""
    steps = results.get("journal", {}).get("steps", [])
    if not steps:
        return False
    import logging

    import matplotlib

    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [s["messages"] for s in steps]
    fig, ax = plt.subplots(figsize=(7.5, 4.5), dpi=120)
    styles = {"hybrid": ("tab:blue", "o"), "keyword": ("tab:orange", "s")}
    for mode, (color, marker) in styles.items():
        for key, line in (("p50_ms", "-"), ("p99_ms", "--")):
            values = [s["search"].get(mode, {}).get(key) for s in steps]
            if all(v is not None for v in values):
                ax.plot(sizes, values, line, color=color, marker=marker, label=f"{mode} {key[:3]}, wall")
    cpu = [s["search"].get("hybrid", {}).get("cpu_p50_ms") for s in steps]
    if all(v is not None for v in cpu):
        ax.plot(sizes, cpu, "-.", color="tab:green", marker="^", label="hybrid p50, CPU time")
    old = (before or {}).get("journal", {}).get("steps", [])
    if old:
        when = (before or {}).get("machine", {}).get("date", "before")
        for key, line in (("p50_ms", "-"), ("p99_ms", "--")):
            values = [s["search"].get("hybrid", {}).get(key) for s in old]
            if all(v is not None for v in values):
                ax.plot([s["messages"] for s in old], values, line, color="silver", marker=".",
                        label=f"hybrid {key[:3]}, {when} (short messages only)")
    ax.axhline(TARGETS["journal_p50_ms"], color="grey", linestyle=":", linewidth=1)
    ax.axhline(TARGETS["journal_p99_ms"], color="grey", linestyle=":", linewidth=1)
    ax.text(sizes[0], TARGETS["journal_p50_ms"], " p50 target", va="bottom", fontsize=8, color="grey")
    ax.text(sizes[0], TARGETS["journal_p99_ms"], " p99 target", va="bottom", fontsize=8, color="grey")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("messages in the journal (one agent, one user)")
    ax.set_ylabel("latency, ms (in process)")
    share = results.get("long_messages", {}).get("share")
    mix = f", {share:.0%} long messages" if share else ""
    ax.set_title(f"Journal search latency, embedded backend, top {LIMIT}{mix}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return True


def machine(bench: Bench | None) -> dict[str, Any]:
    from importlib import metadata

    def version(package: str) -> str | None:
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return None

    embedder = getattr(bench, "embedder", None) if bench else None
    code: dict[str, Any] = {}
    try:  # which code ran: the commit, and the vector index's file as it was (it changes between commits)
        import hashlib
        import subprocess

        import agentmem.adapters.embedded.vector_index as vector_index

        source = Path(vector_index.__file__)
        code["vector_index_sha256"] = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
        code["vector_index_modified"] = dt.datetime.fromtimestamp(source.stat().st_mtime, dt.UTC).isoformat(
            timespec="seconds")
        code["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                        text=True, timeout=10).stdout.strip() or None
    except Exception as error:
        code["error"] = failure(error)
    return {"python": platform.python_version(), "cpu_count": os.cpu_count(), "platform": platform.platform(),
            "sqlite": sqlite3.sqlite_version, "numpy": version("numpy"), "wordllama": version("wordllama"),
            "embedder": getattr(embedder, "name", None), "dimension": getattr(embedder, "dimension", None),
            "date": dt.date.today().isoformat(), "code": code}


def failure(error: BaseException) -> str:
    where = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
    at = f" (at {Path(where.filename).name}:{where.lineno})" if where else ""
    return f"{type(error).__name__}: {error}{at}"


def write(path: Path, results: dict[str, Any]) -> None:
    """The results as they are (after each of the journal's sizes too, so a run stopped early leaves its figures)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(json.dumps(results, indent=2) + "\n")
    partial.replace(path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"stop the journal at {QUICK_MAX:,} messages")
    parser.add_argument("--max", type=int, default=None, help=f"the journal's last size (default {SIZES[-1]:,})")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--long-share", type=float, default=LONG_SHARE,
                        help=f"the share of long messages in the journal (default {LONG_SHARE:g})")
    parser.add_argument("--long-chars", default=f"{LONG_CHARS[0]}-{LONG_CHARS[1]}", metavar="MIN-MAX",
                        help=f"a long message's length in characters (default {LONG_CHARS[0]}-{LONG_CHARS[1]})")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "recall_speed.json")
    parser.add_argument("--plot", type=Path, default=ROOT / "docs" / "img" / "recall_latency.png")
    parser.add_argument("--before", type=Path, default=None,
                        help="an earlier results file whose hybrid latency the plot draws in grey")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="build the journal in this data dir and keep it (not a temporary one); when it holds "
                             "an earlier run's journal, go on from it: no entries, the sizes it holds are only "
                             "searched again (profile and compare without building again)")
    parser.add_argument("--report", action="store_true",
                        help="run nothing: print the tables of --out and draw its plot again")
    args = parser.parse_args(argv)
    before = json.loads(args.before.read_text()) if args.before else None
    if args.report:
        recorded: dict[str, Any] = json.loads(args.out.read_text())
        print_tables(recorded)
        found = checks(recorded)
        if found:
            print_targets(found, value_text, max(len(c["target"]) for c in found))
        if plot(recorded, args.plot, before):
            print(f"wrote {args.plot}")
        return 0
    low, _, high = args.long_chars.partition("-")
    long_chars = (int(low), int(high or low))
    if not 0 <= args.long_share <= 1 or not 0 < long_chars[0] <= long_chars[1]:
        parser.error("--long-share is between 0 and 1, --long-chars MIN-MAX with 0 < MIN <= MAX")
    top = args.max if args.max is not None else (QUICK_MAX if args.quick else SIZES[-1])
    sizes = [s for s in SIZES if s < top] + [top]
    for name, value in (("POWERTOOLS_METRICS_DISABLED", "true"), ("POWERTOOLS_TRACE_DISABLED", "true"),
                        ("POWERTOOLS_LOG_LEVEL", "ERROR")):
        os.environ.setdefault(name, value)
    started = time.perf_counter()
    results: dict[str, Any] = {"benchmark": "recall_speed", "quick": args.quick, "seed": args.seed,
                               "sizes": sizes, "targets": TARGETS,
                               "long_messages": {"share": args.long_share, "chars": list(long_chars)},
                               "load_average_start": load_average()}
    with contextlib.ExitStack() as stack:
        if args.data_dir is not None:
            args.data_dir.mkdir(parents=True, exist_ok=True)
            tmp = str(args.data_dir)
        else:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="agentmem-recall-speed-"))
        resumed = (Path(tmp) / STATE_FILE).exists()
        bench: Bench | None = None
        journal: Journal | None = None
        try:
            if resumed:
                bench, journal = Bench.resume(Path(tmp))
                log(f"going on from {tmp}: {bench.messages:,} messages")
            else:
                bench = Bench(Path(tmp))
            if bench.embedder is not None:
                bench.embedder.warm()
            results["machine"] = machine(bench)
            log(f"embedder {results['machine']['embedder']}; journal sizes {', '.join(f'{s:,}' for s in sizes)}")
        except Exception as error:
            results["error"] = failure(error)
            traceback.print_exc()
        corpus = Corpus(args.seed)
        if bench is not None and not resumed:
            runs: tuple[tuple[str, Callable[[Bench], dict[str, Any]]], ...] = (
                ("entries", lambda b: bench_entries(b, corpus, args.seed)),
                ("freshness", lambda b: bench_freshness(b, corpus)),
            )
            for name, run in runs:
                try:
                    results[name] = run(bench)
                except Exception as error:
                    results[name] = {"error": failure(error)}
                    traceback.print_exc()
            results["after_entries"] = memory_mb()
            journal = Journal(args.seed, args.long_share, long_chars)
            if bench.index is not None and hasattr(bench.index, "vectors"):
                bench.journal_vectors_from = bench.index.vectors()
        if bench is not None and journal is not None:
            if resumed:  # the sizes below what the data dir holds are not measured again
                sizes = [s for s in sizes if s >= bench.messages] or [bench.messages]
                results["sizes"], results["resumed_at"] = sizes, bench.messages
            results["journal"] = {"agent": AGENT, "user": USER, "messages_per_append": CHUNK,
                                  "messages_per_conversation": CONVERSATION, "queries_per_size": JOURNAL_QUERIES,
                                  "steps": []}
            for size in sizes:
                try:
                    results["journal"]["steps"].append(journal_step(bench, journal, size, args.seed))
                except Exception as error:
                    results["journal"]["error"] = f"at {size:,} messages: {failure(error)}"
                    traceback.print_exc()
                    break
                step = results["journal"]["steps"][-1]
                if args.data_dir is not None:
                    bench.keep(journal)
                log(f"journal {size:,}: hybrid p50 {step['search']['hybrid'].get('p50_ms')} ms, "
                    f"p99 {step['search']['hybrid'].get('p99_ms')} ms; RSS {step['memory'].get('rss_mb')} MiB, "
                    f"peak {step['memory'].get('peak_rss_mb')} MiB; {step['mix']}")
                write(args.out, results | {"partial": f"the journal's sizes up to {size:,} so far",
                                           "elapsed_s": round(time.perf_counter() - started, 1)})
        results["elapsed_s"] = round(time.perf_counter() - started, 1)
        results["load_average_end"] = load_average()
        print_tables(results)
        found = checks(results)
        results["checks"] = found
        if found:
            print_targets(found, value_text, max(len(c["target"]) for c in found))
        write(args.out, results)
        print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
        try:
            if plot(results, args.plot, before):
                print(f"wrote {args.plot.relative_to(ROOT) if args.plot.is_relative_to(ROOT) else args.plot}")
        except Exception as error:
            print(f"plot failed: {failure(error)}", file=sys.stderr)
        print(f"took {results['elapsed_s']:.0f} s")
    return 1 if "error" in results else 0


if __name__ == "__main__":
    sys.exit(main())
