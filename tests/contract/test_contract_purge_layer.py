"""Purging one layer for good: what erasing a user (SPEC §4.6, ``DELETE /v1/users/{user}``) does to each memory.

``EntryStore.purge_layer`` removes the layer's entries (checkpoints and expired ones too), its history, its
counter and its search rows, and nothing of any other layer; afterwards the layer is as new.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from agentmem.domain.clock import iso
from agentmem.domain.conversations import checkpoint_name
from agentmem.domain.errors import LayerFullError
from agentmem.domain.models import EntryDraft, Layer
from agentmem.ports.entries import EntryStore
from contract_world import World

HANDBOOK = "handbook"


def store(world: World) -> EntryStore:
    return world.container.entries.store


def layer(world: World, user: str | None, memory: str | None = None) -> Layer:
    return Layer(world.account.account_id, memory or world.memory, user)


def now(world: World) -> str:
    return iso(world.clock())


def store_save(
    world: World, target: Layer, name: str, *, layer_limit: int = 500, conversation: str | None = None
) -> None:
    """A save straight through the store (a checkpoint, or a small layer limit)."""
    moment = world.clock()
    draft = EntryDraft(
        name=name, content=f"{name} content", description=f"About {name}", conversation=conversation,
        category="checkpoint" if conversation else None,
    )
    store(world).save(
        target, draft, expected_version=None, now=iso(moment), keep_history_until=iso(moment + timedelta(days=30)),
        layer_limit=layer_limit,
    )


def history_versions(world: World, target: Layer, name: str) -> list[int]:
    return [h.version for h in store(world).history(target, name, now(world))]


def entry_count(world: World, memory: str | None = None) -> int:
    return world.container.memories.get(world.account, memory or world.memory).entry_count


def fill(world: World) -> None:
    """Two memories, each with entries in the account layer, in ana's layer and in bob's, with history."""
    world.container.memories.create(world.account, HANDBOOK)
    for memory in (world.memory, HANDBOOK):
        world.save("refund-policy", "Refunds within 14 days.", memory=memory)
        world.save("shipping", "Parcels leave within 2 days.", memory=memory)
        world.save("bob-notes", "Bob prefers email.", user="bob", memory=memory)
        world.save("ana-notes", "Ana prefers aubergine invoices.", "Ana's notes", user="ana", memory=memory)
        world.save("ana-notes", "Ana prefers aubergine invoices by post.", user="ana", memory=memory)
        world.save("ana-tea", "Ana drinks mint tea.", "Ana's tea", user="ana", memory=memory)
        world.save("ana-gone", "Deleted before the purge.", "Gone", user="ana", memory=memory)
        world.container.entries.delete(world.account, memory, "ana-gone", user="ana")


def test_purging_a_users_layer_removes_its_entries_and_history_in_every_memory(world: World) -> None:
    # Given ana's layer in two memories (two live entries, one updated, one deleted), beside other layers
    fill(world)

    # When ana's layer is purged in both memories
    removed = [store(world).purge_layer(layer(world, "ana", memory)) for memory in (world.memory, HANDBOOK)]

    # Then each purge counts the entries it removed, and nothing of ana's layer is left: entries, history
    assert removed == [2, 2]
    for memory in (world.memory, HANDBOOK):
        ana = layer(world, "ana", memory)
        assert world.names(user="ana", memory=memory) == []
        for name in ("ana-notes", "ana-tea", "ana-gone"):
            assert store(world).get(ana, name, now(world)) is None
            assert history_versions(world, ana, name) == []
        assert store(world).existing_names(ana, ["ana-notes", "ana-tea"], now(world)) == set()


def test_purging_a_users_layer_leaves_every_other_layer_as_it_was(world: World) -> None:
    # Given ana's and bob's layers and the account layer in two memories, and another tenant's "company"
    fill(world)
    world.container.memories.create(world.other, world.memory)
    world.save("ana-notes", "Globex's Ana.", "Globex notes", principal=world.other, user="ana")
    globex_ana = Layer(world.other.account_id, world.memory, "ana")

    # When ana's layer of "company" is purged
    store(world).purge_layer(layer(world, "ana"))

    # Then the account layer and bob's layer are untouched, in both memories, history included
    for memory in (world.memory, HANDBOOK):
        assert sorted(world.names(memory=memory)) == ["refund-policy", "shipping"]
        assert world.names(user="bob", memory=memory) == ["bob-notes"]
        assert history_versions(world, layer(world, None, memory), "refund-policy") == [1]
        assert history_versions(world, layer(world, "bob", memory), "bob-notes") == [1]
    # and ana's layer of the other memory, and the other tenant's ana, are untouched too
    assert sorted(world.names(user="ana", memory=HANDBOOK)) == ["ana-notes", "ana-tea"]
    assert world.read("ana-notes", user="ana", memory=HANDBOOK).version == 2
    assert history_versions(world, layer(world, "ana", HANDBOOK), "ana-gone") == [2, 1]
    assert world.read("ana-notes", principal=world.other, user="ana").content == "Globex's Ana."
    assert history_versions(world, globex_ana, "ana-notes") == [1]


def test_a_purged_layer_is_no_longer_found_by_search(world: World) -> None:
    # Given an account entry and bob's, then ana's entries (the newest rows), each found by a word of its own
    world.save("refund-policy", "Refunds within 14 days.")
    world.save("bob-notes", "Bob likes aubergine too.", "Bob's notes", user="bob")
    world.save("ana-notes", "Ana prefers aubergine invoices.", "Ana's notes", user="ana")
    world.save("ana-tea", "Ana drinks mint tea.", "Ana's tea", user="ana")
    assert world.found("aubergine", user="ana") == ["ana-notes"]

    # When ana's layer is purged, and ana saves new entries that hold none of the old words
    store(world).purge_layer(layer(world, "ana"))
    world.save("ana-new", "Ana writes in pencil.", "Ana's new notes", user="ana")
    world.save("ana-newer", "Ana writes in ink.", "Ana's newer notes", user="ana")

    # Then the old words find nothing (no search row of the purged entries is left, nor taken over by the
    # new entries), the new entries are found by their own words, and the other layers' entries still are
    assert world.found("aubergine", user="ana") == []
    assert world.found("mint", user="ana") == []
    assert world.found("pencil", user="ana") == ["ana-new"]
    assert world.found("refunds", user="ana") == ["refund-policy"]
    assert world.found("aubergine", user="bob") == ["bob-notes"]


def test_checkpoints_and_expired_entries_of_the_layer_go_too_and_are_counted(world: World) -> None:
    # Given ana's layer holding an entry, a checkpoint of a conversation, and an entry past its expiry
    # (not yet swept)
    ana = layer(world, "ana")
    world.save("ana-notes", "Ana prefers email.", "Ana's notes", user="ana")
    checkpoint = checkpoint_name("conv-1")
    store_save(world, ana, checkpoint, conversation="conv-1")
    expires = iso(world.clock.now + timedelta(hours=1))
    world.save("ana-flash", "Only for an hour.", "Short-lived", user="ana", expires_at=expires)
    world.clock.advance(hours=2)
    assert store(world).get(ana, checkpoint, now(world)) is not None
    assert store(world).get(ana, "ana-flash", now(world)) is None

    # When the layer is purged
    removed = store(world).purge_layer(ana)

    # Then all three were removed and counted, the checkpoint with its history
    assert removed == 3
    assert store(world).get(ana, checkpoint, now(world)) is None
    assert history_versions(world, ana, checkpoint) == []
    assert history_versions(world, ana, "ana-flash") == []


def test_a_save_after_the_purge_starts_again_at_version_1(world: World) -> None:
    # Given ana's entry at version 2, just read (a store may remember what it saw)
    world.save("ana-notes", "Ana prefers email.", "Ana's notes", user="ana")
    world.save("ana-notes", "Ana prefers the phone.", user="ana")
    assert world.read("ana-notes", user="ana").version == 2

    # When the layer is purged, and the name is saved again, once as "must not exist"
    store(world).purge_layer(layer(world, "ana"))
    first = world.save("ana-notes", "Ana prefers letters.", "Ana's notes, new", user="ana", version=0)
    second = world.save("ana-notes", "Ana prefers postcards.", None, user="ana", version=1)

    # Then it is created at version 1 (nothing of the old entry is kept) and its history starts over
    assert (first.created, first.entry.version) == (True, 1)
    assert (second.created, second.entry.version) == (False, 2)
    assert second.entry.description == "Ana's notes, new"
    assert [h.operation for h in world.history("ana-notes", user="ana")] == ["update", "create"]
    assert [h.version for h in world.history("ana-notes", user="ana")] == [2, 1]


def test_the_layer_limit_counts_from_zero_after_the_purge(world: World) -> None:
    # Given a layer limit of 3: ana's layer and the account layer both full
    ana, account = layer(world, "ana"), layer(world, None)
    for n in range(3):
        store_save(world, ana, f"ana-{n}", layer_limit=3)
        store_save(world, account, f"shared-{n}", layer_limit=3)
    with pytest.raises(LayerFullError):
        store_save(world, ana, "ana-extra", layer_limit=3)

    # When ana's layer is purged
    assert store(world).purge_layer(ana) == 3

    # Then three new names fit in it again, and a fourth does not
    for n in range(3):
        store_save(world, ana, f"again-{n}", layer_limit=3)
    with pytest.raises(LayerFullError):
        store_save(world, ana, "again-extra", layer_limit=3)
    # while the account layer is still full
    with pytest.raises(LayerFullError):
        store_save(world, account, "shared-extra", layer_limit=3)


def test_the_memorys_entry_count_no_longer_counts_the_purged_entries(world: World) -> None:
    # Given two account entries, one of bob's, and three of ana's (one a checkpoint, one expired)
    ana = layer(world, "ana")
    world.save("refund-policy", "Refunds within 14 days.")
    world.save("shipping", "Parcels leave within 2 days.")
    world.save("bob-notes", "Bob prefers email.", user="bob")
    world.save("ana-notes", "Ana prefers email.", "Ana's notes", user="ana")
    world.save("ana-tea", "Ana drinks mint tea.", "Ana's tea", user="ana")
    store_save(world, ana, checkpoint_name("conv-1"), conversation="conv-1")
    expires = iso(world.clock.now + timedelta(hours=1))
    world.save("ana-flash", "Only for an hour.", "Short-lived", user="ana", expires_at=expires)
    assert entry_count(world) == 6
    world.clock.advance(hours=2)
    assert entry_count(world) == 5
    assert world.container.memories.get(world.ana, world.memory).entry_count == 4

    # When ana's layer is purged
    assert store(world).purge_layer(ana) == 4

    # Then the memory counts the account's and bob's entries only, for the account and for ana
    assert entry_count(world) == 3
    assert world.container.memories.get(world.ana, world.memory).entry_count == 2
    assert world.container.memories.get(world.bob, world.memory).entry_count == 3
    # and an entry ana saves afterwards counts once
    world.save("ana-new", "Ana writes in pencil.", "Ana's new notes", user="ana")
    assert entry_count(world) == 4


def test_purging_a_layer_in_a_trashed_memory_keeps_its_count_right_when_restored(world: World) -> None:
    # Given a memory in the trash, with an account entry and two of ana's
    world.container.memories.create(world.account, HANDBOOK)
    world.save("refund-policy", "Refunds within 14 days.", memory=HANDBOOK)
    world.save("ana-notes", "Ana prefers email.", "Ana's notes", user="ana", memory=HANDBOOK)
    world.save("ana-tea", "Ana drinks mint tea.", "Ana's tea", user="ana", memory=HANDBOOK)
    world.container.memories.delete(world.account, HANDBOOK)

    # When ana's layer of it is purged, and the memory is restored
    assert store(world).purge_layer(layer(world, "ana", HANDBOOK)) == 2
    world.container.memories.restore(world.account, HANDBOOK)

    # Then it holds the account entry only
    assert entry_count(world, HANDBOOK) == 1
    assert world.names(user="ana", memory=HANDBOOK) == []
    assert world.names(memory=HANDBOOK) == ["refund-policy"]


def test_purging_an_empty_or_unknown_layer_removes_nothing(world: World) -> None:
    # Given ana's layer whose only entry was deleted (history left), and the account layer with an entry
    world.save("refund-policy", "Refunds within 14 days.")
    world.save("ana-notes", "Ana prefers email.", "Ana's notes", user="ana")
    world.container.entries.delete(world.account, world.memory, "ana-notes", user="ana")
    ana = layer(world, "ana")

    # When / Then: a layer with no entry gives 0, and its history goes all the same
    assert store(world).purge_layer(ana) == 0
    assert history_versions(world, ana, "ana-notes") == []
    # a second purge, a user never seen, a memory that does not exist: 0 each
    assert store(world).purge_layer(ana) == 0
    assert store(world).purge_layer(layer(world, "nobody")) == 0
    assert store(world).purge_layer(layer(world, "ana", "no-such-memory")) == 0
    # and nothing else was touched
    assert world.names() == ["refund-policy"]
    assert entry_count(world) == 1
