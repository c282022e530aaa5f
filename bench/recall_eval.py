"""Recall on hand-written conversations: journal search against plain BM25 (SPEC §4.1, §6.2; issue 28).

    .venv/bin/python bench/recall_eval.py                      # bench/recall_eval/data, both halves
    .venv/bin/python bench/recall_eval.py --split dev          # tune on this half only
    .venv/bin/python bench/recall_eval.py --data DIR [DIR ...] # conversations elsewhere (a folder of styles,
                                                               # or of conversation files)
    .venv/bin/python bench/recall_eval.py --across             # each half's conversations in one journal, each
                                                               # question asked across all of it
    .venv/bin/python bench/recall_eval.py --one-thread         # each half's conversations as one long
                                                               # conversation, each question asked within it
    .venv/bin/python bench/recall_eval.py --data locomo10.json # a public benchmark's file, if you hold one
                                                               # (public_sets.py: LoCoMo's, LongMemEval's or
                                                               # BEAM's format), as the test half
    .venv/bin/python bench/recall_eval.py --data BEAM/chats/500K # BEAM's repository: a folder a conversation
    .venv/bin/python bench/recall_eval.py --speaker-names      # each message after its speaker's name ("Rosa: …")

Reads the conversations written by hand in ``bench/recall_eval/data`` (format: ``bench/recall_eval/README.md``),
loads each into a fresh embedded agentmem in this process (the real API handler, driven through the SDK on an
in-process transport: ``recall_quality.Agentmem``), appends its messages in chunks of 40 (with each message's
``created_at`` when the server takes it), waits until the semantic index holds the conversation's last message,
then asks every question through ``GET /v1/agents/{agent}/messages/search`` restricted to its conversation,
once per system: ``mode=keyword``, ``semantic``, ``hybrid`` and each further stage the server offers
(``SYSTEMS``; one the server refuses with a 400 is left out and said so). Beside them, in the same run, plain
BM25 (``bm25s``, PyStemmer's English stemmer, English stop words: ``recall_quality.BM25``) over the same
messages of the same conversation.

The model's token states for ``mode=deep`` are read ahead as the indexer does once caught up
(``adapters/embedded/minilm_states.py``), after the semantic index holds the conversation (``--no-read-ahead``:
not, so that deep reads every candidate at search time within its budget, ``rerank_partial`` past it); the time
that takes is its throughput (messages, characters and tokens a second). Each ``deep`` question is asked twice:
**cold** (the re-ranking stage's memory emptied first: a candidate's states come from what was read ahead, or
from the model) and **warm** (again at once); the deep latency block prints p50/p95/p99 of both, wall and the
process's CPU time, with the load average of the machine before and after.

Scores each ranked list of 20 against the question's gold messages: R@5/10/20 (the share of the gold in the top
k), MRR (first gold hit in the top 20) and nDCG@10 (binary gains), per question kind and per style, for the
``dev`` and ``test`` halves separately. Prints the tables, writes ``bench/results/recall_eval.json`` and the plot
``docs/img/recall-eval.png`` (R@10 per kind on the test half: BM25, hybrid, deep; ``--replot RESULTS`` draws it
again from a results file), and exits non-zero, loudly, when hybrid's R@10 on the test half is not ahead of
BM25's. Tune only on ``dev``.

``--across``: each half's conversations are loaded into one journal (one agent and user, a conversation each)
and every question is asked across the whole of it, without ``conversation=``: the half's other conversations,
on other topics between other people, stand in its way, as the sessions of other days do in a long-lived
agent's journal. BM25 runs over the same messages. Writes ``bench/results/recall_eval_across.json`` and
``docs/img/recall-eval-across.png``.

``--one-thread``: each half's conversations are appended one after another to one conversation, every message
with its own time, and each question is asked within it (``conversation=`` set): a long-running assistant's
thread of a thousand messages and more, where a search cannot lean on which conversation holds the most matches.
Writes ``bench/results/recall_eval_thread.json`` and ``docs/img/recall-eval-thread.png``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from public_sets import beam_folders, read_beam_folders, read_public, rows_of
from recall_quality import BM25, Agentmem, machine, mean_scores, percentiles, score

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "recall_eval" / "data"
AGENT = "bench"
USER = "eval"
CHUNK = 40  # messages per append (SPEC §4.1: 1–40)
LIMIT = 20
SEMANTIC_WAIT_S = 120.0
STYLES = ("chat", "project", "agent_run")
KINDS = ("fact", "temporal", "multi_hop", "updated_fact", "decision", "order", "timeline")
SPLITS = ("dev", "test")
PLOT = ROOT / "docs" / "img" / "recall-eval.png"
PLOT_ACROSS = ROOT / "docs" / "img" / "recall-eval-across.png"
PLOT_THREAD = ROOT / "docs" / "img" / "recall-eval-thread.png"
# label -> the search's parameters; the first three are SPEC §6.2's modes, the others stages the server may offer
SYSTEMS: dict[str, dict[str, str]] = {
    "keyword": {"mode": "keyword"},
    "semantic": {"mode": "semantic"},
    "hybrid": {"mode": "hybrid"},
    "deep": {"mode": "deep"},
}
BASELINE = "bm25"
# questions whose gold holds a message longer than one passage (domain/passages.py WHOLE_CHARS), and the others
GOLD_SIZES = ("long", "short")
LONG_MESSAGE_CHARS = 750
MESSAGE_FIELDS = ("role", "content", "tool_name", "tool_call_id", "arguments", "result")


def log(message: str) -> None:
    print(f"  · {message}", file=sys.stderr, flush=True)


# --- the data ---------------------------------------------------------------------------------------------------


@dataclass
class Question:
    qid: str  # "<conversation>/<question id>": unique across the run
    kind: str
    text: str
    gold: list[str]


@dataclass
class Conversation:
    cid: str
    style: str
    split: str
    path: Path
    messages: list[dict[str, Any]]  # in order: message i (from 1) is the journal's seq i
    questions: list[Question] = field(default_factory=list)
    shifted_days: int = 0  # how far back its times were moved to keep them out of the future (``in_the_past``)
    source: str = "hand-written"  # whose: ours, or a public benchmark's (``public_sets.py``)

    def seq_of(self) -> dict[str, int]:
        return {m["id"]: n for n, m in enumerate(self.messages, start=1)}


def read_conversation(path: Path, *, speaker_names: bool = False) -> Conversation:
    return conversation_of(json.loads(path.read_text(encoding="utf-8")), path, speaker_names=speaker_names)


def conversation_of(raw: dict[str, Any], path: Path, source: str = "hand-written", *,
                    speaker_names: bool = False) -> Conversation:
    """One conversation in the evaluation's format (``bench/recall_eval/README.md``), read from ``path``; with
    ``speaker_names``, each message of the people (not a tool's) opening with its speaker's name from
    ``speakers`` ("Rosa: …"), as a transcript hands it over."""
    messages = [m for session in raw["sessions"] for m in session["messages"]]
    names = raw.get("speakers") or {}
    if speaker_names and names:
        messages = [m | {"content": f"{names[m['role']]}: {m.get('content') or ''}"} if m.get("role") in names
                    else m for m in messages]
    ids = [m["id"] for m in messages]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: a message id appears twice")
    convo = Conversation(str(raw["id"]), str(raw.get("style") or path.parent.name), str(raw["split"]), path,
                         messages, source=source)
    known = set(ids)
    for q in raw.get("questions", []):
        gold = [str(g) for g in q["gold"]]
        missing = [g for g in gold if g not in known]
        if missing or not gold:
            raise ValueError(f"{path}: question {q['id']} has gold {gold} (unknown: {missing})")
        convo.questions.append(Question(f"{convo.cid}/{q['id']}", str(q["kind"]), str(q["question"]), gold))
    if convo.split not in SPLITS:
        raise ValueError(f"{path}: split {convo.split!r} is neither dev nor test")
    return in_the_past(convo)


def in_the_past(convo: Conversation, now: datetime | None = None) -> Conversation:
    """The conversation with every ``created_at`` moved back by the same whole number of days when its latest
    is later than now: the journal refuses a time in the future, and a uniform shift keeps the order, the gaps
    and the times of day that the questions ask about."""
    times = [datetime.fromisoformat(str(m["created_at"]).replace("Z", "+00:00")) for m in convo.messages
             if m.get("created_at")]
    now = now or datetime.now(UTC)
    if not times or max(times) <= now - timedelta(days=1):
        return convo
    days = (max(times) - now).days + 2
    for m in convo.messages:
        if m.get("created_at"):
            moved = datetime.fromisoformat(str(m["created_at"]).replace("Z", "+00:00")) - timedelta(days=days)
            m["created_at"] = moved.isoformat().replace("+00:00", "Z")
    convo.shifted_days = days
    return convo


def read_data(dirs: Sequence[Path], *, speaker_names: bool = False) -> tuple[list[Conversation], list[str]]:
    """Every conversation file under the folders, and the files that could not be read (said, not fatal). A file
    in a public benchmark's format (``public_sets.py``: LoCoMo's, LongMemEval's, BEAM's rows; a file named itself
    may be JSON lines, or parquet) is read as its conversations, each turn opening with its speaker's name when
    ``speaker_names``, and what it leaves out of that file is said too; so is a folder in BEAM's own layout."""
    found: list[Conversation] = []
    problems: list[str] = []
    seen: set[str] = set()

    def add(path: Path, read: list[Conversation]) -> None:
        for convo in read:
            if convo.cid in seen:
                problems.append(f"{path}: conversation id {convo.cid} was read already; left out")
                continue
            seen.add(convo.cid)
            found.append(convo)

    for folder in dirs:
        beam = beam_folders(folder) if folder.is_dir() else []
        if beam:  # BEAM's repository: a folder a conversation, its chat and its questions apart
            sets = read_beam_folders(beam)
            problems += sets.left_out
            add(folder, [conversation_of(c, folder, "BEAM") for c in sets.conversations])
            continue
        for path in sorted(folder.rglob("*.json")) if folder.is_dir() else [folder]:
            try:
                raw = json.loads(path.read_text(encoding="utf-8")) if folder.is_dir() else rows_of(path)
                public = read_public(raw, str(path), names=speaker_names)
                if public is not None:
                    name, sets = public
                    problems += sets.left_out
                    read = [conversation_of(c, path, name) for c in sets.conversations]
                elif isinstance(raw, dict):
                    read = [conversation_of(raw, path, speaker_names=speaker_names)]
                else:
                    raise ValueError("neither a conversation of the evaluation's format nor a public set's")
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
                problems.append(f"{path}: {error!r}")
                continue
            add(path, read)
    return found, problems


