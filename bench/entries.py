"""Entries benchmark: save, read, list and search at 500 entries per layer × 20 layers.

    .venv/bin/python bench/entries.py            # full run (about 1 minute on 2 cores)
    .venv/bin/python bench/entries.py --quick    # smaller samples, one layout (about 20 s)

Measures, on the embedded backend (SQLite file in a temporary directory):

* in-process, through the services (``container.entries.save/read/list_entries/search``), in two
  layouts of the same 10,000 entries: 20 memories of one layer each, and one account memory with
  20 user layers;
* over HTTP: the real local server (``agentmem.local.server.make_server``, as it ships) in a thread,
  driven by the SDK (``agentmem.client.Client``) on keep-alive connections: one and four client threads
  in the benchmark's process, a raw ``requests.Session``, and SDK clients in a separate process;
* LangGraph's ``SqliteStore`` on the same data (namespace = layer, key = entry name, value = the
  entry's fields), both as ``from_conn_string`` ships it and with the same journal settings as
  agentmem (WAL, ``synchronous=NORMAL``);
* WAL pages (frames) and bytes each save (create, update) and delete appends, agentmem against
  ``SqliteStore`` (WAL) in the same run, with the pages split by the table or index they belong to
  (``dbstat``): what a write's COMMIT costs. Latencies carry the thread's CPU time beside the wall time,
  which the machine's other load inflates far less.

Prints a table, writes ``bench/results/entries.json`` and ``docs/img/entries-latency.png``
(``--quick`` writes ``bench/results/entries-quick.json`` and a plot beside it instead).
Timings are never asserted; the targets are printed with a pass/miss mark.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import datetime as dt
import gc
import io
import json
import multiprocessing
import os
import platform
import queue
import random
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from corpus import Corpus, EntryData
from report import print_targets, replace_block, targets_markdown

if TYPE_CHECKING:
    from agentmem.adapters.embedded.database import Database

ROOT = Path(__file__).resolve().parent.parent
LAYERS = 20
PER_LAYER = 500
LIST_PAGE = 50  # the API's default page
SEARCH_LIMIT = 10  # the API's default
WAL_WRITES = 100  # writes of each kind whose WAL pages are counted
WAL_OPERATIONS = {"save_create": "save (create)", "save_update": "save (update)", "delete": "delete"}

TARGETS = {
    "read_p50_ms": 0.2,
    "save_p50_ms": 1.0,
    "search_p50_ms": 5.0,
    "http_reads_per_s": 500.0,
}

LAYOUTS = {
    "memories": "agentmem, 20 memories × 1 layer",
    "users": "agentmem, 1 memory × 20 user layers",
}
SYSTEM_LABELS = {
    "agentmem_memories": LAYOUTS["memories"],
    "agentmem_users": LAYOUTS["users"],
    "sqlitestore_wal": "SqliteStore, WAL + synchronous=NORMAL",
    "sqlitestore_default": "SqliteStore, as shipped (rollback journal, synchronous=FULL)",
}
OPERATIONS = {
    "save_create": "save (create)",
    "save_update": "save (update)",
    "read": "read",
    "list": f"list (first page of {LIST_PAGE})",
    "search": f"search (top {SEARCH_LIMIT})",
    "search_equivalent": "search, same answer (fetch layer + rank in Python)",
}


@dataclass(frozen=True)
class Plan:
    """How many timed samples each phase takes at most, and how long it may run."""

    read: int
    save: int
    list: int
    search: int
    http_op: int
    http_seconds: float
    default_puts: int
    budget_s: float


FULL = Plan(read=20_000, save=3_000, list=2_000, search=1_000, http_op=600, http_seconds=3.0,
            default_puts=200, budget_s=4.0)
QUICK = Plan(read=3_000, save=400, list=300, search=200, http_op=150, http_seconds=1.0,
             default_puts=40, budget_s=0.8)


def log(message: str) -> None:
    print(f"  · {message}", file=sys.stderr, flush=True)


# --- timing ---------------------------------------------------------------------------------------------


class Samples(list[int]):
    """Wall-clock latencies (ns), with the calling thread's CPU time of each call beside them (``cpu``)."""

    def __init__(self) -> None:
        super().__init__()
        self.cpu: list[int] = []


