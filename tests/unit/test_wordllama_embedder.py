"""The offline embedder's vectors: the normalised mean of a text's token embeddings, as the wordllama package
computes it, however long the other texts of the batch are (the embedder pools without the package's padding)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("wordllama")

from agentmem.adapters.embedded.wordllama_embedder import CONFIG, WordLlamaEmbedder


def reference(texts: list[str]) -> np.ndarray:
    """What ``WordLlamaInference.embed(norm=True)`` answers (it pads each batch of 64 to its longest text)."""
    import wordllama
    from safetensors import safe_open
    from tokenizers import Tokenizer
    from wordllama.inference import WordLlamaInference

    root = Path(wordllama.__file__).parent
    with safe_open(str(root / "weights" / f"{CONFIG}_256.safetensors"), framework="np", device="cpu") as f:
        weights = f.get_tensor("embedding.weight")
    model = WordLlamaInference(weights, Tokenizer.from_file(str(root / "tokenizers" /
                                                                f"{CONFIG}_tokenizer_config.json")))
    return np.asarray(model.embed(texts, norm=True), dtype=np.float32)


def test_vectors_are_the_packages_mean_of_tokens_beside_a_long_text() -> None:
    long = " ".join(f"Step {i}: check the invoice of order MF-{1000 + i} before the {i}th of March." for i in range(90))
    texts = ["refund for the flight", long, "ok", "Ruth booked the hotel in Lisbon\n\n```\nprint(1)\n```", long[:700]]
    got = WordLlamaEmbedder().embed_matrix(texts)
    assert got.shape == (5, 256) and got.dtype == np.float32
    np.testing.assert_allclose(got, reference(texts), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)


def test_a_blank_text_is_a_zero_vector_and_leaves_the_others_alone() -> None:
    got = WordLlamaEmbedder().embed_matrix(["", "dinner with Amir on Friday", "   "])
    assert not got[0].any() and not got[2].any()
    np.testing.assert_allclose(got[1], reference(["dinner with Amir on Friday"])[0], atol=1e-6)


def test_a_smaller_dimension_is_the_first_dimensions_normalised() -> None:
    text = "the deadline for the contract moved to Tuesday"
    full = WordLlamaEmbedder(256).embed_matrix([text])[0]
    small = WordLlamaEmbedder(64).embed_matrix([text])[0]
    assert small.shape == (64,)
    np.testing.assert_allclose(np.linalg.norm(small), 1.0, atol=1e-6)
    assert float(small @ (full[:64] / np.linalg.norm(full[:64]))) == pytest.approx(1.0, abs=1e-5)