# --- scoring ----------------------------------------------------------------------------------------------------


def ndcg_at(ranked: Sequence[object], gold: Sequence[object], k: int) -> float:
    """nDCG@k with binary gains: 1 for each gold item in the top k."""
    wanted = set(gold)
    dcg = sum(1.0 / math.log2(i + 1) for i, hit in enumerate(ranked[:k], start=1) if hit in wanted)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(wanted), k) + 1))
    return dcg / ideal if ideal else 0.0


def ndcg_at_10(ranked: Sequence[object], gold: Sequence[object]) -> float:
    return ndcg_at(ranked, gold, 10)


def scores(ranked: Sequence[object], gold: Sequence[object]) -> dict[str, float]:
    return score(ranked, gold) | {"ndcg@10": ndcg_at_10(ranked, gold)}


@dataclass
class Answers:
    """One system's scores per question, its latencies and how each search was answered."""

    per_question: dict[str, dict[str, float]] = field(default_factory=dict)
    latencies_ns: list[int] = field(default_factory=list)
    answered: dict[str, int] = field(default_factory=dict)
    cpu_ns: list[int] = field(default_factory=list)
    warm_ns: list[int] = field(default_factory=list)  # deep: the same question again at once
    warm_cpu_ns: list[int] = field(default_factory=list)

    def note(self, how: str) -> None:
        self.answered[how] = self.answered.get(how, 0) + 1


