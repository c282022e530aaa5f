"""Entry recall on hand-written memories: memory search against plain BM25 (SPEC §2, §6.1, §6.2; issue 28).

    .venv/bin/python bench/recall_eval_entries.py                     # bench/recall_eval/entries, both halves
    .venv/bin/python bench/recall_eval_entries.py --split dev         # tune on this half only
    .venv/bin/python bench/recall_eval_entries.py --data DIR [DIR...] # memories elsewhere (folders or files)

Reads the memories written by hand in ``bench/recall_eval/entries`` (format: ``bench/recall_eval/README.md``,
"Entries"): what agents really keep — a user's profile and preferences, a coding assistant's project notes, a
support agent's knowledge base, a research agent's findings, a team's runbook. Loads each memory into a fresh
embedded agentmem in this process (the real API handler, driven through the SDK on an in-process transport:
``recall_quality.Agentmem``), saving its entries in the order the file lists them (a name listed twice is saved
twice: the later save is the entry's current version), waits until semantic search finds the last save's own
content and lets the indexer read the entries' token states for ``deep`` ahead, as ``agentmem serve`` does once
caught up (``--no-read-ahead``: the stage reads them at search time), then asks every question through
``GET /v1/memories/{memory}/search`` once per system (``mode=keyword``,
``semantic``, ``hybrid``, ``deep``; one the server refuses with a 400 is left out and said so). Beside them, in
the same run, plain BM25 (``recall_quality.BM25``) over each entry's name, description and current content.

Scores each ranked list of 10 names against the question's gold entries: R@1/3/5, MRR and nDCG@5 (binary gains),
per question kind and per kind of memory, for the ``dev`` and ``test`` halves apart; the CPU time of each search
(this process's, measured around the call) and its wall time, p50/p95 per system. Prints the tables, writes
``bench/results/recall_eval_entries.json`` and the plot ``docs/img/recall-eval-entries.png`` (R@3 per question
kind on the test half: BM25, hybrid, deep; ``--replot RESULTS`` draws it again from a results file), and exits
non-zero, loudly, when hybrid's R@3 on the test half is not ahead of BM25's. Tune only on ``dev``.

Then an agent's recall over its memories (``--no-agent`` skips it): for each half, one fresh agentmem holding
that half's account memories and one agent attaching them all read-only, asked the same questions through
``GET /v1/agents/{agent}/search`` in each mode, so that the other memories' entries stand beside the right one
(a hit is its memory and name); BM25 over the union of their entries. Reported apart, not held to the verdict.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recall_eval import SPLITS, Answers, fmt, log, ndcg_at, ordered, read_ahead
from recall_quality import BM25, Agentmem, machine, mean_scores, percentiles, score

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "recall_eval" / "entries"
LIMIT = 10
KS = (1, 3, 5)
HEADLINE = "r@3"
SEMANTIC_WAIT_S = 120.0
STYLES = ("profile", "project", "support", "research", "runbook")
KINDS = ("paraphrase", "keyword", "multi", "updated", "negative_context")
PLOT = ROOT / "docs" / "img" / "recall-eval-entries.png"
SYSTEMS: dict[str, dict[str, str]] = {
    "keyword": {"mode": "keyword"},
    "semantic": {"mode": "semantic"},
    "hybrid": {"mode": "hybrid"},
    "deep": {"mode": "deep"},
}
BASELINE = "bm25"
RECALLING_AGENT = "recall-eval"  # the agent that attaches a half's account memories (agent recall)
NAME = re.compile(r"^[a-z0-9._-]{1,64}$")


# --- the data ---------------------------------------------------------------------------------------------------


@dataclass
class Entry:
    name: str
    description: str
    content: str
    category: str | None = None


@dataclass
class Question:
    qid: str  # "<memory set>/<question id>": unique across the run
    kind: str
    text: str
    gold: list[str]


@dataclass
class MemorySet:
    sid: str
    style: str
    split: str
    memory: str
    path: Path
    saves: list[Entry]  # in the order they are saved; a name may come twice (the later is its current version)
    user: str | None = None  # the user who owns the memory; None: the account's
    questions: list[Question] = field(default_factory=list)

    def current(self) -> list[Entry]:
        """Each name's last save, in the order the names first appear."""
        latest: dict[str, Entry] = {}
        for entry in self.saves:
            latest[entry.name] = entry
        return list(latest.values())


