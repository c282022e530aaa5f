"""Recall quality: how often search finds the evidence a question needs (SPEC §4.1 journal search, §6 recall).

    .venv/bin/python bench/recall_quality.py            # 300 sessions (~14,000 messages) and the entry sets
    .venv/bin/python bench/recall_quality.py --quick    # 40 sessions (~1,900 messages)

Loads the generated data (``bench/recall_data.py``: multi-session conversations with planted facts, and
several memories of named entries) into a fresh embedded agentmem in this process, asks every question
through the real API handler (the SDK on an in-process transport) with ``mode=keyword``, ``semantic`` and
``hybrid``, and scores the ranked hits against the gold evidence: recall@5/10/20 (the share of a question's
gold found in the top k) and MRR (reciprocal rank of the first gold hit in the top 20), overall and per
question kind. Beside it, a plain BM25 baseline (``bm25s``, PyStemmer's English stemmer, English stop words)
over the same messages and entries. For off-topic entry questions (no gold), the mean number of hits.

The journal is asked twice: as generated, and written as a transcript in a service of its own (every line
after its speaker's name, the questions about the user by name: ``recall_data.as_transcript``), the form
public long-conversation benchmarks often take (``--no-transcript`` skips it).

A server that does not know ``mode`` (it ignores it, or answers 400) is still measured: the runner falls
back to no ``mode`` and the tables say which mode actually answered. Needs ``bm25s`` and ``PyStemmer``.
Prints the tables and writes ``bench/results/recall_quality.json``. A benchmark: nothing is asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recall_data import Dataset, EntryDataset, as_transcript, kinds, make_conversations, make_entries

ROOT = Path(__file__).resolve().parent.parent
MODES = ("keyword", "semantic", "hybrid")
KS = (5, 10, 20)
LIMIT = 20
CHUNK = 40  # messages per append (SPEC §4.1: 1–40)
AGENT = "bench"
SEMANTIC_WAIT_S = 60.0
KIND_ORDER = ("direct", "paraphrased", "temporal", "update", "multi")

Hit = tuple[str, int]  # (conversation, seq) or (memory, name) with seq unused


def log(message: str) -> None:
    print(f"  · {message}", file=sys.stderr, flush=True)


# --- scoring ---------------------------------------------------------------------------------------------


def score(ranked: Sequence[object], gold: Sequence[object], ks: Sequence[int] = KS) -> dict[str, float]:
    """recall@k for each k (share of the gold in the top k) and the reciprocal rank of the first gold hit."""
    wanted = set(gold)
    out = {f"r@{k}": len(wanted & set(ranked[:k])) / len(wanted) for k in ks}
    first = next((i for i, hit in enumerate(ranked[:LIMIT], start=1) if hit in wanted), None)
    out["mrr"] = 1.0 / first if first else 0.0
    return out


def mean_scores(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    return {key: round(sum(r[key] for r in rows) / len(rows), 4) for key in rows[0]}


def percentiles(samples_ns: Sequence[int], quantiles: Sequence[int] = (50, 99), unit: str = "ms"
                ) -> dict[str, float]:
    """``n`` and, for each quantile q (in percent), ``p{q}_{unit}``: the samples' q-th percentile in ms."""
    if not samples_ns:
        return {}
    values = sorted(samples_ns)

    def at(q: float) -> float:
        return round(values[min(len(values) - 1, int(q * len(values)))] / 1e6, 3)

    return {"n": len(values)} | {f"p{q}_{unit}": at(q / 100) for q in quantiles}


