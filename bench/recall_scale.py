"""Journal recall against the journal's size: quality and latency as one conversation history grows.

    .venv/bin/python bench/recall_scale.py                   # 25 → 2,000 sessions (~1,200 → ~96,000 messages)
    .venv/bin/python bench/recall_scale.py --sessions 25 100  # the sizes you name

For each size, the evaluation of ``bench/recall_quality.py`` (the same generator, seed and questions,
``bench/recall_data.py``) on a fresh embedded agentmem behind the real API handler: every question asked in
keyword, semantic and hybrid mode, and of a plain BM25 (``bm25s``) over the same messages. A larger size
holds the smaller one's sessions and more, so the same facts must be found among more distractors.
Prints recall@10, MRR and p50/p99 latency per size, writes ``bench/results/recall_scale.json`` and plots
both against the number of messages into ``docs/img/recall_scale.png``. A benchmark: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recall_data import make_conversations
from recall_quality import ROOT, Agentmem, load_journal, log, machine, run_journal

SIZES = (25, 100, 300, 1000, 2000)
SYSTEMS = (("agentmem_hybrid", "agentmem hybrid"), ("agentmem_keyword", "agentmem keyword"),
           ("agentmem_semantic", "agentmem semantic"), ("bm25", "BM25 (bm25s)"))


def measure(sessions: int, seed: int) -> dict[str, Any]:
    convo = make_conversations(seed, sessions)
    user = convo.user.lower()
    with tempfile.TemporaryDirectory(prefix="agentmem-scale-") as tmp:
        target = Agentmem(Path(tmp))
        try:
            log(f"{sessions} sessions: loading {convo.message_count:,} messages")
            loaded = load_journal(target, convo, user)
            log(f"{sessions} sessions: {len(convo.questions)} questions")
            journal = run_journal(target, convo, user)
        finally:
            target.close()
    systems = {name: {"r@10": part["all"]["r@10"], "r@20": part["all"]["r@20"], "mrr": part["all"]["mrr"],
                      "latency": part["latency"], "answered_mode": part["answered_mode"]}
               for name, part in journal["systems"].items()}
    return {"sessions": sessions, "messages": convo.message_count, "questions": len(convo.questions),
            "load": loaded, "systems": systems}


def print_table(rows: Sequence[dict[str, Any]]) -> None:
    head = f"{'messages':>9} {'questions':>9}  " + "  ".join(f"{label:>26}" for _, label in SYSTEMS)
    print("\nJournal recall against size — recall@10 / MRR / p50 ms")
    print(head)
    for row in rows:
        cells = []
        for name, _ in SYSTEMS:
            s = row["systems"][name]
            cells.append(f"{s['r@10']:.3f} / {s['mrr']:.3f} / {s['latency']['p50_ms']:>6.2f}".rjust(26))
        print(f"{row['messages']:>9,} {row['questions']:>9}  " + "  ".join(cells))


def plot(rows: Sequence[dict[str, Any]], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib is not installed: no plot")
        return False
    messages = [row["messages"] for row in rows]
    fig, (quality, latency) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name, label in SYSTEMS:
        quality.plot(messages, [row["systems"][name]["r@10"] for row in rows], marker="o", label=label)
        latency.plot(messages, [row["systems"][name]["latency"]["p50_ms"] for row in rows], marker="o", label=label)
    for axis in (quality, latency):
        axis.set_xscale("log")
        axis.set_xlabel("messages in the journal")
        axis.grid(True, alpha=0.3)
    quality.set_ylabel("recall@10 of the evidence")
    quality.set_ylim(0, 1)
    latency.set_ylabel("p50 latency, ms (through the API handler)")
    quality.legend(fontsize=8)
    fig.suptitle("Journal search as the journal grows (bench/recall_scale.py)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "recall_scale.json")
    parser.add_argument("--plot", type=Path, default=ROOT / "docs" / "img" / "recall_scale.png")
    args = parser.parse_args(argv)
    for name, value in (("POWERTOOLS_METRICS_DISABLED", "true"), ("POWERTOOLS_TRACE_DISABLED", "true"),
                        ("POWERTOOLS_LOG_LEVEL", "WARNING")):
        os.environ.setdefault(name, value)
    started = time.perf_counter()
    rows = [measure(sessions, args.seed) for sessions in sorted(args.sessions)]
    print_table(rows)
    results = {"benchmark": "recall_scale", "seed": args.seed, "machine": machine(), "rows": rows,
               "seconds": round(time.perf_counter() - started, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    if plot(rows, args.plot):
        print(f"plotted {args.plot.relative_to(ROOT) if args.plot.is_relative_to(ROOT) else args.plot}")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out} "
          f"in {results['seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
