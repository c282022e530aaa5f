"""The offline default embedder: WordLlama's ``l2_supercat`` static token embeddings, 256 dimensions.

Its weights (16 MB) and tokenizer ship inside the ``wordllama`` wheel, so it loads from the package's own folder
and never reaches a network; loading takes a fraction of a second and embedding runs at tens of thousands of
short texts a second on one core. Chosen over the hashing embedder and smaller truncations of the same model by
``bench/recall_quality.py`` (docs/recall.md gives the figures). The files are read directly rather than through
``WordLlama.load``, whose offline path looks for the tokenizer in a folder the wheel does not have.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...ports.embedder import Embedder

CONFIG = "l2_supercat"
DIMENSIONS = (64, 128, 256)  # the model is trained to be truncated (Matryoshka) to any of these
_MODELS: dict[int, Any] = {}  # loaded once per process, whatever the number of containers
_LOADING = threading.Lock()


class WordLlamaEmbedder(Embedder):
    def __init__(self, dimension: int = 256) -> None:
        if dimension not in DIMENSIONS:
            allowed = ", ".join(map(str, DIMENSIONS))
            raise ValueError(f"the wordllama embedder has {allowed} dimensions, not {dimension}")
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def name(self) -> str:
        return f"wordllama/{CONFIG}:{self._dimension}"

    def warm(self) -> None:
        self._load()

    def _load(self) -> Any:
        with _LOADING:
            if self._dimension not in _MODELS:
                import wordllama
                from safetensors import safe_open
                from tokenizers import Tokenizer
                from wordllama.inference import WordLlamaInference

                root = Path(wordllama.__file__).parent
                with safe_open(str(root / "weights" / f"{CONFIG}_256.safetensors"), framework="np", device="cpu") as f:
                    weights = f.get_tensor("embedding.weight")[:, : self._dimension]
                tokenizer = Tokenizer.from_file(str(root / "tokenizers" / f"{CONFIG}_tokenizer_config.json"))
                _MODELS[self._dimension] = WordLlamaInference(weights, tokenizer)
            return _MODELS[self._dimension]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [list(map(float, row)) for row in self.embed_matrix(texts)]

    def embed_matrix(self, texts: Sequence[str]) -> Any:
        """The vectors as one float32 matrix (what the embedded index stores), one row per text."""
        import numpy as np

        vectors = np.zeros((len(texts), self._dimension), dtype=np.float32)
        wanted = [i for i, text in enumerate(texts) if text.strip()]
        if wanted:
            found = np.asarray(self._load().embed([texts[i] for i in wanted], norm=True), dtype=np.float32)
            norms = np.linalg.norm(found, axis=1, keepdims=True)
            vectors[wanted] = np.divide(found, norms, out=np.zeros_like(found), where=norms > 0)
        return vectors