@dataclass
class SystemRun:
    """One system's answers to one question set: scores per question, latencies, the modes that answered."""

    label: str
    per_question: dict[str, dict[str, float]] = field(default_factory=dict)
    first_rank: dict[str, int | None] = field(default_factory=dict)
    latencies_ns: list[int] = field(default_factory=list)
    answered: dict[str, int] = field(default_factory=dict)
    offtopic_hits: list[int] = field(default_factory=list)

    def record(self, qid: str, ranked: Sequence[object], gold: Sequence[object]) -> None:
        if not gold:
            self.offtopic_hits.append(len(ranked))
            return
        self.per_question[qid] = score(ranked, gold)
        wanted = set(gold)
        self.first_rank[qid] = next((i for i, h in enumerate(ranked, start=1) if h in wanted), None)

    def summary(self, kind_of: dict[str, str]) -> dict[str, Any]:
        by_kind: dict[str, list[dict[str, float]]] = {}
        for qid, row in self.per_question.items():
            by_kind.setdefault(kind_of[qid], []).append(row)
        out: dict[str, Any] = {
            "all": mean_scores(list(self.per_question.values())),
            "by_kind": {k: mean_scores(v) | {"n": len(v)} for k, v in sorted(by_kind.items())},
            "latency": percentiles(self.latencies_ns),
            "answered_mode": self.answered,
        }
        if self.offtopic_hits:
            out["offtopic_mean_hits"] = round(sum(self.offtopic_hits) / len(self.offtopic_hits), 2)
            out["offtopic_zero_hit_share"] = round(
                sum(1 for n in self.offtopic_hits if n == 0) / len(self.offtopic_hits), 3)
        return out


# --- agentmem in process ---------------------------------------------------------------------------------------


class Agentmem:
    """A fresh embedded agentmem behind the real API handler, driven through the SDK in process."""

    def __init__(self, data_dir: Path) -> None:
        import agentmem
        from agentmem.api.app import lambda_handler
        from agentmem.bootstrap import build_container, ensure_default_account, set_container
        from agentmem.settings import Settings

        self.container = build_container(Settings(data_dir=data_dir))
        key = ensure_default_account(self.container)
        set_container(self.container)
        self.client = agentmem.Client("http://in-process", key,
                                      transport=agentmem.InProcessTransport(lambda_handler))
        self.unsupported: set[str] = set()  # endpoints that refused `mode` with a 400
        self.client.request_json("PUT", f"/agents/{AGENT}")

    def close(self) -> None:
        from agentmem.bootstrap import set_container

        set_container(None)

    def append(self, conversation: str, user: str, messages: Sequence[dict[str, str]]) -> None:
        for start in range(0, len(messages), CHUNK):
            self.client.request_json("POST", f"/agents/{AGENT}/conversations/{conversation}/messages",
                                     params={"user": user}, body={"messages": list(messages[start:start + CHUNK])})

    def save_entry(self, memory: str, name: str, description: str, content: str) -> None:
        self.client.request_json("PUT", f"/memories/{memory}/entries/{name}",
                                 body={"content": content, "description": description})

    def search(self, path: str, params: dict[str, Any], mode: str) -> tuple[list[dict[str, Any]], str, int]:
        """The items of one search, the mode that answered (with its fallback, if any), and the time it took."""
        from agentmem.client.errors import AgentmemError

        query = dict(params, limit=LIMIT)
        if path not in self.unsupported:
            query["mode"] = mode
        start = time.perf_counter_ns()
        try:
            body = self.client.request_json("GET", path, params=query)
        except AgentmemError as error:
            if error.status != 400 or "mode" not in query:
                raise
            self.unsupported.add(path)  # the server does not know `mode` yet: ask without it from now on
            log(f"{path}: mode refused ({error.message}); asking without it")
            query.pop("mode")
            start = time.perf_counter_ns()
            body = self.client.request_json("GET", path, params=query)
        elapsed = time.perf_counter_ns() - start
        answered = str(body.get("mode", "?")) if "mode" in query else "mode unsupported"
        if body.get("fallback"):
            answered += f" (fallback: {body['fallback']})"
        return list(body.get("items", [])), answered, elapsed


# --- BM25 ------------------------------------------------------------------------------------------------------


class BM25:
    """bm25s over a fixed list of documents: English stop words, PyStemmer's English stemmer."""

    def __init__(self, texts: Sequence[str]) -> None:
        import bm25s
        import Stemmer
        from bm25s.tokenization import Tokenizer

        logging.getLogger("bm25s").setLevel(logging.WARNING)  # its index build logs at DEBUG
        self.tokenizer = Tokenizer(stemmer=Stemmer.Stemmer("english"), stopwords="en")
        tokens = self.tokenizer.tokenize(list(texts), show_progress=False)
        self.retriever = bm25s.BM25()
        self.retriever.index(tokens, show_progress=False)
        self.size = len(texts)

    def search(self, query: str, k: int = LIMIT) -> tuple[list[int], int]:
        """Indexes of the top documents with a positive score, and the time it took (ns)."""
        start = time.perf_counter_ns()
        tokens = self.tokenizer.tokenize([query], update_vocab=False, show_progress=False)
        docs, scores = self.retriever.retrieve(tokens, k=min(k, self.size), show_progress=False)
        elapsed = time.perf_counter_ns() - start
        return [int(d) for d, s in zip(docs[0], scores[0], strict=True) if s > 0], elapsed


