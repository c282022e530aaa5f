"""Context benchmark: building the context for a turn (SPEC §5) against memory size and conversation length.

    .venv/bin/python bench/context.py            # full run (a few minutes on 2 cores)
    .venv/bin/python bench/context.py --quick    # fewer samples, no 20,000-message conversation

On the embedded backend (SQLite file in a temporary directory), in process, through the service
(``container.conversations.context``): an agent whose own memory has a user layer and an account layer, with
two attached memories of one account layer each, every layer holding 10, 100 or 500 entries (a few of them
pinnable), talking in conversations of 100, 2,000 and 20,000 messages. Each cell is timed on its own
(p50/p95 of repeated builds of the same context, in CPU time of the building thread, and in wall time
beside it: on a shared, loaded machine the wall time mostly measures the other processes); the target is
the cell with 500 entries per layer and 2,000 messages.

Prints a table, writes ``bench/results/context.json`` and ``docs/img/context.png`` (``--quick``:
``bench/results/context-quick.json`` and no plot) and replaces the generated block of ``docs/benchmarks.md``.
Timings are never asserted.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from report import replace_block

ROOT = Path(__file__).resolve().parent.parent
SIZES = (10, 100, 500)  # entries per layer (4 layers: own user and account, two attached memories)
LENGTHS = (100, 2_000, 20_000)  # messages in the conversation
TARGET = {"entries_per_layer": 500, "messages": 2_000, "p50_ms": 3.0}
ATTACHED = ("handbook", "policies")
DOCS_BEGIN = "<!-- bench/context.py --markdown: begin -->"
DOCS_END = "<!-- bench/context.py --markdown: end -->"
WORDS = ("refund", "shipping", "invoice", "warranty", "account", "password", "delivery", "discount", "order",
         "return", "billing", "support", "contract", "renewal", "upgrade")


def log(message: str) -> None:
    print(f"  · {message}", file=sys.stderr, flush=True)


def description(n: int) -> str:
    """About 60 characters, as an agent writes them: what the entry is about."""
    a, b, c = WORDS[n % 15], WORDS[(n // 15) % 15], WORDS[(n * 7) % 15]
    return f"How the {a} and {b} rules apply to {c} questions (case {n})"


class World:
    """One embedded container with the agent, its memories filled to ``size`` entries per layer."""

    def __init__(self, data_dir: Path, size: int) -> None:
        from agentmem.bootstrap import build_container
        from agentmem.domain.agents import Attachment
        from agentmem.services.agents import AgentSettings
        from agentmem.services.entries import SaveRequest
        from agentmem.settings import Settings

        self.container = build_container(Settings(data_dir=data_dir))
        _, secret = self.container.keys.create_account("bench")
        self.principal = self.container.keys.authenticate("Bearer " + secret)
        for name in ATTACHED:
            self.container.memories.create(self.principal, name)
        self.container.agents.put(self.principal, "assistant", AgentSettings(
            memories=tuple(Attachment(name) for name in ATTACHED)))
        layers: list[tuple[str, str | None]] = [("agent:assistant", "ana"), ("agent:assistant", None)]
        layers += [(name, None) for name in ATTACHED]
        for memory, user in layers:
            for n in range(size):
                pinnable = n % 50 == 7  # a few profile facts and read-only rules per layer
                fields: dict[str, Any] = {}
                if pinnable:
                    fields = ({"category": "user_profile", "importance": 0.8} if user is not None
                              else {"visibility": "read_only", "importance": 0.9})
                # the user's layer shadows the first ten names of the account's layer of the same memory
                name = f"{memory.split(':')[-1][:4]}-{n:04d}" if user is None or n < 10 else f"mine-{n:04d}"
                self.container.entries.save(self.principal, memory, name, SaveRequest(
                    content=f"What entry {n} says, in a sentence or two of plain text about {WORDS[n % 15]}.",
                    description=description(n), **fields), user=user)

    def talk(self, key: str, messages: int) -> None:
        from agentmem.domain.conversations import APPEND_BATCH_MAX, MessageDraft

        service = self.container.conversations
        for start in range(0, messages, APPEND_BATCH_MAX):
            batch = [MessageDraft(role="user" if (start + i) % 2 == 0 else "assistant",
                                  content=f"Message {start + i}: a line about the {WORDS[(start + i) % 15]} "
                                          "question, and what was said of it.")
                     for i in range(min(APPEND_BATCH_MAX, messages - start))]
            service.append(self.principal, "assistant", key, batch, user="ana")

    def build(self, key: str) -> dict[str, Any]:
        built: dict[str, Any] = self.container.conversations.context(self.principal, "assistant", key, user="ana")
        return built


def timed(world: World, key: str, budget_s: float, minimum: int) -> dict[str, Any]:
    import numpy as np

    for _ in range(5):
        world.build(key)
    gc.collect()
    samples: list[float] = []
    cpu: list[float] = []
    deadline = time.perf_counter() + budget_s
    while len(samples) < minimum or time.perf_counter() < deadline:
        start, start_cpu = time.perf_counter_ns(), time.thread_time_ns()
        world.build(key)
        cpu.append((time.thread_time_ns() - start_cpu) / 1e6)
        samples.append((time.perf_counter_ns() - start) / 1e6)
    values, cpu_values = np.asarray(samples), np.asarray(cpu)
    built = world.build(key)
    return {
        "n": len(samples),
        "p50_ms": round(float(np.percentile(cpu_values, 50)), 3),
        "p95_ms": round(float(np.percentile(cpu_values, 95)), 3),
        "wall_p50_ms": round(float(np.percentile(values, 50)), 3),
        "wall_p95_ms": round(float(np.percentile(values, 95)), 3),
        "index_shown": built["memory_index"]["shown"],
        "index_more": built["memory_index"]["more"],
        "pinned": len(built["pinned"]["entries"]),
        "window_rows": len(built["window"]["messages"]),
    }


def run(quick: bool) -> dict[str, Any]:
    lengths = LENGTHS[:2] if quick else LENGTHS
    cells: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="agentmem-bench-context-") as tmp:
        for size in SIZES:
            log(f"{size} entries per layer: filling {4 * size} entries")
            world = World(Path(tmp) / f"size-{size}", size)
            for length in lengths:
                key = f"talk-{length}"
                log(f"  a conversation of {length} messages")
                world.talk(key, length)
                cell = timed(world, key, budget_s=0.5 if quick else 2.0, minimum=30 if quick else 100)
                cells.append({"entries_per_layer": size, "messages": length, **cell})
                log(f"    p50 {cell['p50_ms']} ms")
            world.container.close() if hasattr(world.container, "close") else None
    target = next(c for c in cells if c["entries_per_layer"] == TARGET["entries_per_layer"]
                  and c["messages"] == TARGET["messages"])
    return {
        "benchmark": "context",
        "quick": quick,
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count(), "sqlite": __import__("sqlite3").sqlite_version},
        "setup": {"layers": 4, "memories": 1 + len(ATTACHED), "sizes": list(SIZES), "lengths": list(lengths),
                  "description_chars": len(description(123))},
        "cells": cells,
        "target": {**TARGET, "value_ms": target["p50_ms"], "met": target["p50_ms"] <= TARGET["p50_ms"]},
    }


def table(results: dict[str, Any]) -> list[str]:
    lines = ["| entries per layer (×4 layers) | messages | CPU p50 ms | CPU p95 ms | wall p50 ms | index shown + more "
             "| pinned |", "|--:|--:|--:|--:|--:|--:|--:|"]
    for c in results["cells"]:
        lines.append(f"| {c['entries_per_layer']} | {c['messages']:,} | {c['p50_ms']} | {c['p95_ms']} | "
                     f"{c['wall_p50_ms']} | {c['index_shown']} + {c['index_more']} | {c['pinned']} |")
    t = results["target"]
    lines += ["", f"Target: p50 ≤ {t['p50_ms']} ms with {t['entries_per_layer']} entries per layer and "
              f"{t['messages']:,} messages: {t['value_ms']} ms {'✅' if t['met'] else '❌'}"]
    return lines


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    cells = results["cells"]
    for length in results["setup"]["lengths"]:
        row = [c for c in cells if c["messages"] == length]
        axes[0].plot([c["entries_per_layer"] * 4 for c in row], [c["p50_ms"] for c in row], marker="o",
                     label=f"{length:,} messages")
    for size in results["setup"]["sizes"]:
        row = [c for c in cells if c["entries_per_layer"] == size]
        axes[1].plot([c["messages"] for c in row], [c["p50_ms"] for c in row], marker="o",
                     label=f"{size * 4:,} entries")
    axes[0].set_xlabel("entries the agent reads (4 layers, 3 memories)")
    axes[1].set_xlabel("messages in the conversation")
    for ax in axes:
        ax.set_xscale("log")
        ax.axhline(results["target"]["p50_ms"], color="grey", linestyle="--", linewidth=1)
        ax.legend()
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("context build, CPU p50 (ms)")
    axes[0].set_ylim(bottom=0)
    fig.suptitle("Context build in process (embedded backend); dashed: the 3 ms target")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples, no 20,000-message conversation")
    parser.add_argument("--out", type=Path, help="where to write the results (default: bench/results/)")
    args = parser.parse_args(argv)
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    results = run(args.quick)
    print("\n".join(table(results)))
    out = args.out or ROOT / "bench" / "results" / ("context-quick.json" if args.quick else "context.json")
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")
    if not args.quick and args.out is None:
        plot(results, ROOT / "docs" / "img" / "context.png")
        if replace_block(ROOT / "docs" / "benchmarks.md", DOCS_BEGIN, DOCS_END, "\n".join(table(results)) + "\n"):
            print("updated docs/benchmarks.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
