"""Text embeddings for the semantic index (Bedrock on AWS, a deterministic hashing embedder embedded)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence


class Embedder(ABC):
    """Turns texts into vectors of ``dimension`` floats.

    Contract: the same text always gives the same vector; a text with something to embed gives a unit
    vector (so inner product = cosine similarity, which is what the index mapping uses), and a text with
    nothing in it (empty, only spaces) the zero vector.
    """

    @property
    @abstractmethod
    def dimension(self) -> int: ...

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order."""

    def embed_one(self, text: str) -> list[float]:
        return self.embed([text])[0]