def read_memory(path: Path) -> MemorySet:
    raw = json.loads(path.read_text(encoding="utf-8"))
    saves = [Entry(str(e["name"]), str(e["description"]), str(e["content"]), e.get("category"))
             for e in raw["entries"]]
    for entry in saves:
        if not NAME.match(entry.name) or entry.name.startswith("context."):
            raise ValueError(f"{path}: entry name {entry.name!r} breaks SPEC §2.1's rules")
        if not entry.description or len(entry.description) > 200 or "\n" in entry.description:
            raise ValueError(f"{path}: {entry.name}: the description must be one line of 1–200 characters")
        if not 1 <= len(entry.content) <= 20_000:
            raise ValueError(f"{path}: {entry.name}: the content must be 1–20,000 characters")
    found = MemorySet(str(raw["id"]), str(raw.get("style") or path.parent.name), str(raw["split"]),
                      str(raw["memory"]), path, saves, str(raw["user"]) if raw.get("user") else None)
    if found.split not in SPLITS:
        raise ValueError(f"{path}: split {found.split!r} is neither dev nor test")
    if not NAME.match(found.memory):
        raise ValueError(f"{path}: memory name {found.memory!r} breaks SPEC §2.1's rules")
    known = {e.name for e in saves}
    for q in raw.get("questions", []):
        gold = [str(g) for g in q["gold"]]
        missing = [g for g in gold if g not in known]
        if missing or not gold:
            raise ValueError(f"{path}: question {q['id']} has gold {gold} (unknown: {missing})")
        found.questions.append(Question(f"{found.sid}/{q['id']}", str(q["kind"]), str(q["question"]), gold))
    return found


def read_data(dirs: Sequence[Path]) -> tuple[list[MemorySet], list[str]]:
    """Every memory file under the folders, and the files that could not be read (said, not fatal)."""
    found: list[MemorySet] = []
    problems: list[str] = []
    seen: set[str] = set()
    for folder in dirs:
        for path in sorted(folder.rglob("*.json")) if folder.is_dir() else [folder]:
            try:
                memory = read_memory(path)
            except (ValueError, KeyError, TypeError, json.JSONDecodeError) as error:
                problems.append(f"{path}: {error}")
                continue
            if memory.sid in seen:
                problems.append(f"{path}: memory set {memory.sid} was read already; left out")
                continue
            seen.add(memory.sid)
            found.append(memory)
    return found, problems


# --- scoring ----------------------------------------------------------------------------------------------------


def scores(ranked: Sequence[object], gold: Sequence[object]) -> dict[str, float]:
    return score(ranked, gold, KS) | {"ndcg@5": ndcg_at(ranked, gold, 5)}


@dataclass
class Run(Answers):
    """One system's answers, with the CPU time of each search beside its wall time."""

    cpu_ns: list[int] = field(default_factory=list)
    stale: int = 0  # hits whose content is not their entry's current version (an old save, as the index had it)