def gold_size(conversation: Conversation, question: Question) -> str:
    """"long" when one of the question's gold messages is longer than one passage, else "short"."""
    lengths = {m["id"]: len(m.get("content") or "") for m in conversation.messages}
    return "long" if any(lengths[g] > LONG_MESSAGE_CHARS for g in question.gold) else "short"


def summarise(answers: Answers, questions: dict[str, Question], meta: dict[str, tuple[str, str, str]]
              ) -> dict[str, Any]:
    """Means over a split: all, per kind, per style, and by the length of the gold messages (``meta``: qid ->
    (split, style, "long" when a gold message is longer than one passage, else "short"))."""
    out: dict[str, Any] = {}
    for split in SPLITS:
        rows = {qid: row for qid, row in answers.per_question.items() if meta[qid][0] == split}
        if not rows:
            continue
        by_kind = {kind: [r for q, r in rows.items() if questions[q].kind == kind] for kind in ordered(
            {questions[q].kind for q in rows}, KINDS)}
        by_style = {style: [r for q, r in rows.items() if meta[q][1] == style] for style in ordered(
            {meta[q][1] for q in rows}, STYLES)}
        by_gold = {size: [r for q, r in rows.items() if meta[q][2] == size] for size in ordered(
            {meta[q][2] for q in rows}, GOLD_SIZES)}
        out[split] = {
            "all": mean_scores(list(rows.values())) | {"n": len(rows)},
            "by_kind": {k: mean_scores(v) | {"n": len(v)} for k, v in by_kind.items()},
            "by_style": {s: mean_scores(v) | {"n": len(v)} for s, v in by_style.items()},
            "by_gold": {s: mean_scores(v) | {"n": len(v)} for s, v in by_gold.items()},
        }
    out["latency"] = percentiles(answers.latencies_ns)
    if answers.warm_ns:
        out["deep_latency"] = {"cold": tail(answers.latencies_ns), "warm": tail(answers.warm_ns),
                               "cold_cpu": tail(answers.cpu_ns), "warm_cpu": tail(answers.warm_cpu_ns)}
    out["answered"] = answers.answered
    return out


def tail(samples_ns: Sequence[int]) -> dict[str, float]:
    """p50/p95/p99 in ms (the nearest rank)."""
    if not samples_ns:
        return {}
    values = sorted(samples_ns)
    return {"n": len(values), **{f"p{q}_ms": round(values[min(len(values) - 1, math.ceil(q / 100 * len(values)) - 1)]
                                                    / 1e6, 2) for q in (50, 95, 99)}}