# --- journals --------------------------------------------------------------------------------------------------


def load_journal(target: Agentmem, data: Dataset, user: str) -> dict[str, float]:
    start = time.perf_counter()
    for session in data.sessions:
        target.append(session.key, user, [{"role": m.role, "content": m.content} for m in session.messages])
    seconds = time.perf_counter() - start
    return {"messages": data.message_count, "seconds": round(seconds, 2),
            "messages_per_s": round(data.message_count / seconds, 1)}


def wait_for_semantic(probe: Callable[[], tuple[bool, str]], what: str) -> dict[str, Any]:
    """Poll until a known item is found with mode=semantic (the index is filled asynchronously)."""
    start = time.perf_counter()
    answered = "?"
    while True:
        found, answered = probe()
        found = found and answered.startswith("semantic")  # a keyword fallback finding it does not count
        waited = round(time.perf_counter() - start, 1)
        if found:
            log(f"{what}: semantic search finds a known item after {waited} s (answered as {answered})")
            return {"visible": True, "waited_s": waited, "answered_mode": answered}
        if answered.startswith("mode unsupported") or waited >= SEMANTIC_WAIT_S:
            log(f"{what}: semantic search did not find the known item ({answered}, waited {waited} s)")
            return {"visible": False, "waited_s": waited, "answered_mode": answered}
        time.sleep(2.0)


def run_journal(target: Agentmem, data: Dataset, user: str) -> dict[str, Any]:
    path = f"/agents/{AGENT}/messages/search"
    probe_q = next(q for q in data.questions if q.kind == "direct")
    probe_key, probe_index = probe_q.gold[0]
    probe_text = data.text(probe_q.gold[0])

    def probe() -> tuple[bool, str]:
        items, answered, _ = target.search(path, {"q": probe_text, "user": user}, "semantic")
        return any(i["conversation"] == probe_key and i["seq"] == probe_index + 1 for i in items), answered

    semantic = wait_for_semantic(probe, "journal")
    runs = {mode: SystemRun(f"agentmem {mode}") for mode in MODES}
    for n, q in enumerate(data.questions):
        gold = [(key, index + 1) for key, index in q.gold]  # seq counts from 1 in each conversation
        for mode, run in runs.items():
            items, answered, elapsed = target.search(path, {"q": q.text, "user": user}, mode)
            run.latencies_ns.append(elapsed)
            run.answered[answered] = run.answered.get(answered, 0) + 1
            run.record(q.qid, [(i["conversation"], i["seq"]) for i in items], gold)
        if n % 100 == 99:
            log(f"journal: {n + 1}/{len(data.questions)} questions")
    ids = [(s.key, i + 1) for s in data.sessions for i in range(len(s.messages))]
    log(f"journal: BM25 over {len(ids):,} messages")
    bm25 = BM25([m.content for s in data.sessions for m in s.messages])
    base = SystemRun("BM25 (bm25s)")
    for q in data.questions:
        docs, elapsed = bm25.search(q.text)
        base.latencies_ns.append(elapsed)
        base.record(q.qid, [ids[d] for d in docs], [(key, index + 1) for key, index in q.gold])
    kind_of = {q.qid: q.kind for q in data.questions}
    systems = {**{f"agentmem_{m}": r for m, r in runs.items()}, "bm25": base}
    return {
        "semantic_index": semantic,
        "systems": {name: run.summary(kind_of) | {"label": run.label} for name, run in systems.items()},
        "first_rank": {q.qid: {name: run.first_rank.get(q.qid) for name, run in systems.items()}
                       for q in data.questions},
    }


# --- entries ---------------------------------------------------------------------------------------------------


def load_entries(target: Agentmem, data: EntryDataset) -> dict[str, float]:
    start = time.perf_counter()
    for memory in data.memories:
        target.client.request_json("PUT", f"/memories/{memory}")
    for e in data.entries:
        target.save_entry(e.memory, e.name, e.description, e.content)
    seconds = time.perf_counter() - start
    return {"entries": len(data.entries), "seconds": round(seconds, 2),
            "entries_per_s": round(len(data.entries) / seconds, 1)}


