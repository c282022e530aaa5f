"""Integrations: the async client's throughput against the sync client's, at 1, 8 and 64 concurrent tasks, against
a real ``agentmem serve``.

    .venv/bin/python bench/integrations.py               # 5 s per level (about 2 minutes with the set-up)
    .venv/bin/python bench/integrations.py --seconds 2   # quicker
    .venv/bin/python bench/integrations.py --workers 1   # the server in one process

``agentmem serve`` on the embedded backend in a subprocess (a data dir of its own, its workers one per core unless
``--workers``), a memory of 50 entries. The operation is what a framework's memory hook does most: an entry read
(``memory.read(name)``). For each level N, for ``--seconds`` seconds each, in ``--rounds`` turns (the kinds take
turns, a slice each, so that a load that comes and goes on a shared machine falls on all of them alike):

* the sync ``Client`` on N threads of this process, sharing one client (its connection pool), each reading in a
  loop — at N=1 that is the sync client on one thread, the goal's baseline;
* the ``AsyncClient`` with N tasks on ONE event loop in one thread, sharing one client, each reading in a loop:
  through its default transport (aiohttp's, ``AiohttpTransport``, with the ``async`` extra installed), and
  through httpx's (``AsyncHttpTransport``, what it falls back to) for comparison (``--transports`` to choose).

Every answer must be the entry (an error fails the run). Prints the table — reads per second, p50 and p99 of each
call's wall time, this process's CPU time per read (the client's own cost), the server's CPU time per read (its
processes', from ``/proc``), how much of a core each side had (CPU seconds over wall seconds: on a shared machine
the scheduler's share), the most connections open to the server at once, and the ratio of each to the sync
client on one thread — then the goal (the async client at 64 tasks, on its default transport, ≥ 3× the sync
client on one thread) and the ceiling this machine puts on it: with the client and the server on the same cores,
reads per second cannot pass ``cores / (client CPU + server CPU per read)``, nor, with one server worker (one
process, one GIL), ``1 / server CPU per read``. Writes ``bench/results/integrations.json``: one run per
``--workers`` value under ``runs`` (``workers_1``, ``workers_2``, ``workers_default``), each with the machine's
load average before and after it (the machine may be shared: read the figures beside it).

The LangGraph store's overhead over the SDK is ``bench/langgraph_store.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "bench"))

from agentmem.client import AsyncClient, Client  # noqa: E402
from agentmem.client.aio import AsyncHttpTransport, default_transport  # noqa: E402
from load import started  # noqa: E402

LEVELS = (1, 8, 64)
ENTRIES = 50
RESULTS = ROOT / "bench" / "results" / "integrations.json"
GOAL_RATIO = 3.0
TRANSPORTS = ("default", "httpx")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class Server:
    """The server's CPU time (its process and its workers', from ``/proc``) and its open connections."""

    def __init__(self, pid: int, port: int) -> None:
        self.pid, self.port = pid, port

    def cpu_s(self) -> float:
        pids = [self.pid]
        with contextlib.suppress(OSError):  # (its workers: one level down)
            pids += [int(child) for child in Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()]
        ticks = 0
        for pid in pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            ticks += int(fields[11]) + int(fields[12])  # utime + stime
        return ticks / CLOCK_TICKS

    def connections(self) -> int:
        """Established TCP connections to the server's port (IPv4)."""
        try:
            lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
        except OSError:
            return 0
        port = f"{self.port:04X}"
        return sum(1 for line in lines
                   if (fields := line.split())[2].endswith(":" + port) and fields[3] == "01")


class Watch:
    """Around one level: the server's CPU, and the most connections open at once (sampled every 0.2 s)."""

    def __init__(self, server: Server) -> None:
        self.server, self.most = server, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            self.most = max(self.most, self.server.connections())

    def __enter__(self) -> Watch:
        self.cpu = self.server.cpu_s()
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
        self.cpu = self.server.cpu_s() - self.cpu


def _summary(kind: str, transport: str, tasks: int, latencies: list[float], elapsed: float, cpu: float
             ) -> dict[str, Any]:
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] if latencies else 0.0
    return {"client": kind, "transport": transport, "tasks": tasks, "reads": len(latencies),
            "seconds": round(elapsed, 2), "reads_per_s": round(len(latencies) / elapsed, 1) if elapsed else 0.0,
            "p50_ms": round(statistics.median(latencies) * 1000, 2) if latencies else 0.0,
            "p99_ms": round(p99 * 1000, 2),
            "client_cpu_ms_per_read": round(cpu / len(latencies) * 1000, 3) if latencies else 0.0}


Raw = tuple[list[float], float, float, str]  # latencies, elapsed s, this process's CPU s, transport


