"""Journal search while the semantic index catches up with a large import (embedded backend).

    .venv/bin/python bench/recall_lag.py                   # 10,000 long messages (~ a few minutes)
    .venv/bin/python bench/recall_lag.py --messages 2000   # a shorter run
    .venv/bin/python bench/recall_lag.py --asked-first     # the conversation searched during a backlog

An ``agentmem serve`` process in miniature, in this process: one embedded container in a temporary data dir
with the configured embedder (the offline default: wordllama, 256 dimensions) and the indexer thread
``agentmem serve`` runs (``IndexWorker``). Then:

1. **Import.** 10,000 long messages (1,000–4,000 characters each, varied: prose from many sentence shapes
   with names, places, numbers and dates, lists, code and log lines) into 50 conversations of 200, 40 an
   append, as fast as the appends go. The indexer starts embedding as soon as the first append lands.
2. **Search meanwhile.** From the first append until the index has caught up, a client thread asks journal
   search (hybrid, the default deadline, top 10) over and over: keyword queries and questions, over all of
   the user's conversations and over one. Each answer's time, the mode that answered, its ``fallback``
   and its ``index_lag`` are kept.
3. **While reading ahead.** Once the vectors have caught up, the indexer reads the journal's token states for
   ``mode=deep`` (``adapters/embedded/minilm_states.py``, when the MiniLM reranker is installed and
   ``AGENTMEM_RERANK_STORE_TOKENS`` is not 0): the searches go on for ``--read-ahead-s`` seconds (30) or until
   it is done, and its throughput is measured (messages, characters, word pieces a second). With
   ``AGENTMEM_RERANK_STORE_TOKENS=0`` the same 30 s with an idle indexer: the figure to compare with.
4. **After.** The same queries once the indexer has stopped: the latency the other two are compared with.

Prints a table and writes ``bench/results/recall_lag.json``: timeout fallbacks (the goal: none), search
p50/p99 while catching up and after, the index lag the answers reported, and the catch-up throughput in
messages and characters per second (from the first append to an empty queue, and the indexer's own time).
A benchmark: nothing is asserted.

``--asked-first``: what a conversation searched during a backlog waits for. The same messages are imported with
the indexer stopped (a bulk import into the data dir), then the indexer starts and a client searches the *last*
conversation of the import over and over (hybrid, within it). Measured twice, the conversation embedded first
once it is searched behind (``adapters/embedded/asked_first.py``) and the queue in the order it came (as before
it): the time until that conversation's searches say ``index_lag`` 0, and until the whole queue is drained.
Writes ``bench/results/recall_lag_asked_first.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from corpus import ADJECTIVES, DAYS, MONTHS, NOUNS, PEOPLE, PLACES, SENTENCES, VERBS

ROOT = Path(__file__).resolve().parent.parent
AGENT = "lag"
USER = "ana"
MESSAGES = 10_000
CONVERSATION = 200
CHUNK = 40
LIMIT = 10
MIN_CHARS, MAX_CHARS = 1_000, 4_000
RESULT = ROOT / "bench" / "results" / "recall_lag.json"
RESULT_ASKED_FIRST = ROOT / "bench" / "results" / "recall_lag_asked_first.json"

CODE = [
    "def {n}_{v}(items):\n    total = 0\n    for item in items:\n        total += item.{n}\n    return total\n",
    "SELECT {n}, count(*) FROM {n}s WHERE {n}_id = {num} GROUP BY {n};\n",
    "if ({n}.length > {num}) {{\n  throw new Error('{a} {n}');\n}}\n",
    "curl -s https://api.example.com/{n}s/{num} | jq '.{n}'\n",
]
LOG = "{D} 2026-{mm}-{dd}T{hh}:{mi}:07Z {level} {n}-service: {v} {n} {num} took {ms} ms\n"
QUESTIONS = [
    "what did {P} say about the {n}", "when was the {n} in {L} changed", "{a} {n} {n}",
    "who handles the {n} for {L}", "{n} {num}", "how do we {v} the {n}", "{P} {n}",
    "what is the plan for the {n} in {M}", "error in {n}-service", "{n} {n} {L}",
]


def fill(template: str, rng: random.Random) -> str:
    words = {
        "P": lambda: rng.choice(PEOPLE), "L": lambda: rng.choice(PLACES), "D": lambda: rng.choice(DAYS),
        "M": lambda: rng.choice(MONTHS), "n": lambda: rng.choice(NOUNS), "v": lambda: rng.choice(VERBS),
        "a": lambda: rng.choice(ADJECTIVES), "x": lambda: str(rng.randint(2, 99)),
        "num": lambda: str(rng.randint(10, 99_999)), "mm": lambda: f"{rng.randint(1, 12):02d}",
        "dd": lambda: f"{rng.randint(1, 28):02d}", "hh": lambda: f"{rng.randint(0, 23):02d}",
        "mi": lambda: f"{rng.randint(0, 59):02d}", "ms": lambda: str(rng.randint(3, 9_000)),
        "level": lambda: rng.choice(["INFO", "WARN", "ERROR"]),
    }
    out, i = [], 0
    while i < len(template):
        if template[i] == "{" and template[i + 1 : i + 2] == "{":
            out.append("{")
            i += 2
        elif template[i] == "}" and template[i + 1 : i + 2] == "}":
            out.append("}")
            i += 2
        elif template[i] == "{":
            end = template.index("}", i)
            out.append(words[template[i + 1 : end]]())
            i = end + 1
        else:
            out.append(template[i])
            i += 1
    return "".join(out)


def long_message(rng: random.Random) -> str:
    """1,000–4,000 characters: paragraphs of prose, and now and then a list, code or log lines."""
    target = rng.randint(MIN_CHARS, MAX_CHARS)
    parts: list[str] = []
    size = 0
    while size < target:
        kind = rng.random()
        if kind < 0.65:
            piece = " ".join(fill(rng.choice(SENTENCES), rng) for _ in range(rng.randint(2, 6))) + "\n\n"
        elif kind < 0.8:
            piece = "".join(f"- {fill(rng.choice(SENTENCES), rng)}\n" for _ in range(rng.randint(2, 5))) + "\n"
        elif kind < 0.92:
            piece = "```\n" + fill(rng.choice(CODE), rng) + "```\n\n"
        else:
            piece = "".join(fill(LOG, rng) for _ in range(rng.randint(2, 6))) + "\n"
        parts.append(piece)
        size += len(piece)
    return "".join(parts)[:target].strip()


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


class Searcher(threading.Thread):
    """Asks journal search over and over until told to stop; keeps each answer's time and how it answered."""

    def __init__(self, ask: Any, queries: list[tuple[str, str | None]]) -> None:
        super().__init__(name="lag-searcher", daemon=True)
        self.ask = ask
        self.queries = queries
        self.stop = threading.Event()
        self.rows: list[dict[str, Any]] = []
        self.errors: list[str] = []

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            query, conversation = self.queries[i % len(self.queries)]
            i += 1
            start = time.perf_counter()
            try:
                page = self.ask(query, conversation)
            except Exception as error:  # a benchmark reports, it does not stop
                self.errors.append(f"{type(error).__name__}: {error}")
                continue
            self.rows.append({"ms": (time.perf_counter() - start) * 1000, "mode": page.mode,
                              "fallback": page.fallback, "index_lag": getattr(page, "index_lag", None),
                              "at": time.perf_counter()})
            time.sleep(0.02)  # a client's pace: about 50 searches a second at most, one at a time


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ms = [r["ms"] for r in rows]
    lags = [r["index_lag"] for r in rows if isinstance(r["index_lag"], int)]
    return {
        "searches": len(rows),
        "p50_ms": round(percentile(ms, 50), 2), "p99_ms": round(percentile(ms, 99), 2),
        "max_ms": round(max(ms), 2) if ms else None,
        "answered": dict(Counter(r["mode"] + (f" ({r['fallback']})" if r["fallback"] else "") for r in rows)),
        "timeouts": sum(1 for r in rows if r["fallback"] == "timeout"),
        "index_lag_reported": {"max": max(lags), "min": min(lags), "answers_with_lag": sum(1 for v in lags if v)}
        if lags else None,
    }


