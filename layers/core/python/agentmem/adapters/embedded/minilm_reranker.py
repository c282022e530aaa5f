"""The offline re-ranking stage: late interaction over all-MiniLM-L6-v2's token states (``minilm.py``).

For each query token, the cosine of its best-matching token of a candidate, averaged (ColBERT's MaxSim, over a
model not trained for it: no training, fixed weights). On the dev half of ``bench/recall_eval`` it moved the fused
top 50 from R@10 0.62-0.68 to 0.75-0.76 (``bench/recall_models.py``). The model reads every candidate in full
(up to 256 tokens), which costs about half a millisecond of CPU a token on numpy (10-100 ms a message). So:

* on the embedded backend the indexer reads journal messages' token states ahead, as it indexes them
  (``minilm_states.py``): a candidate found there costs no forward pass;
* the token states of the candidates read are kept in memory too (``CACHE_TOKENS`` token rows, least recently
  used out; float32, so that the one matrix product over all candidates copies them as they are), so a
  conversation searched again costs the query's own encoding and that product;
* the rest are read at search time in the fused order for as long as a budget allows (``rerank_within``); the
  candidates not read by then are left unscored (the stage keeps their fused place and answers
  ``rerank_partial``).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from ...ports.reranker import Reranker
from . import minilm
from .minilm_states import TokenStates, key

CACHE_TOKENS = 200_000  # token rows kept (384 float32 each: about 300 MB at the most)
_CHUNK_TOKENS = 64  # tokens read by one forward pass at search time, between two looks at the clock
_SECONDS_A_TOKEN = 0.0006  # a first guess of the model's speed here, corrected by what it measures


class MiniLMLateInteraction(Reranker):
    def __init__(self, cache_tokens: int = CACHE_TOKENS, store: TokenStates | None = None) -> None:
        self._cache: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._cached_rows = 0
        self._cache_tokens = cache_tokens
        self._lock = threading.Lock()
        self.store = store  # the token states read at index time (the embedded backend)
        self._seconds_a_token = _SECONDS_A_TOKEN
        self.forward_texts = 0  # texts read through the model at search time (tests and benchmarks)

    @property
    def name(self) -> str:
        return f"minilm-late-interaction/{minilm.MODEL}"

    def warm(self) -> None:
        minilm.load()

    def forget(self) -> None:
        """Empty the in-memory cache (benchmarks: a cold search)."""
        with self._lock:
            self._cache.clear()
            self._cached_rows = 0

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        return [0.0 if s is None else s for s in self.rerank_within(query, passages, None)]

    def rerank_within(self, query: str, passages: Sequence[str], budget_s: float | None) -> list[float | None]:
        started = time.perf_counter()
        model = minilm.load()
        keys = [key(p) for p in passages]
        found = self._known(keys)
        q = minilm.unit_rows(model.token_states([query])[0])
        missing = [i for i in range(len(passages)) if keys[i] not in found]
        if missing:
            lengths = [len(ids) for ids in model.token_ids([passages[i] for i in missing])]
            at = 0
            while at < len(missing):  # in the fused order: the best candidates first
                left = math.inf if budget_s is None else budget_s - (time.perf_counter() - started)
                if lengths[at] * self._seconds_a_token > left:
                    break  # the next candidate would end past the budget: the rest keep their fused place
                end, size = at + 1, lengths[at]
                while (end < len(missing) and size + lengths[end] <= _CHUNK_TOKENS
                       and (size + lengths[end]) * self._seconds_a_token <= left):
                    size += lengths[end]
                    end += 1
                began = time.perf_counter()
                texts = [passages[i] for i in missing[at:end]]
                computed = model.token_states(texts)
                self.forward_texts += len(texts)
                self._seconds_a_token = 0.7 * self._seconds_a_token + 0.3 * (time.perf_counter() - began) / size
                self._keep({keys[i]: minilm.unit_rows(s).astype(np.float32, copy=False)
                            for i, s in zip(missing[at:end], computed, strict=True)}, found)
                at = end
        read = [k for k in keys if k in found]
        scores = dict(zip(read, minilm.late_interactions(q, [found[k] for k in read]), strict=True))
        return [min(max(scores[k], 0.0), 1.0) if k in scores else None for k in keys]

    def _known(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        """The token states at hand: in memory, else read at index time (then kept in memory)."""
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            for k in keys:
                if k in self._cache:
                    self._cache.move_to_end(k)
                    found[k] = self._cache[k]
        absent = [k for k in keys if k not in found]
        if absent and self.store is not None:
            stored = self.store.get(absent)
            self._keep(stored, found)
        return found

    def _keep(self, states: dict[bytes, np.ndarray], found: dict[bytes, np.ndarray]) -> None:
        found.update(states)
        with self._lock:
            for k, unit in states.items():
                if k not in self._cache:
                    self._cache[k] = unit
                    self._cached_rows += len(unit)
            while self._cached_rows > self._cache_tokens and self._cache:
                _, dropped = self._cache.popitem(last=False)
                self._cached_rows -= len(dropped)