def run_sync(url: str, key: str, tasks: int, seconds: float) -> Raw:
    client = Client(url, key)
    memory = client.memory("bench")
    memory.read("e0")  # the connection made before the clock starts
    latencies: list[list[float]] = [[] for _ in range(tasks)]
    stop = threading.Event()

    def loop(index: int) -> None:
        mine = latencies[index]
        n = index
        while not stop.is_set():
            started_at = time.perf_counter()
            entry = memory.read(f"e{n % ENTRIES}")
            mine.append(time.perf_counter() - started_at)
            assert entry.content, entry
            n += tasks

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(tasks)]
    cpu = time.process_time()
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    cpu = time.process_time() - cpu
    client.close()
    return [x for chunk in latencies for x in chunk], elapsed, cpu, "urllib3"


def _transport(name: str, url: str) -> Any:
    return AsyncHttpTransport(url) if name == "httpx" else default_transport(url, 30.0)


async def _run_async(url: str, key: str, tasks: int, seconds: float, transport: str) -> Raw:
    sender = _transport(transport, url)
    async with AsyncClient(url, key, transport=sender) as client:
        memory = client.memory("bench")
        await asyncio.gather(*(memory.read("e0") for _ in range(tasks)))  # its connections made before the clock
        latencies: list[float] = []
        deadline = time.perf_counter() + seconds

        async def loop(index: int) -> None:
            n = index
            while time.perf_counter() < deadline:
                started_at = time.perf_counter()
                entry = await memory.read(f"e{n % ENTRIES}")
                latencies.append(time.perf_counter() - started_at)
                assert entry.content, entry
                n += tasks

        cpu = time.process_time()
        began = time.perf_counter()
        await asyncio.gather(*(loop(i) for i in range(tasks)))
        return latencies, time.perf_counter() - began, time.process_time() - cpu, str(sender.name)


def run_async(url: str, key: str, tasks: int, seconds: float, transport: str) -> Raw:
    return asyncio.run(_run_async(url, key, tasks, seconds, transport))