def ordered(present: set[str], known: Sequence[str]) -> list[str]:
    """``present`` in the order ``known`` gives, then what it does not know, sorted."""
    return [k for k in known if k in present] + sorted(present - set(known))


# --- one conversation -------------------------------------------------------------------------------------------


class Server:
    """What this run learnt about the server: whether appends take ``created_at``, which systems it refuses."""

    def __init__(self) -> None:
        self.takes_created_at: bool | None = None
        self.refused: dict[str, str] = {}


def append_all(target: Agentmem, server: Server, convo: Conversation) -> float:
    from agentmem.client.errors import AgentmemError

    path = f"/agents/{AGENT}/conversations/{convo.cid}/messages"
    start = time.perf_counter()
    for begin in range(0, len(convo.messages), CHUNK):
        chunk = convo.messages[begin:begin + CHUNK]
        plain = [{k: m[k] for k in MESSAGE_FIELDS if m.get(k) is not None} for m in chunk]
        if server.takes_created_at is not False:
            dated = [p | ({"created_at": m["created_at"]} if m.get("created_at") else {}) for p, m in
                     zip(plain, chunk, strict=True)]
            try:
                target.client.request_json("POST", path, params={"user": USER}, body={"messages": dated})
                server.takes_created_at = True
                continue
            except AgentmemError as error:
                if error.status != 400 or "created_at" not in error.message or server.takes_created_at:
                    raise
                server.takes_created_at = False
                log(f"appends do not take created_at ({error.message}); appending without it")
        target.client.request_json("POST", path, params={"user": USER}, body={"messages": plain})
    return time.perf_counter() - start


def search(target: Agentmem, convo: Conversation | None, params: dict[str, str], q: str
           ) -> tuple[dict[str, Any], int]:
    """One journal search: within ``convo``, or across the user's whole journal (None)."""
    query: dict[str, str | float | bool | None] = {"q": q, "user": USER, "limit": LIMIT, **params}
    if convo is not None:
        query["conversation"] = convo.cid
    start = time.perf_counter_ns()
    body = target.client.request_json("GET", f"/agents/{AGENT}/messages/search", params=query)
    return body, time.perf_counter_ns() - start


def wait_for_index(target: Agentmem, convo: Conversation) -> float:
    """Until semantic search finds the conversation's last message by its own words: the index is filled in
    order, so it then holds the whole conversation."""
    last = len(convo.messages)
    probe = " ".join(str(convo.messages[-1].get("content") or "").split()[:40]) or "the last message"
    start = time.perf_counter()
    while True:
        body, _ = search(target, convo, {"mode": "semantic"}, probe)
        if body.get("mode") == "semantic" and any(i["seq"] == last for i in body.get("items", [])):
            return time.perf_counter() - start
        if time.perf_counter() - start > SEMANTIC_WAIT_S:
            log(f"{convo.cid}: the semantic index did not show message {last} within {SEMANTIC_WAIT_S:.0f} s; "
                f"asking anyway (answered as {body.get('mode')}, fallback {body.get('fallback')})")
            return time.perf_counter() - start
        time.sleep(0.25)


def read_ahead(target: Agentmem) -> dict[str, float]:
    """What the indexer does once caught up: read the token states of what was saved (a memory's entries, a
    conversation's messages) for mode=deep ahead."""
    ahead = getattr(target.container.search_index, "read_ahead", None)
    if ahead is None:
        return {}
    while ahead.read_some():
        pass
    seconds = max(ahead.read_s, 1e-9)
    return {"read_ahead_s": round(ahead.read_s, 2), "read_ahead_tokens": ahead.read_tokens,
            **{f"read_ahead_{what}_per_s": round(n / seconds, 1)
               for what, n in (("messages", ahead.read_messages), ("entries", ahead.read_entries)) if n},
            "read_ahead_chars_per_s": round(ahead.read_chars / seconds), "read_ahead_tokens_per_s":
                round(ahead.read_tokens / seconds)}


def one_thread(convos: Sequence[Conversation], split: str) -> Conversation:
    """A half's conversations as one long conversation, each one's sessions after the one before's, every message
    with its own time (a journal takes a message older than the one before it), named ``<conversation>/<id>``;
    each question asked within it, its gold named so too: the shape of a long-running assistant's thread, where
    a question's answer is one message among a thousand or more of the same conversation."""
    messages = [m | {"id": f"{c.cid}/{m['id']}"} for c in convos for m in c.messages]
    questions = [Question(q.qid, q.kind, q.text, [f"{c.cid}/{g}" for g in q.gold]) for c in convos
                 for q in c.questions]
    return Conversation(f"{split}-thread", "thread", split, convos[0].path.parent, messages, questions)


