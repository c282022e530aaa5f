"""The offline re-ranking stage: late interaction over all-MiniLM-L6-v2's token states (``minilm.py``).

For each query token, the cosine of its best-matching token of a candidate, averaged (ColBERT's MaxSim, over a
model not trained for it: no training, fixed weights). On the dev half of ``bench/recall_eval`` it moved the fused
top 50 from R@10 0.62-0.68 to 0.75-0.76 (``bench/recall_models.py``). The model reads every candidate in full
(up to 256 tokens), which costs 10-200 ms of CPU a message on numpy: the token states of the candidates read are
kept (``CACHE_TOKENS`` token rows in float16, least recently used out), so a conversation searched again costs the
query's own encoding and the matrix products only.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from ...ports.reranker import Reranker
from . import minilm

CACHE_TOKENS = 400_000  # token rows kept (384 float16 each: about 300 MB at the most)


class MiniLMLateInteraction(Reranker):
    def __init__(self, cache_tokens: int = CACHE_TOKENS) -> None:
        self._cache: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._cached_rows = 0
        self._cache_tokens = cache_tokens
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return f"minilm-late-interaction/{minilm.MODEL}"

    def warm(self) -> None:
        minilm.load()

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        model = minilm.load()
        q = minilm.unit_rows(model.token_states([query])[0])
        states = self._states(model, passages)
        return [min(max(minilm.late_interaction(q, s.astype(np.float32)), 0.0), 1.0) for s in states]

    def _states(self, model: minilm.MiniLM, passages: Sequence[str]) -> list[np.ndarray]:
        keys = [hashlib.blake2b(p.encode("utf-8", "surrogatepass"), digest_size=16).digest() for p in passages]
        found: dict[int, np.ndarray] = {}
        with self._lock:
            for i, key in enumerate(keys):
                if key in self._cache:
                    self._cache.move_to_end(key)
                    found[i] = self._cache[key]
        missing = [i for i in range(len(passages)) if i not in found]
        if missing:
            computed = model.token_states([passages[i] for i in missing])
            with self._lock:
                for i, states in zip(missing, computed, strict=True):
                    unit = minilm.unit_rows(states).astype(np.float16)
                    found[i] = unit
                    if keys[i] not in self._cache:
                        self._cache[keys[i]] = unit
                        self._cached_rows += len(unit)
                while self._cached_rows > self._cache_tokens and self._cache:
                    _, dropped = self._cache.popitem(last=False)
                    self._cached_rows -= len(dropped)
        return [found[i] for i in range(len(passages))]