def ceiling(row: dict[str, Any], workers: int | None, sync: dict[str, Any]) -> dict[str, Any]:
    """The most reads per second this machine allows a client costing what ``row``'s does: every core busy with
    the client's and the server's CPU per read, one worker's process at most one core, the async client's one
    thread at most one core. And the most that makes of the goal's ratio: the sync client on one thread reads one
    entry at a time, so at best (an idle machine) ``1 / (its CPU + the server's per read)`` a second."""
    cores = os.cpu_count() or 1
    per_read_ms = row["client_cpu_ms_per_read"] + row["server_cpu_ms_per_read"]
    limit = cores / per_read_ms * 1000 if per_read_ms else 0.0
    if (workers or cores) == 1 and row["server_cpu_ms_per_read"]:
        limit = min(limit, 1000 / row["server_cpu_ms_per_read"])
    if row["client_cpu_ms_per_read"]:  # the async client is one thread: one core at most
        limit = min(limit, 1000 / row["client_cpu_ms_per_read"])
    serial_ms = sync["client_cpu_ms_per_read"] + sync["server_cpu_ms_per_read"]
    return {"cores": cores, "client_cpu_ms_per_read": row["client_cpu_ms_per_read"],
            "server_cpu_ms_per_read": row["server_cpu_ms_per_read"], "reads_per_s": round(limit, 1),
            "sync_one_thread_cpu_ms_per_read": round(serial_ms, 3),
            "sync_one_thread_at_best_reads_per_s": round(1000 / serial_ms, 1) if serial_ms else None,
            "ratio_at_best": round(limit * serial_ms / 1000, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0, help="per client kind and level (default 5)")
    parser.add_argument("--rounds", type=int, default=5,
                        help="the seconds split in this many turns, the kinds taking turns (default 5)")
    parser.add_argument("--workers", type=int, default=None, help="agentmem serve's workers (default: per core)")
    parser.add_argument("--transports", default=",".join(TRANSPORTS),
                        help="the async client's: default (aiohttp when installed), httpx (default: both)")
    parser.add_argument("--results", type=Path, default=RESULTS, help=f"where to write (default {RESULTS.name})")
    args = parser.parse_args(argv)
    transports = [name.strip() for name in args.transports.split(",") if name.strip()]
    extra = ["--workers", str(args.workers)] if args.workers else []
    load_before = [round(x, 2) for x in os.getloadavg()]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, started("embedded", Path(tmp), extra) as (url, key, process):
        server = Server(process.pid, int(url.rsplit(":", 1)[1]))
        with Client(url, key) as client:
            memory = client.memories.create("bench")
            for n in range(ENTRIES):
                memory.save(f"e{n}", f"Entry {n}: the customer is on the Team plan, billed yearly.",
                            description=f"entry {n}")
        kinds = [("sync", "")] + [("async", name) for name in transports]
        for tasks in LEVELS:
            raw: dict[tuple[str, str], list[Any]] = {kind: [[], 0.0, 0.0, "", 0.0, 0] for kind in kinds}
            for turn in range(args.rounds):  # in turns, each kind a slice, so that all see the same load
                for kind in kinds if turn % 2 == 0 else kinds[::-1]:
                    with Watch(server) as watch:
                        if kind[0] == "sync":
                            latencies, elapsed, cpu, name = run_sync(url, key, tasks, args.seconds / args.rounds)
                        else:
                            latencies, elapsed, cpu, name = run_async(url, key, tasks, args.seconds / args.rounds,
                                                                      kind[1])
                    acc = raw[kind]
                    acc[0] += latencies
                    acc[1] += elapsed
                    acc[2] += cpu
                    acc[3] = name
                    acc[4] += watch.cpu
                    acc[5] = max(acc[5], watch.most)
            for kind in kinds:
                latencies, elapsed, cpu, name, server_cpu, most = raw[kind]
                row = _summary(kind[0], name, tasks, latencies, elapsed, cpu)
                row["server_cpu_ms_per_read"] = round(server_cpu / row["reads"] * 1000, 3) if row["reads"] else 0.0
                # how much of a core each side had: on a shared machine the scheduler's share, not the code, may be
                # what sets the reads per second
                row["client_core_share"] = round(cpu / elapsed, 2) if elapsed else 0.0
                row["server_core_share"] = round(server_cpu / elapsed, 2) if elapsed else 0.0
                row["connections_open"] = most
                rows.append(row)
                print(f"  {kind[0]:5} {row['transport']:8} x{tasks:<3} {row['reads_per_s']:8.1f} reads/s", flush=True)
    baseline = next(r["reads_per_s"] for r in rows if r["client"] == "sync" and r["tasks"] == 1)
    for row in rows:
        row["vs_sync_one_thread"] = round(row["reads_per_s"] / baseline, 2) if baseline else None
    print()
    print(f"{'client':7} {'transport':9} {'tasks':>5} {'reads/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'client':>7} "
          f"{'server':>7} {'client':>7} {'server':>7} {'conns':>5} {'× sync@1':>9}")
    print(f"{'':7} {'':9} {'':>5} {'':>9} {'':>8} {'':>8} {'cpu ms':>7} {'cpu ms':>7} {'cores':>7} {'cores':>7} "
          f"{'':>5} {'':>9}")
    for row in rows:
        print(f"{row['client']:7} {row['transport']:9} {row['tasks']:>5} {row['reads_per_s']:>9.1f} "
              f"{row['p50_ms']:>8.2f} {row['p99_ms']:>8.2f} {row['client_cpu_ms_per_read']:>7.3f} "
              f"{row['server_cpu_ms_per_read']:>7.3f} {row['client_core_share']:>7.2f} "
              f"{row['server_core_share']:>7.2f} {row['connections_open']:>5} {row['vs_sync_one_thread']:>9.2f}")
    async64 = next(r for r in rows if r["client"] == "async" and r["tasks"] == 64)  # the default transport's
    met = (async64["vs_sync_one_thread"] or 0) >= GOAL_RATIO
    print(f"\ngoal: the async client ({async64['transport']}) at 64 tasks ≥ {GOAL_RATIO:g}× the sync client on one "
          f"thread: {async64['vs_sync_one_thread']}× — {'met' if met else 'NOT met'}")
    sync1 = next(r for r in rows if r["client"] == "sync" and r["tasks"] == 1)
    most = ceiling(async64, args.workers, sync1)
    print(f"ceiling here: {most['cores']} cores / ({most['client_cpu_ms_per_read']} ms client + "
          f"{most['server_cpu_ms_per_read']} ms server CPU per read)"
          f"{', one worker at most one core' if args.workers == 1 else ''} = {most['reads_per_s']} reads/s; "
          f"the sync client on one thread at best 1 / {most['sync_one_thread_cpu_ms_per_read']} ms = "
          f"{most['sync_one_thread_at_best_reads_per_s']} reads/s: the ratio at best {most['ratio_at_best']}×")
    load_after = [round(x, 2) for x in os.getloadavg()]
    print(f"load average (1, 5, 15 min): before {load_before}, after {load_after}")
    out = args.results
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        results = json.loads(out.read_text())
    except (OSError, ValueError):
        results = {}
    runs = results.get("runs") if isinstance(results.get("runs"), dict) else {}
    runs[f"workers_{args.workers or 'default'}"] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "load_average_before": load_before, "load_average_after": load_after,
        "operation": "memory.read (an entry read) against agentmem serve, embedded backend",
        "seconds_per_level": args.seconds, "rounds": args.rounds, "serve_workers": args.workers or "one per core",
        "rows": rows, "goal": {"async_64_vs_sync_1": async64["vs_sync_one_thread"], "target": GOAL_RATIO,
                               "met": met, "transport": async64["transport"],
                               "ceiling": most},
    }
    out.write_text(json.dumps({"runs": dict(sorted(runs.items()))}, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