def gold_of(convo: Conversation, question: Question) -> list[str]:
    """The question's gold messages as a journal of several conversations names them."""
    return [f"{convo.cid}/{g}" for g in question.gold]


def run_journal(convos: Sequence[Conversation], server: Server, systems: dict[str, dict[str, str]],
                answers: dict[str, Answers], ahead: bool = True, across: bool = False) -> list[dict[str, Any]]:
    """Loads ``convos`` into one fresh journal (one agent and user, a conversation each) and asks each question:
    within its own conversation, or (``across``) across the whole journal, every other conversation's messages
    standing in its way. Messages are named ``<conversation>/<message id>``, in the answers and in the gold."""
    from agentmem.client.errors import AgentmemError

    loaded: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="agentmem-recall-eval-") as tmp:
        target = Agentmem(Path(tmp))
        try:
            appended = {c.cid: append_all(target, server, c) for c in convos}
            waited = {c.cid: wait_for_index(target, c) for c in convos}
            reading = read_ahead(target) if ahead else {}
            reranker = target.container.reranker if "deep" in systems else None
            names = {c.cid: [f"{c.cid}/{m['id']}" for m in c.messages] for c in convos}
            for convo in convos:
                for q in convo.questions:
                    for label, params in systems.items():
                        if label in server.refused:
                            continue
                        cold = label == "deep" and hasattr(reranker, "forget")
                        if cold:
                            reranker.forget()  # type: ignore[union-attr]
                        scope = None if across else convo
                        cpu = time.process_time_ns()
                        try:
                            body, elapsed = search(target, scope, params, q.text)
                            cpu = time.process_time_ns() - cpu
                            if cold:
                                warm_cpu = time.process_time_ns()
                                _, warm = search(target, scope, params, q.text)
                                answers[label].warm_cpu_ns.append(time.process_time_ns() - warm_cpu)
                                answers[label].warm_ns.append(warm)
                        except AgentmemError as error:
                            if error.status != 400:
                                raise
                            server.refused[label] = error.message
                            log(f"the server refuses {label} ({params}): {error.message}; left out")
                            continue
                        run = answers[label]
                        run.latencies_ns.append(elapsed)
                        run.cpu_ns.append(cpu)
                        how = str(body.get("mode"))
                        if body.get("stages"):
                            how += " [" + "+".join(body["stages"]) + "]"
                        if body.get("fallback"):
                            how += f" (fallback: {body['fallback']})"
                        run.note(how)
                        held = ((names.get(str(i.get("conversation") or convo.cid), []), i["seq"])
                                for i in body.get("items", []))
                        ranked = [ids[seq - 1] for ids, seq in held if 0 < seq <= len(ids)]
                        run.per_question[q.qid] = scores(ranked, gold_of(convo, q))
            if hasattr(reranker, "forward_texts"):  # candidates the model read at search time (not read ahead)
                reading["deep_forward_texts"] = reranker.forward_texts  # type: ignore[union-attr]
        finally:
            target.close()
    # plain BM25 over the same messages: each conversation's own, or the whole journal's
    for group in ([list(convos)] if across else [[c] for c in convos]):
        ids = [f"{c.cid}/{m['id']}" for c in group for m in c.messages]
        bm25 = BM25([str(m.get("content") or "") for c in group for m in c.messages])
        for convo in group:
            for q in convo.questions:
                docs, elapsed = bm25.search(q.text, LIMIT)
                answers[BASELINE].latencies_ns.append(elapsed)
                answers[BASELINE].note("bm25")
                answers[BASELINE].per_question[q.qid] = scores([ids[d] for d in docs], gold_of(convo, q))
    for convo in convos:
        loaded.append({"id": convo.cid, "style": convo.style, "split": convo.split, "messages": len(convo.messages),
                       "characters": sum(len(str(m.get("content") or "")) for m in convo.messages),
                       "questions": len(convo.questions), "append_s": round(appended[convo.cid], 2),
                       "index_wait_s": round(waited[convo.cid], 2),
                       "created_at_shifted_days": convo.shifted_days, **reading})
        reading = {}  # a journal's read-ahead is said once, with its first conversation
    return loaded


# --- the report -------------------------------------------------------------------------------------------------


def fmt(value: float | None) -> str:
    return "    –" if value is None else f"{value:.3f}"


