"""A message's original time (SPEC §4.1) on every backend: an append may carry ``created_at``, reading back
returns it, and journal search keeps the messages written between ``after`` and ``before``, by words and by
meaning, each hit carrying its time."""

from __future__ import annotations

import pytest
from agentmem.domain.conversations import MessageDraft
from agentmem.domain.errors import InvalidError
from agentmem.services.agents import AgentSettings
from contract_world import World

# a team's chat over three months, imported with its own dates, appended out of time order
HISTORY = [
    ("2026-02-10T16:45:00Z", "user", "We moved the launch of the billing page to March 3rd."),
    ("2026-01-05T09:15:00Z", "user", "The launch of the billing page is planned for February 2nd."),
    ("2026-01-05T09:16:30+00:00", "assistant", "Noted: billing page launch on February 2nd."),
    ("2026-01-20T11:00:00.250000Z", "user", "Lunch with Marta on Friday, she picked the Thai place."),
    ("2026-02-28T08:00:00", "user", "Final answer: the billing page launches on March 10th, not the 3rd."),
]


def _import(world: World, key: str = "team") -> None:
    world.container.agents.put(world.account, "support", AgentSettings())
    drafts = [MessageDraft(role, text, created_at=when) for when, role, text in HISTORY]  # type: ignore[arg-type]
    world.container.conversations.append(world.account, "support", key, drafts, user="ana")


def _search(world: World, query: str, **options: object) -> list[tuple[int, str]]:
    page = world.container.conversations.search_page(world.account, "support", query, user="ana", **options)  # type: ignore[arg-type]
    return [(h.seq, h.created_at) for h in page.items]


def test_a_message_keeps_the_time_it_was_written_and_reads_back_with_it(world: World) -> None:
    # When a history is appended with each message's own time, out of time order
    _import(world)
    rows, _ = world.container.conversations.messages(world.account, "support", "team", user="ana")
    # Then each keeps its time (in UTC, as every stored time is written), in the order they were appended
    assert [(m.seq, m.created_at) for m in rows] == [
        (1, "2026-02-10T16:45:00.000000Z"), (2, "2026-01-05T09:15:00.000000Z"), (3, "2026-01-05T09:16:30.000000Z"),
        (4, "2026-01-20T11:00:00.250000Z"), (5, "2026-02-28T08:00:00.000000Z"),
    ]
    # And a message appended without one has the time of its append
    world.clock.advance(minutes=3)
    result = world.container.conversations.append(world.account, "support", "team",
                                                  [MessageDraft("user", "And today?")], user="ana")
    assert result.messages[0].created_at.startswith(world.clock.now.strftime("%Y-%m-%dT%H:%M"))


def test_a_retried_append_keeps_the_first_time(world: World) -> None:
    world.container.agents.put(world.account, "support", AgentSettings())
    service = world.container.conversations
    first = service.append(world.account, "support", "c", [
        MessageDraft("user", "hello", client_id="m1", created_at="2026-01-01T10:00:00Z")], user="ana")
    again = service.append(world.account, "support", "c", [
        MessageDraft("user", "hello", client_id="m1", created_at="2026-02-01T10:00:00Z")], user="ana")
    assert again.added == 0 and again.messages[0].created_at == first.messages[0].created_at == (
        "2026-01-01T10:00:00.000000Z")


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_journal_search_keeps_the_messages_written_between_after_and_before(world: World, mode: str) -> None:
    _import(world)
    everything = _search(world, "billing page launch", mode=mode)
    assert {seq for seq, _ in everything} >= {1, 2, 3, 5}
    # When only February is asked for, only February's messages are found, each with its time
    february = _search(world, "billing page launch", mode=mode, after="2026-02-01", before="2026-03-01")
    assert sorted(february) == [(1, "2026-02-10T16:45:00.000000Z"), (5, "2026-02-28T08:00:00.000000Z")]
    # after alone, before alone (both exclusive)
    assert {seq for seq, _ in _search(world, "billing page launch", mode=mode, after="2026-02-10T16:45:00Z")} == {5}
    assert {seq for seq, _ in _search(world, "billing page launch", mode=mode, before="2026-01-06")} == {2, 3}
    # and a window holding none of them finds nothing
    assert _search(world, "billing page launch", mode=mode, after="2025-06-01", before="2025-07-01") == []


def test_a_semantic_search_is_bounded_in_time_too(world: World) -> None:
    _import(world)
    page = world.container.conversations.search_page(
        world.account, "support", "when is the billing page launch", user="ana", mode="semantic",
        after="2026-01-15T00:00:00Z", before="2026-02-15T00:00:00Z",
    )
    # (with no semantic index the words answer, saying so; either way nothing outside the window comes back)
    assert page.items and {h.seq for h in page.items} <= {1, 4}
    assert all("2026-01-15" < h.created_at < "2026-02-15" for h in page.items)


def test_the_cursor_of_a_search_belongs_to_its_time_window(world: World) -> None:
    _import(world)
    service = world.container.conversations
    page = service.search_page(world.account, "support", "billing page", user="ana", limit=1,
                               after="2026-01-01")
    assert page.next_cursor is not None
    with pytest.raises(InvalidError) as caught:
        service.search_page(world.account, "support", "billing page", user="ana", limit=1,
                            after="2026-01-02", cursor=page.next_cursor)
    assert caught.value.details["field"] == "cursor"
    following = service.search_page(world.account, "support", "billing page", user="ana", limit=1,
                                     after="2026-01-01", cursor=page.next_cursor)
    assert following.items and following.items[0].seq != page.items[0].seq
