"""Summary quality: what the rolling summary keeps of long conversations, pass after pass (SPEC §4.3, §4.4).

    .venv/bin/python bench/summary_quality.py            # 3 conversations of 2,400 messages: about 2 minutes
    .venv/bin/python bench/summary_quality.py --quick    # 1 conversation of 600 messages

Generates the conversations with a fixed seed (``bench/summary_data.py``: filler, and items of each kind
planted in it, said in several ways by either side), and plays each one into a fresh embedded agentmem in
this process, one turn per append, through the conversation service: passes run as they do in ``agentmem
serve`` (the in-process job runner, on the agent's default threshold of 40 messages), flush, summarise and
checkpoint write included. Now and then a person edits the checkpoint: a line put in at a random place (the
conversation never says otherwise of it). After every pass it reads the checkpoint and measures:

* **kept, by kind** — of the planted items the pass has folded, the share the checkpoint holds where it
  belongs: the latest of each remembered thing under Remembered, of each fact and preference under Facts,
  decisions under Decisions, unanswered questions under Open questions;
* **stale** — values of a remembered thing, a fact or a preference that a later folded statement replaced,
  still anywhere in it (should be 0);
* **secrets** — planted keys, tokens and passwords anywhere in it (must be 0);
* **edits** — the lines a person put in, still there word for word (must be 100%);
* **answered kept open** — questions answered at once but listed as open (noise);
* **tokens** of the checkpoint (the context's counter) and the **pass time** (flush, summarise, write).

Prints the tables, writes ``bench/results/summary_quality.json`` and the plot ``docs/img/summary_quality.png``
(``--quick``: ``bench/results/summary_quality-quick.*``), and rewrites the generated block of the summary
section in ``docs/benchmarks.md``. The summariser measured is the extractive one (the embedded backend's); a
model-backed summariser can be measured the same way with ``--summariser``. A benchmark: nothing is asserted.

``--scripted lossless|lossy`` measures the OpenAI-compatible summariser (``AGENTMEM_SUMMARISER=openai``)
against a scripted local endpoint (``tests/support/fake_chat_api.py``) instead: ``lossless`` answers the
extractive summary of the previous summary and the messages its prompt holds (what the adapter's prompt and
answer handling lose on top of the reading), ``lossy`` a deliberately poor one (the sections empty, the last
two rows as topics: what the adapter's own rules save from a bad model). Results go to
``bench/results/summary_quality-scripted-<mode>.json`` and its plot; the generated block is left alone.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import platform
import random
import re
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from agentmem.adapters.embedded.jobs import ThreadJobRunner
from agentmem.bootstrap import Container, build_container
from agentmem.domain.conversations import MessageDraft
from agentmem.domain.summary import HARD_MAX_TOKENS, SUMMARY_MAX_TOKENS
from agentmem.domain.summary_author import summariser_of
from agentmem.domain.tokens import count_tokens
from agentmem.services.agents import AgentSettings
from agentmem.services.entries import SaveRequest
from agentmem.settings import Settings
from report import Check, print_targets, replace_block, targets_markdown
from summary_data import Conversation, Planted, make_conversation

ROOT = Path(__file__).resolve().parent.parent

AGENT = "bench"
USER = "ana"
KINDS = ("remembered", "fact", "preference", "decision", "open_question")
SECTION_OF = {"remembered": "Remembered", "fact": "Facts", "preference": "Facts", "decision": "Decisions",
              "open_question": "Open questions"}
EDIT_EVERY = 9  # passes between two edits by hand
BEGIN, END = "<!-- summary_quality:begin -->", "<!-- summary_quality:end -->"


def log(message: str) -> None:
    print(f"  · {message}", file=sys.stderr, flush=True)


def section(text: str, title: str) -> str:
    head = f"## {title}\n"
    if head not in text:
        return ""
    return text.split(head, 1)[1].split("\n## ", 1)[0]


# --- the runner ------------------------------------------------------------------------------------------------
class Passes(ThreadJobRunner):
    """The embedded job runner, timing each pass and remembering every run it started."""

    def __init__(self, container: Container) -> None:
        self.seconds: list[float] = []
        self.started: list[str] = []
        self._timing = threading.Lock()
        work = container.summary_pass.run

        def timed(job: Any) -> Any:
            began = time.perf_counter()
            try:
                return work(job)
            finally:
                with self._timing:
                    self.seconds.append(time.perf_counter() - began)

        super().__init__(timed, backoff_s=0.01)

    def start(self, name: str, payload: Any, *, discriminator: str = "") -> str:
        run_id = super().start(name, payload, discriminator=discriminator)
        self.started.append(run_id)
        return run_id

    def settle(self) -> None:
        done = 0
        while done < len(self.started):
            run = self.wait(self.started[done], 60.0)
            if run.state == "running":
                raise RuntimeError(f"pass {run.run_id} did not finish in 60 s")
            done += 1


def holds(text: str, token: str) -> bool:
    """Whether ``text`` holds ``token`` as a whole ("Tern" is not in "Tern-87")."""
    return re.search(rf"(?<![\w-]){re.escape(token)}(?![\w-])", text) is not None


def measure(conversation: Conversation, folded: int, content: str, edits: Sequence[str]) -> dict[str, Any]:
    """What the checkpoint holds of the items folded so far (see the module's notes)."""
    seen = [p for p in conversation.planted if p.seq <= folded]
    latest: dict[tuple[str, str], Planted] = {}
    for p in seen:
        if p.key:
            latest[(p.kind, p.key)] = p
    kept: dict[str, list[int]] = {kind: [0, 0] for kind in KINDS}
    for p in seen:
        if p.kind not in KINDS or (p.key and latest[(p.kind, p.key)] is not p):
            continue
        kept[p.kind][1] += 1
        kept[p.kind][0] += holds(section(content, SECTION_OF[p.kind]), p.token)
    stale = sum(holds(content, value) for p in latest.values() for value in p.stale)
    secrets = sum(p.token in content for p in seen if p.kind == "secret")
    answered = [p for p in seen if p.kind == "answered"]
    lines = content.split("\n")
    return {
        "folded": folded,
        "kept": {kind: (round(k / n, 4) if n else None) for kind, (k, n) in kept.items()},
        "counts": {kind: n for kind, (_, n) in kept.items()},
        "stale": stale,
        "stale_possible": sum(len(p.stale) for p in latest.values()),
        "secrets": secrets,
        "secrets_folded": sum(p.kind == "secret" for p in seen),
        "edits": len(edits),
        "edits_kept": sum(line in lines for line in edits),
        "answered_open": sum(holds(section(content, "Open questions"), p.token) for p in answered),
        "answered_folded": len(answered),
        "tokens": count_tokens(content),
    }


def play(container: Container, conversation: Conversation, seed: int) -> list[dict[str, Any]]:
    """Append the conversation turn by turn; after each pass, measure; now and then, edit by hand."""
    principal = container.bench_principal  # type: ignore[attr-defined]
    service = container.conversations
    passes: Passes = container._jobs  # type: ignore[assignment]
    rng = random.Random(seed)
    edits: list[str] = []
    rows: list[dict[str, Any]] = []
    folded = 0
    turn: list[dict[str, Any]] = []

    def flush_turn() -> None:
        nonlocal folded
        if not turn:
            return
        drafts = [MessageDraft(m["role"], m["content"], tool_name=m.get("tool_name"),
                               tool_call_id=m.get("tool_call_id"), arguments=m.get("arguments"),
                               result=m.get("result")) for m in turn]
        before = len(passes.seconds)
        service.append(principal, AGENT, conversation.key, drafts, user=USER)
        turn.clear()
        passes.settle()
        if len(passes.seconds) == before:
            return
        entry, record, _ = service.checkpoint(principal, AGENT, conversation.key, user=USER)
        if record.folded_through == folded:
            return
        folded = record.folded_through
        row = measure(conversation, folded, entry.content or "", edits)
        row["pass"] = len(rows) + 1
        row["pass_ms"] = round(1000 * statistics.mean(passes.seconds[before:]), 2)
        row["by"] = summariser_of(entry.description or "")  # a model summariser that fell back says so
        rows.append(row)
        if row["pass"] % EDIT_EVERY == 2:  # a person puts a line in, anywhere
            lines = (entry.content or "").split("\n")
            note = f"Desk note {len(edits) + 1}: ask {rng.choice(('Rita', 'Sam', 'Joao', 'Ines'))} before the " \
                   f"{rng.choice(('vendor call', 'board review', 'site visit', 'budget meeting'))}."
            lines.insert(rng.randrange(1, len(lines) + 1), note)
            container.entries.save(principal, f"agent:{AGENT}", entry.name,
                                   SaveRequest(content="\n".join(lines), version=entry.version), user=USER)
            edits.append(note)

    for message in conversation.messages:
        if message["role"] == "user" and turn:
            flush_turn()
        turn.append(message)
    flush_turn()
    return rows


def run(summariser: str, seed: int, conversations: int, messages: int, **more: Any) -> dict[str, Any]:
    logging.getLogger("agentmem").setLevel(logging.WARNING)  # two lines per pass otherwise
    results: list[dict[str, Any]] = []
    for n in range(conversations):
        conversation = make_conversation(seed + n, messages, key=f"long-{n}")
        with tempfile.TemporaryDirectory(prefix="agentmem-summary-") as tmp:
            container = build_container(Settings(backend="embedded", data_dir=Path(tmp),
                                                 summariser=cast(Any, summariser), **more))
            _, secret = container.keys.create_account("bench")
            container.bench_principal = container.keys.authenticate("Bearer " + secret)  # type: ignore[attr-defined]
            container.agents.put(container.bench_principal, AGENT, AgentSettings())  # type: ignore[attr-defined]
            passes = Passes(container)
            container._jobs = passes
            began = time.perf_counter()
            try:
                rows = play(container, conversation, seed + n)
            finally:
                passes.close()
            log(f"conversation {n + 1}/{conversations}: {len(conversation.messages):,} messages, {len(rows)} passes "
                f"in {time.perf_counter() - began:.1f} s")
        results.append({"key": conversation.key, "messages": len(conversation.messages), "passes": rows})
    return {"summariser": summariser, "conversations": results}


# --- the report ---------------------------------------------------------------------------------------------
def overall(part: dict[str, Any]) -> dict[str, Any]:
    """Every pass of every conversation: kept by kind (mean over passes, and at the last pass), the worst stale,
    secret and edit figures, tokens and pass times."""
    rows = [row for c in part["conversations"] for row in c["passes"]]
    last = [c["passes"][-1] for c in part["conversations"] if c["passes"]]

    def mean_kept(items: Sequence[dict[str, Any]], kind: str) -> float | None:
        values = [r["kept"][kind] for r in items if r["kept"][kind] is not None]
        return round(statistics.mean(values), 3) if values else None

    times = sorted(r["pass_ms"] for r in rows)
    return {
        "passes": len(rows),
        "kept_mean": {kind: mean_kept(rows, kind) for kind in KINDS},
        "kept_last": {kind: mean_kept(last, kind) for kind in KINDS},
        "stale_last": sum(r["stale"] for r in last),
        "stale_max": max(r["stale"] for r in rows),
        "secrets_max": max(r["secrets"] for r in rows),
        "edits_kept": min((r["edits_kept"] / r["edits"] for r in rows if r["edits"]), default=1.0),
        "edits_made": max(r["edits"] for r in rows),
        "answered_open_max": max(r["answered_open"] for r in rows),
        "tokens_max": max(r["tokens"] for r in rows),
        "tokens_last": round(statistics.mean(r["tokens"] for r in last)),
        "pass_ms_p50": times[len(times) // 2],
        "pass_ms_p95": times[min(len(times) - 1, int(len(times) * 0.95))],
    }


def checks(summary: dict[str, Any]) -> list[Check]:
    return [
        {"target": "secrets kept, any pass", "value": summary["secrets_max"], "met": summary["secrets_max"] == 0},
        {"target": "stale values kept, last pass", "value": summary["stale_last"], "met": summary["stale_last"] == 0},
        {"target": "edits by hand kept, every pass", "value": summary["edits_kept"], "met": summary["edits_kept"] == 1},
        {"target": "remembered items kept, every pass", "value": summary["kept_mean"]["remembered"],
         "met": summary["kept_mean"]["remembered"] == 1},
        {"target": f"checkpoint ≤ {HARD_MAX_TOKENS:,} tokens, any pass", "value": summary["tokens_max"],
         "met": summary["tokens_max"] <= HARD_MAX_TOKENS},
    ]


def value_text(check: Check) -> str:
    value = check["value"]
    return f"{value:.0%}" if isinstance(value, float) else f"{value:,}"


def percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def print_report(results: dict[str, Any]) -> None:
    part, summary = results["extractive"], results["summary"]
    setup = results["setup"]
    print(f"\nSummary quality — seed {results['seed']}, {setup['conversations']} conversations of "
          f"{setup['messages']:,} messages, summariser {part['summariser']}, {summary['passes']} passes\n")
    print(f"{'kept':<16}" + "".join(f"{k.replace('_', ' '):>15}" for k in KINDS))
    print(f"{'  every pass':<16}" + "".join(f"{percent(summary['kept_mean'][k]):>15}" for k in KINDS))
    print(f"{'  last pass':<16}" + "".join(f"{percent(summary['kept_last'][k]):>15}" for k in KINDS))
    print(f"\nstale values at the last pass {summary['stale_last']} (at worst {summary['stale_max']}); secrets "
          f"{summary['secrets_max']}; edits by hand kept {summary['edits_kept']:.0%} of {summary['edits_made']}; "
          f"answered questions left open at worst {summary['answered_open_max']}")
    print(f"checkpoint tokens: at most {summary['tokens_max']:,}, at the end {summary['tokens_last']:,} "
          f"(budget {SUMMARY_MAX_TOKENS:,} + remembered items, hard cap {HARD_MAX_TOKENS:,}); pass time p50 "
          f"{summary['pass_ms_p50']:.1f} ms, p95 {summary['pass_ms_p95']:.1f} ms\n")
    print_targets(checks(summary), value_text, 38)


def markdown(results: dict[str, Any]) -> str:
    summary, setup = results["summary"], results["setup"]
    out = [f"Figures of {results['machine']['date']} (`bench/results/summary_quality.json`): "
           f"{setup['conversations']} conversations of {setup['messages']:,} messages, {summary['passes']} passes "
           "of the extractive summariser.", "",
           "| kept (of the items folded so far) | " + " | ".join(k.replace("_", " ") for k in KINDS) + " |",
           "|---|" + "--:|" * len(KINDS),
           "| mean over every pass | " + " | ".join(percent(summary["kept_mean"][k]) for k in KINDS) + " |",
           "| at the last pass | " + " | ".join(percent(summary["kept_last"][k]) for k in KINDS) + " |", "",
           "| measure | this run |", "|---|--:|",
           f"| stale values kept at the last pass (at worst, any pass) | {summary['stale_last']} "
           f"({summary['stale_max']}) |",
           f"| secrets kept, any pass | {summary['secrets_max']} |",
           f"| edits by hand kept | {summary['edits_kept']:.0%} of {summary['edits_made']} |",
           f"| answered questions listed as open, at worst | {summary['answered_open_max']} |",
           f"| checkpoint tokens, at most / at the end | {summary['tokens_max']:,} / {summary['tokens_last']:,} |",
           f"| pass time p50 / p95 (flush, summarise, write) | {summary['pass_ms_p50']:.1f} ms / "
           f"{summary['pass_ms_p95']:.1f} ms |",
           *targets_markdown(checks(summary), value_text), "",
           "![Kept items and checkpoint size against conversation length](img/summary_quality.png)", ""]
    return "\n".join(out)


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    part = results["extractive"]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    for kind, colour in zip(KINDS, ("#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#d62728"), strict=True):
        for i, conversation in enumerate(part["conversations"]):
            points = [(r["folded"], r["kept"][kind]) for r in conversation["passes"] if r["kept"][kind] is not None]
            if points:
                ax.plot(*zip(*points, strict=True), color=colour, linewidth=1.2, alpha=0.85,
                        label=kind.replace("_", " ") if i == 0 else None)
    for i, conversation in enumerate(part["conversations"]):
        rows = conversation["passes"]
        bx.plot([r["folded"] for r in rows], [r["tokens"] for r in rows], color="#444", linewidth=1.2,
                label="checkpoint tokens" if i == 0 else None)
        bx.plot([r["folded"] for r in rows], [r["stale"] for r in rows], color="#d62728", linewidth=1,
                label="stale values kept" if i == 0 else None)
    ax.set_ylim(-0.03, 1.05)
    ax.set_xlabel("messages folded into the summary")
    ax.set_ylabel("share of the folded items kept")
    ax.set_title("Planted items kept, after every pass")
    ax.legend(fontsize=8, loc="lower left")
    ax.grid(alpha=0.2)
    bx.axhline(HARD_MAX_TOKENS, color="grey", linestyle=":", linewidth=1)
    bx.text(0, HARD_MAX_TOKENS, f" hard cap {HARD_MAX_TOKENS:,}", fontsize=7, color="grey", va="bottom")
    bx.set_yscale("symlog", linthresh=10)
    bx.set_xlabel("messages folded into the summary")
    bx.set_title("Checkpoint size (tokens) and stale values")
    bx.legend(fontsize=8, loc="center right")
    bx.grid(alpha=0.2)
    info = results["machine"]
    fig.text(0.01, 0.01, f"seed {results['seed']}, {info['cpu_count']} CPUs, Python {info['python']}, "
             f"{info['date']}", fontsize=7, color="grey")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def dumps(results: dict[str, Any]) -> str:
    """The results as JSON, one line per pass."""
    part = results["extractive"]
    conversations = ",\n".join(
        f'  {{"key": {json.dumps(c["key"])}, "messages": {c["messages"]}, "passes": [\n'
        + ",\n".join("   " + json.dumps(row, separators=(",", ":")) for row in c["passes"]) + "\n  ]}"
        for c in part["conversations"]
    )
    text = json.dumps({**results, "extractive": {**part, "conversations": "@conversations"}}, indent=1)
    return text.replace('"@conversations"', "[\n" + conversations + "\n ]") + "\n"


def machine() -> dict[str, Any]:
    return {"python": platform.python_version(), "cpu_count": os.cpu_count(), "platform": platform.platform(),
            "date": dt.date.today().isoformat()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--conversations", type=int, default=None, help="how many (default 3; --quick 1)")
    parser.add_argument("--messages", type=int, default=None, help="messages in each (default 2,400; --quick 600)")
    parser.add_argument("--quick", action="store_true", help="one conversation of 600 messages")
    parser.add_argument("--summariser", default="extractive", help="the summariser setting (default extractive)")
    parser.add_argument("--scripted", choices=("lossless", "lossy"), default=None,
                        help="the openai summariser against a scripted local endpoint")
    args = parser.parse_args(argv)
    conversations = args.conversations or (1 if args.quick else 3)
    messages = args.messages or (600 if args.quick else 2_400)
    for name, value in (("POWERTOOLS_METRICS_DISABLED", "true"), ("POWERTOOLS_TRACE_DISABLED", "true"),
                        ("POWERTOOLS_LOG_LEVEL", "WARNING")):
        os.environ.setdefault(name, value)
    started = time.perf_counter()
    if args.scripted:
        sys.path.insert(0, str(ROOT / "tests" / "support"))
        from fake_chat_api import FakeChatAPI, serve_chat_api

        with serve_chat_api(FakeChatAPI(lossy=args.scripted == "lossy")) as api:
            part = run("openai", args.seed, conversations, messages, summary_url=api.url,
                       summary_model=f"scripted-{args.scripted}")
        written = [r["by"] for c in part["conversations"] for r in c["passes"]]
        by_model = written.count(f"openai:scripted-{args.scripted}")
        fell_back = sum("fallback" in (b or "") for b in written)
        log(f"the scripted endpoint answered {len(api.seen):,} requests; {by_model} of {len(written)} passes "
            f"written by it, {fell_back} fell back")
    else:
        part = run(args.summariser, args.seed, conversations, messages)
    results: dict[str, Any] = {
        "benchmark": "summary_quality", "quick": args.quick, "seed": args.seed, "machine": machine(),
        "setup": {"conversations": conversations, "messages": messages, "edit_every_passes": EDIT_EVERY,
                  "summary_max_tokens": SUMMARY_MAX_TOKENS, "hard_max_tokens": HARD_MAX_TOKENS},
        "extractive": part, "summary": overall(part),
    }
    results["seconds"] = round(time.perf_counter() - started, 1)
    print_report(results)
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    if args.scripted:
        stem = f"summary_quality-scripted-{args.scripted}{'-quick' if args.quick else ''}"
        json_path, png = out_dir / f"{stem}.json", out_dir / f"{stem}.png"
    elif args.quick:
        json_path, png = out_dir / "summary_quality-quick.json", out_dir / "summary_quality-quick.png"
    else:
        json_path, png = out_dir / "summary_quality.json", ROOT / "docs" / "img" / "summary_quality.png"
    json_path.write_text(dumps(results))
    plot(results, png)
    rewrote = not args.quick and not args.scripted and replace_block(ROOT / "docs" / "benchmarks.md", BEGIN, END,
                                                                     markdown(results))
    print(f"wrote {json_path.relative_to(ROOT)} and {png.relative_to(ROOT)}"
          f"{' and docs/benchmarks.md' if rewrote else ''} in {results['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
