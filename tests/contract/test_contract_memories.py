"""Memories: create, list, trash, restore, purge, and tenant isolation (SPEC §3.1, §10)."""

from __future__ import annotations

import pytest
from agentmem.domain.errors import AttachedError, ConflictError, ForbiddenError, InvalidError, NotFoundError
from contract_world import World


def test_creating_a_memory_twice_returns_the_same_one(world: World) -> None:
    # Given no memory named "handbook"
    memories = world.container.memories

    # When it is created, and created again an hour later (from_name with create_if_missing)
    first, created = memories.create(world.account, "handbook")
    world.clock.advance(hours=1)
    again, created_again = memories.create(world.account, "handbook")

    # Then the first call created it and the second returned the same memory
    assert (created, created_again) == (True, False)
    assert (again.name, again.created_at, again.user_id) == ("handbook", first.created_at, None)
    assert [m.name for m in memories.list_memories(world.account)].count("handbook") == 1


def test_a_memory_name_is_unique_in_the_account_whatever_its_scope(world: World) -> None:
    # Given an account memory "handbook" and ana's memory "diary"
    memories = world.container.memories
    memories.create(world.account, "handbook")
    memories.create(world.account, "diary", user="ana")

    # When a user, another user or the account takes one of those names
    # Then each is refused with a conflict
    with pytest.raises(ConflictError):
        memories.create(world.ana, "handbook")
    with pytest.raises(ConflictError):
        memories.create(world.bob, "diary")
    with pytest.raises(ConflictError):
        memories.create(world.account, "diary")
    # and ana's key creating "diary" again just returns hers
    diary, created = memories.create(world.ana, "diary")
    assert (diary.user_id, created) == ("ana", False)


@pytest.mark.parametrize("name", ["Handbook", "hand book", "m" * 65, "context.notes", "agent:support-bot", ""])
def test_a_memory_name_follows_the_entry_name_rules(world: World, name: str) -> None:
    # Given / When a memory is created with a name the entry rules refuse (or an agent's own memory's name)
    with pytest.raises(InvalidError) as invalid:
        world.container.memories.create(world.account, name)

    # Then it is refused naming the memory, and no memory is made
    assert invalid.value.details["field"] == "memory"
    assert [m.name for m in world.container.memories.list_memories(world.account)] == ["company"]


def test_a_64_character_memory_name_is_fine(world: World) -> None:
    # Given / When / Then
    name = "m" * 64
    assert world.container.memories.create(world.account, name)[0].name == name


def test_list_gives_entry_counts_and_attaching_agents(world: World) -> None:
    # Given "company" with two account entries attached to two agents, and an empty "handbook"
    world.save("refund-policy")
    world.save("opening-hours")
    world.container.memories.create(world.account, "handbook")
    world.container.stores.memories.attach(world.account.account_id, "company", "triage", writable=False)
    world.container.stores.memories.attach(world.account.account_id, "company", "support-bot", writable=True)

    # When the memories are listed
    listed = {m.name: m for m in world.container.memories.list_memories(world.account)}

    # Then each shows its entry count and the agents attaching it
    assert set(listed) == {"company", "handbook"}
    assert (listed["company"].entry_count, listed["company"].attached_to) == (2, ("support-bot", "triage"))
    assert (listed["handbook"].entry_count, listed["handbook"].attached_to) == (0, ())
    assert world.container.memories.get(world.account, "company").entry_count == 2


def test_a_users_entry_count_leaves_out_other_users_layers(world: World) -> None:
    # Given "company" with one account entry, two of ana's and three of bob's
    world.save("refund-policy")
    for name in ("a1", "a2"):
        world.save(name, user="ana")
    for name in ("b1", "b2", "b3"):
        world.save(name, user="bob")
    memories = world.container.memories

    # When the account and ana look at the memory
    # Then the account counts every layer, and ana the account's and her own only
    assert memories.get(world.account, "company").entry_count == 6
    assert memories.get(world.ana, "company").entry_count == 3
    assert {m.name: m.entry_count for m in memories.list_memories(world.ana)}["company"] == 3
    assert {m.name: m.entry_count for m in memories.list_memories(world.account, "bob")}["company"] == 4


