"""Word search over the layers a caller sees (SPEC §6.1)."""

from __future__ import annotations

import pytest
from agentmem.domain.errors import InvalidError
from contract_world import World


def test_an_entry_matches_when_it_holds_any_word_of_the_query(world: World) -> None:
    # Given entries about refunds, shipping, and neither
    world.save("refund-policy", "Refunds within 14 days.", "Money back")
    world.save("delivery", "Shipping takes three days.", "Delivery times")
    world.save("opening-hours", "Open nine to five.", "When we are open")

    # When the query holds both words
    found = world.found("refunds shipping")

    # Then entries holding either word are found, and the other is not
    assert sorted(found) == ["delivery", "refund-policy"]


def test_a_query_word_matches_the_longer_words_it_starts_but_not_words_it_ends(world: World) -> None:
    # Given "refunds" in one entry's content, and "prerefund" in another's
    world.save("payouts", "Refunds are paid on Fridays.", "Payout days")
    world.save("checks", "Run the prerefund checks first.", "Fraud checks")

    # When "refund" is searched
    # Then the entry with "refunds" is found, the one with "prerefund" is not
    assert world.found("refund") == ["payouts"]
    # and letter case does not matter either way
    assert world.found("REFUND") == ["payouts"]
    assert world.found("PreRefund") == ["checks"]


def test_name_words_are_split_on_dots_dashes_and_underscores(world: World) -> None:
    # Given entries whose names join words with - . and _
    world.save("refund-policy", "Text.", "Something")
    world.save("eu.shipping_rules", "Text.", "Something else")

    # When a word from inside each name is searched
    # Then each is found by it
    assert world.found("policy") == ["refund-policy"]
    assert world.found("rules") == ["eu.shipping_rules"]
    assert world.found("shipping") == ["eu.shipping_rules"]


def test_the_whole_query_in_a_name_or_description_matches(world: World) -> None:
    # Given a description holding "🚀", a word-less query, and one holding "fund" only inside "refunds"
    world.save("launch", "Checklist for launch day.", "Launch 🚀 plan")
    world.save("payouts", "Paid on Fridays.", "Refunds schedule")
    world.save("notes", "The refunds team sits upstairs.", "Office notes")

    # When the query is "🚀" (no word at all)
    # Then the description holding it whole is found
    assert world.found("🚀") == ["launch"]

    # When the query is "fund", which starts no word anywhere
    # Then only the entry whose description holds it whole is found, not the one with it in its content
    assert world.found("fund") == ["payouts"]


def test_the_whole_query_matches_in_any_letter_case_also_beyond_ascii(world: World) -> None:
    # Given a description in capitals with a non-ASCII letter inside a word
    world.save("heating", "Delivered every winter.", "Lieferung HEIZÖL")

    # When the lower-case query holds it only mid-word
    # Then the entry is found all the same
    assert world.found("zöl") == ["heating"]


def test_the_whole_query_in_a_description_ranks_above_the_same_words_apart(world: World) -> None:
    # Given two entries holding "refund" and "policy" in the description, only one as the phrase,
    world.save("phrase", "Text.", "The refund policy for shops")
    # the other saved later and more important (so it would win every tie)
    world.save("apart", "Text.", "Policy on each refund", importance=0.9)

    # When "refund policy" is searched
    # Then the entry holding the whole query ranks first
    assert world.found("refund policy") == ["phrase", "apart"]


def test_entries_holding_more_query_words_rank_higher(world: World) -> None:
    # Given entries holding one, two and three of the query's words (in their content);
    # the fewer words an entry holds, the newer and more important it is
    world.save("three", "A refund for an order sent to Europe.", "Case a", importance=0.1)
    world.save("two", "A refund for an order.", "Case b", importance=0.5)
    world.save("one", "A refund.", "Case c", importance=0.9)

    # When all three words are searched
    # Then they rank by how many words each holds
    assert world.found("refund order europe") == ["three", "two", "one"]


def test_a_word_in_the_name_or_description_counts_more_than_one_in_the_content(world: World) -> None:
    # Given one entry with "warranty" in its name, one with it in its description, one in its content;
    # the content one is the newest and most important
    world.save("warranty", "Two years on everything.", "Guarantee terms", importance=0.1)
    world.save("terms", "Two years on everything.", "Warranty terms", importance=0.2)
    world.save("faq", "The warranty lasts two years.", "Questions", importance=1.0)

    # When "warranty" is searched
    found = world.found("warranty")

    # Then the name and description matches rank above the content match
    assert found[-1] == "faq"
    assert sorted(found[:2]) == ["terms", "warranty"]


def test_search_returns_10_by_default_up_to_100_on_request(world: World) -> None:
    # Given 12 entries that match
    for n in range(12):
        world.save(f"refund-{n:02d}", f"Refund case {n}.", "Refund case")

    # When the search gives no limit
    # Then 10 come back
    assert len(world.search("refund")) == 10
    # and a limit of 12, or of 100, returns all 12; a limit of 3 returns 3
    assert len(world.search("refund", limit=12)) == 12
    assert len(world.search("refund", limit=100)) == 12
    assert len(world.search("refund", limit=3)) == 3


@pytest.mark.parametrize("limit", [0, 101])
def test_a_limit_outside_1_to_100_is_refused(world: World, limit: int) -> None:
    # Given / When / Then a limit of 0 or 101 is refused naming the field
    with pytest.raises(InvalidError) as invalid:
        world.search("refund", limit=limit)
    assert invalid.value.details["field"] == "limit"


