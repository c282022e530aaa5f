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

    @property
    def name(self) -> str:
        """Which model wrote a vector, with its dimension (``wordllama/l2_supercat:256``). An index records it,
        so vectors of two embedders are never compared: a change of embedder means ``agentmem reindex``."""
        return f"{type(self).__name__}:{self.dimension}"

    def warm(self) -> None:  # noqa: B027 - most embedders have nothing to load
        """Load what the first call would (a model's weights), so that a query's deadline never pays for it."""

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order."""

    def embed_one(self, text: str) -> list[float]:
        return self.embed([text])[0]