def run_entries(target: Agentmem, data: EntryDataset) -> dict[str, Any]:
    known = data.entries[0]

    def probe() -> tuple[bool, str]:
        items, answered, _ = target.search(f"/memories/{known.memory}/search", {"q": known.content}, "semantic")
        return any(i["name"] == known.name for i in items), answered

    semantic = wait_for_semantic(probe, "entries")
    runs = {mode: SystemRun(f"agentmem {mode}") for mode in MODES}
    for q in data.questions:
        for mode, run in runs.items():
            items, answered, elapsed = target.search(f"/memories/{q.memory}/search", {"q": q.text}, mode)
            run.latencies_ns.append(elapsed)
            run.answered[answered] = run.answered.get(answered, 0) + 1
            run.record(q.qid, [i["name"] for i in items if i.get("memory", q.memory) == q.memory], q.gold)
    base = SystemRun("BM25 (bm25s)")
    per_memory = {}
    for memory in data.memories:
        docs = [e for e in data.entries if e.memory == memory]
        per_memory[memory] = (BM25([f"{e.name.replace('.', ' ')} {e.description} {e.content}" for e in docs]),
                              [e.name for e in docs])
    for q in data.questions:
        index, names = per_memory[q.memory]
        found, elapsed = index.search(q.text)
        base.latencies_ns.append(elapsed)
        base.record(q.qid, [names[d] for d in found], q.gold)
    kind_of = {q.qid: q.kind for q in data.questions}
    systems = {**{f"agentmem_{m}": r for m, r in runs.items()}, "bm25": base}
    return {
        "semantic_index": semantic,
        "systems": {name: run.summary(kind_of) | {"label": run.label} for name, run in systems.items()},
    }


# --- the report -------------------------------------------------------------------------------------------------


def fmt(value: float | None) -> str:
    return "   –" if value is None else f"{value:.3f}"


def print_tables(title: str, part: dict[str, Any], kinds_present: Sequence[str]) -> None:
    systems = part["systems"]
    print(f"{title}")
    probe = part["semantic_index"]
    print(f"  semantic index: {'visible' if probe['visible'] else 'not visible'} "
          f"(probe answered as {probe['answered_mode']}, waited {probe['waited_s']} s)")
    head = f"  {'system':<20} {'R@5':>6} {'R@10':>6} {'R@20':>6} {'MRR':>6}   {'p50 ms':>7} {'p99 ms':>7}"
    has_off = any("offtopic_mean_hits" in s for s in systems.values())
    if has_off:
        head += f" {'off-topic hits':>15}"
    print(head + "   answered as")
    for s in systems.values():
        a, lat = s["all"], s["latency"]
        line = (f"  {s['label']:<20} {fmt(a.get('r@5')):>6} {fmt(a.get('r@10')):>6} {fmt(a.get('r@20')):>6} "
                f"{fmt(a.get('mrr')):>6}   {lat.get('p50_ms', 0):>7.2f} {lat.get('p99_ms', 0):>7.2f}")
        if has_off:
            line += f" {s.get('offtopic_mean_hits', 0):>15.2f}"
        answered = ", ".join(f"{k} ×{v}" for k, v in s["answered_mode"].items()) or "–"
        print(line + "   " + answered)
    print()
    print("  by kind: R@10 / MRR")
    names = list(systems)
    print("  " + f"{'kind':<12} {'n':>4}  " + "  ".join(f"{systems[n]['label']:>20}" for n in names))
    for kind in kinds_present:
        cells = []
        count = 0
        for n in names:
            row = systems[n]["by_kind"].get(kind)
            if row:
                count = row["n"]
                cells.append(f"{row['r@10']:.3f} / {row['mrr']:.3f}".rjust(20))
            else:
                cells.append("–".rjust(20))
        print("  " + f"{kind:<12} {count:>4}  " + "  ".join(cells))
    print()