def summarise(run: Run, questions: dict[str, Question], meta: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """Means over each split: all, per question kind, per kind of memory (``meta``: qid -> (split, style))."""
    out: dict[str, Any] = {}
    for split in SPLITS:
        rows = {qid: row for qid, row in run.per_question.items() if meta[qid][0] == split}
        if not rows:
            continue
        by_kind = {k: [r for q, r in rows.items() if questions[q].kind == k]
                   for k in ordered({questions[q].kind for q in rows}, KINDS)}
        by_style = {s: [r for q, r in rows.items() if meta[q][1] == s] for s in ordered({meta[q][1] for q in rows},
                                                                                     STYLES)}
        out[split] = {
            "all": mean_scores(list(rows.values())) | {"n": len(rows)},
            "by_kind": {k: mean_scores(v) | {"n": len(v)} for k, v in by_kind.items()},
            "by_style": {s: mean_scores(v) | {"n": len(v)} for s, v in by_style.items()},
        }
    out["latency"] = percentiles(run.latencies_ns, (50, 95))
    out["cpu"] = percentiles(run.cpu_ns, (50, 95))
    out["answered"] = run.answered
    out["stale_hits"] = run.stale
    return out


# --- one memory -------------------------------------------------------------------------------------------------


def search(target: Agentmem, memory: MemorySet, params: dict[str, str], q: str) -> tuple[dict[str, Any], int, int]:
    """The answer, its wall time and this process's CPU time over the call (ns)."""
    query: dict[str, str | float | bool | None] = {"q": q, "limit": LIMIT, "user": memory.user, **params}
    cpu, wall = time.process_time_ns(), time.perf_counter_ns()
    body = target.client.request_json("GET", f"/memories/{memory.memory}/search", params=query)
    return body, time.perf_counter_ns() - wall, time.process_time_ns() - cpu


def answered_as(body: dict[str, Any]) -> str:
    """The mode that answered, the stages that ran and the fallback, if any: ``hybrid [keyword+semantic+fusion]``."""
    how = str(body.get("mode"))
    if body.get("stages"):
        how += " [" + "+".join(body["stages"]) + "]"
    if body.get("fallback"):
        how += f" (fallback: {body['fallback']})"
    return how


def load(target: Agentmem, memory: MemorySet) -> float:
    from agentmem.client.errors import AgentmemError

    start = time.perf_counter()
    owner = {"user": memory.user} if memory.user else None
    target.client.request_json("PUT", f"/memories/{memory.memory}", params=owner)
    for entry in memory.saves:
        body: dict[str, Any] = {"content": entry.content, "description": entry.description}
        if entry.category:
            body["category"] = entry.category
        try:
            target.client.request_json("PUT", f"/memories/{memory.memory}/entries/{entry.name}", params=owner,
                                       body=body)
        except AgentmemError as error:  # e.g. the screening's 422 (SPEC §2.5): the data must change, say where
            raise SystemExit(f"{memory.path}: saving {entry.name} was refused ({error.status}): {error}") from error
    return time.perf_counter() - start


def wait_for_index(target: Agentmem, memory: MemorySet) -> float:
    """Until semantic search finds the last save with its own content: the index is filled in the order of the
    saves, so it then holds every entry's current version."""
    last = memory.saves[-1]
    probe = " ".join(last.content.split()[:40])
    start = time.perf_counter()
    while True:
        body, _, _ = search(target, memory, {"mode": "semantic"}, probe)
        if body.get("mode") == "semantic" and any(i.get("name") == last.name and i.get("content") == last.content
                                                  for i in body.get("items", [])):
            return time.perf_counter() - start
        if time.perf_counter() - start > SEMANTIC_WAIT_S:
            log(f"{memory.sid}: the semantic index did not show {last.name}'s last save within "
                f"{SEMANTIC_WAIT_S:.0f} s; asking anyway (answered as {body.get('mode')}, "
                f"fallback {body.get('fallback')})")
            return time.perf_counter() - start
        time.sleep(0.25)


def ask_bm25(run: Run, bm25: BM25, qid: str, text: str, found: Callable[[int], object],
             gold: Sequence[object]) -> None:
    """The baseline's answer to one question, timed and scored as the modes' are (``found``: what a BM25
    document number stands for)."""
    cpu = time.process_time_ns()
    docs, elapsed = bm25.search(text, LIMIT)
    run.cpu_ns.append(time.process_time_ns() - cpu)
    run.latencies_ns.append(elapsed)
    run.note("bm25")
    run.per_question[qid] = scores([found(d) for d in docs], gold)


def run_memory(memory: MemorySet, systems: dict[str, dict[str, str]], refused: dict[str, str],
               answers: dict[str, Run], ahead: bool = True) -> dict[str, Any]:
    from agentmem.client.errors import AgentmemError

    current = memory.current()
    content = {e.name: e.content for e in current}
    with tempfile.TemporaryDirectory(prefix="agentmem-recall-eval-entries-") as tmp:
        target = Agentmem(Path(tmp))
        try:
            loaded = load(target, memory)
            waited = wait_for_index(target, memory)
            reading = read_ahead(target) if ahead else {}
            for q in memory.questions:
                for label, params in systems.items():
                    if label in refused:
                        continue
                    try:
                        body, wall, cpu = search(target, memory, params, q.text)
                    except AgentmemError as error:
                        if error.status != 400:
                            raise
                        refused[label] = error.message
                        log(f"the server refuses {label} ({params}): {error.message}; left out")
                        continue
                    run = answers[label]
                    run.latencies_ns.append(wall)
                    run.cpu_ns.append(cpu)
                    run.note(answered_as(body))
                    items = body.get("items", [])
                    run.stale += sum(1 for i in items if "content" in i and i["content"] != content.get(i["name"]))
                    run.per_question[q.qid] = scores([i["name"] for i in items], q.gold)
        finally:
            target.close()
    bm25 = BM25([f"{re.sub(r'[._-]', ' ', e.name)} {e.description} {e.content}" for e in current])
    for q in memory.questions:
        ask_bm25(answers[BASELINE], bm25, q.qid, q.text, lambda d: current[d].name, q.gold)
    return {"id": memory.sid, "style": memory.style, "split": memory.split, "memory": memory.memory,
            "user": memory.user,
            "entries": len(current), "saves": len(memory.saves),
            "characters": sum(len(e.content) for e in current), "questions": len(memory.questions),
            "load_s": round(loaded, 2), "index_wait_s": round(waited, 2), **reading}


# --- an agent's recall over its memories -----------------------------------------------------------------------


def run_agent(split: str, memories: list[MemorySet], systems: dict[str, dict[str, str]], refused: dict[str, str],
              answers: dict[str, Run], ahead: bool = True) -> dict[str, Any]:
    """One agent attaching every account memory of a half (read-only), asked each of their questions through
    ``GET /v1/agents/{agent}/search``: the same questions with the other memories' entries as distractors.
    A hit is (memory, name); BM25 runs over the union of the memories' entries."""
    with tempfile.TemporaryDirectory(prefix="agentmem-recall-eval-agent-") as tmp:
        target = Agentmem(Path(tmp))
        try:
            loaded = sum(load(target, memory) for memory in memories)
            waited = sum(wait_for_index(target, memory) for memory in memories)
            reading = read_ahead(target) if ahead else {}
            target.client.request_json("PUT", f"/agents/{RECALLING_AGENT}", body={
                "memories": [{"name": memory.memory, "writable": False} for memory in memories]})
            for memory in memories:
                for q in memory.questions:
                    gold = [(memory.memory, g) for g in q.gold]
                    for label, params in systems.items():
                        if label in refused:
                            continue
                        query: dict[str, str | float | bool | None] = {"q": q.text, "limit": LIMIT, **params}
                        cpu, wall = time.process_time_ns(), time.perf_counter_ns()
                        body = target.client.request_json("GET", f"/agents/{RECALLING_AGENT}/search", params=query)
                        run = answers[label]
                        run.latencies_ns.append(time.perf_counter_ns() - wall)
                        run.cpu_ns.append(time.process_time_ns() - cpu)
                        run.note(answered_as(body))
                        ranked = [(i.get("memory"), i["name"]) for i in body.get("items", [])]
                        run.per_question[q.qid] = scores(ranked, gold)
        finally:
            target.close()
    every = [(memory.memory, e) for memory in memories for e in memory.current()]
    bm25 = BM25([f"{re.sub(r'[._-]', ' ', e.name)} {e.description} {e.content}" for _, e in every])
    for memory in memories:
        for q in memory.questions:
            ask_bm25(answers[BASELINE], bm25, q.qid, q.text, lambda d: (every[d][0], every[d][1].name),
                     [(memory.memory, g) for g in q.gold])
    return {"split": split, "memories": [m.memory for m in memories], "entries": len(every),
            "questions": sum(len(m.questions) for m in memories), "load_s": round(loaded, 2),
            "index_wait_s": round(waited, 2), **reading}


# --- the report -------------------------------------------------------------------------------------------------


def print_split(split: str, systems: dict[str, dict[str, Any]]) -> None:
    present = {name: s[split] for name, s in systems.items() if split in s}
    if not present:
        return
    n = next(iter(present.values()))["all"]["n"]
    print(f"\n== {split} half: {n} questions")
    print(f"  {'system':<10} {'R@1':>6} {'R@3':>6} {'R@5':>6} {'MRR':>6} {'nDCG@5':>7}   {'CPU p50':>8} {'CPU p95':>8}"
          f" {'wall p50':>9}   answered as")
    for name, part in present.items():
        a, cpu, wall = part["all"], systems[name]["cpu"], systems[name]["latency"]
        answered = ", ".join(f"{k} ×{v}" for k, v in systems[name]["answered"].items())
        if systems[name].get("stale_hits"):
            answered += f"; {systems[name]['stale_hits']} hits with an old version's content"
        print(f"  {name:<10} {fmt(a.get('r@1')):>6} {fmt(a.get('r@3')):>6} {fmt(a.get('r@5')):>6} "
              f"{fmt(a.get('mrr')):>6} {fmt(a.get('ndcg@5')):>7}   {cpu.get('p50_ms', 0):>6.2f}ms "
              f"{cpu.get('p95_ms', 0):>6.2f}ms {wall.get('p50_ms', 0):>7.2f}ms   {answered}")
    print("  (CPU and wall time per search over both halves)")
    for group in ("by_kind", "by_style"):
        print(f"\n  {group.replace('_', ' ')}: R@3 (MRR)")
        names = list(present)
        print(f"  {'':<17} {'n':>4}  " + "  ".join(f"{name:>14}" for name in names))
        for key in next(iter(present.values())).get(group, {}):
            cells = []
            count = 0
            for name in names:
                row = present[name].get(group, {}).get(key)
                count = row["n"] if row else count
                cells.append((f"{row['r@3']:.3f} ({row['mrr']:.3f})" if row else "–").rjust(14))
            print(f"  {key:<17} {count:>4}  " + "  ".join(cells))


def plot(summary: dict[str, Any], path: Path, split: str = "test") -> bool:
    """R@3 per question kind on one half, BM25 beside hybrid and deep; False when the run has no such half."""
    shown = [(name, label) for name, label in ((BASELINE, "BM25 (bm25s)"), ("hybrid", "hybrid (default)"),
                                               ("deep", "deep (re-ranked)")) if split in summary.get(name, {})]
    if not shown or shown[0][0] != BASELINE:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    parts = summary[BASELINE][split]
    groups = [k for k in KINDS if k in parts["by_kind"]] + ["all"]
    counts = [parts["by_kind"][k]["n"] if k != "all" else parts["all"]["n"] for k in groups]

    def r3(name: str, group: str) -> float:
        half = summary[name][split]
        return float((half["all"] if group == "all" else half["by_kind"].get(group, {})).get(HEADLINE) or 0.0)

    figure, axis = plt.subplots(figsize=(10, 4.2))
    width = 0.8 / len(shown)
    for i, (name, label) in enumerate(shown):
        xs = [g + (i - (len(shown) - 1) / 2) * width for g in range(len(groups))]
        values = [r3(name, group) for group in groups]
        bars = axis.bar(xs, values, width, label=label)
        axis.bar_label(bars, [f"{v:.2f}" for v in values], fontsize=7, padding=1)
    axis.set_xticks(range(len(groups)), [f"{g.replace('_', ' ')}\n({n})" for g, n in zip(groups, counts, strict=True)])
    axis.set_ylim(0, 1.15)
    axis.set_ylabel("recall@3")
    axis.grid(axis="y", alpha=0.3)
    axis.legend(fontsize=8, loc="upper center", ncol=3)
    axis.set_title(f"Entry recall on hand-written memories, {split} half: R@3 per question kind "
                   "(questions in brackets)", fontsize=10)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True


def verdict(summary: dict[str, Any]) -> int:
    """0 when hybrid's R@3 on the test half is ahead of BM25's; otherwise loudly not."""
    hybrid, bm25 = summary.get("hybrid", {}).get("test"), summary.get(BASELINE, {}).get("test")
    if hybrid is None or bm25 is None:
        print("(no test half in this run: nothing to hold hybrid to)")
        return 0
    ours, theirs = hybrid["all"][HEADLINE], bm25["all"][HEADLINE]
    if ours > theirs:
        print(f"test half: hybrid R@3 {ours:.3f} is ahead of BM25's {theirs:.3f} ({ours / max(theirs, 1e-9):.2f}×)")
        return 0
    print("\n" + "!" * 100, file=sys.stderr)
    print(f"FAIL: on the test half hybrid R@3 {ours:.3f} is NOT ahead of BM25's {theirs:.3f}", file=sys.stderr)
    print("!" * 100, file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, nargs="+", default=[DATA],
                        help="folders of memory files (or the files); default bench/recall_eval/entries")
    parser.add_argument("--split", choices=(*SPLITS, "both"), default="both")
    parser.add_argument("--systems", default=",".join(SYSTEMS),
                        help=f"which searches to run, comma-separated (of {', '.join(SYSTEMS)})")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "recall_eval_entries.json")
    parser.add_argument("--plot", type=Path, default=PLOT,
                        help="where to draw R@3 per kind on the test half (BM25, hybrid, deep); default "
                             "docs/img/recall-eval-entries.png")
    parser.add_argument("--no-agent", action="store_true",
                        help="skip the agent's recall (one agent per half attaching its account memories)")
    parser.add_argument("--no-read-ahead", action="store_true",
                        help="leave the entries' token states for mode=deep to be read at search time")
    parser.add_argument("--replot", type=Path, metavar="RESULTS",
                        help="only draw the plot from a results file this runner wrote, and exit")
    args = parser.parse_args(argv)
    if args.replot is not None:
        drawn = plot(json.loads(args.replot.read_text())["systems"], args.plot)
        print(f"drew {args.plot}" if drawn else f"{args.replot} has no test half with BM25: nothing drawn")
        return 0 if drawn else 2
    for name, value in (("POWERTOOLS_METRICS_DISABLED", "true"), ("POWERTOOLS_TRACE_DISABLED", "true"),
                        ("POWERTOOLS_LOG_LEVEL", "WARNING")):
        os.environ.setdefault(name, value)
    unknown = [s for s in args.systems.split(",") if s not in SYSTEMS]
    if unknown:
        parser.error(f"unknown systems {unknown}")
    systems = {s: SYSTEMS[s] for s in args.systems.split(",")}
    memories, problems = read_data(args.data)
    for problem in problems:
        log(f"left out: {problem}")
    if args.split != "both":
        memories = [m for m in memories if m.split == args.split]
    if not memories:
        print(f"no memories under {', '.join(map(str, args.data))}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    refused: dict[str, str] = {}
    answers = {name: Run() for name in [*systems, BASELINE]}
    loaded = []
    for n, memory in enumerate(memories, start=1):
        log(f"{n}/{len(memories)} {memory.sid} ({memory.style}, {memory.split}): {len(memory.current())} entries "
            f"({len(memory.saves)} saves), {len(memory.questions)} questions")
        loaded.append(run_memory(memory, systems, refused, answers, not args.no_read_ahead))
    questions = {q.qid: q for m in memories for q in m.questions}
    meta = {q.qid: (m.split, m.style) for m in memories for q in m.questions}
    summary = {name: summarise(run, questions, meta) for name, run in answers.items()
               if run.per_question or name == BASELINE}
    agents: list[dict[str, Any]] = []
    by_agent = {name: Run() for name in [*systems, BASELINE]}
    for split in SPLITS if not args.no_agent else ():
        shared = [m for m in memories if m.split == split and m.user is None]
        if shared:
            log(f"agent recall, {split} half: one agent attaching {len(shared)} memories")
            agents.append(run_agent(split, shared, systems, refused, by_agent, not args.no_read_ahead))
    agent_summary = {name: summarise(run, questions, meta) for name, run in by_agent.items() if run.per_question}
    results: dict[str, Any] = {
        "benchmark": "recall_eval_entries",
        "machine": machine(),
        "data": [str(d) for d in args.data],
        "left_out": problems,
        "limit": LIMIT,
        "environment": {k: v for k, v in sorted(os.environ.items())
                        if k.startswith("AGENTMEM_") or k == "OPENBLAS_NUM_THREADS"},
        "refused": refused,
        "read_ahead": not args.no_read_ahead,
        "memories": loaded,
        "systems": summary,
        "per_question": {name: run.per_question for name, run in answers.items()},
        "agent_recall": {"agents": agents, "systems": agent_summary,
                         "per_question": {name: run.per_question for name, run in by_agent.items()}},
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(f"\nEntry recall on hand-written memories — {len(memories)} memories "
          f"({', '.join(sorted({m.style for m in memories}))}), {sum(e['entries'] for e in loaded)} entries "
          f"({sum(e['saves'] for e in loaded)} saves), {len(questions)} questions; top {LIMIT} per search")
    for split in SPLITS:
        print_split(split, summary)
    if agents:
        print("\nAn agent's recall over its memories (GET /v1/agents/{agent}/search): one agent a half, attaching "
              "its account memories; the same questions, the other memories' entries beside them")
        for agent in agents:
            print(f"  {agent['split']}: {len(agent['memories'])} memories, {agent['entries']} entries, "
                  f"{agent['questions']} questions")
        for split in SPLITS:
            print_split(split, agent_summary)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    shown = args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out
    print(f"\nwrote {shown} in {results['seconds']} s")
    if plot(summary, args.plot):
        print(f"drew {args.plot}")
    return verdict(summary)


if __name__ == "__main__":
    sys.exit(main())