def conversation_of(n: int) -> str:
    """The conversation the ``n``-th message of an import goes to (from 0): ``conv-001``, CONVERSATION a piece."""
    return f"conv-{n // CONVERSATION + 1:03d}"


def append_all(container: Any, account: Any, texts: list[str], begin: int = 0) -> None:
    """``texts`` from ``begin`` appended in process, CHUNK a call, each to its conversation (``conversation_of``),
    user and assistant in turn."""
    from agentmem.domain.conversations import MessageDraft

    for start in range(begin, len(texts), CHUNK):
        drafts = [MessageDraft("user" if (start + i) % 2 == 0 else "assistant", text)
                  for i, text in enumerate(texts[start : start + CHUNK])]
        container.conversations.append(account, AGENT, conversation_of(start), drafts, user=USER)


def fresh(folder: Path) -> tuple[Any, Any, Any]:
    """An embedded agentmem in ``folder`` (the container, the bench account's principal, the vector index), its
    agent's summaries held off and its embedder warm."""
    from agentmem.adapters.embedded.vector_index import SqliteVectorIndex
    from agentmem.bootstrap import build_container, ensure_default_account
    from agentmem.services.agents import AgentSettings
    from agentmem.settings import Settings

    container = build_container(Settings(data_dir=folder))
    ensure_default_account(container)
    _, secret = container.keys.create_account("bench")
    account = container.keys.authenticate("Bearer " + secret)
    container.agents.put(account, AGENT, AgentSettings(summary_tokens=1_000_000, summary_messages=10_000))
    index = container.search_index
    assert isinstance(index, SqliteVectorIndex), "the embedded backend's vector index is off"
    assert container.embedder is not None
    container.embedder.warm()
    return container, account, index


