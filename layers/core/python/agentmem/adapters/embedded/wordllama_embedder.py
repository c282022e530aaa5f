"""The offline default embedder: WordLlama's ``l2_supercat`` static token embeddings, 256 dimensions.

Its weights (16 MB) and tokenizer ship inside the ``wordllama`` wheel, so it loads from the package's own folder
and never reaches a network; loading takes a fraction of a second and embedding runs at tens of thousands of
short texts a second on one core. Chosen over the hashing embedder and smaller truncations of the same model by
``bench/recall_quality.py`` (docs/recall.md gives the figures). The files are read directly rather than through
``WordLlama.load``, whose offline path looks for the tokenizer in a folder the wheel does not have.

A text's vector is the mean of its tokens' embeddings, normalised: what ``WordLlamaInference.embed`` computes,
computed here without its padding. The package pads a batch of 64 texts to its longest one and pools the padded
(64 × longest × 256) block: with a long message of 1,500 tokens among short ones, nearly all of that block is
padding (a catch-up of journal messages with 15% long ones spent 85% of its time there). Here each text's own
tokens are summed, and nothing else (``np.add.reduceat`` over a batch's tokens end to end was 20 times slower
than a sum per text).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...ports.embedder import Embedder

CONFIG = "l2_supercat"
DIMENSIONS = (64, 128, 256)  # the model is trained to be truncated (Matryoshka) to any of these
_MODELS: dict[int, tuple[Any, Any]] = {}  # (weights, tokenizer), loaded once per process, whatever the containers
TOKENIZE_BATCH = 256  # texts tokenized at a time (the tokenizer's threads share a batch)
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
                import numpy as np
                import wordllama
                from safetensors import safe_open
                from tokenizers import Tokenizer

                root = Path(wordllama.__file__).parent
                with safe_open(str(root / "weights" / f"{CONFIG}_256.safetensors"), framework="np", device="cpu") as f:
                    weights = np.ascontiguousarray(f.get_tensor("embedding.weight")[:, : self._dimension],
                                                   dtype=np.float32)
                tokenizer = Tokenizer.from_file(str(root / "tokenizers" / f"{CONFIG}_tokenizer_config.json"))
                tokenizer.no_padding()
                tokenizer.no_truncation()
                _MODELS[self._dimension] = (weights, tokenizer)
            return _MODELS[self._dimension]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [list(map(float, row)) for row in self.embed_matrix(texts)]

    def embed_matrix(self, texts: Sequence[str]) -> Any:
        """The vectors as one float32 matrix (what the embedded index stores), one row per text."""
        import numpy as np

        vectors = np.zeros((len(texts), self._dimension), dtype=np.float32)
        wanted = [i for i, text in enumerate(texts) if text.strip()]
        if not wanted:
            return vectors
        weights, tokenizer = self._load()
        clip = tokenizer.get_vocab_size(with_added_tokens=True) > len(weights)  # (never, with this model's files)
        for begin in range(0, len(wanted), TOKENIZE_BATCH):
            rows = wanted[begin : begin + TOKENIZE_BATCH]
            for row, encoding in zip(rows, tokenizer.encode_batch([texts[i] for i in rows], add_special_tokens=False),
                                     strict=True):
                ids = np.asarray(encoding.ids, dtype=np.int64)
                if ids.size:  # (a text of no known token stays a zero vector)
                    vectors[row] = weights[np.clip(ids, 0, len(weights) - 1, out=ids) if clip else ids].sum(axis=0)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)  # (the mean's norm: the count cancels out)
        return np.divide(vectors, norms, out=vectors, where=norms > 0)