def print_deep_latency(results: dict[str, Any]) -> None:
    deep = results["systems"].get("deep", {})
    if "deep_latency" not in deep:
        return
    before, after = results["load_average"]["before"], results["load_average"]["after"]
    print(f"\n== deep latency, both halves ({deep['deep_latency']['cold'].get('n', 0)} questions; token states "
          f"{'read ahead' if results['read_ahead'] else 'read at search time only'}; load average "
          f"{before[0]:.2f} before, {after[0]:.2f} after)")
    print(f"  {'':<10} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
    for name, row in deep["deep_latency"].items():
        print(f"  {name:<10} {row.get('p50_ms', 0):>8.1f} {row.get('p95_ms', 0):>8.1f} {row.get('p99_ms', 0):>8.1f}")
    print("  answered as: " + ", ".join(f"{k} ×{v}" for k, v in deep["answered"].items()))
    forward = sum(c.get("deep_forward_texts", 0) for c in results["conversations"])
    print(f"  candidates the model read at search time (cold and warm): {forward:,}")
    read = [c for c in results["conversations"] if "read_ahead_s" in c]
    if read:
        seconds = sum(c["read_ahead_s"] for c in read)
        tokens = sum(c["read_ahead_tokens"] for c in read)
        chars = sum(c["characters"] for c in read)
        messages = sum(c["messages"] for c in read)
        print(f"  read ahead: {messages:,} messages, {chars:,} characters, {tokens:,} tokens in {seconds:.1f} s "
              f"({messages / max(seconds, 1e-9):.1f} messages/s, {chars / max(seconds, 1e-9):,.0f} chars/s, "
              f"{tokens / max(seconds, 1e-9):,.0f} tokens/s)")


def print_split(split: str, systems: dict[str, dict[str, Any]]) -> None:
    present = {name: s[split] for name, s in systems.items() if split in s}
    if not present:
        return
    n = next(iter(present.values()))["all"]["n"]
    print(f"\n== {split} half: {n} questions")
    print(f"  {'system':<10} {'R@5':>6} {'R@10':>6} {'R@20':>6} {'MRR':>6} {'nDCG@10':>8}   {'p50 ms':>7} {'p99 ms':>7}"
          "   answered as")
    for name, part in present.items():
        a, lat = part["all"], systems[name]["latency"]
        answered = ", ".join(f"{k} ×{v}" for k, v in systems[name]["answered"].items())
        print(f"  {name:<10} {fmt(a.get('r@5')):>6} {fmt(a.get('r@10')):>6} {fmt(a.get('r@20')):>6} "
              f"{fmt(a.get('mrr')):>6} {fmt(a.get('ndcg@10')):>8}   {lat.get('p50_ms', 0):>7.2f} "
              f"{lat.get('p99_ms', 0):>7.2f}   {answered}")
    for group in ("by_kind", "by_style", "by_gold"):
        print(f"\n  {group.replace('_', ' ')}: R@10 (R@20)")
        names = list(present)
        keys = list(next(iter(present.values())).get(group, {}))
        wide = max([13, *map(len, keys)])  # (a public set's kinds: "single-session-preference")
        print(f"  {'':<{wide}} {'n':>4}  " + "  ".join(f"{name:>15}" for name in names))
        for key in keys:
            cells = []
            count = 0
            for name in names:
                row = present[name].get(group, {}).get(key)
                count = row["n"] if row else count
                cells.append((f"{row['r@10']:.3f} ({row['r@20']:.3f})" if row else "–").rjust(15))
            print(f"  {key:<{wide}} {count:>4}  " + "  ".join(cells))


def plot(summary: dict[str, Any], path: Path, split: str = "test", across: bool = False, thread: bool = False,
         what: str = "hand-written conversations") -> bool:
    """R@10 per question kind on one half, BM25 beside hybrid and deep, with the goal (1.2 × BM25) marked
    where BM25 is below 0.9; False when the run has no such half."""
    shown = [(name, label) for name, label in ((BASELINE, "BM25 (bm25s)"), ("hybrid", "hybrid (default)"),
                                               ("deep", "deep (re-ranked)")) if split in summary.get(name, {})]
    if not shown or shown[0][0] != BASELINE:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    parts = summary[BASELINE][split]
    groups = [*ordered(set(parts["by_kind"]), KINDS), "all"]
    counts = [parts["by_kind"][k]["n"] if k != "all" else parts["all"]["n"] for k in groups]

    def r10(name: str, group: str) -> float:
        half = summary[name][split]
        return float((half["all"] if group == "all" else half["by_kind"].get(group, {})).get("r@10") or 0.0)

    figure, axis = plt.subplots(figsize=(10, 4.2))
    width = 0.8 / len(shown)
    for i, (name, label) in enumerate(shown):
        xs = [g + (i - (len(shown) - 1) / 2) * width for g in range(len(groups))]
        values = [r10(name, group) for group in groups]
        bars = axis.bar(xs, values, width, label=label)
        axis.bar_label(bars, [f"{v:.2f}" for v in values], fontsize=7, padding=1)
    legend = "goal: 1.2 × BM25"
    for g, group in enumerate(groups):
        base = r10(BASELINE, group)
        if base < 0.9:
            axis.hlines(min(1.2 * base, 1.0), g - 0.45, g + 0.45, colors="black", linestyles="dotted", label=legend)
            legend = "_nolegend_"  # matplotlib leaves a label starting with "_" out of the legend
    axis.set_xticks(range(len(groups)), [f"{g.replace('_', ' ')}\n({n})" for g, n in zip(groups, counts, strict=True)])
    axis.set_ylim(0, 1.18)
    axis.set_ylabel("recall@10")
    axis.grid(axis="y", alpha=0.3)
    axis.legend(fontsize=8, loc="upper center", ncol=4)
    where = ("across each half's journal" if across else "within each half's one long thread" if thread
             else "within each conversation")
    title = f"Journal search on {what} ({where}), {split} half: R@10 per kind (questions in brackets)"
    if len(title) > 120:  # (a long one in two lines, so that it is not cut at the figure's edges)
        title = title.replace(f"), {split} half", f"),\n{split} half", 1)
    axis.set_title(title, fontsize=10)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, nargs="+", default=[DATA],
                        help="folders of conversations (or conversation files); default bench/recall_eval/data")
    parser.add_argument("--split", choices=(*SPLITS, "both"), default="both")
    parser.add_argument("--systems", default=",".join(SYSTEMS),
                        help=f"which searches to run, comma-separated (of {', '.join(SYSTEMS)})")
    parser.add_argument("--out", type=Path, default=None,
                        help="where to write the results; default bench/results/recall_eval.json "
                             "(recall_eval_across.json with --across)")
    parser.add_argument("--plot", type=Path, default=None,
                        help="where to draw R@10 per kind on the test half (BM25, hybrid, deep); default "
                             "docs/img/recall-eval.png (recall-eval-across.png with --across)")
    parser.add_argument("--no-read-ahead", action="store_true",
                        help="leave the token states for mode=deep to be read at search time (within its budget)")
    parser.add_argument("--across", action="store_true",
                        help="load each half's conversations into one journal and ask each question across all of "
                             "it, not within its conversation")
    parser.add_argument("--one-thread", action="store_true",
                        help="append each half's conversations to one long conversation and ask each question "
                             "within it (a long-running thread of a thousand messages and more)")
    parser.add_argument("--speaker-names", action="store_true",
                        help="open each message of the people with its speaker's name (\"Rosa: …\"), as many "
                             "public harnesses hand a transcript to a memory")
    parser.add_argument("--replot", type=Path, metavar="RESULTS",
                        help="only draw the plot from a results file this runner wrote, and exit")
    args = parser.parse_args(argv)
    if args.across and args.one_thread:
        parser.error("--across and --one-thread are two ways of asking: choose one")
    suffix = ("_across" if args.across else "_thread" if args.one_thread else "") + (
        "_names" if args.speaker_names else "")
    if args.replot is not None:
        written = json.loads(args.replot.read_text())
        args.plot = args.plot or drawing_of(args.replot, written)
        drawn = plot(written["systems"], args.plot, across=bool(written.get("across")),
                     thread=bool(written.get("one_thread")), what=written.get("what", "hand-written conversations"))
        print(f"drew {args.plot}" if drawn else f"{args.replot} has no test half with BM25: nothing drawn")
        return 0 if drawn else 2
    for name, value in (("POWERTOOLS_METRICS_DISABLED", "true"), ("POWERTOOLS_TRACE_DISABLED", "true"),
                        ("POWERTOOLS_LOG_LEVEL", "WARNING")):
        os.environ.setdefault(name, value)
    unknown = [s for s in args.systems.split(",") if s not in SYSTEMS]
    if unknown:
        parser.error(f"unknown systems {unknown}")
    systems = {s: SYSTEMS[s] for s in args.systems.split(",")}
    conversations, problems = read_data(args.data, speaker_names=args.speaker_names)
    for problem in problems:
        log(f"left out: {problem}")
    if args.split != "both":
        conversations = [c for c in conversations if c.split == args.split]
    if not conversations:
        print(f"no conversations under {', '.join(map(str, args.data))}", file=sys.stderr)
        return 2
    out, drawing = outputs(conversations, suffix)
    args.out, args.plot = args.out or out, args.plot or drawing
    sources = " and ".join(sorted({c.source for c in conversations}))  # "hand-written", "LoCoMo", …
    what = f"{sources} conversations" + (", each line after its speaker's name" if args.speaker_names else "")
    started = time.perf_counter()
    load_before = os.getloadavg()
    server = Server()
    answers = {name: Answers() for name in [*systems, BASELINE]}
    loaded = []
    for n, convo in enumerate(conversations, start=1):
        log(f"{n}/{len(conversations)} {convo.cid} ({convo.style}, {convo.split}): {len(convo.messages)} messages, "
            f"{len(convo.questions)} questions"
            + (f"; its times moved back {convo.shifted_days} days, out of the future" if convo.shifted_days else ""))
        if not (args.across or args.one_thread):
            loaded += run_journal([convo], server, systems, answers, not args.no_read_ahead)
    if args.across:  # one journal a half: the other conversations of the half stand in each question's way
        for split in SPLITS:
            half = [c for c in conversations if c.split == split]
            if half:
                log(f"{split} half as one journal: {sum(len(c.messages) for c in half):,} messages, asked across it")
                loaded += run_journal(half, server, systems, answers, not args.no_read_ahead, across=True)
    if args.one_thread:  # one conversation a half: the rest of the long thread stands in each question's way
        for split in SPLITS:
            half = [c for c in conversations if c.split == split]
            if half:
                log(f"{split} half as one conversation: {sum(len(c.messages) for c in half):,} messages, each "
                    "question asked within it")
                loaded += run_journal([one_thread(half, split)], server, systems, answers, not args.no_read_ahead)
    questions = {q.qid: q for c in conversations for q in c.questions}
    meta = {q.qid: (c.split, c.style, gold_size(c, q)) for c in conversations for q in c.questions}
    summary = {name: summarise(run, questions, meta) for name, run in answers.items()
               if run.per_question or name == BASELINE}
    results: dict[str, Any] = {
        "benchmark": "recall_eval",
        "machine": machine(),
        "data": [str(d) for d in args.data],
        "left_out": problems,
        "environment": {k: v for k, v in sorted(os.environ.items())
                        if k.startswith("AGENTMEM_") or k == "OPENBLAS_NUM_THREADS"},
        "appends_take_created_at": server.takes_created_at,
        "refused": server.refused,
        "conversations": loaded,
        "systems": summary,
        "per_question": {name: run.per_question for name, run in answers.items()},
        "seconds": round(time.perf_counter() - started, 1),
        "load_average": {"before": [round(x, 2) for x in load_before],
                         "after": [round(x, 2) for x in os.getloadavg()]},
        "read_ahead": not args.no_read_ahead,
        "across": args.across,
        "one_thread": args.one_thread,
        "what": what,
    }
    styles = sorted({c.style for c in conversations})
    print(f"\nRecall on {len(conversations)} {sources} conversations ({', '.join(styles)}) "
          f"from {', '.join(map(str, args.data))}, "
          f"{sum(len(c.messages) for c in conversations):,} messages, {len(questions)} questions; "
          f"created_at {'kept' if server.takes_created_at else 'not taken by appends'}; each question asked "
          + ("across its half's whole journal" if args.across else "within its half's one long thread"
             if args.one_thread else "within its conversation"))
    for split in SPLITS:
        print_split(split, summary)
    print_deep_latency(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    shown = args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out
    print(f"\nwrote {shown} in {results['seconds']} s")
    if plot(summary, args.plot, across=args.across, thread=args.one_thread, what=what):
        print(f"drew {args.plot}")
    return verdict(summary)


def outputs(conversations: Sequence[Conversation], suffix: str) -> tuple[Path, Path]:
    """Where a run writes its results and draws its plot by default (``suffix``: ``_across``, ``_thread`` or
    nothing, then ``_names`` with ``--speaker-names``). A public set's run writes beside ours, never over them:
    ``recall_eval_locomo.json``, ``recall-eval-locomo.png``."""
    public = "_".join(sorted({c.source.lower() for c in conversations if c.source != "hand-written"}))
    named = f"_{public}" if public else ""
    return (ROOT / "bench" / "results" / f"recall_eval{named}{suffix}.json",
            ROOT / "docs" / "img" / f"recall-eval{named}{suffix}.png".replace("_", "-"))


def drawing_of(results: Path, written: dict[str, Any]) -> Path:
    """Where ``--replot`` draws by default: beside the plot the run that wrote ``results`` drew (``outputs``:
    ``recall_eval_holdout2.json`` -> ``recall-eval-holdout2.png``); for a results file named otherwise, the plot
    of its way of asking."""
    if results.stem.startswith("recall_eval"):
        return ROOT / "docs" / "img" / f"{results.stem.replace('_', '-')}.png"
    return PLOT_ACROSS if written.get("across") else PLOT_THREAD if written.get("one_thread") else PLOT


def verdict(summary: dict[str, Any]) -> int:
    """0 when hybrid's R@10 on the test half is ahead of BM25's; otherwise loudly not."""
    hybrid, bm25 = summary.get("hybrid", {}).get("test"), summary.get(BASELINE, {}).get("test")
    if hybrid is None or bm25 is None:
        print("(no test half in this run: nothing to hold hybrid to)")
        return 0
    ours, theirs = hybrid["all"]["r@10"], bm25["all"]["r@10"]
    if ours > theirs:
        print(f"test half: hybrid R@10 {ours:.3f} is ahead of BM25's {theirs:.3f} ({ours / max(theirs, 1e-9):.2f}×)")
        return 0
    print("\n" + "!" * 100, file=sys.stderr)
    print(f"FAIL: on the test half hybrid R@10 {ours:.3f} is NOT ahead of BM25's {theirs:.3f}", file=sys.stderr)
    print("!" * 100, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