def measure(
    call: Callable[..., object], arguments: Sequence[tuple[Any, ...]], *, budget_s: float, warmup: int | None = None,
    min_samples: int = 100,
) -> Samples:
    """Run ``call(*args)`` for each args; the first ``warmup`` untimed, the rest timed until the budget is spent
    (but at least ``min_samples``). Each call's wall time, and its thread's CPU time (what other processes on a
    shared machine inflate far less: waiting for a core is not counted)."""
    warm = warmup if warmup is not None else min(200, max(10, len(arguments) // 10))
    for args in arguments[:warm]:
        call(*args)
    gc.collect()
    samples = Samples()
    clock, cpu_clock = time.perf_counter_ns, time.thread_time_ns
    deadline = clock() + int(budget_s * 1e9)
    for args in arguments[warm:]:
        cpu = cpu_clock()
        start = clock()
        call(*args)
        end = clock()
        samples.cpu.append(cpu_clock() - cpu)
        samples.append(end - start)
        if end > deadline and len(samples) >= min_samples:
            break
    return samples


def summarise(samples_ns: Sequence[int]) -> dict[str, float]:
    import numpy as np

    values = np.asarray(samples_ns, dtype=np.float64) / 1e6
    mean = float(values.mean())
    out = {
        "n": len(samples_ns),
        "p50_ms": round(float(np.percentile(values, 50)), 4),
        "p95_ms": round(float(np.percentile(values, 95)), 4),
        "p99_ms": round(float(np.percentile(values, 99)), 4),
        "mean_ms": round(mean, 4),
        "ops_per_s": round(1000.0 / mean, 1),
    }
    cpu = getattr(samples_ns, "cpu", None)
    if cpu:
        out["cpu_p50_ms"] = round(float(np.percentile(np.asarray(cpu, dtype=np.float64) / 1e6, 50)), 4)
    return out


# --- WAL pages per write --------------------------------------------------------------------------------------


def wal_frames(wal: Path, page_size: int) -> list[int]:
    """The page number of each frame in the WAL file (32-byte file header; a frame is a 24-byte header, whose
    first 4 bytes are the page's number, then the page)."""
    data = wal.read_bytes() if wal.exists() else b""
    frame = 24 + page_size
    return [int.from_bytes(data[at : at + 4], "big") for at in range(32, len(data) - frame + 1, frame)]


def wal_per_op(conn: sqlite3.Connection, wal: Path, call: Callable[..., object],
               arguments: Sequence[tuple[Any, ...]]) -> dict[str, Any]:
    """The WAL frames (pages) and bytes ``call(*args)`` appends per call, the pages by the table or index
    holding them (``dbstat``; "(free list)" for pages no b-tree holds, "(header)" for page 1, which SQLite
    rewrites when the file grows). Checkpoints are off meanwhile, so the WAL only grows; nothing else may write
    the database while this runs."""
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        for args in arguments:
            call(*args)
        pages = wal_frames(wal, page_size)
        try:
            owner = {page: name for name, page in conn.execute("SELECT name, pageno FROM dbstat")}
        except sqlite3.OperationalError:  # an SQLite built without dbstat: totals only
            owner = {}
        owner[1] = "(header)"
        by_btree: dict[str, int] = {}
        for page in pages:
            name = owner.get(page, "(free list)")
            by_btree[name] = by_btree.get(name, 0) + 1
    finally:
        conn.execute("PRAGMA wal_autocheckpoint = 1000")
    n = len(arguments)
    return {
        "n": n,
        "page_size": page_size,
        "pages_per_op": round(len(pages) / n, 2),
        "bytes_per_op": round(len(pages) * (24 + page_size) / n),
        "by_btree": {name: round(count / n, 2) for name, count in sorted(by_btree.items(), key=lambda kv: -kv[1])}
        if owner else {},
    }


# --- agentmem in-process ----------------------------------------------------------------------------------


class Agentmem:
    """The services of one embedded container, with the benchmark's layout of layers."""

    def __init__(self, data_dir: Path, layout: str) -> None:
        from agentmem.bootstrap import build_container
        from agentmem.settings import Settings

        self.layout = layout
        # the HTTP part measures the server, not its rate limits: they are on, raised past what the run sends (the
        # SDK's clients, four threads in another process, read faster than the default 2,000 a second for a key)
        self.container = build_container(Settings(
            data_dir=data_dir, rate_limit_key_per_s=1e8, rate_limit_key_burst=1e8, rate_limit_account_per_s=1e8,
            rate_limit_account_burst=1e8,
        ))
        _, self.secret = self.container.keys.create_account("bench")
        self.principal = self.container.keys.authenticate("Bearer " + self.secret)
        if layout == "memories":
            for layer in range(LAYERS):
                self.container.memories.create(self.principal, f"m{layer:02d}")
        else:
            self.container.memories.create(self.principal, "kb")

    def where(self, layer: int) -> tuple[str, str | None]:
        """(memory, user) of one layer."""
        if self.layout == "memories":
            return f"m{layer:02d}", None
        return "kb", f"u{layer:02d}"

    def save(self, entry: EntryData) -> None:
        from agentmem.services.entries import SaveRequest

        memory, user = self.where(entry.layer)
        result = self.container.entries.save(
            self.principal, memory, entry.name,
            SaveRequest(content=entry.content, description=entry.description, category=entry.category,
                        importance=entry.importance),
            user=user,
        )
        if result.forced is not None or result.entry.user_id != user:
            raise RuntimeError(f"screening moved {entry.name!r}; the benchmark's text must be plain")

    def read(self, layer: int, name: str) -> None:
        memory, user = self.where(layer)
        self.container.entries.read(self.principal, memory, name, user=user)

    def delete(self, layer: int, name: str) -> None:
        memory, user = self.where(layer)
        self.container.entries.delete(self.principal, memory, name, user=user)

    def add_layer(self, layer: int) -> None:
        """Make layer number ``layer`` exist (a memory of its own in the 20-memory layout)."""
        if self.layout == "memories":
            self.container.memories.create(self.principal, self.where(layer)[0])

    def settle(self) -> None:
        """Let the semantic index catch up with every change (a search starts it): its writes would otherwise
        land in the WAL beside those being counted."""
        index = self.container.search_index
        if index is not None and hasattr(index, "catch_up"):
            index.catch_up()

    @property
    def db(self) -> Database:
        """The embedded stores' database (one, shared by every store)."""
        from agentmem.adapters.embedded.entries import SqliteEntryStore

        return cast(SqliteEntryStore, self.container.stores.entries).db

    def database(self) -> tuple[sqlite3.Connection, Path]:
        """This thread's connection to the store's database, and the database's WAL file."""
        db = self.db
        return db.connection(), Path(str(db.path) + "-wal")

    def list(self, layer: int) -> None:
        memory, user = self.where(layer)
        page = self.container.entries.list_entries(self.principal, memory, user=user, limit=LIST_PAGE)
        assert len(page.items) == LIST_PAGE

    def search(self, layer: int, query: str) -> int:
        memory, user = self.where(layer)
        return len(self.container.entries.search(self.principal, memory, query, user=user, limit=SEARCH_LIMIT))

    def search_names(self, layer: int, query: str, limit: int) -> builtins.list[str]:
        memory, user = self.where(layer)
        found = self.container.entries.search(self.principal, memory, query, user=user, limit=limit)
        return [r.entry.name for r in found]

    def candidates(self, layer: int, query: str) -> int:
        """How many entries a query's word pre-filter hands to the ranking (the work search does)."""
        from agentmem.domain.access import visible_layers
        from agentmem.domain.clock import iso, utcnow
        from agentmem.domain.search import Query

        memory, user = self.where(layer)
        record = self.container.memories.get(self.principal, memory, user)
        compiled = Query(query)
        found = self.container.stores.entries.search_candidates(
            visible_layers(record, user, self.principal), compiled.words, compiled.whole, iso(utcnow())
        )
        return len(found)


# --- LangGraph SqliteStore ----------------------------------------------------------------------------------


def namespace(layer: int) -> tuple[str, ...]:
    # the same layers as the user layout (memory "kb", user uNN); one namespace per layer either way
    return ("kb", f"u{layer:02d}")


class LangGraphStore:
    def __init__(self, path: Path, *, tuned: bool) -> None:
        from langgraph.store.sqlite import SqliteStore

        # from_conn_string's own connection: check_same_thread=False, autocommit
        self.conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        if tuned:
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = NORMAL")
        self.store = SqliteStore(self.conn)
        self.store.setup()
        self.pragmas = {
            "journal_mode": self.conn.execute("PRAGMA journal_mode").fetchone()[0],
            "synchronous": self.conn.execute("PRAGMA synchronous").fetchone()[0],
        }

    def close(self) -> None:
        self.conn.close()

    def put(self, entry: EntryData) -> None:
        self.store.put(namespace(entry.layer), entry.name, entry.value())

    def bulk_load(self, entries: Sequence[EntryData]) -> None:
        from langgraph.store.base import PutOp

        for start in range(0, len(entries), 500):
            self.store.batch([PutOp(namespace(e.layer), e.name, e.value()) for e in entries[start : start + 500]])

    def get(self, layer: int, name: str) -> None:
        item = self.store.get(namespace(layer), name)
        assert item is not None

    def delete(self, layer: int, name: str) -> None:
        self.store.delete(namespace(layer), name)

    def list(self, layer: int) -> None:
        items = self.store.search(namespace(layer), limit=LIST_PAGE)
        assert len(items) == LIST_PAGE

    def search(self, layer: int, query: str) -> int:
        # Without an embedding index SqliteStore ignores `query`: the newest `limit` items of the namespace.
        return len(self.store.search(namespace(layer), query=query, limit=SEARCH_LIMIT))

    def search_equivalent(self, layer: int, query: str, limit: int = SEARCH_LIMIT) -> builtins.list[str]:
        """The answer agentmem gives, built on SqliteStore: fetch the whole layer, rank it in Python."""
        from agentmem.domain.models import Entry
        from agentmem.domain.search import Query

        items = self.store.search(namespace(layer), limit=PER_LAYER)
        entries = [
            Entry(
                name=item.key, description=item.value["description"], content=item.value["content"],
                category=item.value["category"], importance=item.value["importance"], visibility="shared",
                version=1, updated_by="api", created_at=item.created_at.isoformat(),
                updated_at=item.updated_at.isoformat(),
            )
            for item in items
        ]
        return [r.entry.name for r in Query(query).rank(entries, limit)]


# --- over HTTP --------------------------------------------------------------------------------------------


def _read_loop(
    url: str, key: str, targets: Sequence[tuple[str, str | None, str]], seconds: float, raw: bool, seed: int
) -> tuple[int, float, list[int]]:
    """One client thread reading random entries for ``seconds``: (reads, elapsed s, latencies ns)."""
    from urllib.parse import quote

    rng = random.Random(seed)
    order = [targets[rng.randrange(len(targets))] for _ in range(4096)]
    read: Callable[[str, str | None, str], None]
    if raw:
        import requests

        session = requests.Session()
        headers = {"Authorization": f"Bearer {key}", "Accept": "application/json"}

        def read_raw(memory: str, user: str | None, name: str) -> None:
            response = session.get(
                f"{url}/v1/memories/{quote(memory, safe='')}/entries/{quote(name, safe='')}",
                params={"user": user} if user else None, headers=headers, timeout=30,
            )
            response.raise_for_status()
            response.json()

        read = read_raw
    else:
        from agentmem.client import Client

        client = Client(url, key)
        handles = {(memory, user): client.memory(memory, user=user) for memory, user, _ in targets}

        def read_sdk(memory: str, user: str | None, name: str) -> None:
            handles[(memory, user)].read(name)

        read = read_sdk
    for target in order[:10]:  # warm-up: the connection, and the server thread's database connection
        read(*target)
    latencies: list[int] = []
    clock = time.perf_counter_ns
    start = now = clock()
    deadline = start + int(seconds * 1e9)
    i = 0
    while now < deadline:
        target = order[i % len(order)]
        i += 1
        t0 = clock()
        read(*target)
        now = clock()
        latencies.append(now - t0)
    return len(latencies), (now - start) / 1e9, latencies


def _threads_reading(
    url: str, key: str, targets: Sequence[tuple[str, str | None, str]], seconds: float, threads: int, raw: bool
) -> dict[str, float]:
    results: queue.Queue[tuple[int, float, list[int]]] = queue.Queue()
    barrier = threading.Barrier(threads)

    def run(seed: int) -> None:
        barrier.wait()
        results.put(_read_loop(url, key, targets, seconds, raw, seed))

    workers = [threading.Thread(target=run, args=(seed,)) for seed in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    total, longest, latencies = 0, 0.0, []
    while not results.empty():
        count, elapsed, lat = results.get()
        total += count
        longest = max(longest, elapsed)
        latencies += lat
    stats = summarise(latencies)
    return {"threads": threads, "reads": total, "seconds": round(longest, 3),
            "reads_per_s": round(total / longest, 1), "p50_ms": stats["p50_ms"], "p95_ms": stats["p95_ms"]}


def _client_process(
    url: str, key: str, targets: list[tuple[str, str | None, str]], seconds: float, threads: int, out: Any
) -> None:
    """Entry point of a separate (spawned) client process: its clients do not share the server's GIL."""
    out.put(_threads_reading(url, key, targets, seconds, threads, raw=False))


class _LineCounter(io.TextIOBase):
    """Stands in for stdout while the server runs: keeps error logs, and counts CloudWatch metric blobs
    (there should be none: the server runs with POWERTOOLS_METRICS_DISABLED, where nothing is emitted)."""

    def __init__(self) -> None:
        self.blobs = 0
        self.error_logs: list[str] = []

    def write(self, text: str) -> int:
        self.blobs += text.count('"_aws"')
        if '"level":"ERROR"' in text.replace(" ", ""):
            self.error_logs.append(text.strip()[:4000])
        return len(text)


def bench_http(target: Agentmem, entries: Sequence[EntryData], corpus: Corpus, queries: Sequence[tuple[int, str]],
               plan: Plan, rng: random.Random) -> dict[str, Any]:
    """The local server as it ships (``make_server``), driven by the SDK over keep-alive connections."""
    sink = _LineCounter()
    out: dict[str, Any] = {}
    try:
        with contextlib.redirect_stdout(sink):
            out.update(_bench_server(target, entries, corpus, queries, plan, rng))
    except Exception as error:
        # keep the in-process figures: report the failure, and the server's error logs, instead of losing the run
        out["error"] = f"{type(error).__name__}: {error}"
        out["server_errors"] = sink.error_logs[-3:]
        print(f"HTTP part failed: {out['error']}", file=sys.stderr)
        for line in out["server_errors"]:
            print(line, file=sys.stderr)
    out["metric_blobs_printed"] = sink.blobs
    return out


def _bench_server(target: Agentmem, entries: Sequence[EntryData], corpus: Corpus, queries: Sequence[tuple[int, str]],
                  plan: Plan, rng: random.Random) -> dict[str, Any]:
    from agentmem.client import Client, Entry
    from agentmem.client.transport import segment
    from agentmem.local.server import make_server

    server = make_server(target.container, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="bench-server", daemon=True)
    thread.start()
    budget = plan.budget_s / 2
    warm, least = 10, 20
    try:
        client = Client(url, target.secret)
        handles = {}
        for layer in range(LAYERS):
            memory, user = target.where(layer)
            handles[layer] = client.memory(memory, user=user)
        ops: dict[str, dict[str, float]] = {}

        def read(layer: int, name: str) -> None:
            handles[layer].read(name)

        picks = [entries[rng.randrange(len(entries))] for _ in range(plan.http_op * 2)]
        log("HTTP: read")
        ops["read"] = summarise(measure(read, [(e.layer, e.name) for e in picks], budget_s=budget, warmup=2 * warm,
                                        min_samples=least))

        def save(entry: EntryData) -> None:
            handles[entry.layer].save(entry.name, entry.content, description=entry.description,
                                      category=entry.category, importance=entry.importance)

        updates = [corpus.entry(e.layer, int(e.name[-3:]), revision=2) for e in picks[: plan.http_op]]
        log("HTTP: save (update)")
        ops["save_update"] = summarise(measure(save, [(e,) for e in updates], budget_s=budget, warmup=warm,
                                               min_samples=least))

        def listing(layer: int) -> None:
            memory, user = target.where(layer)
            page = client.page(f"/memories/{segment(memory)}/entries", Entry.from_dict, {"user": user},
                               limit=LIST_PAGE)
            assert len(page.items) == LIST_PAGE

        log("HTTP: list")
        ops["list"] = summarise(measure(listing, [(rng.randrange(LAYERS),) for _ in range(plan.http_op)],
                                        budget_s=budget, warmup=warm, min_samples=least))

        def search(layer: int, text: str) -> None:
            handles[layer].search(text, limit=SEARCH_LIMIT)

        log("HTTP: search")
        ops["search"] = summarise(measure(search, list(queries[: plan.http_op]), budget_s=budget, warmup=warm,
                                          min_samples=least))

        targets = [(*target.where(e.layer), e.name) for e in entries]
        throughput: dict[str, dict[str, float]] = {}
        runs: list[tuple[str, int, bool]] = [("SDK, 1 thread", 1, False), ("SDK, 4 threads", 4, False),
                                             ("raw requests.Session, 1 thread", 1, True)]
        for label, threads, raw in runs:
            log(f"HTTP: reads/s, {label}")
            throughput[label] = _threads_reading(url, target.secret, targets, plan.http_seconds, threads, raw)
        context = multiprocessing.get_context("spawn")
        for label, threads in (("SDK, 1 thread, client in another process", 1),
                               ("SDK, 4 threads, client in another process", 4)):
            log(f"HTTP: reads/s, {label}")
            queue_ = context.Queue()
            process = context.Process(
                target=_client_process, args=(url, target.secret, targets, plan.http_seconds, threads, queue_)
            )
            process.start()
            throughput[label] = queue_.get(timeout=120)
            process.join(timeout=30)
        return {"operations": ops, "reads_per_s": throughput}
    finally:
        server.shutdown()
        server.server_close()


# --- the run ----------------------------------------------------------------------------------------------


def bench_agentmem(data_dir: Path, layout: str, entries: Sequence[EntryData], updates: Sequence[EntryData],
                   reads: Sequence[tuple[int, str]], lists: Sequence[tuple[int]],
                   queries: Sequence[tuple[int, str]], plan: Plan) -> tuple[Agentmem, dict[str, Any]]:
    target = Agentmem(data_dir, layout)
    label = LAYOUTS[layout]
    log(f"{label}: loading {len(entries):,} entries (each create timed)")
    order = sorted(entries, key=lambda e: (int(e.name[-3:]), e.layer))  # layers fill side by side
    creates = measure(target.save, [(e,) for e in order], budget_s=3600, warmup=0)
    results: dict[str, Any] = {"save_create": summarise(creates)}
    log(f"{label}: read")
    results["read"] = summarise(measure(target.read, reads[: plan.read], budget_s=plan.budget_s))
    log(f"{label}: save (update)")
    results["save_update"] = summarise(measure(target.save, [(u,) for u in updates[: plan.save]],
                                               budget_s=plan.budget_s))
    log(f"{label}: list")
    results["list"] = summarise(measure(target.list, lists[: plan.list], budget_s=plan.budget_s))
    log(f"{label}: search")
    results["search"] = summarise(measure(target.search, queries[: plan.search], budget_s=plan.budget_s * 1.5))
    hits = sorted(target.candidates(layer, text) for layer, text in queries[:200])
    results["search"]["candidates_median"] = hits[len(hits) // 2]
    results["search"]["candidates_p90"] = hits[len(hits) * 9 // 10]
    log(f"{label}: WAL pages per write")
    target.settle()
    target.add_layer(LAYERS)
    conn, wal = target.database()
    results["wal"] = wal_phases(conn, wal, target.save, target.delete, entries, updates)
    return target, results


def wal_phases(conn: sqlite3.Connection, wal: Path, save: Callable[[EntryData], object],
               delete: Callable[[int, str], object], entries: Sequence[EntryData],
               updates: Sequence[EntryData], *, fresh_layer: int = LAYERS) -> dict[str, Any]:
    """WAL pages per write, the same writes for either store: ``WAL_WRITES`` creates into a fresh layer (number
    ``fresh_layer``, as full as the others once loaded), updates of entries of the loaded layers with text
    neither store has held, and deletes of the fresh layer's new entries."""
    fresh = [EntryData(fresh_layer, e.name, e.description, e.content, e.category, e.importance)
             for e in entries[:PER_LAYER]]
    for e in fresh[WAL_WRITES:]:  # the layer as full as the others, but for the creates measured
        save(e)
    rewritten = [EntryData(u.layer, u.name, u.description + " (rewritten)", "Rewritten. " + u.content, u.category,
                           u.importance) for u in updates[-WAL_WRITES:]]
    return {
        "save_create": wal_per_op(conn, wal, save, [(e,) for e in fresh[:WAL_WRITES]]),
        "save_update": wal_per_op(conn, wal, save, [(e,) for e in rewritten]),
        "delete": wal_per_op(conn, wal, delete, [(e.layer, e.name) for e in fresh[:WAL_WRITES]]),
    }


def bench_sqlitestore(path: Path, tuned: bool, entries: Sequence[EntryData], updates: Sequence[EntryData],
                      reads: Sequence[tuple[int, str]], lists: Sequence[tuple[int]],
                      queries: Sequence[tuple[int, str]], plan: Plan) -> tuple[LangGraphStore, dict[str, Any]]:
    store = LangGraphStore(path, tuned=tuned)
    label = "SqliteStore (WAL)" if tuned else "SqliteStore (as shipped)"
    results: dict[str, Any] = {"pragmas": store.pragmas}
    order = sorted(entries, key=lambda e: (int(e.name[-3:]), e.layer))
    if tuned:
        log(f"{label}: loading {len(entries):,} entries (each put timed)")
        results["save_create"] = summarise(measure(store.put, [(e,) for e in order], budget_s=3600, warmup=0))
        saves = updates[: plan.save]
    else:
        log(f"{label}: bulk loading {len(entries):,} entries (one transaction per 500; not timed)")
        store.bulk_load(order)
        saves = updates[: plan.default_puts]
    log(f"{label}: get")
    results["read"] = summarise(measure(store.get, reads[: plan.read], budget_s=plan.budget_s))
    log(f"{label}: put (update)")
    results["save_update"] = summarise(measure(store.put, [(u,) for u in saves], budget_s=plan.budget_s,
                                               warmup=min(20, len(saves) // 10)))
    log(f"{label}: list")
    results["list"] = summarise(measure(store.list, lists[: plan.list], budget_s=plan.budget_s))
    log(f"{label}: search")
    results["search"] = summarise(measure(store.search, queries[: plan.search], budget_s=plan.budget_s))
    if tuned:
        log(f"{label}: WAL pages per write")
        results["wal"] = wal_phases(store.conn, Path(str(path) + "-wal"), store.put, store.delete, entries, updates)
    if tuned:  # the same Python work on either journal mode; measured once
        log(f"{label}: search with agentmem's answer")
        results["search_equivalent"] = summarise(measure(store.search_equivalent, queries[: plan.search],
                                                         budget_s=plan.budget_s * 1.5))
    return store, results


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gb = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass

    def version(package: str) -> str | None:
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return None

    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cpu_count": os.cpu_count(),
        "cpu_model": model,
        "memory_gb": memory_gb,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "packages": {p: version(p) for p in ("agentmem", "langgraph", "langgraph-checkpoint-sqlite",
                                             "aws-lambda-powertools", "pydantic", "requests")},
    }


def check_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    checks: list[dict[str, Any]] = []

    def add(what: str, value: float, target: float, better: str) -> None:
        ok = value <= target if better == "lower" else value >= target
        checks.append({"target": what, "value": value, "goal": target, "better": better, "met": ok})

    for key in ("agentmem_memories", "agentmem_users"):
        system = results["inprocess"].get(key)
        if not system:
            continue
        name = LAYOUTS[key.split("_", 1)[1]]
        add(f"{name}: read p50 ≤ {TARGETS['read_p50_ms']} ms", system["read"]["p50_ms"],
            TARGETS["read_p50_ms"], "lower")
        for op in ("save_create", "save_update"):
            add(f"{name}: {OPERATIONS[op]} p50 ≤ {TARGETS['save_p50_ms']} ms", system[op]["p50_ms"],
                TARGETS["save_p50_ms"], "lower")
        add(f"{name}: search p50 ≤ {TARGETS['search_p50_ms']} ms", system["search"]["p50_ms"],
            TARGETS["search_p50_ms"], "lower")
        for op in ("save_create", "save_update", "read", "list", "search"):
            for ref in ("sqlitestore_wal", "sqlitestore_default"):
                other = results["inprocess"][ref].get(op)
                if other:
                    ratio = round(system[op]["p50_ms"] / other["p50_ms"], 2)
                    variant = "WAL" if ref == "sqlitestore_wal" else "as shipped"
                    add(f"{name}: {OPERATIONS[op]} p50 ≤ SqliteStore ({variant})", ratio, 1.0, "lower")
    http = results.get("http", {}).get("reads_per_s", {})
    for label in ("SDK, 1 thread", "SDK, 4 threads"):
        if label in http:
            add(f"HTTP reads/s ≥ {TARGETS['http_reads_per_s']:.0f}, local server, {label}",
                http[label]["reads_per_s"], TARGETS["http_reads_per_s"], "higher")
    return checks


def _value_text(check: dict[str, Any]) -> str:
    if "SqliteStore" in check["target"]:
        return f"{check['value']:.2f}×"
    if "reads/s" in check["target"]:
        return f"{check['value']:,.0f}/s"
    return f"{check['value']:.3f} ms"


def print_report(results: dict[str, Any]) -> None:
    info = results["machine"]
    print()
    print(f"agentmem entries benchmark — {LAYERS} layers × {PER_LAYER} entries "
          f"({'quick' if results['quick'] else 'full'} run, {info['date']})")
    print(f"{info['cpu_count']} CPUs ({info['cpu_model']}), Python {info['python']}, SQLite {info['sqlite']}, "
          f"{info['platform']}")
    print()
    inproc = results["inprocess"]
    systems = [k for k in ("agentmem_memories", "agentmem_users", "sqlitestore_wal", "sqlitestore_default")
               if k in inproc]
    header = (f"{'operation':<28} {'system':<40} {'n':>6} {'p50 ms':>9} {'CPU p50':>9} {'p95 ms':>9} {'p99 ms':>9} "
              f"{'ops/s':>9}")
    print("In-process (one thread; ops/s = 1 / mean latency; CPU p50: the thread's CPU time per call)")
    print(header)
    print("-" * len(header))
    for op, op_label in OPERATIONS.items():
        for key in systems:
            stats = inproc[key].get(op)
            if not stats:
                continue
            label = SYSTEM_LABELS[key] if len(SYSTEM_LABELS[key]) <= 40 else SYSTEM_LABELS[key][:37] + "..."
            cpu = f"{stats['cpu_p50_ms']:>9.3f}" if "cpu_p50_ms" in stats else f"{'—':>9}"
            print(f"{op_label[:28]:<28} {label:<40} {stats['n']:>6} {stats['p50_ms']:>9.3f} {cpu} "
                  f"{stats['p95_ms']:>9.3f} {stats['p99_ms']:>9.3f} {stats['ops_per_s']:>9,.0f}")
        print()
    for key in ("agentmem_memories", "agentmem_users"):
        if key in inproc:
            s = inproc[key]["search"]
            print(f"{SYSTEM_LABELS[key]}: a search query's word pre-filter hands {s['candidates_median']} entries "
                  f"(median; p90 {s['candidates_p90']}) of the layer's {PER_LAYER} to the ranking")
    print("SqliteStore's search ignores the query without an embedding index: it returns the namespace's newest "
          f"{SEARCH_LIMIT}.")
    print()
    walled = [k for k in systems if "wal" in inproc[k]]
    if walled:
        page_size = inproc[walled[0]]["wal"]["save_create"]["page_size"]
        print(f"WAL appended per write (mean of {WAL_WRITES}; pages of {page_size} bytes, each with a 24-byte frame "
              "header), and the b-trees holding the pages")
        h3 = f"{'operation':<14} {'system':<40} {'pages':>6} {'bytes':>8}  by table or index"
        print(h3)
        print("-" * len(h3))
        for op in WAL_OPERATIONS:
            for key in walled:
                w = inproc[key]["wal"][op]
                print(f"{WAL_OPERATIONS[op]:<14} {SYSTEM_LABELS[key][:40]:<40} {w['pages_per_op']:>6.1f} "
                      f"{w['bytes_per_op']:>8,}  {_btrees(w)}")
        print()
    ratio_header = f"{'operation':<16} {'system':<40} {'÷ SqliteStore WAL':>18} {'÷ SqliteStore as shipped':>25}"
    print("p50 ratio agentmem / SqliteStore (below 1 = agentmem faster)")
    print(ratio_header)
    print("-" * len(ratio_header))
    for op in ("save_create", "save_update", "read", "list", "search"):
        for key in ("agentmem_memories", "agentmem_users"):
            if key not in inproc:
                continue
            cells = []
            for ref in ("sqlitestore_wal", "sqlitestore_default"):
                other = inproc[ref].get(op)
                cells.append(f"{inproc[key][op]['p50_ms'] / other['p50_ms']:.2f}" if other else "—")
            print(f"{OPERATIONS[op][:16]:<16} {SYSTEM_LABELS[key]:<40} {cells[0]:>18} {cells[1]:>25}")
    for key in ("agentmem_memories", "agentmem_users"):
        if key in inproc:
            ratio = inproc[key]["search"]["p50_ms"] / inproc["sqlitestore_wal"]["search_equivalent"]["p50_ms"]
            print(f"{'search vs same-answer':<16} {SYSTEM_LABELS[key]:<40} {ratio:>18.2f} {'':>25}")
    http = results.get("http")
    if http and "error" in http:
        print(f"\nOver HTTP: the run failed ({http['error']}); see bench/results for the server's error log")
        http = None
    if http:
        print()
        print(f"Over HTTP: the local server in a thread of this process, SDK client on keep-alive ({http['layout']})")
        h2 = f"{'operation':<28} {'n':>6} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9}"
        print(h2)
        print("-" * len(h2))
        for op, stats in http["operations"].items():
            print(f"{OPERATIONS[op]:<28} {stats['n']:>6} {stats['p50_ms']:>9.3f} {stats['p95_ms']:>9.3f} "
                  f"{stats['p99_ms']:>9.3f}")
        print()
        h3 = f"{'reads/s':<44} {'reads':>7} {'reads/s':>9} {'p50 ms':>8} {'p95 ms':>8}"
        print(h3)
        print("-" * len(h3))
        for run, row in http["reads_per_s"].items():
            print(f"{run:<44} {row['reads']:>7} {row['reads_per_s']:>9,.0f} {row['p50_ms']:>8.2f} "
                  f"{row['p95_ms']:>8.2f}")
        if http.get("metric_blobs_printed"):
            print(f"(the server printed {http['metric_blobs_printed']} CloudWatch metric blobs to stdout, "
                  "though POWERTOOLS_METRICS_DISABLED=true: it should print none)")
    print()
    print_targets(results["targets"], _value_text, width=86)


def _btrees(wal: dict[str, Any], at_least: float = 0.3) -> str:
    return ", ".join(f"{name} {pages:.1f}" for name, pages in wal["by_btree"].items() if pages >= at_least)


def markdown(results: dict[str, Any]) -> str:
    """The run's figures as Markdown tables (what docs/benchmarks.md shows between its bench markers)."""
    info = results["machine"]
    inproc = results["inprocess"]
    systems = [k for k in ("agentmem_memories", "agentmem_users", "sqlitestore_wal", "sqlitestore_default")
               if k in inproc]
    out = [f"Run of {info['date']} ({'quick' if results['quick'] else 'full'}, {results['seconds']} s): "
           f"{info['cpu_count']} CPUs ({info['cpu_model']}), {info['memory_gb']} GB, Python {info['python']}, "
           f"SQLite {info['sqlite']}, {info['platform']}, temporary files on {info.get('tmp_filesystem', '?')}; "
           f"langgraph {info['packages']['langgraph']}, langgraph-checkpoint-sqlite "
           f"{info['packages']['langgraph-checkpoint-sqlite']}.", ""]
    out += ["**In-process** (one thread; ops/s = 1 / mean latency)", "",
            "| operation | system | n | p50 ms | CPU p50 ms | p95 ms | p99 ms | ops/s |",
            "|---|---|--:|--:|--:|--:|--:|--:|"]
    for op, label in OPERATIONS.items():
        for key in systems:
            stats = inproc[key].get(op)
            if stats:
                cpu = f"{stats['cpu_p50_ms']:.3f}" if "cpu_p50_ms" in stats else "—"
                out.append(f"| {label} | {SYSTEM_LABELS[key]} | {stats['n']:,} | {stats['p50_ms']:.3f} | {cpu} | "
                           f"{stats['p95_ms']:.3f} | {stats['p99_ms']:.3f} | {stats['ops_per_s']:,.0f} |")
    out += ["", "**p50 ratio agentmem ÷ SqliteStore** (below 1: agentmem faster)", "",
            "| operation | agentmem layout | ÷ SqliteStore, WAL | ÷ SqliteStore, as shipped |", "|---|---|--:|--:|"]
    for op in ("save_create", "save_update", "read", "list", "search"):
        for key in ("agentmem_memories", "agentmem_users"):
            if key in inproc:
                cells = [f"{inproc[key][op]['p50_ms'] / inproc[ref][op]['p50_ms']:.2f}" if op in inproc[ref]
                         else "—" for ref in ("sqlitestore_wal", "sqlitestore_default")]
                out.append(f"| {OPERATIONS[op]} | {SYSTEM_LABELS[key]} | {cells[0]} | {cells[1]} |")
    same = inproc["sqlitestore_wal"].get("search_equivalent")
    if same:
        for key in ("agentmem_memories", "agentmem_users"):
            if key in inproc:
                out.append(f"| search, against SqliteStore + ranking in Python (same answer) | {SYSTEM_LABELS[key]} | "
                           f"{inproc[key]['search']['p50_ms'] / same['p50_ms']:.2f} | |")
    walled = [k for k in systems if "wal" in inproc[k]]
    if walled:
        out += ["", f"**WAL appended per write** (mean of {WAL_WRITES} writes; "
                f"{inproc[walled[0]]['wal']['save_create']['page_size']}-byte pages, each with a 24-byte frame header; "
                "pages by the table or index holding them, `dbstat`)", "",
                "| operation | system | pages | bytes | pages by table or index (≥ 0.3) |", "|---|---|--:|--:|---|"]
        for op in WAL_OPERATIONS:
            for key in walled:
                w = inproc[key]["wal"][op]
                out.append(f"| {WAL_OPERATIONS[op]} | {SYSTEM_LABELS[key]} | {w['pages_per_op']:.1f} | "
                           f"{w['bytes_per_op']:,} | {_btrees(w)} |")
    http = results.get("http")
    if http and "error" in http:
        out += ["", f"**Over HTTP**: the run failed ({http['error']})."]
        http = None
    if http:
        out += ["", f"**Over HTTP** (the local server as it ships, in a thread of the benchmark's process, "
                f"{http['layout']}; SDK on keep-alive connections)", "",
                "| operation | n | p50 ms | p95 ms | p99 ms |", "|---|--:|--:|--:|--:|"]
        for op, stats in http["operations"].items():
            out.append(f"| {OPERATIONS[op]} | {stats['n']:,} | {stats['p50_ms']:.2f} | {stats['p95_ms']:.2f} | "
                       f"{stats['p99_ms']:.2f} |")
        out += ["", "| reads/s | reads | reads/s | p50 ms | p95 ms |", "|---|--:|--:|--:|--:|"]
        for run, row in http["reads_per_s"].items():
            out.append(f"| {run} | {row['reads']:,} | {row['reads_per_s']:,.0f} | {row['p50_ms']:.2f} | "
                       f"{row['p95_ms']:.2f} |")
    out += targets_markdown(results["targets"], _value_text)
    return "\n".join(out) + "\n"


DOCS_BEGIN = "<!-- bench/entries.py --markdown: begin -->"
DOCS_END = "<!-- bench/entries.py --markdown: end -->"


def update_docs(results: dict[str, Any], path: Path) -> bool:
    """Replace the generated block of docs/benchmarks.md with this run's tables; False if there is none."""
    return replace_block(path, DOCS_BEGIN, DOCS_END, markdown(results))


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    inproc = results["inprocess"]
    systems = [k for k in ("agentmem_memories", "agentmem_users", "sqlitestore_wal", "sqlitestore_default")
               if k in inproc]
    ops = ["save_create", "save_update", "read", "list", "search"]
    colours = {"agentmem_memories": "#1f77b4", "agentmem_users": "#9ecae1", "sqlitestore_wal": "#d62728",
               "sqlitestore_default": "#ff9896"}
    http = results.get("http")
    if http and "error" in http:
        http = None
    fig, axes = plt.subplots(1, 2 if http else 1, figsize=(16 if http else 11, 6.2),
                             gridspec_kw={"width_ratios": [2.6, 1]} if http else None)
    ax = axes[0] if http else axes
    width = 0.8 / len(systems)
    x = np.arange(len(ops))
    for i, key in enumerate(systems):
        p50 = [inproc[key][op]["p50_ms"] if op in inproc[key] else np.nan for op in ops]
        p95 = [inproc[key][op]["p95_ms"] if op in inproc[key] else np.nan for op in ops]
        pos = x + (i - (len(systems) - 1) / 2) * width
        ax.bar(pos, p50, width, color=colours[key], label=SYSTEM_LABELS[key])
        ax.scatter(pos, p95, marker="_", color="black", s=(width * 60) ** 2 / 4, linewidths=1.5, zorder=3)
    same = inproc.get("sqlitestore_wal", {}).get("search_equivalent")
    if same:
        beside = ops.index("search") + (len(systems) + 1 - (len(systems) - 1) / 2) * width
        ax.bar(beside, same["p50_ms"], width, color="white", edgecolor="#d62728", hatch="///",
               label="SqliteStore (WAL) + ranking in Python: the same answer as agentmem's search")
        ax.scatter([beside], [same["p95_ms"]], marker="_", color="black", s=(width * 60) ** 2 / 4, linewidths=1.5,
                   zorder=3)
    ax.set_yscale("log")
    ax.set_xticks(x)
    ax.set_xticklabels(["save (create)", "save (update)", "read", f"list (first {LIST_PAGE})",
                        f"search (top {SEARCH_LIMIT})"])
    ax.set_ylabel("latency, ms (log scale): bar = p50, black tick = p95")
    # each target as a dotted segment over the operations it applies to
    for value, positions, label in ((TARGETS["save_p50_ms"], (0, 1), "save target"),
                                    (TARGETS["read_p50_ms"], (2,), "read target"),
                                    (TARGETS["search_p50_ms"], (4,), "search target")):
        for at in positions:
            ax.hlines(value, at - 0.45, at + 0.45, colors="black", linestyles=":", linewidth=1.2)
        ax.text(positions[-1] + 0.45, value, f" {label} ({value:g} ms)", fontsize=7, va="center")
    ax.set_title(f"In-process latency, {LAYERS} layers × {PER_LAYER} entries")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=2, frameon=False)
    ax.grid(axis="y", which="both", alpha=0.2)
    if http:
        bx = axes[1]
        rows = http["reads_per_s"]
        runs = list(rows)
        y = np.arange(len(runs))
        values = [rows[run]["reads_per_s"] for run in runs]
        bars = bx.barh(y, values, 0.6, color="#1f77b4")
        for bar, row in zip(bars, (rows[run] for run in runs), strict=True):
            bx.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {row['reads_per_s']:,.0f}/s, "
                    f"p50 {row['p50_ms']:.2f} ms", va="center", fontsize=7)
        bx.set_xlim(0, max(max(values), TARGETS["http_reads_per_s"]) * 1.45)
        bx.set_yticks(y)
        bx.set_yticklabels([run.replace(", client in another process", ",\nclient in another process")
                            for run in runs], fontsize=7)
        bx.axvline(TARGETS["http_reads_per_s"], color="grey", linestyle=":", linewidth=1)
        bx.set_ylim(len(runs) - 0.5, -0.8)  # first run on top, room above it for the target's label
        bx.text(TARGETS["http_reads_per_s"], -0.55, f" target {TARGETS['http_reads_per_s']:.0f}/s",
                fontsize=7, color="grey")
        bx.set_xlabel("reads/s over HTTP (keep-alive)")
        bx.set_title("HTTP reads/s, local server as shipped")
    info = results["machine"]
    fig.text(0.01, 0.01, f"{info['cpu_count']} CPUs {info['cpu_model']}, Python {info['python']}, "
             f"SQLite {info['sqlite']}, {info['date']}", fontsize=7, color="grey")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples, one layout (about 20 s)")
    parser.add_argument("--layout", choices=["both", "memories", "users"], default=None,
                        help="which agentmem layouts to run (default: both; --quick: memories)")
    parser.add_argument("--no-http", action="store_true", help="skip the HTTP part")
    parser.add_argument("--replot", type=Path, metavar="JSON",
                        help="print the table and redraw the plot of an earlier run's results, measuring nothing")
    parser.add_argument("--markdown", type=Path, metavar="JSON",
                        help="print an earlier run's figures as the Markdown tables docs/benchmarks.md shows")
    args = parser.parse_args(argv)
    if args.markdown:
        saved = json.loads(args.markdown.read_text())
        saved["targets"] = check_targets(saved)
        print(markdown(saved), end="")
        return 0
    if args.replot:
        saved = json.loads(args.replot.read_text())
        saved["targets"] = check_targets(saved)
        print_report(saved)
        png = (ROOT / "bench" / "results" / "entries-latency-quick.png" if saved["quick"]
               else ROOT / "docs" / "img" / "entries-latency.png")
        plot(saved, png)
        print(f"redrew {png.relative_to(ROOT)}")
        return 0
    plan = QUICK if args.quick else FULL
    layouts = {"both": ["memories", "users"], "memories": ["memories"], "users": ["users"]}[
        args.layout or ("memories" if args.quick else "both")
    ]
    started = time.perf_counter()
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

    log("generating the entries")
    corpus = Corpus()
    entries = corpus.entries(LAYERS, PER_LAYER)
    rng = random.Random(1)
    read_picks = [entries[rng.randrange(len(entries))] for _ in range(plan.read + 200)]
    reads = [(e.layer, e.name) for e in read_picks]
    update_picks = [entries[rng.randrange(len(entries))] for _ in range(plan.save + 200)]
    updates = [corpus.entry(e.layer, int(e.name[-3:]), revision=1) for e in update_picks]
    lists = [(rng.randrange(LAYERS),) for _ in range(plan.list + 200)]
    queries = Corpus.queries(entries, plan.search + 200)

    results: dict[str, Any] = {
        "benchmark": "entries",
        "quick": args.quick,
        "machine": machine(),
        "setup": {
            "layers": LAYERS,
            "entries_per_layer": PER_LAYER,
            "entries": len(entries),
            "content_chars_mean": round(sum(len(e.content) for e in entries) / len(entries), 1),
            "description_chars_mean": round(sum(len(e.description) for e in entries) / len(entries), 1),
            "list_page": LIST_PAGE,
            "search_limit": SEARCH_LIMIT,
            "plan": plan.__dict__,
        },
        "inprocess": {},
    }
    with tempfile.TemporaryDirectory(prefix="agentmem-bench-") as tmp:
        tmp_path = Path(tmp)
        results["machine"]["tmp_filesystem"] = _filesystem(tmp_path)
        http_target: Agentmem | None = None
        for layout in layouts:
            target, figures = bench_agentmem(tmp_path / f"agentmem-{layout}", layout, entries, updates, reads,
                                             lists, queries, plan)
            results["inprocess"][f"agentmem_{layout}"] = figures
            if http_target is None:
                http_target = target
        wal, figures = bench_sqlitestore(tmp_path / "sqlitestore-wal.db", True, entries, updates, reads, lists,
                                         queries, plan)
        results["inprocess"]["sqlitestore_wal"] = figures
        # does the same-answer search on SqliteStore agree with agentmem's search? (names, when < 100 match)
        if http_target is not None:
            agree = total = 0
            for layer, text in queries[:50]:
                ours = http_target.search_names(layer, text, 100)
                if len(ours) < 100:
                    total += 1
                    agree += set(ours) == set(wal.search_equivalent(layer, text, 100))
            results["inprocess"]["sqlitestore_wal"]["search_equivalent"]["same_names_as_agentmem"] = \
                f"{agree}/{total}"
        wal.close()
        default, figures = bench_sqlitestore(tmp_path / "sqlitestore-default.db", False, entries, updates, reads,
                                             lists, queries, plan)
        results["inprocess"]["sqlitestore_default"] = figures
        default.close()
        if http_target is not None and not args.no_http:
            log("HTTP: the local server in a thread")
            http = bench_http(http_target, entries, corpus, queries, plan, rng)
            http["layout"] = LAYOUTS[http_target.layout]
            results["http"] = http
    results["targets"] = check_targets(results)
    results["seconds"] = round(time.perf_counter() - started, 1)
    print_report(results)

    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    if args.quick:
        json_path, png_path = out_dir / "entries-quick.json", out_dir / "entries-latency-quick.png"
    else:
        json_path, png_path = out_dir / "entries.json", ROOT / "docs" / "img" / "entries-latency.png"
    json_path.write_text(json.dumps(results, indent=2) + "\n")
    plot(results, png_path)
    print(f"wrote {json_path.relative_to(ROOT)} and {png_path.relative_to(ROOT)} in {results['seconds']} s")
    docs = ROOT / "docs" / "benchmarks.md"
    if not args.quick and update_docs(results, docs):
        print(f"updated the tables in {docs.relative_to(ROOT)}")
    return 1 if "error" in results.get("http", {}) else 0


def _filesystem(path: Path) -> str:
    best, kind = "", "unknown"
    try:
        for line in Path("/proc/mounts").read_text().splitlines():
            parts = line.split()
            mount, fstype = parts[1], parts[2]
            if str(path).startswith(mount) and len(mount) > len(best):
                best, kind = mount, fstype
    except OSError:
        pass
    return kind


if __name__ == "__main__":
    sys.exit(main())