@pytest.mark.parametrize(
    "query", ['refund* OR "policy"', "refund AND NOT (x)", "NEAR(refund policy)", "refund^ -policy:", '"', "*"]
)
def test_query_syntax_characters_are_just_text(world: World, query: str) -> None:
    # Given an entry about a refund policy
    world.save("policy", "Refund policy: 14 days.", "Money back")

    # When the query holds characters a search engine might treat as operators
    found = world.found(query)

    # Then the search answers by the word rules, never with an error: the entry is found when a word matches
    holds_a_word = any(w in query.lower() for w in ("refund", "policy"))
    assert found == (["policy"] if holds_a_word else [])


def test_an_empty_query_is_refused(world: World) -> None:
    # Given / When / Then
    with pytest.raises(InvalidError) as invalid:
        world.search("   ")
    assert invalid.value.details["field"] == "q"


def test_results_carry_the_content_the_memory_and_the_user(world: World) -> None:
    # Given an account entry and one of ana's that both mention refunds
    world.save("refund-policy", "Refunds within 14 days.", "Money back")
    world.save("ana-refund", "Ana was refunded twice.", "Ana's refunds", user="ana")

    # When ana searches
    found = {e.name: e for e in world.search("refund", principal=world.ana)}

    # Then each result carries its full content, the memory, and the user (None for the account's)
    assert set(found) == {"refund-policy", "ana-refund"}
    shared, own = found["refund-policy"], found["ana-refund"]
    assert (shared.content, shared.memory, shared.user_id) == ("Refunds within 14 days.", "company", None)
    assert (own.content, own.memory, own.user_id) == ("Ana was refunded twice.", "company", "ana")


def test_a_user_never_finds_another_users_entries(world: World) -> None:
    # Given bob's entry about refunds
    world.save("bob-refund", "Bob was refunded.", "Bob's refunds", user="bob")

    # When ana searches for refunds
    # Then she finds nothing, and bob finds his
    assert world.found("refund", principal=world.ana) == []
    assert world.found("refund", principal=world.bob) == ["bob-refund"]


def test_search_sees_every_write_at_once(world: World) -> None:
    # Given an entry about refunds
    world.save("policy", "Refunds within 14 days.", "Money back")
    assert world.found("refunds") == ["policy"]

    # When its content changes to be about exchanges
    world.save("policy", "Exchanges within 14 days.", "Swaps")

    # Then the old words no longer find it and the new ones do
    assert world.found("refunds") == []
    assert world.found("exchanges") == ["policy"]

    # When only its description changes, then only its importance, then only its content
    world.save("policy", "Exchanges within 14 days.", "Trades")
    assert world.found("swaps") == [] and world.found("trades") == ["policy"]
    assert world.found("exchanges") == ["policy"]
    world.save("policy", "Exchanges within 14 days.", None, importance=0.9)
    assert world.found("trades") == ["policy"] and world.found("exchanges") == ["policy"]
    world.save("policy", "Repairs within 14 days.", None)
    # Then each search sees the words of the version saved last, whatever else stayed the same
    assert world.found("exchanges") == [] and world.found("repairs") == ["policy"]
    assert world.found("trades") == ["policy"]

    # When it is deleted
    world.container.entries.delete(world.account, world.memory, "policy")

    # Then nothing finds it
    assert world.found("repairs") == [] and world.found("trades") == []


def test_search_stays_within_its_memory(world: World) -> None:
    # Given two memories that both hold an entry about refunds
    world.container.memories.create(world.account, "handbook")
    world.save("policy", "Refunds within 14 days.", "Money back")
    world.save("staff-refunds", "Staff refunds need approval.", "Staff", memory="handbook")

    # When each memory is searched
    # Then each finds only its own entry
    assert world.found("refunds") == ["policy"]
    assert world.found("refunds", memory="handbook") == ["staff-refunds"]


def test_search_pages_follow_the_cursor_to_the_end_without_repeats(world: World) -> None:
    # Given 25 entries that all hold the word "invoice"
    for i in range(25):
        world.save(f"invoice-{i:02d}", f"Invoice number {i} was paid.", f"Invoice {i}")
    entries = world.container.entries

    # When the search is read 10 at a time, following next_cursor
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        page = entries.search_page(world.account, world.memory, "invoice", limit=10, cursor=cursor, mode="keyword")
        cursor = page.next_cursor
        pages.append([r.entry.name for r in page.items])
        if cursor is None:
            break

    # Then there are pages of 10, 10 and 5 holding all 25 entries once, in the order of one big search
    assert [len(p) for p in pages] == [10, 10, 5]
    everything = [n for p in pages for n in p]
    assert sorted(everything) == [f"invoice-{i:02d}" for i in range(25)]
    assert everything == world.found("invoice", limit=100)


def test_a_made_up_search_cursor_is_refused(world: World) -> None:
    # Given an entry to find
    world.save("invoice", "Invoice paid.", "Invoice")
    # When a cursor the service never gave out is sent
    # Then it is a 400 naming the cursor
    with pytest.raises(InvalidError) as refused:
        world.container.entries.search_page(world.account, world.memory, "invoice", cursor="bm90LWFuLWludA")
    assert refused.value.details["field"] == "cursor"