def run(count: int, seed: int, read_ahead_s: float = 30.0) -> dict[str, Any]:
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")  # (a fallback is counted here, not printed)
    import logging

    logging.getLogger("agentmem").setLevel(logging.ERROR)  # (each fallback is kept in the rows below)
    from agentmem.adapters.embedded.vector_index import IndexWorker
    from agentmem.domain.conversations import MessageDraft

    rng = random.Random(seed)
    texts = [long_message(rng) for _ in range(count)]
    chars = sum(len(t) for t in texts)
    queries = [(fill(rng.choice(QUESTIONS), rng), None if i % 3 else f"conv-{rng.randint(1, 3):03d}")
               for i in range(200)]
    with tempfile.TemporaryDirectory(prefix="agentmem-lag-") as folder:
        container, account, index = fresh(Path(folder))
        # a few messages first, so the searches have something from their first moment
        seed_drafts = [MessageDraft("user", t) for t in texts[:CHUNK]]
        container.conversations.append(account, AGENT, "conv-001", seed_drafts, user=USER)
        index.catch_up()
        search = container.conversations.search_page

        def ask(query: str, conversation: str | None) -> Any:
            return search(account, AGENT, query, user=USER, conversation=conversation, limit=LIMIT)

        for query, conversation in queries[:5]:  # warm: partitions loaded, the model's first call
            ask(query, conversation)
        worker = IndexWorker(index)
        worker.start()
        searcher = Searcher(ask, queries)
        searcher.start()
        start = time.perf_counter()
        indexer_start = start
        append_all(container, account, texts, CHUNK)
        imported = time.perf_counter()
        while index.pending():
            time.sleep(0.05)
        caught_up = time.perf_counter()
        ahead = index.read_ahead
        # the searches go on while the indexer reads ahead (or idles, when it has nothing to read ahead: the
        # figure to compare with)
        while (ahead is None or ahead.behind()) and time.perf_counter() - caught_up < read_ahead_s:
            time.sleep(0.05)
        reading_ahead = time.perf_counter()
        searcher.stop.set()
        searcher.join()
        worker.stop()
        during = summary([r for r in searcher.rows if r["at"] <= caught_up])
        while_reading = [r for r in searcher.rows if r["at"] > caught_up]
        after_rows = []
        for query, conversation in queries:
            t0 = time.perf_counter()
            page = ask(query, conversation)
            after_rows.append({"ms": (time.perf_counter() - t0) * 1000, "mode": page.mode, "fallback": page.fallback,
                               "index_lag": getattr(page, "index_lag", None), "at": 0.0})
        after = summary(after_rows)
        indexed = count - CHUNK
        indexed_chars = chars - sum(len(t) for t in texts[:CHUNK])
        seconds = caught_up - indexer_start
        return {
            "messages": count, "characters": chars, "mean_chars": round(chars / count),
            "import_s": round(imported - start, 2), "catch_up_s": round(seconds, 2),
            "catch_up_after_import_s": round(caught_up - imported, 2),
            "throughput": {"messages_per_s": round(indexed / seconds, 1),
                           "characters_per_s": round(indexed_chars / seconds)},
            "during": during, "after": after, "errors": searcher.errors[:5],
            "while_reading_ahead": summary(while_reading) if while_reading else None,
            "read_ahead": None if ahead is None else {
                "seconds": round(reading_ahead - caught_up, 2), "messages": ahead.read_messages,
                "characters": ahead.read_chars, "tokens": ahead.read_tokens,
                "messages_per_s": round(ahead.read_messages / max(reading_ahead - caught_up, 1e-9), 2),
                "characters_per_s": round(ahead.read_chars / max(reading_ahead - caught_up, 1e-9)),
                "tokens_per_s": round(ahead.read_tokens / max(reading_ahead - caught_up, 1e-9)),
                "left": ahead.behind()},
            "embedder": container.embedder.name,
        }


