"""The scrub after a purge or an erasure (services/scrub.py): once per outermost operation, only when something was
removed, never after an operation that failed."""

from __future__ import annotations

import pytest
from agentmem.services.scrub import Scrub


def counting() -> tuple[Scrub, list[frozenset[str]]]:
    scrub: Scrub = Scrub()
    runs: list[frozenset[str]] = []
    scrub.steps.append(runs.append)
    return scrub, runs


def test_an_erasure_of_many_purges_scrubs_once_when_it_ends() -> None:
    # Given an operation that runs three purges inside it, each removing something
    scrub, runs = counting()
    with scrub.after():
        scrub.removed("entries")
        for _ in range(3):
            with scrub.after():
                scrub.removed("messages")
                assert runs == []  # (not while the outer one still runs)
    # Then the steps ran once, at the end, for all it removed
    assert runs == [{"entries", "messages"}]
    # and a purge of messages alone scrubs for messages alone
    with scrub.after():
        scrub.removed("messages")
    assert runs[1:] == [{"messages"}]


def test_a_sweep_that_removed_nothing_scrubs_nothing() -> None:
    scrub, runs = counting()
    with scrub.after():
        pass
    assert runs == []


def test_an_operation_that_failed_scrubs_nothing() -> None:
    scrub, runs = counting()
    with pytest.raises(LookupError), scrub.after():
        scrub.removed("messages")
        raise LookupError("no such conversation")
    assert runs == []
    # and the next operation starts afresh
    with scrub.after():
        pass
    assert runs == []
