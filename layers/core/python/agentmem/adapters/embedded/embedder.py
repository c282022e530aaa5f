"""A deterministic embedder for the embedded backend and tests: feature hashing, no model, no download.

Each word of the text and each character trigram of each word is hashed (BLAKE2b, so the result is the
same in every process, unlike ``hash()``) to one of ``dimension`` buckets with a sign; the sum is
scaled to unit length. Texts sharing words, or word stems ("refund" / "refunds"), land close together.
It knows nothing of meaning beyond that: good enough to exercise the semantic path end to end.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

from ...ports.embedder import Embedder

DEFAULT_DIMENSION = 256
_WORD = re.compile(r"\w+", re.UNICODE)
_WORD_WEIGHT = 0.5  # the word itself ...
_TRIGRAMS_WEIGHT = 1.0  # ... weighs less than its trigrams together, so stems ("refund"/"refunds") stay close


class HashingEmbedder(Embedder):
    def __init__(self, dimension: int = DEFAULT_DIMENSION) -> None:
        if dimension < 8:
            raise ValueError("an embedding needs at least 8 dimensions")
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._embed(text) for text in texts]

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self._dimension
        for word in _WORD.findall(text.lower()):
            self._add(vector, "w:" + word, _WORD_WEIGHT)
            padded = f"<{word}>"
            grams = [padded[i : i + 3] for i in range(len(padded) - 2)]
            for gram in grams:
                self._add(vector, "g:" + gram, _TRIGRAMS_WEIGHT / math.sqrt(len(grams)))
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector] if norm else vector

    def _add(self, vector: list[float], feature: str, weight: float) -> None:
        digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "big")
        sign = 1.0 if digest >> 63 else -1.0
        vector[digest % self._dimension] += sign * weight
