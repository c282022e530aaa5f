"""Long journal messages searched by passage (SPEC §6.2, domain/passages.py) on every backend: the passage that
matched is the snippet, with its offsets into the message; a short message's snippet is as it was; each message
is one hit; bad queries are a 400, never a failure."""

from __future__ import annotations

import pytest
from agentmem.domain.conversations import MessageDraft
from agentmem.domain.errors import InvalidError
from agentmem.domain.passages import PASSAGE_CHARS
from agentmem.services.agents import AgentSettings
from agentmem.services.conversations import JournalHit
from contract_world import World

INTRO = ("Here is where the migration stands after this week, section by section, so that you can plan the next "
         "sprint around it. ")
PARAGRAPHS = [
    "The web tier now runs on four containers behind the load balancer. We moved the session store to Redis, "
    "which removed the sticky sessions. Deploys take about six minutes end to end. The health check hits the "
    "status page every ten seconds, and two failures in a row take a container out of the pool.",
    "Logging goes to the central collector. Each service writes JSON lines with a request id, and the "
    "dashboards group by that id. Retention is fourteen days for debug lines and ninety days for errors. "
    "Alerts page whoever is on call when the error rate stays above two percent for five minutes.",
    "The nightly backup runs at 02:00 from the Frankfurt replica, never from the primary. It is encrypted "
    "with the key kept in the vault, copied to the second region, and a restore is tested every first "
    "Monday of the month. The last restore took forty minutes for the whole catalogue.",
    "Costs went down by a fifth since the move. Most of it is the smaller database instance and the reserved "
    "capacity for the containers. The storage bill grew a little because of the longer error retention, "
    "which we agreed was worth it. Next month we look at the CDN contract.",
    "Open items: the search service still reads from the old cluster, two cron jobs have no owner, and the "
    "runbook for failover is out of date. I put them on the board with names next to each one, and we "
    "review them on Thursday with the whole team before anything else is scheduled.",
]
LONG = INTRO + "\n\n".join(PARAGRAPHS)
SHORTS = ["Thanks, that helps a lot.", "Can you remind me which replica the reports read from?",
          "Sure, the reports read from the Lisbon replica, the one next to the analytics box."]


def _journal(world: World) -> None:
    world.container.agents.put(world.account, "support", AgentSettings())
    drafts = [MessageDraft("user", "Where are we with the infrastructure migration?"),
              MessageDraft("assistant", LONG)] + [MessageDraft("user" if i % 2 == 0 else "assistant", text)
                                                  for i, text in enumerate(SHORTS)]
    world.container.conversations.append(world.account, "support", "ops", drafts, user="ana")


def _search(world: World, query: str, **options: object) -> list[JournalHit]:
    page = world.container.conversations.search_page(world.account, "support", query, user="ana",
                                                     **options)  # type: ignore[arg-type]
    return page.items


def _shown(text: str, hit: JournalHit) -> str:
    """The snippet as its offsets say it is: the text there, line breaks as spaces, "…" where cut."""
    piece = text[hit.snippet_start : hit.snippet_end].replace("\n", " ")
    return ("…" if hit.snippet_start > 0 else "") + piece + ("…" if hit.snippet_end < len(text) else "")


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_a_long_message_is_found_with_the_paragraph_that_answers_as_its_snippet(world: World, mode: str) -> None:
    # Given a long message whose answer sits in one paragraph of five
    _journal(world)
    # When a question asks about that paragraph in words far from the message's start
    hits = _search(world, "When does the nightly backup run, and from which replica?", mode=mode)
    # Then the message is found, and its snippet is the passage holding that paragraph, at the right offsets
    long_hit = next(h for h in hits if h.seq == 2)
    assert "The nightly backup runs at 02:00 from the Frankfurt replica" in long_hit.snippet
    assert 0 < long_hit.snippet_start < LONG.index("The nightly backup") < long_hit.snippet_end <= len(LONG)
    assert long_hit.snippet_end - long_hit.snippet_start <= PASSAGE_CHARS
    assert long_hit.snippet == _shown(LONG, long_hit)
    assert "Open items" not in long_hit.snippet and "Here is where the migration" not in long_hit.snippet


def test_a_short_message_keeps_its_snippet_around_the_first_word_found(world: World) -> None:
    _journal(world)
    hits = _search(world, "Lisbon replica", mode="keyword")
    short = next(h for h in hits if h.seq == 5)
    assert short.snippet == SHORTS[2]
    assert (short.snippet_start, short.snippet_end) == (0, len(SHORTS[2]))


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_each_message_is_one_hit_however_many_of_its_passages_match(world: World, mode: str) -> None:
    _journal(world)
    # a question whose words are in every paragraph of the long message
    hits = _search(world, "the containers, the replica, the error retention and the team", mode=mode, limit=20)
    seats = [(h.conversation, h.seq) for h in hits]
    assert len(seats) == len(set(seats))
    if mode != "semantic" or hits:
        assert ("ops", 2) in seats


@pytest.mark.parametrize("query", ["backup " * 2000, "x" * 10_000])
def test_a_query_of_ten_thousand_characters_is_a_400(world: World, query: str) -> None:
    _journal(world)
    with pytest.raises(InvalidError) as refused:
        _search(world, query)
    assert (refused.value.status, refused.value.details.get("field")) == (400, "q")


@pytest.mark.parametrize("query", ["🎉🎉🎉", "\x01\x02", "  …  "])
def test_a_query_without_a_word_is_a_400_naming_q(world: World, query: str) -> None:
    _journal(world)
    with pytest.raises(InvalidError) as refused:
        _search(world, query)
    assert (refused.value.status, refused.value.details.get("field")) == (400, "q")


def test_a_query_in_another_script_answers(world: World) -> None:
    _journal(world)
    world.container.conversations.append(world.account, "support", "ops", [MessageDraft(
        "user", "バックアップは毎晩2時に実行されます。" * 60)], user="ana")
    hits = _search(world, "バックアップは毎晩2時に実行されます", mode="keyword")
    assert [h.seq for h in hits][:1] == [6]
    assert hits[0].snippet_end - hits[0].snippet_start <= PASSAGE_CHARS
