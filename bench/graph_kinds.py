"""How the embedded index's HNSW graph keeps its vectors: half floats or 8-bit integers, and how wide it searches.

A partition past ``ANN_THRESHOLD`` vectors is searched through a usearch graph (adapters/embedded/vector_index.py),
held in memory: at a million messages (two million vectors with the passages of long ones) it is most of the
process. This builds graphs of each kind over the same journal vectors and asks each the same questions:

- recall@10 and recall@100 of the graph's 100 nearest against the exact answer (a scan of every vector), each
  distinct vector once, as the index holds them;
- milliseconds a query (one thread), bytes a vector (usearch's ``memory_usage``), seconds to build;
- how far the graph's cosine is from the exact one, for its 10 nearest.

The vectors are the template journal's (``recall_speed.Journal``) embedded by the default embedder, or those of a
data dir a ``recall_speed.py --data-dir`` run kept (``--data-dir``). Questions: the journal's own.

    python bench/graph_kinds.py [--vectors 200000] [--data-dir DIR]

Writes ``bench/results/graph_kinds.json``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sqlite3
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "layers" / "core" / "python"))
sys.path.insert(0, str(ROOT / "bench"))

import recall_speed  # noqa: E402
from agentmem.adapters.embedded import vector_index  # noqa: E402
from agentmem.adapters.embedded.wordllama_embedder import WordLlamaEmbedder  # noqa: E402

NEAREST = 100  # the candidates the journal's semantic side asks the index for
QUESTIONS = 300
# (kind, metric, expansion when searching): the kind the index used before, then the kind it uses, then wider
KINDS = (("f16", "ip", 128), ("f16", "ip", 256), ("i8", "cos", 128), ("i8", "cos", 256), ("i8", "cos", 384))


def journal_vectors(count: int, seed: int) -> tuple[np.ndarray[Any, Any], list[str]]:
    journal = recall_speed.Journal(seed)
    texts: list[str] = []
    while len(texts) < count:  # conversations of 40 messages, as the speed benchmark appends them
        journal.start_conversation()
        texts += [text for _, text in journal.messages(min(40, count - len(texts)))]
    embedder = WordLlamaEmbedder(256)
    vectors = np.concatenate([embedder.embed_matrix(texts[b : b + 4096]) for b in range(0, len(texts), 4096)])
    return vectors, journal.queries(QUESTIONS, seed + 1)


def kept_vectors(data_dir: Path, count: int, seed: int) -> tuple[np.ndarray[Any, Any], list[str]]:
    conn = sqlite3.connect(f"file:{data_dir / 'agentmem.db'}?mode=ro", uri=True)
    rows = conn.execute("SELECT vector FROM vectors WHERE kind='message' ORDER BY id LIMIT ?", (count,)).fetchall()
    vectors = np.frombuffer(b"".join(r[0] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    state = recall_speed._StateUnpickler(io.BytesIO((data_dir / recall_speed.STATE_FILE).read_bytes())).load()
    return vectors, state["journal"].queries(QUESTIONS, seed + 1)


def measure(vectors: np.ndarray[Any, Any], questions: np.ndarray[Any, Any]) -> list[dict[str, Any]]:
    from usearch.index import Index

    exact = np.argsort(-(questions @ vectors.T), axis=1)[:, :NEAREST]
    keys = np.arange(len(vectors), dtype=np.int64)
    out = []
    built: dict[tuple[str, str], tuple[Any, float]] = {}
    for kind, metric, expansion in KINDS:
        if (kind, metric) not in built:
            start = time.perf_counter()
            graph = Index(ndim=vectors.shape[1], metric=metric, dtype=kind, connectivity=16,
                          expansion_add=vector_index.GRAPH_EXPANSION_ADD)
            chunk, threads = vector_index.LOAD_CHUNK, vector_index.GRAPH_THREADS
            for begin in range(0, len(vectors), chunk):
                graph.add(keys[begin : begin + chunk], vectors[begin : begin + chunk], threads=threads)
            built[(kind, metric)] = (graph, time.perf_counter() - start)
        graph, seconds = built[(kind, metric)]
        graph.expansion_search = expansion
        at10 = at100 = 0.0
        errors: list[float] = []
        start = time.perf_counter()
        for i, question in enumerate(questions):
            found = graph.search(question, NEAREST)
            got = np.asarray(found.keys, dtype=np.int64)
            cosines = 1.0 - np.asarray(found.distances, dtype=np.float64)
            kept = got >= 0
            got, cosines = got[kept], cosines[kept]
            at10 += len(set(got[:10].tolist()) & set(exact[i, :10].tolist())) / 10
            at100 += len(set(got.tolist()) & set(exact[i].tolist())) / NEAREST
            errors += np.abs(cosines[:10] - vectors[got[:10]] @ question).tolist()
        ms = (time.perf_counter() - start) * 1000 / len(questions)
        asked = len(questions)
        row = {"kind": kind, "metric": metric, "expansion_search": expansion, "recall_at_10": round(at10 / asked, 3),
               "recall_at_100": round(at100 / asked, 3), "ms_per_query": round(ms, 3),
               "bytes_per_vector": round(graph.memory_usage / len(vectors)), "build_s": round(seconds, 1),
               "cosine_error_mean": round(float(np.mean(errors)), 4),
               "cosine_error_max": round(float(np.max(errors)), 4),
               "chosen": (kind, metric, expansion) == (vector_index.GRAPH_KIND, vector_index.GRAPH_METRIC,
                                                      vector_index.GRAPH_EXPANSION_SEARCH)}
        out.append(row)
        print(f"  {kind:>4} {metric:>4} {expansion:>5}   {row['recall_at_10']:.3f}   {row['recall_at_100']:.3f}   "
              f"{row['ms_per_query']:6.2f}   {row['bytes_per_vector']:6,}   {row['build_s']:6.1f}   "
              f"{row['cosine_error_mean']:.4f} / {row['cosine_error_max']:.4f}{'   (chosen)' if row['chosen'] else ''}",
              flush=True)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vectors", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--data-dir", type=Path, default=None, help="a data dir recall_speed.py --data-dir kept")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "graph_kinds.json")
    args = parser.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    start = time.perf_counter()
    if args.data_dir is not None:
        vectors, queries = kept_vectors(args.data_dir, args.vectors, args.seed)
    else:
        vectors, queries = journal_vectors(args.vectors, args.seed)
    vectors = np.unique(vectors, axis=0)  # the index holds each distinct vector once (a node; vector_index.py)
    questions = WordLlamaEmbedder(256).embed_matrix(queries)
    print(f"{len(vectors):,} distinct journal vectors, {len(questions)} questions, the {NEAREST} nearest of each")
    print(f"  {'kind':>4} {'by':>4} {'wide':>5}   {'R@10':>5}   {'R@100':>5}   {'ms/q':>6}   {'B/vec':>6}   "
          f"{'build s':>7}   cosine error mean / max")
    rows = measure(vectors, questions)
    results = {"benchmark": "graph_kinds", "vectors": len(vectors), "questions": len(questions), "nearest": NEAREST,
               "source": str(args.data_dir) if args.data_dir else f"template journal, seed {args.seed}",
               "machine": recall_speed.machine(None), "rows": rows, "elapsed_s": round(time.perf_counter() - start, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
