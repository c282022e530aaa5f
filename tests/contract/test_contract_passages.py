"""Long journal messages searched by passage (SPEC §6.2, domain/passages.py) on every backend: the passage that
matched is the snippet, with its offsets into the message; a short message's snippet is as it was; each message
is one hit; bad queries are a 400, never a failure.

On AWS, the tests marked ``searchable`` also give the world a search index: the OpenSearch adapter on the fake
OpenSearch (``tests/integration/fake_opensearch.py``), filled from the table by a rebuild (``agentmem reindex``),
which writes a long message's passages nested in its document as the stream indexer does."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from agentmem.adapters.aws.dynamodb.conversations import DynamoConversationStore
from agentmem.adapters.aws.dynamodb.entries import DynamoEntryStore
from agentmem.adapters.aws.opensearch import OpenSearchIndex
from agentmem.adapters.aws.reindex import TableRebuild
from agentmem.bootstrap import build_embedder
from agentmem.domain.clock import iso
from agentmem.domain.conversations import MessageDraft
from agentmem.domain.errors import InvalidError
from agentmem.domain.passages import PASSAGE_CHARS, passages
from agentmem.services.agents import AgentSettings
from agentmem.services.conversations import JournalHit
from botocore.credentials import Credentials
from contract_world import World

from tests.integration.fake_opensearch import FakeOpenSearch, serve

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


@pytest.fixture
def searchable(world: World) -> Iterator[FakeOpenSearch | None]:
    """On AWS, the world's conversation store and semantic side on an OpenSearch index (the fake's): journal search
    by words and by meaning both ask it. Embedded: the world as it is (its index is in process)."""
    if world.container.settings.backend != "aws":
        yield None
        return
    with serve() as (state, url):
        # the embedded backend's embedder (the world's AWS side has a hashing one): the same vectors on both backends,
        # so that the passage nearest by meaning is the same
        embedder = build_embedder(world.container.settings)
        assert embedder is not None
        world.container.require_adapters().embedder = embedder
        index = OpenSearchIndex.connect(url, dimension=embedder.dimension, region="eu-west-1",
                                        credentials=Credentials("AKIDEXAMPLE", "not-a-secret"))
        store = world.container.stores.conversations
        assert isinstance(store, DynamoConversationStore)
        store.index = index
        world.container.require_adapters().search_index = index
        semantic = world.container.entries.semantic
        assert semantic is not None
        semantic.deadline_s = 30.0  # the fake answers over HTTP on a loaded machine
        yield state


def _index(world: World) -> None:
    """What the stream indexer would have written by now (AWS): the table rebuilt into the index."""
    container = world.container
    if container.settings.backend != "aws":
        return
    entries, embedder = container.stores.entries, container.embedder
    assert isinstance(entries, DynamoEntryStore) and embedder is not None and container.search_index is not None
    rebuild = TableRebuild(entries.models.connection.client, str(container.settings.table), container.search_index,
                           embedder, container.stores.conversations, iso(datetime.now(UTC)))
    list(rebuild.run(journal=True))


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


def _backup_passage() -> tuple[int, int]:
    """Where the passage holding the backup paragraph is in LONG (domain/passages.py): the second of four."""
    (found,) = [p for p in passages(LONG) if "The nightly backup runs at 02:00" in p.of(LONG)]
    return found.start, found.end


@pytest.mark.parametrize("mode", ["semantic", "hybrid", "keyword"])
def test_with_a_search_index_a_long_message_s_snippet_is_the_same_passage_at_the_same_offsets(
    world: World, searchable: FakeOpenSearch | None, mode: str,
) -> None:
    # Given the long message indexed (on AWS: in OpenSearch, its passages nested in its document)
    _journal(world)
    _index(world)
    if searchable is not None:
        (stored,) = [d for d in searchable.docs().values() if d["seq"] == 2]
        assert [(p["start"], p["end"]) for p in stored["passages"]] == [(p.start, p.end) for p in passages(LONG)]
    # When the question about one paragraph is asked, by meaning, by both, by words
    page = world.container.conversations.search_page(world.account, "support",
                                                     "When does the nightly backup run, and from which replica?",
                                                     user="ana", mode=mode, limit=10)
    # Then the index answered (no fallback), the message is one hit, and its snippet is the backup paragraph's
    # passage, at the same offsets on every backend
    assert (page.mode, page.fallback) == (mode, None)
    long_hits = [h for h in page.items if h.seq == 2]
    assert len(long_hits) == 1
    assert (long_hits[0].snippet_start, long_hits[0].snippet_end) == _backup_passage()
    assert long_hits[0].snippet == _shown(LONG, long_hits[0])
    assert ("semantic" in page.stages) == (mode != "keyword")
    if searchable is not None and mode != "keyword":  # on AWS the semantic side asked the passages too
        assert any("nested" in str(r.json()) for r in searchable.sent("POST", "/_search"))


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_when_two_passages_hold_the_same_words_the_one_nearest_by_meaning_is_the_snippet_on_every_backend(
    world: World, searchable: FakeOpenSearch | None, mode: str,
) -> None:
    # Given the long message indexed, and a question whose words are all in the sentence two passages share (the
    # restore's forty minutes), with the rest of it about what the following paragraph says (costs) in words the
    # message does not hold
    _journal(world)
    _index(world)
    cut = passages(LONG)
    shared = LONG.index("The last restore took forty minutes")
    assert cut[1].start < cut[2].start <= shared < cut[1].end
    question = "restore catalogue minutes expenses spending budget cheaper"
    # When it is asked by meaning
    page = world.container.conversations.search_page(world.account, "support", question, user="ana", mode=mode,
                                                     limit=10)
    # Then the snippet is the passage the semantic side found nearest (the costs'), not the first of the two: on
    # AWS the nested passage the index named, at the same offsets as the embedded index's
    assert (page.mode, page.fallback) == (mode, None)
    (long_hit,) = [h for h in page.items if h.seq == 2]
    assert (long_hit.snippet_start, long_hit.snippet_end) == (cut[2].start, cut[2].end)
    assert "Costs went down by a fifth" in long_hit.snippet
    # and by words alone the first of the two is shown (nothing to break the tie)
    words = world.container.conversations.search_page(world.account, "support", question, user="ana",
                                                      mode="keyword", limit=10)
    (long_hit,) = [h for h in words.items if h.seq == 2]
    assert (long_hit.snippet_start, long_hit.snippet_end) == (cut[1].start, cut[1].end)
