"""Integrations: the async client's throughput against the sync client's, at 1, 8 and 64 concurrent tasks, against
a real ``agentmem serve``.

    .venv/bin/python bench/integrations.py               # 5 s per level (about 2 minutes with the set-up)
    .venv/bin/python bench/integrations.py --seconds 2   # quicker
    .venv/bin/python bench/integrations.py --workers 1   # the server in one process

``agentmem serve`` on the embedded backend in a subprocess (a data dir of its own, its workers one per core unless
``--workers``), a memory of 50 entries. The operation is what a framework's memory hook does most: an entry read
(``memory.read(name)``). For each level N, for ``--seconds`` seconds:

* the sync ``Client`` on N threads of this process, sharing one client (its connection pool), each reading in a
  loop — at N=1 that is the sync client on one thread, the goal's baseline;
* the ``AsyncClient`` with N tasks on ONE event loop in one thread, sharing one client, each reading in a loop.

Every answer must be the entry (an error fails the run). Prints the table — reads per second, p50 and p99 of each
call's wall time, this process's CPU time per read (the client's own cost; the server is another process), and
the ratio of each to the sync client on one thread — and the goal (the async client at 64
tasks ≥ 3× the sync client on one thread), and writes ``bench/results/integrations.json``: one run per
``--workers`` value under ``runs`` (``workers_1``, ``workers_2``, ``workers_default``), each with the machine's
load average before and after it (the machine may be shared: read the figures beside it).

The LangGraph store's overhead over the SDK is ``bench/langgraph_store.py``.
"""

from __future__ import annotations

import argparse
import asyncio
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
from load import started  # noqa: E402

LEVELS = (1, 8, 64)
ENTRIES = 50
RESULTS = ROOT / "bench" / "results" / "integrations.json"
GOAL_RATIO = 3.0


def _summary(kind: str, tasks: int, latencies: list[float], elapsed: float, cpu: float) -> dict[str, Any]:
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] if latencies else 0.0
    return {"client": kind, "tasks": tasks, "reads": len(latencies), "seconds": round(elapsed, 2),
            "reads_per_s": round(len(latencies) / elapsed, 1) if elapsed else 0.0,
            "p50_ms": round(statistics.median(latencies) * 1000, 2) if latencies else 0.0,
            "p99_ms": round(p99 * 1000, 2),
            "client_cpu_ms_per_read": round(cpu / len(latencies) * 1000, 3) if latencies else 0.0}


def run_sync(url: str, key: str, tasks: int, seconds: float) -> dict[str, Any]:
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
    return _summary("sync", tasks, [x for chunk in latencies for x in chunk], elapsed, cpu)


async def _run_async(url: str, key: str, tasks: int, seconds: float) -> dict[str, Any]:
    async with AsyncClient(url, key) as client:
        memory = client.memory("bench")
        await memory.read("e0")
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
        return _summary("async", tasks, latencies, time.perf_counter() - began, time.process_time() - cpu)


def run_async(url: str, key: str, tasks: int, seconds: float) -> dict[str, Any]:
    return asyncio.run(_run_async(url, key, tasks, seconds))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0, help="per client kind and level (default 5)")
    parser.add_argument("--workers", type=int, default=None, help="agentmem serve's workers (default: per core)")
    args = parser.parse_args(argv)
    extra = ["--workers", str(args.workers)] if args.workers else []
    load_before = [round(x, 2) for x in os.getloadavg()]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, started("embedded", Path(tmp), extra) as (url, key, _):
        with Client(url, key) as client:
            memory = client.memories.create("bench")
            for n in range(ENTRIES):
                memory.save(f"e{n}", f"Entry {n}: the customer is on the Team plan, billed yearly.",
                            description=f"entry {n}")
        for tasks in LEVELS:
            for kind, run in (("sync", run_sync), ("async", run_async)):
                row = run(url, key, tasks, args.seconds)
                rows.append(row)
                print(f"  {kind:5} x{tasks:<3} {row['reads_per_s']:8.1f} reads/s", flush=True)
    baseline = next(r["reads_per_s"] for r in rows if r["client"] == "sync" and r["tasks"] == 1)
    for row in rows:
        row["vs_sync_one_thread"] = round(row["reads_per_s"] / baseline, 2) if baseline else None
    print()
    print(f"{'client':7} {'tasks':>5} {'reads/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'cpu ms':>7} {'× sync@1':>9}")
    for row in rows:
        print(f"{row['client']:7} {row['tasks']:>5} {row['reads_per_s']:>9.1f} {row['p50_ms']:>8.2f} "
              f"{row['p99_ms']:>8.2f} {row['client_cpu_ms_per_read']:>7.3f} {row['vs_sync_one_thread']:>9.2f}")
    async64 = next(r for r in rows if r["client"] == "async" and r["tasks"] == 64)
    met = (async64["vs_sync_one_thread"] or 0) >= GOAL_RATIO
    print(f"\ngoal: the async client at 64 tasks ≥ {GOAL_RATIO:g}× the sync client on one thread: "
          f"{async64['vs_sync_one_thread']}× — {'met' if met else 'NOT met'}")
    load_after = [round(x, 2) for x in os.getloadavg()]
    print(f"load average (1, 5, 15 min): before {load_before}, after {load_after}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    try:
        results = json.loads(RESULTS.read_text())
    except (OSError, ValueError):
        results = {}
    runs = results.get("runs") if isinstance(results.get("runs"), dict) else {}
    runs[f"workers_{args.workers or 'default'}"] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "load_average_before": load_before, "load_average_after": load_after,
        "operation": "memory.read (an entry read) against agentmem serve, embedded backend",
        "seconds_per_level": args.seconds, "serve_workers": args.workers or "one per core",
        "rows": rows, "goal": {"async_64_vs_sync_1": async64["vs_sync_one_thread"], "target": GOAL_RATIO,
                               "met": met},
    }
    RESULTS.write_text(json.dumps({"runs": dict(sorted(runs.items()))}, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
