"""The memory index and the pinned block of the context (SPEC §5) read only what they show, and say exactly
what reading every entry of every layer would: the same text, the same count of the rest, the same pinned
entries, on every backend, wherever the 6,000 characters run out (in the user's layer, in the account's
under shadowing, in an attached memory, or nowhere)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from agentmem.adapters.aws.dynamodb.context_index import INDEX_READ
from agentmem.domain.agents import Attachment
from agentmem.domain.clock import iso
from agentmem.domain.context import IndexSection, memory_index, pinned_block
from agentmem.domain.models import Entry, Layer
from agentmem.ports.entries import EntryStore
from contract_world import World
from test_contract_conversations import OWN, Chat, PassRunner, make_agent, run_passes


@pytest.fixture
def jobs(world: World) -> Iterator[PassRunner]:
    yield from run_passes(world)


def whole_layer(world: World, memory: str, user: str | None) -> list[Entry]:
    """Every entry of a layer, read whole, page by page (what the context read before it read less)."""
    store = world.container.entries.store
    now = iso(world.clock())
    found: list[Entry] = []
    cursor: str | None = None
    while True:
        page = store.list_layer(Layer(world.account.account_id, memory, user), now, limit=100, cursor=cursor)
        found += [store.get(Layer(world.account.account_id, memory, user), e.name, now) or e for e in page.items]
        if page.next_cursor is None:
            return [e for e in found if e.conversation is None]
        cursor = page.next_cursor


def expected(world: World) -> dict[str, Any]:
    """The index and pinned block computed from every entry of every layer the agent reads."""
    sections, everything = [], []
    for memory in (OWN, "company"):
        listed = whole_layer(world, memory, "ana") + whole_layer(world, memory, None)
        sections.append(IndexSection(memory, listed, own=memory == OWN))
        everything += listed
    index = memory_index(sections, now=world.clock())
    return {"text": index.text, "shown": index.shown, "more": index.more,
            "pinned": pinned_block(everything, world.clock()).names}


def fill(world: World, memory: str, user: str | None, count: int, *, prefix: str, width: int = 40) -> None:
    for n in range(count):
        world.save(f"{prefix}-{n:03d}", f"Content {n}.", f"{prefix} {n} " + "d" * (width + n % 7),
                   memory=memory, user=user)
        world.clock.advance(seconds=1)


CUTS = {
    # where the 6,000 characters run out: (own user, own account, company user, company account)
    "nothing_cut": (5, 5, 5, 5),
    "in_the_users_layer": (150, 20, 10, 10),
    "in_the_accounts_layer": (30, 120, 10, 10),
    "in_the_attached_memory": (20, 20, 30, 150),
}


@pytest.mark.parametrize("cut", list(CUTS))
def test_the_index_read_to_its_limit_says_what_the_whole_listing_says(
    world: World, jobs: PassRunner, cut: str
) -> None:
    make_agent(world, memories=(Attachment("company"),))
    own_user, own_account, company_user, company_account = CUTS[cut]
    # Given both layers of the agent's memory and of an attached one, the account's partly shadowed
    fill(world, OWN, None, own_account, prefix="shared")
    fill(world, OWN, "ana", own_user, prefix="mine")
    for n in range(0, own_account, 3):  # ana's copies of every third shared name hide the account's
        world.save(f"shared-{n:03d}", "Ana's copy.", f"ana's shared {n}", memory=OWN, user="ana")
        world.clock.advance(seconds=1)
    fill(world, "company", None, company_account, prefix="policy")
    fill(world, "company", "ana", company_user, prefix="note", width=70)
    # and entries that expire, pinned ones among them, and pinned entries of every kind in every layer
    world.save("soon-gone", "Gone.", "expires", memory=OWN, user="ana",
               expires_at=iso(world.clock() + timedelta(seconds=30)))
    world.save("soon-gone-pin", "Gone.", "expires", memory="company", visibility="read_only", importance=1.0,
               expires_at=iso(world.clock() + timedelta(seconds=30)))
    for n in range(6):
        world.save(f"pin-{n}", f"Pinned {n}.", "pinned", memory=OWN, user="ana", category="user_profile",
                   importance=0.7 + n / 20)
        world.save(f"ro-{n}", f"Rule {n}.", "rule", memory="company", visibility="read_only",
                   importance=0.5 + n / 10)
        world.clock.advance(seconds=1)
    world.clock.advance(seconds=60)
    # When the context is built
    context = Chat(world).context()
    # Then it is what reading every entry would give
    want = expected(world)
    index = context["memory_index"]
    assert (index["text"], index["shown"], index["more"]) == (want["text"], want["shown"], want["more"])
    assert context["pinned"]["entries"] == want["pinned"] and len(want["pinned"]) == 10
    assert len(index["text"]) <= 6000 and "soon-gone" not in index["text"]
    assert (index["more"] > 0) == (cut != "nothing_cut")


def test_the_index_reads_no_more_entries_than_it_can_show(world: World, jobs: PassRunner) -> None:
    make_agent(world, memories=(Attachment("company"),))
    fill(world, OWN, "ana", 300, prefix="mine")
    fill(world, "company", None, 300, prefix="policy")
    store = world.container.entries.store
    read: list[int] = []
    index_page = store.index_page

    def counting(*args: Any, **kwargs: Any) -> Any:
        page = index_page(*args, **kwargs)
        read.append(len(page.items))
        return page

    listed: list[int] = []
    list_layer = store.list_layer

    def listing(*args: Any, **kwargs: Any) -> Any:
        page = list_layer(*args, **kwargs)
        listed.append(len(page.items))
        return page

    store.index_page = counting  # type: ignore[method-assign]
    store.list_layer = listing  # type: ignore[method-assign]
    fetched = _rows_fetched(store)
    index = Chat(world).context()["memory_index"]
    # the index shows about a hundred of the 600; what was read is within a line's minimum of what shows
    assert index["shown"] + index["more"] == 600 and index["more"] > 0
    assert read and sum(read) >= index["shown"]
    assert sum(read) <= index["shown"] + 6000 // 6 and listed == []
    if fetched is not None:
        # DynamoDB: ana's 300 (her layer is read whole, for the names that shadow the account's), and of the
        # company's 300 a read's worth beyond what shows at most
        assert index["shown"] <= sum(fetched) <= 300 + index["shown"] + 2 * INDEX_READ


def _rows_fetched(store: EntryStore) -> list[int] | None:
    """The listing rows each of the store's index requests brought back, counted from now on (None: a store
    that reads its listing otherwise)."""
    reads = getattr(store, "index", None)
    if reads is None:
        return None
    fetched: list[int] = []
    more = reads.more

    def counting(layer: Layer, now: str, read: Any, **kwargs: Any) -> None:
        before = len(read.rows)
        more(layer, now, read, **kwargs)
        fetched.append(len(read.rows) - before)

    reads.more = counting
    return fetched


def test_token_counts_are_kept_per_text_and_counted_again_when_an_entry_changes(
    world: World, jobs: PassRunner
) -> None:
    make_agent(world)
    fill(world, OWN, "ana", 30, prefix="mine")
    world.save("prof", "Likes tea.", "About the user", memory=OWN, user="ana", category="user_profile",
               importance=0.9)
    service = world.container.conversations
    service.count_tokens("warm")  # the counter the service would use
    real = service._count_tokens
    counted: list[str] = []

    def counting(text: str) -> int:
        counted.append(text)
        return real(text)

    service._count_tokens = counting
    first = Chat(world).context()
    assert first["pinned"]["text"] in counted and first["memory_index"]["text"] in counted
    # Building it again with nothing changed counts nothing again, and gives the same counts
    counted.clear()
    again = Chat(world).context()
    assert counted == [] and again["tokens"] == first["tokens"] and again["memory_index"] == first["memory_index"]
    # A new version of the pinned entry changes the pinned block: it is counted again; the index, whose
    # text the new content does not change, is not
    world.clock.advance(seconds=1)
    world.save("prof", "Likes green tea.", "About the user", memory=OWN, user="ana")
    after = Chat(world).context()
    assert "Likes green tea." in after["pinned"]["text"]
    assert counted == [after["pinned"]["text"]] and after["pinned"]["tokens"] == real(after["pinned"]["text"])
    # and a new description changes the index: counted again
    counted.clear()
    world.save("mine-000", "Content.", "a new description", memory=OWN, user="ana")
    changed = Chat(world).context()
    assert counted == [changed["memory_index"]["text"]] and "a new description" in changed["memory_index"]["text"]