def asked_first_run(count: int, seed: int, *, first: bool) -> dict[str, Any]:
    """``--asked-first`` (the module's docstring): one run, the searched conversation embedded ``first`` or not."""
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    from agentmem.adapters.embedded.vector_index import IndexWorker

    rng = random.Random(seed)
    texts = [long_message(rng) for _ in range(count)]
    last = conversation_of(count - 1)
    with tempfile.TemporaryDirectory(prefix="agentmem-asked-") as folder:
        container, account, index = fresh(Path(folder))
        if not first:  # the queue in the order it came, as before
            index._asked_first = lambda conn, size: []
        index.background = True  # (a search leaves the backlog to the indexer, as beside agentmem serve's)
        append_all(container, account, texts)
        queued = index.pending()
        question = fill(rng.choice(QUESTIONS), rng)
        rows: list[dict[str, Any]] = []
        worker = IndexWorker(index)
        start = time.perf_counter()
        worker.start()
        conversation_s = None
        try:
            while index.pending() or conversation_s is None:
                t0 = time.perf_counter()
                page = container.conversations.search_page(account, AGENT, question, user=USER, conversation=last,
                                                           limit=LIMIT)
                rows.append({"ms": (time.perf_counter() - t0) * 1000, "mode": page.mode, "fallback": page.fallback,
                             "index_lag": page.index_lag, "at": t0})
                if conversation_s is None and page.index_lag == 0:
                    conversation_s = time.perf_counter() - start
                time.sleep(0.02)
        finally:
            worker.stop()
        return {"embedded_first": first, "queued": queued, "conversation": last,
                "conversation_messages": count - (count - 1) // CONVERSATION * CONVERSATION,
                "conversation_indexed_s": round(conversation_s or 0.0, 2),
                "all_indexed_s": round(time.perf_counter() - start, 2), "searches": summary(rows)}