def test_a_user_lists_the_accounts_memories_and_their_own_only(world: World) -> None:
    # Given ana's "ana-diary", bob's "bob-diary" and the account's "company"
    memories = world.container.memories
    memories.create(world.ana, "ana-diary")
    memories.create(world.bob, "bob-diary")

    # When ana lists memories
    # Then she sees the account's and hers, never bob's
    assert sorted(m.name for m in memories.list_memories(world.ana)) == ["ana-diary", "company"]
    assert sorted(m.name for m in memories.list_memories(world.account)) == ["ana-diary", "bob-diary", "company"]
    with pytest.raises(NotFoundError):
        memories.get(world.ana, "bob-diary")


def test_a_deleted_memory_goes_to_the_trash_and_out_of_sight(world: World) -> None:
    # Given "company" with an entry
    world.save("refund-policy", "Refunds within 14 days.")
    memories = world.container.memories

    # When it is deleted
    trashed = memories.delete(world.account, "company")

    # Then it is in the trash, and neither it nor its entries can be seen
    assert trashed.deleted_at is not None
    assert [m.name for m in memories.list_memories(world.account)] == []
    assert [m.name for m in memories.list_memories(world.account, trash=True)] == ["company"]
    with pytest.raises(NotFoundError):
        memories.get(world.account, "company")
    with pytest.raises(NotFoundError):
        world.read("refund-policy")
    with pytest.raises(NotFoundError):
        world.search("refunds")
    with pytest.raises(NotFoundError):
        world.save("new-entry")
    # and its name is not free while it is in the trash
    with pytest.raises(ConflictError):
        memories.create(world.account, "company")


def test_a_user_key_cannot_delete_the_accounts_memory(world: World) -> None:
    # Given the account's "company"
    # When ana's user key deletes it
    with pytest.raises(ForbiddenError):
        world.container.memories.delete(world.ana, "company")

    # Then it is refused and the memory stays
    assert world.container.memories.get(world.account, "company").deleted_at is None


def test_a_user_deletes_and_restores_their_own_memory(world: World) -> None:
    # Given ana's "ana-diary" with an entry
    memories = world.container.memories
    memories.create(world.ana, "ana-diary")
    world.save("monday", "Went running.", "Monday", principal=world.ana, memory="ana-diary")

    # When ana deletes it, and restores it the next day
    memories.delete(world.ana, "ana-diary")
    with pytest.raises(NotFoundError):
        world.read("monday", principal=world.ana, memory="ana-diary")
    world.clock.advance(days=1)
    memories.restore(world.ana, "ana-diary")

    # Then her entry is back
    assert world.read("monday", principal=world.ana, memory="ana-diary").content == "Went running."


def test_an_attached_memory_cannot_be_deleted(world: World) -> None:
    # Given "company" attached to two agents
    world.save("refund-policy", "Refunds within 14 days.")
    store = world.container.stores.memories
    store.attach(world.account.account_id, "company", "support-bot", writable=False)
    store.attach(world.account.account_id, "company", "billing-bot", writable=True)

    # When it is deleted
    with pytest.raises(AttachedError) as attached:
        world.container.memories.delete(world.account, "company")

    # Then it is refused with 409 attached, listing the agents, and the memory and its entries stay
    assert (attached.value.status, attached.value.code) == (409, "attached")
    assert sorted(attached.value.details["attached_to"]) == ["billing-bot", "support-bot"]
    assert world.read("refund-policy").content == "Refunds within 14 days."

    # When both agents let go of it
    store.detach(world.account.account_id, "company", "support-bot")
    store.detach(world.account.account_id, "company", "billing-bot")

    # Then it can be deleted
    assert world.container.memories.delete(world.account, "company").deleted_at is not None


