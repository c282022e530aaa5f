"""What a context build reads on DynamoDB as the memory grows: requests, rounds and read capacity per build.

    .venv/bin/python bench/context_aws.py            # about 2 minutes: prints the table, writes JSON and plot
    .venv/bin/python bench/context_aws.py --no-docs  # the same, without touching docs/benchmarks.md

Runs the AWS backend on DynamoDB Local (``bench/aws_calls.py``'s ``Bench``: the API handler on API Gateway
events, every request counted with botocore's hooks, ``ReturnConsumedCapacity`` asked of every read). For each
size N (entries per layer), an agent of its own in a fresh set of memories, in two shapes:

* **attached memories grow**: the agent's own memory holds 10 entries in the user's layer and 10 in the
  account's; its two attached memories hold N each (their user layers empty). The usual shape: a shared
  knowledge base that grows, a user's own layer that stays small;
* **every layer grows**: all four layers hold N, so the user's own layer (whose copies shadow the account's
  entries of the same memory) grows too.

Every 50th entry of each layer qualifies for the pinned block. A conversation of 20 messages. The build is
made once (its reads are then known to the instance) and measured the second time: requests, rounds (the
longest chain of requests each sent after the previous one ended; each request held 20 ms, as a network
would) and RCU. Beside it, what the build read before it read only what it shows, when it read each layer's
listing whole (one Query per MB): the build of 10 entries a layer (whose layers are read whole either way), plus
the four listings read whole at N, less the same at 10.

Writes ``bench/results/context_aws.json``, ``docs/img/context-aws.png`` and the generated block of
``docs/benchmarks.md``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path
from typing import Any

from aws_calls import ROUND_TRIP_S, Bench, rounds
from report import replace_block

ROOT = Path(__file__).resolve().parent.parent
SIZES = (10, 50, 100, 200, 500)
SHAPES = {"attached": "attached memories grow (user's layer 10)", "every": "every layer grows"}
PINNED_EVERY = 50
TURNS = 10  # of two messages
DOCS_BEGIN = "<!-- bench/context_aws.py: begin -->"
DOCS_END = "<!-- bench/context_aws.py: end -->"


def fill(bench: Bench, layer: Any, n: int, tag: str) -> None:
    from agentmem.domain.clock import iso, utcnow
    from agentmem.domain.models import EntryDraft

    with bench.meter.paused():
        for i in range(n):
            pinned = i % PINNED_EVERY == 0
            now = utcnow()
            bench.dynamo.entries.save(
                layer,
                EntryDraft(name=f"{tag}-{i:03d}", content=f"Note {i} of {tag}: what the agent should know, kept.",
                           description=f"{tag} note {i} about the travel policy and the budget",
                           category="user_profile" if pinned else "fact", importance=0.9 if pinned else 0.5),
                expected_version=None, now=iso(now), keep_history_until=iso(now + dt.timedelta(days=30)),
                layer_limit=500,
            )


def measure(bench: Bench, shape: str, size: int) -> dict[str, Any]:
    from agentmem.domain.agents import own_memory_name
    from agentmem.domain.clock import iso, utcnow
    from agentmem.domain.models import Layer

    agent, attached = f"{shape}-{size}", [f"{shape}-{size}-a", f"{shape}-{size}-b"]
    for memory in attached:
        bench.setup_call("PUT", f"/v1/memories/{memory}")
    bench.setup_call("PUT", f"/v1/agents/{agent}", body={"memories": [{"name": m} for m in attached]})
    own = own_memory_name(agent)
    small = 10 if shape == "attached" else size
    layers = [(Layer(bench.account_id, own, "u1"), small), (Layer(bench.account_id, own, None), small),
              *((Layer(bench.account_id, m, None), size) for m in attached)]
    for n, (layer, count) in enumerate(layers):
        fill(bench, layer, count, f"l{n}")
    path = f"/v1/agents/{agent}/conversations/chat"
    for i in range(TURNS):
        bench.setup_call("POST", f"{path}/messages", "user=u1", body={"messages": [
            {"role": "user", "content": f"Question {i}: which fares does the policy allow?"},
            {"role": "assistant", "content": f"Answer {i}: economy, unless the flight is long."}]})
    built = bench.setup_call("GET", f"{path}/context", "user=u1")  # the instance now knows this build's reads
    bench.meter.latency_s = ROUND_TRIP_S
    with bench.meter.measuring() as tally:
        status, again = bench.call("GET", f"{path}/context", "user=u1")
    bench.meter.latency_s = 0.0
    if status != 200 or again["memory_index"] != built["memory_index"]:
        raise RuntimeError(f"{shape} {size}: the measured build differs from the first ({status})")
    now = iso(utcnow())
    with bench.meter.measuring() as whole:
        for layer, _ in layers:
            bench.dynamo.entries.index.whole(layer, now)
    return {
        "shape": shape, "entries_per_layer": size, "entries": sum(count for _, count in layers),
        "requests": sum(tally.sends.values()), "rounds": rounds(tally.spans), "rcu": tally.rcu,
        "listings_whole_rcu": whole.rcu, "shown": again["memory_index"]["shown"],
        "more": again["memory_index"]["more"], "pinned": len(again["pinned"]["entries"]),
    }


def table(results: dict[str, Any]) -> str:
    lines = ["| shape | entries a layer | entries in all | requests | rounds | RCU a build | RCU a build, every "
             "listing read whole | index shows / more | pinned |",
             "|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in results["rows"]:
        lines.append(f"| {SHAPES[r['shape']]} | {r['entries_per_layer']} | {r['entries']:,} | {r['requests']} | "
                     f"{r['rounds']} | **{r['rcu']:g}** | {r['whole_build_rcu']:g} | {r['shown']} / {r['more']} | "
                     f"{r['pinned']} |")
    return "\n".join(lines) + "\n"


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for shape, label in SHAPES.items():
        rows = [r for r in results["rows"] if r["shape"] == shape]
        sizes = [r["entries_per_layer"] for r in rows]
        ax.plot(sizes, [r["rcu"] for r in rows], marker="o", label=f"a build: {label}")
        ax.plot(sizes, [r["whole_build_rcu"] for r in rows], linestyle="--", marker=".",
                label=f"every listing read whole: {label}")
    ax.set_xlabel("entries per layer (4 layers)")
    ax.set_ylabel("RCU per context build")
    ax.set_title("Context build on DynamoDB: read capacity against memory size")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-docs", action="store_true", help="do not replace the block of docs/benchmarks.md")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    print("starting DynamoDB Local ...", flush=True)
    bench = Bench()
    rows: list[dict[str, Any]] = []
    for shape in SHAPES:
        for size in SIZES:
            row = measure(bench, shape, size)
            first = next((r for r in rows if r["shape"] == shape), row)  # the smallest size: read whole either way
            row["whole_build_rcu"] = first["rcu"] + row["listings_whole_rcu"] - first["listings_whole_rcu"]
            rows.append(row)
            print(f"  {SHAPES[shape]:<42} {size:>4} a layer: {row['requests']} requests, {row['rounds']} rounds, "
                  f"{row['rcu']:g} RCU (every listing read whole: {row['whole_build_rcu']:g})", flush=True)
    results = {"run_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "rows": rows,
               "seconds": round(time.perf_counter() - started, 1)}
    out = ROOT / "bench" / "results" / "context_aws.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    plot(results, ROOT / "docs" / "img" / "context-aws.png")
    text = table(results)
    print(text)
    if not args.no_docs:
        block = f"Run of {results['run_at']} ({results['seconds']} s), DynamoDB Local.\n\n{text}"
        if not replace_block(ROOT / "docs" / "benchmarks.md", DOCS_BEGIN, DOCS_END, block):
            print("docs/benchmarks.md has no block for this benchmark", file=sys.stderr)
    print(f"wrote {out.relative_to(ROOT)} and docs/img/context-aws.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
