"""Where the time goes in read, save, list and search: cProfile plus a per-statement SQL breakdown.

    .venv/bin/python bench/profile_entries.py [--layout memories|users] [--top 12]

Loads the same 20 layers × 500 entries as ``bench/entries.py``, then:

1. profiles each in-process operation with cProfile (top functions by own time);
2. times every SQL statement each operation runs (a timing proxy around the thread's SQLite
   connection; the product code is not changed);
3. measures how much WAL one save (update) writes, against LangGraph's ``SqliteStore`` ``put`` of the
   same entries (the commit is most of a save's time), and what a save costs with its keyword index's
   statements not run (a measure only), against agentmem as it is, the floor of a save with a keyword index and
   screening (``FloorStore``) and ``SqliteStore``, saving in turns;
4. profiles reads over HTTP on the server's thread and on the client's, against the local server as it
   ships, and measures reads/s on one connection.

Writes the report to stdout and to ``bench/results/profile-entries-{layout}.txt``.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import random
import re
import sqlite3
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from corpus import Corpus, EntryData
from entries import (
    LAYERS,
    LIST_PAGE,
    PER_LAYER,
    SEARCH_LIMIT,
    WAL_OPERATIONS,
    WAL_WRITES,
    Agentmem,
    LangGraphStore,
    wal_phases,
)

ROOT = Path(__file__).resolve().parent.parent


# --- SQL timing ---------------------------------------------------------------------------------------------


def _statement_key(sql: str) -> str:
    text = " ".join(sql.split())
    text = re.sub(r"\(SELECT count\(\*\) FROM entries e .*?\)\) AS entry_count", "(count of the memory's entries)"
                  " AS entry_count", text)
    text = re.sub(r"\(SELECT group_concat.*?ORDER BY agent\)\) AS attached", "(attached agents) AS attached", text)
    text = re.sub(r"VALUES \(.*?\)$", "VALUES (…)", text)
    text = re.sub(r"IN \((?:\?,)*\?\)", "IN (?, …)", text)
    text = re.sub(r"SET account_id=.*? WHERE", "SET … WHERE", text)
    text = re.sub(r"INSERT INTO entries \(.*?\) VALUES", "INSERT INTO entries (…) VALUES", text)
    return text[:150]


class _TimedCursor:
    def __init__(self, cursor: sqlite3.Cursor, key: str, totals: dict[str, list[float]]) -> None:
        self._cursor, self._key, self._totals = cursor, key, totals

    def _timed(self, method: str) -> Any:
        start = time.perf_counter()
        try:
            return getattr(self._cursor, method)()
        finally:
            self._totals[self._key][1] += time.perf_counter() - start

    def fetchone(self) -> Any:
        return self._timed("fetchone")

    def fetchall(self) -> Any:
        return self._timed("fetchall")

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


class TimingConnection:
    """Wraps a sqlite3 connection: execute + fetch time per statement shape."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])

    def execute(self, sql: str, params: Any = ()) -> Any:
        key = _statement_key(sql)
        start = time.perf_counter()
        cursor = self._conn.execute(sql, params)
        self.totals[key][1] += time.perf_counter() - start
        self.totals[key][0] += 1
        return _TimedCursor(cursor, key, self.totals)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class SkippingConnection:
    """Wraps a sqlite3 connection: the statements ``skip`` names are not run (a measure only), the rest run as they
    are, with no timing around them (a proxy that timed each statement cost more than some statements do)."""

    def __init__(self, conn: sqlite3.Connection, skip: Callable[[str], bool]) -> None:
        self._conn = conn
        self._skip = skip

    def execute(self, sql: str, params: Any = ()) -> Any:
        if self._skip(sql):
            return _NOTHING
        return self._conn.execute(sql, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class _Skipped:
    """What a skipped statement answers: no rows."""

    rowcount = 0

    def fetchone(self) -> None:
        return None

    def fetchall(self) -> list[Any]:
        return []


_NOTHING = _Skipped()


def keyword_index(sql: str) -> bool:
    return "entries_fts" in sql


@contextlib.contextmanager
def timed_sql(target: Agentmem) -> Iterator[TimingConnection]:
    """Every statement of the thread's connection timed."""
    db = target.db  # one Database shared by every store
    real = db.connection()
    proxy = TimingConnection(real)
    db._local.conn = proxy
    try:
        yield proxy
    finally:
        db._local.conn = real


def sql_report(proxy: TimingConnection, operations: int, wall_s: float) -> str:
    lines = [f"    {'ms/op':>7} {'share':>6} {'calls/op':>8}  statement"]
    for key, (calls, seconds) in sorted(proxy.totals.items(), key=lambda kv: -kv[1][1]):
        per_op = seconds / operations * 1e3
        lines.append(f"    {per_op:>7.3f} {seconds / wall_s:>6.0%} {calls / operations:>8.1f}  {key}")
    total = sum(s for _, s in proxy.totals.values())
    lines.append(f"    {total / operations * 1e3:>7.3f} {total / wall_s:>6.0%}           all SQL; the operation took "
                 f"{wall_s / operations * 1e3:.3f} ms in all")
    return "\n".join(lines)


# --- cProfile -------------------------------------------------------------------------------------------------


def profile(call: Callable[..., object], arguments: Sequence[tuple[Any, ...]], top: int) -> tuple[str, float]:
    for args in arguments[:20]:
        call(*args)
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    for args in arguments[20:]:
        call(*args)
    profiler.disable()
    wall = time.perf_counter() - start
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.strip_dirs().sort_stats("tottime").print_stats(top)
    text = out.getvalue()
    body = text[text.index("   ncalls"):] if "   ncalls" in text else text
    return "\n".join("    " + line for line in body.rstrip().splitlines()), wall


def section(title: str) -> str:
    return f"\n{'=' * 100}\n{title}\n{'=' * 100}"


# --- WAL written per save -----------------------------------------------------------------------------------


def wal_per_save(target: Agentmem, entries: Sequence[EntryData], updates: Sequence[EntryData],
                 report: list[str]) -> None:
    """WAL pages (and bytes) one create, update (of text neither store held before) and delete appends, agentmem
    against SqliteStore's ``put`` and ``delete`` (``entries.wal_phases``), with agentmem's pages by the table or
    index holding them."""
    target.settle()
    target.add_layer(LAYERS + 2)
    conn, wal = target.database()
    if isinstance(conn, TimingConnection):
        conn = conn._conn
    ours = wal_phases(conn, wal, target.save, target.delete, entries, updates, fresh_layer=LAYERS + 2)
    with tempfile.TemporaryDirectory(prefix="agentmem-wal-") as tmp:
        store = LangGraphStore(Path(tmp) / "store.db", tuned=True)
        store.bulk_load(entries)
        theirs = wal_phases(store.conn, Path(tmp) / "store.db-wal", store.put, store.delete, entries, updates)
        store.close()
    report.append(f"\n  {'':<34} {'pages':>6} {'bytes':>8}   (per write, mean of {WAL_WRITES})")
    for op, label in WAL_OPERATIONS.items():
        for who, figures in (("agentmem", ours), ("SqliteStore (WAL)", theirs)):
            w = figures[op]
            report.append(f"  {who + ' ' + label:<34} {w['pages_per_op']:>6.1f} {w['bytes_per_op']:>8,}")
        report.append("      agentmem's pages by table or index: "
                      + ", ".join(f"{name} {pages:.2f}" for name, pages in ours[op]["by_btree"].items()))


# --- a save without its keyword index, and the least a save with one can cost -------------------------------


class FloorStore(LangGraphStore):
    """SqliteStore (WAL) whose ``put`` also screens the text (``domain.screening.screen``) and writes the entry's
    words to an FTS5 index made as agentmem's is (contentless, the same tokenizer and leaf size, the old words
    out by FTS5's 'delete' before the new go in), in the put's own transaction: the least a save that keeps the
    SPEC's keyword index and screening can cost on this SQLite, with none of the rest (no history, version check,
    layer count, newest-first index or semantic queue). The words it indexed are kept in a dict, so an update
    reads nothing back: a floor, not a store."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, tuned=True)
        # the index as migrations 14 and 19 make it, under its name: the product's statements write it
        self.conn.execute("CREATE VIRTUAL TABLE entries_fts USING fts5(scope, name, description, content, "
                          "content = '', tokenize = 'porter unicode61 remove_diacritics 0')")
        self.conn.execute("INSERT INTO entries_fts (entries_fts, rank) VALUES ('pgsz', 2000)")
        self._rowids: dict[tuple[int, str], int] = {}
        self._indexed: dict[tuple[int, str], tuple[str, str, str, str]] = {}
        self._entry: EntryData | None = None
        put_ops = self.store._batch_put_ops

        def put_and_index(ops: Any, cur: sqlite3.Cursor) -> None:
            from agentmem.adapters.embedded.entry_words import forget_words, index_words, scope_token

            put_ops(ops, cur)
            entry = self._entry
            assert entry is not None
            key = (entry.layer, entry.name)
            rowid = self._rowids.setdefault(key, len(self._rowids) + 1)
            old = self._indexed.get(key)
            if old is not None:
                forget_words(cur.connection, rowid, *old)  # (the put's transaction: the cursor's connection)
            new = (scope_token("floor", str(entry.layer), ""), entry.name, entry.description, entry.content)
            index_words(cur.connection, rowid, *new)
            self._indexed[key] = new

        self.store._batch_put_ops = put_and_index  # type: ignore[method-assign,assignment]

    def put(self, entry: EntryData) -> None:
        from agentmem.domain.screening import screen

        screen(entry.name, entry.description, entry.content)
        self._entry = entry
        super().put(entry)


def saves_without_keyword_index(corpus: Corpus, report: list[str], layers: int = 8, per_layer: int = 450,
                                block: int = 50) -> None:
    """Four stores saving the same entries in turn, ``block`` saves each: agentmem, agentmem whose keyword
    index's statements are not run (``keyword_index``: its searches would be wrong; a measure of what the rest of
    a save costs), the floor of a save with a keyword index and screening (``FloorStore``) and SqliteStore (WAL).
    p50 of each save's thread CPU time, creates then updates."""
    entries = corpus.entries(layers, per_layer)
    stores: dict[str, Callable[[EntryData], None]] = {}
    with tempfile.TemporaryDirectory(prefix="agentmem-nokw-") as tmp:
        for name, skip in (("agentmem", None), ("agentmem, no keyword index", keyword_index)):
            target = Agentmem(Path(tmp) / name.replace(" ", "-").replace(",", ""), "memories")
            for layer in range(layers):
                target.add_layer(layer)
            if skip is not None:
                db = target.db
                db._local.conn = SkippingConnection(db.connection(), skip)
            stores[name] = target.save
        floor = FloorStore(Path(tmp) / "floor.db")
        stores["the floor (see below)"] = floor.put
        langgraph = LangGraphStore(Path(tmp) / "store.db", tuned=True)
        stores["SqliteStore (WAL)"] = langgraph.put
        for save in stores.values():
            for e in entries[:200]:
                save(e)
        updates = [corpus.entry(e.layer, int(e.name[-3:]), revision=1) for e in entries]
        times: dict[str, dict[str, list[float]]] = {name: {"create": [], "update": []} for name in stores}
        for phase, items in (("create", entries[200:]), ("update", updates)):
            for first in range(0, len(items), block):
                for name, save in stores.items():
                    for e in items[first:first + block]:
                        began = time.thread_time_ns()
                        save(e)
                        times[name][phase].append((time.thread_time_ns() - began) / 1000)
        floor.close()
        langgraph.close()
    for phase in ("create", "update"):
        theirs = sorted(times["SqliteStore (WAL)"][phase])[len(times["SqliteStore (WAL)"][phase]) // 2]
        for name, phases in times.items():
            ours = sorted(phases[phase])[len(phases[phase]) // 2]
            report.append(f"  save ({phase}) {name:<28} p50 {ours:7.1f} µs CPU  {ours / theirs:5.2f}× SqliteStore "
                          f"(n={len(phases[phase]):,})")
    report.append("  (the floor: SqliteStore (WAL)'s put with screening and an FTS5 keyword index made as agentmem's,"
                  " in the put's transaction, and nothing else)")


PAUSE_S = 0.2  # between the saves and the search, in the last case of searches_after_saves


def searches_after_saves(corpus: Corpus, report: list[str], layers: int = 4, per_layer: int = 500,
                         cycles: int = 300) -> None:
    """``cycles`` times: ``k`` saves (updates of the layer about to be searched), then one keyword search of it,
    for k = 0, 1 and 8 at once, and k = 1 ``PAUSE_S`` later (a third as many cycles). p50 and p99 of the search's
    wall time and p50 of a save's thread CPU time."""
    from agentmem.services.entries import SaveRequest

    entries = corpus.entries(layers, per_layer)
    words = ["refund", "travel", "policy", "meeting", "budget", "train", "hotel", "invoice"]
    with tempfile.TemporaryDirectory(prefix="agentmem-mixed-") as tmp:
        target = Agentmem(Path(tmp) / "store", "memories")
        for layer in range(layers):
            target.add_layer(layer)
        for e in entries:
            target.save(e)
        service = target.container.entries
        revision = 2
        for saves, pause in ((0, 0.0), (1, 0.0), (8, 0.0), (1, PAUSE_S)):
            searched: list[float] = []
            saved: list[float] = []
            for cycle in range(cycles if not pause else cycles // 3):
                layer = cycle % layers
                memory, user = target.where(layer)
                for k in range(saves):
                    e = corpus.entry(layer, (cycle * 7 + k) % per_layer, revision=revision)
                    revision += 1
                    began = time.thread_time_ns()
                    service.save(target.principal, memory, e.name,
                                 SaveRequest(content=e.content, description=e.description), user=user)
                    saved.append((time.thread_time_ns() - began) / 1000)
                time.sleep(pause)  # (an agent's next turn: the indexer has read the change meanwhile)
                began_s = time.perf_counter()
                service.search(target.principal, memory, words[cycle % len(words)], user=user, limit=10,
                               mode="keyword")
                searched.append((time.perf_counter() - began_s) * 1000)
            searched.sort()
            save_text = f", a save p50 {sorted(saved)[len(saved) // 2]:.1f} µs CPU" if saved else ""
            after = f", {pause:g} s after them" if pause else ""
            p50, p99 = searched[len(searched) // 2], searched[int(len(searched) * 0.99)]
            report.append(f"  {saves} save(s) before each search{after}: search p50 {p50:.2f} ms, p99 {p99:.2f} ms"
                          f"{save_text} (n={len(searched)})")


# --- HTTP ---------------------------------------------------------------------------------------------------


def http_part(target: Agentmem, entries: Sequence[EntryData], top: int, report: list[str]) -> None:
    from agentmem.client import Client
    from agentmem.local.server import make_server

    rng = random.Random(3)
    picks = [entries[rng.randrange(len(entries))] for _ in range(1500)]
    server = make_server(target.container, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        client = Client(url, target.secret)
        handles = {}
        for layer in range(LAYERS):
            memory, user = target.where(layer)
            handles[layer] = client.memory(memory, user=user)
        for e in picks[:30]:
            handles[e.layer].read(e.name)
        n = 1000
        start = time.perf_counter()
        for e in picks[30 : 30 + n]:
            handles[e.layer].read(e.name)
        wall = time.perf_counter() - start
        report.append(f"\nHTTP read, SDK client, 1 thread, local server as shipped: {wall / n * 1e3:.2f} ms per read, "
                      f"{n / wall:,.0f} reads/s")
        _profile_http_read(server, url, target, picks[:n], n, top, report)
    finally:
        server.shutdown()
        server.server_close()


def _profile_http_read(server: Any, url: str, target: Agentmem, picks: Sequence[EntryData], n: int, top: int,
                       report: list[str]) -> None:
    """cProfile on the server's handler thread and on the client's, over ``n`` reads."""
    from agentmem.client import Client

    profiler = cProfile.Profile()
    handler = server.RequestHandlerClass
    original = handler.handle_one_request

    def profiled(self: Any) -> None:
        profiler.enable()
        try:
            original(self)
        finally:
            profiler.disable()

    handler.handle_one_request = profiled
    fresh = Client(url, target.secret)  # a new connection, so a new handler thread that is profiled
    handles = {}
    for layer in range(LAYERS):
        memory, user = target.where(layer)
        handles[layer] = fresh.memory(memory, user=user)
    client_profiler = cProfile.Profile()
    start = time.perf_counter()
    client_profiler.enable()
    for e in picks:
        handles[e.layer].read(e.name)
    client_profiler.disable()
    wall = time.perf_counter() - start
    handler.handle_one_request = original
    for name, prof in (("server thread (handle_one_request; its socket wait is idle time between requests)",
                        profiler),
                       ("client thread (SDK Memory.read; its socket wait is the server's time)", client_profiler)):
        for order in ("tottime", "cumulative"):
            out = io.StringIO()
            stats = pstats.Stats(prof, stream=out).strip_dirs()
            total = stats.total_tt  # type: ignore[attr-defined]
            stats.sort_stats(order).print_stats(top if order == "tottime" else 25)
            text = out.getvalue()
            body = text[text.index("   ncalls"):] if "   ncalls" in text else text
            title = (f"\n  {name}: {total / n * 1e3:.3f} ms of profiled time per read (wall {wall / n * 1e3:.3f} ms "
                     "per read with the profiler on); by own time:" if order == "tottime"
                     else "\n  … by cumulative time:")
            report.append(title + "\n" + "\n".join("    " + line for line in body.rstrip().splitlines()))


# --- main ---------------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layout", choices=["memories", "users"], default="memories")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--no-http", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

    corpus = Corpus()
    entries = corpus.entries(LAYERS, PER_LAYER)
    report: list[str] = []
    emitted = io.StringIO()
    with tempfile.TemporaryDirectory(prefix="agentmem-profile-") as tmp:
        target = Agentmem(Path(tmp), args.layout)
        print(f"loading {len(entries):,} entries ({args.layout} layout)…", file=sys.stderr, flush=True)
        for e in sorted(entries, key=lambda e: (int(e.name[-3:]), e.layer)):
            target.save(e)
        rng = random.Random(1)
        reads = [(e.layer, e.name) for e in (entries[rng.randrange(len(entries))] for _ in range(3000))]
        updates = [(corpus.entry(e.layer, int(e.name[-3:]), revision=1),)
                   for e in (entries[rng.randrange(len(entries))] for _ in range(800))]
        lists = [(rng.randrange(LAYERS),) for _ in range(800)]
        queries = Corpus.queries(entries, 300)
        # creates into a fresh layer of the same shape, so the count and FTS work are those of a filling layer
        extra = [EntryData(LAYERS, e.name, e.description, e.content, e.category, e.importance)
                 for e in entries[:PER_LAYER]]
        if args.layout == "memories":
            target.container.memories.create(target.principal, f"m{LAYERS:02d}")

        operations: list[tuple[str, Callable[..., object], Sequence[tuple[Any, ...]]]] = [
            ("read", target.read, reads),
            ("save (update)", target.save, updates),
            ("save (create, into a filling layer)", target.save, [(e,) for e in extra]),
            (f"list (first {LIST_PAGE})", target.list, lists),
            (f"search (top {SEARCH_LIMIT})", target.search, queries),
        ]
        header = (f"agentmem profile — {LAYERS} layers × {PER_LAYER} entries, layout {args.layout}; "
                  f"Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}, {os.cpu_count()} CPUs")
        report.append(header)
        for name, call, arguments in operations:
            print(f"profiling {name}…", file=sys.stderr, flush=True)
            text, wall = profile(call, arguments, args.top)
            n = len(arguments) - 20
            report.append(section(f"{name}: cProfile, {n} operations, {wall / n * 1e3:.3f} ms per operation "
                                  "with the profiler on (top by own time)"))
            report.append(text)
        # creates were used up above: make a second fresh layer for the SQL breakdown of creates
        extra2 = [EntryData(LAYERS + 1, e.name, e.description, e.content, e.category, e.importance)
                  for e in entries[PER_LAYER : 2 * PER_LAYER]]
        if args.layout == "memories":
            target.container.memories.create(target.principal, f"m{LAYERS + 1:02d}")
        report.append(section("SQL per operation (execute + fetch time per statement; no profiler)"))
        # updates of text not saved yet (those profiled above are stored already: saving them again changes no text)
        fresh_updates = [(corpus.entry(u.layer, int(u.name[-3:]), revision=3),) for (u,) in updates]
        for name, call, arguments in [operations[0], ("save (update)", target.save, fresh_updates),
                                      ("save (create, into a filling layer)", target.save, [(e,) for e in extra2]),
                                      *operations[3:]]:
            for args_ in arguments[:20]:
                call(*args_)
            with timed_sql(target) as proxy:
                start = time.perf_counter()
                for args_ in arguments[20:]:
                    call(*args_)
                wall = time.perf_counter() - start
            report.append(f"\n  {name}:")
            report.append(sql_report(proxy, len(arguments) - 20, wall))
        report.append(section("WAL written per write: what its COMMIT writes"))
        wal_per_save(target, entries, [corpus.entry(u.layer, int(u.name[-3:]), revision=4) for (u,) in updates],
                     report)
        if not args.no_http:
            print("profiling HTTP…", file=sys.stderr, flush=True)
            report.append(section("HTTP"))
            with contextlib.redirect_stdout(emitted):  # anything the server prints (there should be nothing)
                http_part(target, entries, args.top, report)
            blobs = emitted.getvalue().count('"_aws"')
            if blobs:
                report.append(f"\nThe server printed {blobs} CloudWatch EMF metric blobs to stdout during the HTTP "
                              "part, though POWERTOOLS_METRICS_DISABLED=true was set: it should print none.")
        print("saves without the keyword index…", file=sys.stderr, flush=True)
        report.append(section("Saves without the keyword index (its statements not run: a measure only, of what the "
                              "rest of a save costs), and the floor of a save with one"))
        saves_without_keyword_index(corpus, report)
        print("searches after saves…", file=sys.stderr, flush=True)
        report.append(section("Searches after saves (a keyword search of a layer just written: what read-your-writes "
                              "costs it)"))
        searches_after_saves(corpus, report)
    text = "\n".join(report) + "\n"
    print(text)
    out = ROOT / "bench" / "results" / f"profile-entries-{args.layout}.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"wrote {out.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