def print_asked_first(runs: list[dict[str, Any]]) -> None:
    print()
    run = runs[0]
    print(f"A conversation searched while {run['queued']:,} queued messages are embedded ({run['conversation']}, "
          f"{run['conversation_messages']} messages, the last of the import)")
    print(f"  {'':<34}{'its index_lag 0 after':>22}{'all indexed after':>19}{'searches':>10}{'p50 ms':>9}"
          f"{'p99 ms':>9}{'timeouts':>10}")
    for run in runs:
        label = "searched first (asked_first.py)" if run["embedded_first"] else "in the order queued (before)"
        row = run["searches"]
        print(f"  {label:<34}{run['conversation_indexed_s']:>20.2f} s{run['all_indexed_s']:>17.2f} s"
              f"{row['searches']:>10}{row['p50_ms']:>9.2f}{row['p99_ms']:>9.2f}{row['timeouts']:>10}")


def print_table(result: dict[str, Any]) -> None:
    print()
    print(f"Journal search while indexing {result['messages']:,} long messages "
          f"({result['characters']:,} characters, {result['mean_chars']:,} a message; {result['embedder']})")
    print(f"  import {result['import_s']} s; index caught up {result['catch_up_s']} s after the first append "
          f"({result['catch_up_after_import_s']} s after the import ended)")
    print(f"  catch-up throughput: {result['throughput']['messages_per_s']:,} messages/s, "
          f"{result['throughput']['characters_per_s']:,} characters/s")
    print()
    print(f"  {'':<22}{'searches':>9}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'timeouts':>10}  answered")
    ahead = "while reading ahead" if result.get("read_ahead") else "caught up, indexer on"
    rows = [("while catching up", result["during"]), (ahead, result.get("while_reading_ahead")),
            ("after", result["after"])]
    for label, row in [(label, row) for label, row in rows if row]:
        answered = ", ".join(f"{k} ×{v}" for k, v in row["answered"].items())
        print(f"  {label:<22}{row['searches']:>9}{row['p50_ms']:>9.2f}{row['p99_ms']:>9.2f}{row['max_ms']:>9.2f}"
              f"{row['timeouts']:>10}  {answered}")
    lag = result["during"].get("index_lag_reported")
    if lag:
        print(f"  index_lag reported while catching up: up to {lag['max']:,} messages "
              f"({lag['answers_with_lag']} answers said the index was behind)")
    read = result.get("read_ahead")
    if read:
        print(f"  read ahead for mode=deep: {read['messages']:,} messages, {read['characters']:,} characters, "
              f"{read['tokens']:,} word pieces in {read['seconds']} s ({read['messages_per_s']} messages/s, "
              f"{read['characters_per_s']:,} characters/s, {read['tokens_per_s']:,} word pieces/s); "
              f"{read['left']:,} messages left")
    if result["errors"]:
        print("  errors:", *result["errors"], sep="\n    ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=MESSAGES)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--read-ahead-s", type=float, default=30.0,
                        help="how long the searches go on while the indexer reads token states ahead")
    parser.add_argument("--no-write", action="store_true", help="print only; leave the results file alone")
    parser.add_argument("--asked-first", action="store_true",
                        help="measure what a conversation searched during a backlog waits for (the docstring)")
    args = parser.parse_args()
    machine = {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count(),
               "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
    if args.asked_first:
        runs = [asked_first_run(args.messages, args.seed, first=first) for first in (True, False)]
        print_asked_first(runs)
        if not args.no_write:
            RESULT_ASKED_FIRST.write_text(json.dumps({"runs": runs, "machine": machine}, indent=2) + "\n")
            print(f"\nwrote {RESULT_ASKED_FIRST.relative_to(ROOT)}")
        return
    result = run(args.messages, args.seed, args.read_ahead_s)
    result["machine"] = machine
    print_table(result)
    if not args.no_write:
        RESULT.parent.mkdir(parents=True, exist_ok=True)
        RESULT.write_text(json.dumps(result, indent=2) + "\n")
        print(f"\nwrote {RESULT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
