"""The LangGraph store's overhead over agentmem's own SDK calls, and ``AgentmemStore`` beside LangGraph's stores.

    .venv/bin/python bench/langgraph_store.py                 # 300 rounds per operation (about a minute)
    .venv/bin/python bench/langgraph_store.py --rounds 100    # quicker
    .venv/bin/python bench/langgraph_store.py --profile       # and where the store's own time goes (cProfile)

``agentmem serve`` on the embedded backend in a subprocess (a data dir of its own, ``--workers`` 1 by default), two
memories of it: ``sdk`` written and read with the SDK directly, ``store`` through ``AgentmemStore``. The same
operations on the same data: ``store.put(ns, key, value)`` against ``memory.save(name, content, description=...)``
with the very name, content and description the store writes; ``store.get(ns, key)`` against
``memory.read(name)``; ``store.search(ns, query=...)`` against ``memory.search(query, limit=100)`` (what the store
asks of agentmem). Each round runs the SDK call and the store call back to back (alternating which goes first), so
both see the same load. LangGraph's ``InMemoryStore`` and ``SqliteStore`` (a file in the same temporary
directory, no embedding index: their ``search`` with a query filters the namespace without ranking) run the same
store calls in the same process.

Prints p50/p99 per operation per implementation and the store's overhead over the SDK (on the p50 and on the mean),
the client's own CPU time per call (this thread's, the server apart), the goal (≤ 10%), and the load average
before and after; writes ``bench/results/langgraph_store.json``. ``--profile`` profiles the store's calls in a pass
of their own after the timed one (a profiler in the timed pass would count as the store's overhead).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "bench"))

from agentmem.client import Client  # noqa: E402
from agentmem.integrations.langgraph import SEARCH_MAX, AgentmemStore, entry_name  # noqa: E402
from langgraph.store.base import BaseStore  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402
from langgraph.store.sqlite import SqliteStore  # noqa: E402
from load import started  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "langgraph_store.json"
GOAL_OVERHEAD = 0.10
NAMESPACE = ("users", "42", "prefs")
KEYS = 50
QUERIES = ("how does the customer like answers", "billing plan yearly", "preferred tone of replies")


def value_of(n: int) -> dict[str, Any]:
    return {"fact": f"Fact {n}: the customer is on the Team plan, billed yearly, and likes brief answers.",
            "n": n, "tags": ["billing", "tone"]}


def envelope(namespace: tuple[str, ...], key: str, value: dict[str, Any]) -> tuple[str, str, str]:
    """The entry name, content and description ``AgentmemStore.put`` writes for an item."""
    content = json.dumps({"namespace": list(namespace), "key": key, "value": value}, ensure_ascii=False,
                         sort_keys=True)
    return entry_name(namespace, key), content, ("LangGraph item " + "/".join(namespace) + ": " + key)[:200]


def _ms(xs: list[float], q: float) -> float:
    ordered = sorted(xs)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000, 3)


def summary(xs: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(xs) * 1000, 3), "p99_ms": _ms(xs, 0.99),
            "mean_ms": round(statistics.fmean(xs) * 1000, 3), "calls": len(xs)}


CPU: dict[int, float] = {}  # id of a wall-time list -> this process's CPU time of its calls


def timed(call: Callable[[], Any], into: list[float]) -> Any:
    cpu = time.thread_time()
    began = time.perf_counter()
    result = call()
    into.append(time.perf_counter() - began)
    CPU[id(into)] = CPU.get(id(into), 0.0) + time.thread_time() - cpu
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=300, help="calls per operation per implementation")
    parser.add_argument("--workers", type=int, default=1, help="agentmem serve's workers (default 1)")
    parser.add_argument("--profile", action="store_true", help="profile the store's calls (cProfile)")
    args = parser.parse_args(argv)
    load_before = [round(x, 2) for x in os.getloadavg()]
    times: dict[str, dict[str, list[float]]] = {op: {} for op in ("put", "get", "search")}

    def bucket(op: str, impl: str) -> list[float]:
        return times[op].setdefault(impl, [])

    profile_text = ""
    with tempfile.TemporaryDirectory() as tmp, \
            started("embedded", Path(tmp), ["--workers", str(args.workers)]) as (url, key, _):
        client = Client(url, key)
        sdk = client.memories.create("sdk")
        store = AgentmemStore(client, memory="store")
        store.get(NAMESPACE, "warm-up")  # the connection made before the clock starts
        sdk.search("warm up", limit=1)
        profiler = cProfile.Profile() if args.profile else None
        rounds = args.rounds
        # the timed pass, then (--profile) a pass of the store's calls under the profiler, apart from the timings
        passes = [(op, False) for op in ("put", "get", "search")]
        passes += [(op, True) for op in ("put", "get", "search") if profiler is not None]
        for op, profiled in passes:
            for n in range(rounds):
                item_key = f"k{n % KEYS}"
                value = value_of(n)
                name, content, description = envelope(NAMESPACE, item_key, value)
                query = QUERIES[n % len(QUERIES)]
                calls: dict[str, Callable[[], Any]]
                if op == "put":
                    calls = {"sdk": partial(sdk.save, name, content, description=description, expires_at=None,
                                            clear_expiry=True),
                             "store": partial(store.put, NAMESPACE, item_key, value)}
                elif op == "get":
                    calls = {"sdk": partial(sdk.read, name), "store": partial(store.get, NAMESPACE, item_key)}
                else:
                    calls = {"sdk": partial(sdk.search, query, limit=SEARCH_MAX),
                             "store": partial(store.search, NAMESPACE, query=query, limit=10)}
                order = ("sdk", "store") if n % 2 == 0 else ("store", "sdk")
                if profiled and profiler is not None:
                    profiler.runcall(calls["store"])
                    continue
                for impl in order:
                    result = timed(calls[impl], bucket(op, impl))
                    if op == "get":
                        assert result is not None, (impl, item_key)
                    if op == "search":
                        assert len(result) > 0, (impl, query)
        client.close()
        if profiler is not None:
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
            profile_text = out.getvalue()

    for label in ("InMemoryStore", "SqliteStore"):
        with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
            other: BaseStore
            if label == "SqliteStore":
                sqlite_store = stack.enter_context(SqliteStore.from_conn_string(str(Path(tmp) / "store.sqlite")))
                sqlite_store.setup()
                other = sqlite_store
            else:
                other = InMemoryStore()
            for n in range(args.rounds):
                timed(partial(other.put, NAMESPACE, f"k{n % KEYS}", value_of(n)), bucket("put", label))
            for n in range(args.rounds):
                assert timed(partial(other.get, NAMESPACE, f"k{n % KEYS}"), bucket("get", label)) is not None
            for n in range(args.rounds):
                query = QUERIES[n % len(QUERIES)]
                timed(partial(other.search, NAMESPACE, query=query, limit=10), bucket("search", label))

    load_after = [round(x, 2) for x in os.getloadavg()]
    rows: list[dict[str, Any]] = []
    for op, by_impl in times.items():
        sdk_stats = summary(by_impl["sdk"])
        for impl, xs in by_impl.items():
            row: dict[str, Any] = {"op": op, "implementation": impl, **summary(xs),
                                   "client_cpu_ms": round(CPU[id(xs)] / len(xs) * 1000, 3)}
            if impl == "store":
                row["overhead_p50_pct"] = round((row["p50_ms"] / sdk_stats["p50_ms"] - 1) * 100, 1)
                row["overhead_mean_pct"] = round((row["mean_ms"] / sdk_stats["mean_ms"] - 1) * 100, 1)
            rows.append(row)
    names = {"sdk": "agentmem SDK", "store": "AgentmemStore"}
    print(f"{'op':7} {'implementation':15} {'p50 ms':>8} {'p99 ms':>8} {'mean ms':>8} {'cpu ms':>7} {'overhead':>9}")
    for row in rows:
        extra = f"{row['overhead_p50_pct']:>8.1f}%" if "overhead_p50_pct" in row else ""
        print(f"{row['op']:7} {names.get(row['implementation'], row['implementation']):15} {row['p50_ms']:>8.3f} "
              f"{row['p99_ms']:>8.3f} {row['mean_ms']:>8.3f} {row['client_cpu_ms']:>7.3f} {extra}")
    worst = max(r["overhead_p50_pct"] for r in rows if "overhead_p50_pct" in r)
    met = worst <= GOAL_OVERHEAD * 100
    print(f"\ngoal: the store's overhead over a direct SDK call ≤ {GOAL_OVERHEAD:.0%} (p50): worst {worst}% — "
          f"{'met' if met else 'NOT met'}")
    print(f"load average (1, 5, 15 min): before {load_before}, after {load_after}")
    if profile_text:
        print("\nthe store's calls, by own time:\n" + profile_text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "load_average_before": load_before, "load_average_after": load_after,
        "serve_workers": args.workers, "rounds": args.rounds, "items": KEYS,
        "rows": rows, "goal": {"worst_overhead_p50_pct": worst, "target_pct": GOAL_OVERHEAD * 100, "met": met},
    }, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