def machine() -> dict[str, Any]:
    from importlib import metadata

    def version(package: str) -> str | None:
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return None

    return {"python": platform.python_version(), "cpu_count": os.cpu_count(), "platform": platform.platform(),
            "bm25s": version("bm25s"), "PyStemmer": version("PyStemmer"), "date": dt.date.today().isoformat()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--sessions", type=int, default=None, help="sessions in the conversation (default 300)")
    parser.add_argument("--quick", action="store_true", help="a small size for a quick run (40 sessions)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "recall_quality.json")
    parser.add_argument("--no-transcript", action="store_true",
                        help="skip the journal written as a transcript (speaker names, questions in the third person)")
    args = parser.parse_args(argv)
    sessions = args.sessions or (40 if args.quick else 300)
    for name, value in (("POWERTOOLS_METRICS_DISABLED", "true"), ("POWERTOOLS_TRACE_DISABLED", "true"),
                        ("POWERTOOLS_LOG_LEVEL", "WARNING")):
        os.environ.setdefault(name, value)
    started = time.perf_counter()
    log(f"generating: seed {args.seed}, {sessions} sessions")
    convo = make_conversations(args.seed, sessions)
    entries = make_entries(args.seed)
    user = convo.user.lower()
    results: dict[str, Any] = {
        "benchmark": "recall_quality",
        "quick": args.quick,
        "seed": args.seed,
        "machine": machine(),
        "setup": {
            "sessions": len(convo.sessions), "messages": convo.message_count,
            "journal_questions": kinds(convo.questions), "entries": len(entries.entries),
            "memories": entries.memories, "entry_questions": kinds(entries.questions), "limit": LIMIT,
        },
    }
    with tempfile.TemporaryDirectory(prefix="agentmem-recall-") as tmp:
        target = Agentmem(Path(tmp))
        try:
            log(f"loading {convo.message_count:,} messages in {len(convo.sessions)} conversations")
            results["load_journal"] = load_journal(target, convo, user)
            log(f"loading {len(entries.entries)} entries in {len(entries.memories)} memories")
            results["load_entries"] = load_entries(target, entries)
            log(f"journal: {len(convo.questions)} questions × {len(MODES)} modes")
            results["journal"] = run_journal(target, convo, user)
            log(f"entries: {len(entries.questions)} questions × {len(MODES)} modes")
            results["entries"] = run_entries(target, entries)
        finally:
            target.close()
    if not args.no_transcript:
        transcript = as_transcript(convo)
        with tempfile.TemporaryDirectory(prefix="agentmem-recall-transcript-") as tmp:
            target = Agentmem(Path(tmp))  # a service of its own: the plain journal's words do not count here
            try:
                log(f"transcript: loading the same {transcript.message_count:,} messages, each after its speaker")
                load_journal(target, transcript, user)
                log(f"transcript: {len(transcript.questions)} questions about {transcript.user} × {len(MODES)} modes")
                results["journal_transcript"] = run_journal(target, transcript, user)
                results["journal_transcript"]["examples"] = [q.text for q in transcript.questions[:4]]
            finally:
                target.close()
    results["seconds"] = round(time.perf_counter() - started, 1)
    report(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    shown = args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out
    print(f"wrote {shown} in {results['seconds']} s")
    return 0


def report(results: dict[str, Any]) -> None:
    setup = results["setup"]
    lj, le = results["load_journal"], results["load_entries"]
    print(f"\nRecall quality — seed {results['seed']}, {setup['sessions']} sessions, {setup['messages']:,} messages; "
          f"{setup['entries']} entries in {len(setup['memories'])} memories")
    print(f"  loading: {lj['messages']:,} messages in {lj['seconds']} s ({lj['messages_per_s']:,.0f} messages/s); "
          f"{le['entries']} entries in {le['seconds']} s ({le['entries_per_s']:,.0f} entries/s)")
    print(f"  journal questions: {setup['journal_questions']}")
    print(f"  entry questions: {setup['entry_questions']}\n")
    print_tables("Journal search (GET /agents/{agent}/messages/search)", results["journal"], KIND_ORDER)
    if "journal_transcript" in results:
        print_tables("Journal search, the same conversation as a transcript (\"Sam: …\", questions about Sam)",
                     results["journal_transcript"], KIND_ORDER)
    print_tables("Entry search (GET /memories/{memory}/search)", results["entries"], ("direct", "paraphrased"))


if __name__ == "__main__":
    sys.exit(main())