def test_a_trashed_memory_is_restored_with_its_entries_within_30_days(world: World) -> None:
    # Given "company" with an entry at version 2 in the account layer and one in ana's, deleted 29 days ago
    world.save("refund-policy", "Refunds within 14 days.")
    world.save("refund-policy", "Refunds within 30 days.")
    world.save("tone", "Be casual.", "Ana's tone", user="ana")
    memories = world.container.memories
    memories.delete(world.account, "company")
    world.clock.advance(days=29)
    world.container.sweep()

    # When it is restored
    restored = memories.restore(world.account, "company")

    # Then it is live again with all its entries as they were
    assert restored.deleted_at is None
    entry = world.read("refund-policy")
    assert (entry.content, entry.version) == ("Refunds within 30 days.", 2)
    assert world.read("tone", principal=world.ana).content == "Be casual."
    assert memories.get(world.account, "company").entry_count == 2


def test_a_memory_in_the_trash_for_30_days_is_purged_with_its_entries(world: World) -> None:
    # Given "company" with entries, deleted 30 days and a minute ago
    world.save("refund-policy", "Refunds within 14 days.")
    world.save("tone", "Be casual.", "Ana's tone", user="ana")
    memories = world.container.memories
    memories.delete(world.account, "company")
    world.clock.advance(days=30, minutes=1)

    # When it is restored
    # Then it is no longer there to restore
    with pytest.raises(NotFoundError):
        memories.restore(world.account, "company")
    assert memories.list_memories(world.account, trash=True) == []

    # When the purge runs
    purged = memories.purge_due()

    # Then it is deleted for good: the name is free, and a new memory by that name is empty
    assert purged == 1
    fresh, created = memories.create(world.account, "company")
    assert (created, fresh.entry_count) == (True, 0)
    with pytest.raises(NotFoundError):
        world.read("refund-policy")
    with pytest.raises(NotFoundError):
        world.read("tone", principal=world.ana)
    assert world.search("refunds") == []


def test_the_sweep_purges_the_trash_too(world: World) -> None:
    # Given "company" deleted 31 days ago
    world.save("refund-policy", "Refunds within 14 days.")
    world.container.memories.delete(world.account, "company")
    world.clock.advance(days=31)

    # When the housekeeping sweep runs
    swept = world.container.sweep()

    # Then it reports the purge, and the name can be taken afresh
    assert swept["memories_purged"] == 1
    assert world.container.memories.create(world.account, "company")[1] is True


def test_another_accounts_memory_is_not_found_never_forbidden(world: World) -> None:
    # Given acme's "company" with an entry, and globex's account key
    world.save("refund-policy", "Refunds within 14 days.")
    memories = world.container.memories
    globex = world.other

    # When globex tries to see or touch it in any way
    attempts = [
        lambda: memories.get(globex, "company"),
        lambda: memories.delete(globex, "company"),
        lambda: memories.restore(globex, "company"),
        lambda: world.read("refund-policy", principal=globex),
        lambda: world.save("refund-policy", "Hijacked.", principal=globex),
        lambda: world.names(principal=globex),
        lambda: world.search("refunds", principal=globex),
        lambda: world.container.entries.history(globex, "company", "refund-policy"),
        lambda: world.container.entries.delete(globex, "company", "refund-policy"),
    ]
    # Then every attempt is a 404, as if it did not exist
    for attempt in attempts:
        with pytest.raises(NotFoundError):
            attempt()
    assert memories.list_memories(globex) == []

    # When globex makes its own "company"
    _, created = memories.create(globex, "company")

    # Then it is a separate, empty memory, and acme's entry is untouched
    assert created is True
    assert world.names(principal=globex) == []
    stored = world.read("refund-policy")
    assert (stored.content, stored.version) == ("Refunds within 14 days.", 1)
