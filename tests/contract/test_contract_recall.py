"""Hybrid recall (SPEC §6.2) on every backend: the modes, the fallback and its reason, meaning found where
words are not, the store's re-check of every semantic candidate, and the journal searched the same way.

A backend with no semantic index configured (the AWS contract world has no OpenSearch) answers every search in
keyword mode and says ``not_configured``; the tests that need meaning run where there is an index."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any, cast

import pytest
from agentmem.adapters.embedded.vector_index import SqliteVectorIndex
from agentmem.api.app import lambda_handler
from agentmem.bootstrap import set_container
from agentmem.client.transport import InProcessTransport
from agentmem.domain.clock import iso
from agentmem.domain.errors import InvalidError
from agentmem.domain.models import Layer
from agentmem.ports.embedder import Embedder
from agentmem.services.conversations import ConversationService
from agentmem.services.recall import SemanticSide
from contract_world import World

POLICIES = {
    "refunds": ("Refund within 30 days of purchase, to the original card.", "Our refund rules"),
    "office-cat": ("Tom the tabby cat sleeps on the printer in the Lisbon office.", "The office pet"),
    "standup": ("The team standup is at 9am every Monday in room 4.", "When the team meets"),
    "vpn": ("Connect to the VPN before opening the admin console.", "Remote access"),
}


def seed(world: World) -> None:
    for name, (content, description) in POLICIES.items():
        world.save(name, content, description)


def semantic_on(world: World) -> bool:
    return world.container.search_index is not None and world.container.embedder is not None


def recall(world: World, query: str, **options: object) -> tuple[list[str], str, str | None]:
    page = world.container.entries.search_page(world.account, world.memory, query, **options)  # type: ignore[arg-type]
    return [r.entry.name for r in page.items], page.mode, page.fallback


def test_stems_find_what_the_word_rules_did_not(world: World) -> None:
    seed(world)
    # "refunding" and "refunds" are the stem of "refund"; "meets" finds "meet"
    assert world.found("refunding") == ["refunds"]
    assert world.found("policies about refunding") == ["refunds"]


def test_a_paraphrase_is_found_by_meaning_or_the_answer_says_why_not(world: World) -> None:
    seed(world)
    names, mode, fallback = recall(world, "money back guarantee")
    if not semantic_on(world):
        assert (names, mode, fallback) == ([], "keyword", "not_configured")
        return
    # Then no word is shared, and meaning finds the refund rules first
    assert (mode, fallback) == ("hybrid", None)
    assert names[:1] == ["refunds"]
    names, mode, _ = recall(world, "feline", mode="semantic")
    assert mode == "semantic" and names[:1] == ["office-cat"]


def test_every_hit_carries_a_score_best_first_between_0_and_1(world: World) -> None:
    seed(world)
    page = world.container.entries.search_page(world.account, world.memory, "refund card purchase")
    scores = [r.score for r in page.items]
    assert scores and scores == sorted(scores, reverse=True) and all(0 < s <= 1 for s in scores)
    # min_score leaves weaker ones out
    strict = world.container.entries.search_page(world.account, world.memory, "refund card purchase",
                                                 min_score=scores[0])
    assert [r.score for r in strict.items] == [s for s in scores if s >= scores[0]]


@pytest.mark.parametrize(("options", "field"), [({"mode": "fuzzy"}, "mode"), ({"mode": ""}, "mode"),
                                                ({"min_score": 1.5}, "min_score"), ({"min_score": -0.1}, "min_score"),
                                                ({"min_score": float("nan")}, "min_score")])
def test_a_bad_mode_or_min_score_is_a_400_naming_it(world: World, options: dict[str, object], field: str) -> None:
    seed(world)
    with pytest.raises(InvalidError) as caught:
        recall(world, "refund", **options)
    assert caught.value.details["field"] == field


def test_a_deleted_or_changed_entry_is_never_returned_from_a_stale_index(world: World) -> None:
    seed(world)
    if not semantic_on(world):  # no index to be stale: a semantic search is answered by words, saying so
        assert recall(world, "feline pet", mode="semantic")[1:] == ("keyword", "not_configured")
        return
    assert "office-cat" in recall(world, "feline pet", mode="semantic")[0]
    # When the entry is deleted, and another is changed to say something else
    world.container.entries.delete(world.account, world.memory, "office-cat")
    world.save("vpn", "Bring a pastry to the Friday breakfast.", "Breakfast")
    # Then meaning never returns the deleted one, and what it returns is the current version
    page = world.container.entries.search_page(world.account, world.memory, "feline pet", mode="semantic")
    assert "office-cat" not in [r.entry.name for r in page.items]
    for ranked in page.items:
        assert ranked.entry.content == world.read(ranked.entry.name).content


def test_a_user_never_recalls_another_users_entries_by_meaning(world: World) -> None:
    world.save("pets", "Ana adopted a tabby kitten called Miso.", "Ana's pet", user="ana")
    world.save("pets", "Bob has a parrot.", "Bob's pet", user="bob")
    page = world.container.entries.search_page(world.ana, world.memory, "does she own any animals", mode="semantic")
    assert {r.entry.user_id for r in page.items} <= {"ana", None}


def test_an_off_topic_question_answers_few_hits_or_none(world: World) -> None:
    seed(world)
    names, _, _ = recall(world, "quantum chromodynamics of gluons")
    assert len(names) <= 1


# --- the fallback -------------------------------------------------------------------------------------------


class Failing(Embedder):
    """An embedder that fails as told: raise, hang past the deadline, or answer garbage."""

    def __init__(self, how: str, dimension: int) -> None:
        self.how = how
        self._dimension = dimension
        self.release = threading.Event()

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.how == "raise":
            raise ConnectionError("the model server is down")
        if self.how == "hang":
            self.release.wait(5)
        if self.how == "garbage":
            return [[float("nan")] * self._dimension for _ in texts]
        if self.how == "short":
            return [[1.0] for _ in texts]
        return [[1.0] + [0.0] * (self._dimension - 1) for _ in texts]


@pytest.mark.parametrize(("how", "reason"), [("raise", "index_unavailable"), ("hang", "timeout"),
                                             ("garbage", "index_unavailable"), ("short", "index_unavailable")])
def test_when_the_semantic_side_fails_recall_answers_by_keyword_and_says_why(
    world: World, how: str, reason: str,
) -> None:
    seed(world)
    index = world.container.search_index
    failing = Failing(how, index.dimension if index is not None else 8)
    entries = world.container.entries
    # a hang is cut at a short deadline; a side that fails at once gets a deadline no loaded machine misses, so
    # that its fallback names the failure, never this machine's pace
    deadline_s = 0.1 if how == "hang" else 30.0
    entries.semantic = SemanticSide(lambda: failing, lambda: index, entries.calibration, deadline_s=deadline_s)
    try:
        started = time.monotonic()
        for mode in ("hybrid", "semantic"):
            names, answered, fallback = recall(world, "refund", mode=mode)
            reason_here = "not_configured" if index is None else reason
            # Then the answer is the keyword one, and says why
            assert (names, answered, fallback) == (["refunds"], "keyword", reason_here)
        assert time.monotonic() - started < 3  # a hanging embedder costs the deadline, not the hang
    finally:
        failing.release.set()


def test_with_no_embedder_recall_is_keyword_and_not_configured(world: World) -> None:
    seed(world)
    entries = world.container.entries
    entries.semantic = SemanticSide(lambda: None, lambda: world.container.search_index, entries.calibration)
    assert recall(world, "refund") == (["refunds"], "keyword", "not_configured")
    assert recall(world, "refund", mode="keyword") == (["refunds"], "keyword", None)
    # and no side to be behind: the answer does not say how far behind the index is
    assert entries.search_page(world.account, world.memory, "refund").index_lag is None


# --- how far behind the semantic index is: every path of entry recall says it (index_lag) -----------------------

LAG_AGENT = "lagging"


class Api:
    """The API in process (its Lambda handler, on this world's container), called with an account key."""

    def __init__(self, world: World) -> None:
        _, secret = world.container.keys.create_key(world.account)
        self.headers = {"Authorization": f"Bearer {secret}"}
        self.transport = InProcessTransport(lambda_handler)

    def get(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        answer = self.transport.request("GET", path, params=params, headers=self.headers, body=None)
        assert answer.status == 200, answer.body
        return cast("dict[str, Any]", answer.json())

    def mcp_tool(self, tool: str, arguments: dict[str, Any], params: dict[str, str]) -> dict[str, Any]:
        """A ``tools/call`` of MCP's streamable HTTP transport (``POST /v1/mcp``): its structured result."""
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": tool, "arguments": arguments}}).encode()
        answer = self.transport.request(
            "POST", "/v1/mcp", params={"agent": LAG_AGENT, **params}, body=body,
            headers={**self.headers, "Content-Type": "application/json", "Accept": "application/json"})
        assert answer.status == 200, answer.body
        result = answer.json()["result"]
        assert result["isError"] is False, result
        return cast("dict[str, Any]", result["structuredContent"])


@pytest.fixture
def api(world: World) -> Iterator[Api]:
    set_container(world.container)
    try:
        yield Api(world)
    finally:
        set_container(None)


def lags(world: World, api: Api, query: str, *, user: str | None = None,
         mode: str | None = None) -> dict[str, tuple[str, int | None]]:
    """(mode, index_lag) as each path of entry recall answers ``query``: the service, both REST routes, a tool call
    in each dialect, and MCP (tools take no mode: they answer hybrid)."""
    params = {"q": query, **({"user": user} if user else {}), **({"mode": mode} if mode else {})}
    page = world.container.entries.search_page(world.account, world.memory, query, user=user, mode=mode)
    answers: dict[str, Any] = {
        "service": {"mode": page.mode, "index_lag": page.index_lag},
        "rest memory": api.get(f"/v1/memories/{world.memory}/search", params),
        "rest agent": api.get(f"/v1/agents/{LAG_AGENT}/search", params),
    }
    if mode is None:
        for tool in ("memory__search", "memory_recall"):
            answers[tool] = world.container.tools.execute(world.account, LAG_AGENT, tool, {"query": query},
                                                          user=user).result
        answers["mcp"] = api.mcp_tool("memory__search", {"query": query}, {"user": user} if user else {})
    return {path: (answer["mode"], answer["index_lag"]) for path, answer in answers.items()}


def test_every_path_of_recall_says_how_many_entries_of_its_scope_the_index_has_not_caught_up_with(
    world: World, api: Api,
) -> None:
    """SPEC §6.2: after an import, semantic hits missing are explained: every path of entry recall says how many
    entries of the memories and layers it searched are written but not yet embedded (0: caught up); null in
    keyword mode and where the index cannot tell (AWS)."""
    from agentmem.domain.agents import Attachment
    from agentmem.services.agents import AgentSettings

    seed(world)
    world.container.memories.create(world.account, "notes")
    world.container.agents.put(world.account, LAG_AGENT, AgentSettings(memories=(Attachment("company"),)))
    hybrid = "hybrid" if semantic_on(world) else "keyword"

    def everywhere(lag: int, mode: str = hybrid) -> dict[str, tuple[str, int | None]]:
        paths = ("service", "rest memory", "rest agent", "memory__search", "memory_recall", "mcp")
        return {path: (mode, lag if semantic_on(world) else None) for path in paths}

    # Given everything saved searched once (a search applies what is queued first): caught up
    assert lags(world, api, "refund") == everywhere(0)
    assert lags(world, api, "refund", user="ana") == everywhere(0)
    # and in keyword mode nothing is said, whatever the backend
    keyword = {path: ("keyword", None) for path in ("service", "rest memory", "rest agent")}
    assert lags(world, api, "refund", mode="keyword") == keyword
    index = world.container.search_index
    if isinstance(index, SqliteVectorIndex):  # an indexer thread beside the searches, in the middle of a batch
        index.background = True
        assert index._draining.acquire(timeout=5)
    try:
        # When an import lands: three entries of company (one saved twice), one of ana's layer of company, and
        # twenty of another memory
        for name in ("late-1", "late-2", "late-3", "late-1"):
            world.save(name, f"Expense claims of {name} are paid monthly.", "Expenses")
        world.save("late-ana", "Ana's expense claims go to her manager.", "Expenses", user="ana")
        for n in range(20):
            world.save(f"note-{n}", f"Note {n} about expense claims.", "A note", memory="notes")
        # Then a search of the account's layers counts the three entries of company not indexed yet, each once
        assert lags(world, api, "expense claims") == everywhere(3)
        # and a search as ana counts her layer's too; the other memory's never count
        assert lags(world, api, "expense claims", user="ana") == everywhere(4)
        assert lags(world, api, "expense claims", mode="keyword") == keyword
    finally:
        if isinstance(index, SqliteVectorIndex):
            index._draining.release()
            index.background = False
    # When the index catches up, every path says so again
    if isinstance(index, SqliteVectorIndex):
        index.catch_up()
    assert lags(world, api, "expense claims") == everywhere(0)
    assert lags(world, api, "expense claims", user="ana") == everywhere(0)


# --- the journal ----------------------------------------------------------------------------------------------


def test_journal_search_answers_a_question_in_natural_language(world: World) -> None:
    from agentmem.domain.conversations import MessageDraft
    from agentmem.services.agents import AgentSettings

    world.container.agents.put(world.account, "support", AgentSettings())
    service = world.container.conversations
    filler = [MessageDraft("user" if i % 2 == 0 else "assistant", f"When did we say the report number {i} was due? "
                           f"I did ask about it on day {i}.") for i in range(36)]
    wedding = MessageDraft("user", "My sister Marta is getting married in June, the wedding is in Porto.")
    for start in range(0, len(filler), 18):
        service.append(world.account, "support", f"s{start}", filler[start:start + 18], user="ana")
    service.append(world.account, "support", "s-wedding", [wedding], user="ana")
    page = service.search_page(world.account, "support", "What did Ana say about her sister's wedding?", user="ana")
    assert [(h.conversation, h.seq) for h in page.items][:1] == [("s-wedding", 1)]
    assert "wedding" in page.items[0].snippet


def test_the_store_reads_many_entries_at_once_as_it_reads_one(world: World) -> None:
    # Given live entries, a deleted one, one that expires in a minute, and a user's copy
    seed(world)
    world.save("gone", "To be deleted.", "Gone")
    world.container.entries.delete(world.account, world.memory, "gone")
    soon = iso(world.clock() + timedelta(minutes=1))
    world.save("brief", "Only for a minute.", "Brief", expires_at=soon)
    world.save("refunds", "Ana's own refund terms.", None, user="ana")
    store = world.container.entries.store
    account = Layer(world.account.account_id, world.memory, None)
    ana = Layer(world.account.account_id, world.memory, "ana")
    keys = [(account, "refunds"), (account, "vpn"), (account, "gone"), (account, "brief"), (account, "nobody"),
            (ana, "refunds"), (ana, "vpn")]
    # When they are read at once, now and after the expiry
    now = iso(world.clock())
    found = store.get_many(keys, now)
    world.clock.advance(minutes=2)
    later = store.get_many(keys, iso(world.clock()))
    # Then what exists is there, as one read finds it, and nothing else
    assert set(found) == {(account, "refunds"), (account, "vpn"), (account, "brief"), (ana, "refunds")}
    for (layer, name), entry in found.items():
        assert entry == store.get(layer, name, now)
    assert found[(ana, "refunds")].content == "Ana's own refund terms."
    assert (account, "brief") not in later and len(later) == 3


def test_the_store_reads_more_entries_at_once_than_one_statement_holds(world: World) -> None:
    # Given 130 entries, and 250 keys asked at once: each entry once, each twice in a user's layer, and 90
    # names nobody holds
    for i in range(130):
        world.save(f"note-{i:03d}", f"Note number {i}.", f"Note {i}")
    store = world.container.entries.store
    account = Layer(world.account.account_id, world.memory, None)
    ana = Layer(world.account.account_id, world.memory, "ana")
    keys = [(account, f"note-{i:03d}") for i in range(130)] + [(ana, f"note-{i:03d}") for i in range(30)]
    keys += [(account, f"none-{i:03d}") for i in range(90)]
    # When they are read at once
    found = store.get_many(keys, iso(world.clock()))
    # Then every entry that exists is there, under its own key, and nothing else
    assert set(found) == {(account, f"note-{i:03d}") for i in range(130)}
    assert all(found[(account, f"note-{i:03d}")].content == f"Note number {i}." for i in range(130))


def _speakers_journal(world: World) -> None:
    """A conversation written as many transcripts are, each line opening with its speaker's name: the names are
    on every line, what was said is not."""
    from agentmem.domain.conversations import MessageDraft
    from agentmem.services.agents import AgentSettings

    world.container.agents.put(world.account, "support", AgentSettings())
    small_talk = ["Haha yeah, totally!", "How was your weekend?", "Lol same here.", "Sure thing, talk soon!",
                  "Did you watch the game last night?", "Pretty chill, just relaxing at home."]
    lines = [MessageDraft("user" if i % 2 == 0 else "assistant",
                          f"{'Caroline' if i % 2 == 0 else 'Melanie'}: {small_talk[(i * 7 + i // 6) % 6]}")
             for i in range(240)]
    lines[130] = MessageDraft("user", "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.")
    for start in range(0, len(lines), 40):
        world.container.conversations.append(world.account, "support", "transcript", lines[start:start + 40])


def test_a_line_said_again_and_again_is_one_hit(world: World) -> None:
    # Given a transcript where the same few lines of small talk come back many times
    _speakers_journal(world)
    # When it is searched for words those lines hold
    page = world.container.conversations.search_page(world.account, "support", "weekend talk", limit=10,
                                                     mode="keyword")
    # Then each line shows once, the best-ranked copy of it, and the other lines matching have room
    texts = [hit.snippet for hit in page.items]
    assert len(texts) == len(set(texts)) >= 2
    assert {"Caroline: How was your weekend?", "Melanie: How was your weekend?", "Caroline: Sure thing, talk soon!",
            "Melanie: Sure thing, talk soon!"} == set(texts)


def test_a_name_on_every_line_does_not_bring_the_small_talk_in(world: World) -> None:
    # Given a transcript whose every line opens with its speaker's name
    _speakers_journal(world)
    # When a question names the speaker
    page = world.container.conversations.search_page(world.account, "support",
                                                     "When did Caroline go to the LGBTQ support group?")
    # Then the line that answers it comes first
    assert [(h.conversation, h.seq) for h in page.items][:1] == [("transcript", 131)]
    if semantic_on(world) and page.fallback is None:
        # and a line holding nothing but the name is no match, by words or by meaning: none is padded in. The
        # lines up to two before and after the answer may follow it, on its evidence (neighbours), and below it
        assert {h.seq for h in page.items} <= {129, 130, 131, 132, 133}, [h.snippet for h in page.items]
        assert all(h.score < page.items[0].score for h in page.items[1:])


def _talk(world: World, conversation: str, talk: Sequence[tuple[str, str]]) -> None:
    """The support agent's conversation of these (role, text) messages."""
    from agentmem.domain.conversations import MessageDraft
    from agentmem.services.agents import AgentSettings

    world.container.agents.put(world.account, "support", AgentSettings())
    world.container.conversations.append(world.account, "support", conversation,
                                         [MessageDraft(role, text) for role, text in talk])


def _two_events_journal(world: World) -> None:
    """A trip planned over many messages about the seats on the wedding flights, and once, in few words, the
    cancelled train."""
    _talk(world, "trip", [
        ("user", "Booking seats on the wedding flights to Porto tonight."),
        ("assistant", "Seats on the wedding flights to Porto: booking opens at 8."),
        ("user", "Booked two seats together on the wedding flights to Porto, 14A and 14B."),
        ("assistant", "Your booking is confirmed: wedding flights to Porto, seats 14A and 14B."),
        ("user", "Can you add a bag to that booking?"),
        ("assistant", "Done: one 23 kg bag on the outbound flight."),
        ("user", "The weather looks good for the weekend."),
        ("assistant", "Sunny, 24 degrees on Saturday."),
        ("user", "The train home was cancelled."),
        ("assistant", "Noted: a coach at 18:30 instead."),
        ("user", "Thanks, that is all for today."),
        ("assistant", "Have a good trip!"),
    ])


def test_a_question_naming_two_events_finds_each_of_them(world: World) -> None:
    # Given a conversation that speaks of one event in many messages and of the other once, in few words
    _two_events_journal(world)
    # When a question asks which of the two came first
    page = world.container.conversations.search_page(
        world.account, "support", "What came first: booking seats on the wedding flights to Porto, or the cancelled "
        "train?", limit=3)
    # Then the top holds the message of each event, not only those of the one spoken of most
    seqs = [h.seq for h in page.items]
    assert 9 in seqs, [(h.snippet, h.score) for h in page.items]
    assert any(seq in seqs for seq in (1, 2, 3, 4))


def test_a_question_whether_one_event_came_before_another_finds_each_of_them(world: World) -> None:
    # Given the same conversation
    _two_events_journal(world)
    # When a question asks yes or no whether one of the two events came before the other, without "or"
    page = world.container.conversations.search_page(
        world.account, "support", "Did we book seats on the wedding flights to Porto before the train was cancelled?",
        limit=3)
    # Then the top holds the message of each event
    seqs = [h.seq for h in page.items]
    assert 9 in seqs, [(h.snippet, h.score) for h in page.items]
    assert any(seq in seqs for seq in (1, 2, 3, 4))


def test_deep_keeps_each_event_a_question_names_where_the_model_favours_one(world: World) -> None:
    from agentmem.ports.reranker import Reranker
    from agentmem.services.recall import Reranking

    class FavouringPorto(Reranker):
        """Reads every message of the wedding flights as a better answer than any other."""

        def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
            return [min(1.0, 0.1 + 0.4 * p.lower().count("porto")) for p in passages]

    # Given the two events' conversation, and a model that prefers the one spoken of most
    _two_events_journal(world)
    world.container.conversations.reranking = Reranking(lambda: FavouringPorto(), deadline_s=30.0)
    # When the question naming both is searched deep
    page = world.container.conversations.search_page(
        world.account, "support", "What came first: booking seats on the wedding flights to Porto, or the cancelled "
        "train?", limit=3, mode="deep")
    # Then the model ran, and the top still holds the message of each event
    seqs = [h.seq for h in page.items]
    assert page.stages[-1] == "rerank"
    assert 9 in seqs, [(h.snippet, h.score) for h in page.items]
    assert any(seq in seqs for seq in (1, 2, 3, 4))


def test_a_question_asking_two_things_of_one_event_is_not_cut(world: World) -> None:
    # Given the same conversation, and a question asking two things of the wedding flights
    _two_events_journal(world)
    # When it is searched, its top is that of the whole question: its second half alone ("and why") finds nothing
    page = world.container.conversations.search_page(
        world.account, "support", "Which seats did we get on the wedding flights, and what did the bag cost?", limit=3)
    assert page.items and page.items[0].seq in (1, 2, 3, 4, 5, 6)


def chat_with_a_spy(world: World, monkeypatch: pytest.MonkeyPatch, talk: list[tuple[str, str]],
                    ) -> tuple[ConversationService, list[str]]:
    """Agent "friend" with conversation "chat" of ``talk`` (role, text) for user ana, and the texts its journal
    search's semantic side is asked to embed, appended to the list as each search asks."""
    from agentmem.domain.conversations import MessageDraft
    from agentmem.services.agents import AgentSettings

    world.container.agents.put(world.account, "friend", AgentSettings())
    service = world.container.conversations
    service.append(world.account, "friend", "chat", [MessageDraft(role, text) for role, text in talk], user="ana")
    asked: list[str] = []
    original = service._semantic

    def spy(*args: object, **options: object) -> object:
        asked.append(str(args[4]))  # the text the semantic side embeds
        return original(*args, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(service, "_semantic", spy)
    return service, asked


def test_a_name_the_conversation_calls_someone_by_is_asked_by_meaning_without_it(
    world: World, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentmem.domain.recall import aspects

    # Given a chat where Kwame calls Rosa by name and Rosa speaks of herself as "I" (domain/addressing.py)
    talk = [("assistant", "hey Rosa! how are the girls?"), ("user", "the hens are fine, laying again"),
            ("assistant", "Rosa are you sure about leaving them out in this frost?"),
            ("user", "I decided: they stay in the coop and I buy the heated waterer, 60 dollars"),
            ("assistant", "goodnight Rosa"), ("user", "my cousin Marta is getting married in June, in Porto")]
    service, asked = chat_with_a_spy(world, monkeypatch, talk)

    def search(question: str) -> list[int]:
        asked.clear()
        page = service.search_page(world.account, "friend", question, user="ana", conversation="chat")
        return [hit.seq for hit in page.items]

    # When a question names Rosa, the semantic side is asked again without her name (the words keep it)
    seqs = search("What did Rosa decide about the hens' water?")
    assert "rosa" in asked[0].lower() and asked[1:], asked
    assert all("rosa" not in text.lower() and "decide" in text.lower() for text in asked[1:]), asked
    assert seqs[0] == 4
    # and each thing an order question names is asked without it too
    question = "Which came first: Rosa's heated waterer or Marta's wedding?"
    search(question)
    first = 1 + len(aspects(question))  # the whole question's and each thing's, asked as the search starts
    assert len(aspects(question)) == 2 and sum("rosa" in text.lower() for text in asked[:first]) == 2, asked
    assert len(asked) == first + 2 and all("rosa" not in text.lower() for text in asked[first:]), asked
    # But a name spoken of, never called, is asked with it, once
    assert search("When is Marta getting married?")[0] == 6
    assert asked == ["When is Marta getting married?"]
    # A name no message holds is not asked by meaning at all, where the store counts its words (the embedded
    # one); a store that cannot count asks the question as it is
    search("Did Kofi help with the hens' coop?")
    counts = service.store.word_counts(["kofi", "hens"])
    assert counts[0] == 0 or counts[1] == {"kofi": 0, "hens": 1}
    if counts[0] == 0:
        assert asked == ["Did Kofi help with the hens' coop?"]
    else:
        assert len(asked) == 1 and "kofi" not in asked[0].lower() and "coop" in asked[0], asked
    # and in mode deep the re-ranking stage reads the question without the name too
    read: list[str] = []
    rerank = service._rerank
    monkeypatch.setattr(service, "_rerank", lambda question, *args: read.append(question) or rerank(question, *args))
    service.search_page(world.account, "friend", "What did Rosa decide about the hens' water?", user="ana",
                        conversation="chat", mode="deep")
    assert len(read) == 1 and "rosa" not in read[0].lower() and "decide" in read[0], read
    # and a question of nothing but a called name is asked once, as it is (nothing would be left to ask)
    search("Rosa?")
    assert asked == ["Rosa?"], asked
    # and a search by words alone, or by meaning alone, is never asked again
    for mode in ("keyword", "semantic"):
        asked.clear()
        service.search_page(world.account, "friend", "What did Rosa decide?", user="ana", conversation="chat",
                            mode=mode)
        assert len(asked) == 1, (mode, asked)


def test_a_name_called_with_a_cry_an_emoji_or_a_question_is_asked_by_meaning_without_it(
    world: World, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a chat where Kwame calls Rosa the ways people chat: no greeting before her name, nothing after it
    # but a cry, an emoji or a question to her
    talk = [("assistant", "that's great Rosa! sun at last"), ("user", "the hens are laying again"),
            ("assistant", "Rosa did you see the fence??"), ("user", "my wrist is still purple from the fall"),
            ("assistant", "oh no Rosa. I'm so sorry"), ("assistant", "Rosa 🥹 you don't have to"),
            ("user", "I decided: they stay in the coop and I buy the heated waterer")]
    service, asked = chat_with_a_spy(world, monkeypatch, talk)
    # When a question names her, the semantic side is asked again without her name
    page = service.search_page(world.account, "friend", "What happened to Rosa's wrist?", user="ana",
                               conversation="chat")
    assert "rosa" in asked[0].lower() and asked[1:], asked
    assert all("rosa" not in text.lower() and "wrist" in text.lower() for text in asked[1:]), asked
    # and where the meaning answers (the AWS contract world has no index: the words alone rank there), what she
    # said of it comes first, above the calls that match her name by words
    if "semantic" in page.stages:
        assert page.items[0].seq == 4, [(hit.seq, hit.snippet) for hit in page.items]
    assert 4 in [hit.seq for hit in page.items]


def test_a_match_among_others_on_its_topic_ranks_above_a_stray_one_elsewhere(world: World) -> None:
    from agentmem.domain.conversations import MessageDraft
    from agentmem.services.agents import AgentSettings

    # Given a journal of two conversations: a kitchen being renovated, over many messages, and a chat about
    # everything else in which the plumber comes up once, in passing
    world.container.agents.put(world.account, "support", AgentSettings())
    kitchen = [
        ("user", "The kitchen tiles arrive on Tuesday, grey ones."),
        ("assistant", "Noted: grey tiles on Tuesday."),
        ("user", "The plumber wants the old sink out before he starts."),
        ("assistant", "So the sink comes out on Thursday evening."),
        ("user", "He is coming on Friday for the tap."),
        ("assistant", "Friday it is."),
        ("user", "The plumber quoted 180 for the tap and the waste pipe."),
        ("assistant", "180 for the plumbing, noted."),
    ]
    chat = [
        ("user", "The weather was awful all week."),
        ("assistant", "Rain again on Saturday, they say."),
        ("user", "My cousin is a plumber, he fixed a tap for my neighbour once."),
        ("assistant", "Handy to have in the family."),
        ("user", "We watched a film about a lighthouse keeper."),
        ("assistant", "Was it good?"),
        ("user", "Slow, but the sea was beautiful."),
        ("assistant", "I like slow films."),
    ]
    for key, talk in (("kitchen", kitchen), ("chat", chat)):
        world.container.conversations.append(world.account, "support", key,
                                             [MessageDraft(role, text) for role, text in talk])
    # When the whole journal is searched for when the plumber does the tap
    page = world.container.conversations.search_page(world.account, "support", "when is the plumber doing the tap")
    hits = [(h.conversation, h.seq) for h in page.items]
    if not (semantic_on(world) and page.fallback is None):
        # (words alone rank by BM25, and the answer says so: a match's conversation is a hybrid search's evidence)
        assert page.mode == "keyword" and page.fallback is not None and ("kitchen", 5) in hits
        return
    # Then the kitchen's messages about the plumber and the tap come before the chat's stray mention of both
    assert ("chat", 3) in hits, [(h.snippet, h.score) for h in page.items]
    assert hits.index(("kitchen", 5)) < hits.index(("chat", 3))
    assert hits.index(("kitchen", 7)) < hits.index(("chat", 3)), [(h.snippet, h.score) for h in page.items]


def _door_code_journal(world: World) -> None:
    _talk(world, "house", [
        ("user", "Set one up for the dog walker please, Tuesdays and Thursdays."),
        ("assistant", "Done: the dog walker's door code is 4821."),
        ("user", "Great. Also, is the back gate locked at night?"),
        ("assistant", "Yes, the back gate locks at 22:00 and opens at 07:00."),
        ("user", "And turn the heating down to 17 at night."),
        ("assistant", "The heating drops to 17 °C from 23:00."),
        ("user", "The walker told a neighbour her code. Change it."),
        ("assistant", "Changed the dog walker's door code: it is 7730 from today, on the same days."),
    ])


def test_a_question_about_how_things_stand_now_finds_the_latest_word_first(world: World) -> None:
    # Given a code said once, then changed, in much the same words
    _door_code_journal(world)
    def asked(question: str) -> list[tuple[int, float]]:
        page = world.container.conversations.search_page(world.account, "support", question, limit=5)
        assert page.mode == ("hybrid" if semantic_on(world) else "keyword")
        found = [(h.seq, h.score) for h in page.items]
        assert [score for _, score in found] == sorted((score for _, score in found), reverse=True)
        assert all(0.0 <= score <= 1.0 for _, score in found)
        return found

    plain = asked("What is the dog walker's door code?")
    now = asked("What is the dog walker's door code now?")
    if semantic_on(world):
        # When the question asks what it is, Then the shorter statement holding its words comes first, and when
        # it asks what it is now, the change does
        assert [seq for seq, _ in plain][:1] == [2], plain
        assert [seq for seq, _ in now][:1] == [8], now
    else:  # by words alone (keyword mode), "now" changes nothing
        assert [seq for seq, _ in now] == [seq for seq, _ in plain], (plain, now)
