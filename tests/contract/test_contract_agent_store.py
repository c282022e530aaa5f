"""The AgentStore port on every backend: agents, their own memory, attachments, trash and purge (SPEC §3).

These tests talk to the store itself (the service's rules are tested through the service): what one
``save_agent`` writes together, what a memory then shows, and that nothing is half-written.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import timedelta

import pytest
from agentmem.domain.agents import AgentRecord, Attachment, Capabilities, SummaryThresholds
from agentmem.domain.clock import iso
from agentmem.domain.errors import AttachedError, ConflictError, NotFoundError, VersionConflictError
from agentmem.domain.models import MemoryRecord
from agentmem.ports.agents import AgentStore
from agentmem.ports.memories import MemoryStore
from contract_world import World
from test_contract_concurrency import run_threads

OWN = "agent:support"


def agents(world: World) -> AgentStore:
    return world.container.stores.agents


def memories(world: World) -> MemoryStore:
    return world.container.stores.memories


def now(world: World) -> str:
    return iso(world.clock())


def acme(world: World) -> str:
    return world.account.account_id


def new_agent(world: World, name: str = "support", *, user: str | None = None, **fields: object) -> AgentRecord:
    moment = now(world)
    return AgentRecord(acme(world), name, user, moment, moment, **fields)


def create(world: World, name: str = "support", *, user: str | None = None, **fields: object) -> AgentRecord:
    return agents(world).save_agent(new_agent(world, name, user=user, **fields), expected_version=0)


def update(world: World, current: AgentRecord, expected: int | None = None, **changes: object) -> AgentRecord:
    changed = replace(current, updated_at=now(world), **changes)
    return agents(world).save_agent(changed, expected_version=current.version if expected is None else expected)


def trash(world: World, name: str = "support") -> AgentRecord:
    deleted = world.clock()
    return agents(world).trash_agent(acme(world), name, iso(deleted), iso(deleted + timedelta(days=30)))


def memory(world: World, name: str) -> MemoryRecord | None:
    return memories(world).get_memory(acme(world), name, now(world))


def attached_to(world: World, name: str) -> set[str]:
    record = memory(world, name)
    assert record is not None
    return set(record.attached_to)


def add_memory(world: World, name: str, user: str | None = None) -> None:
    memories(world).create_memory(MemoryRecord(acme(world), name, user, now(world)))


# -- create, read, list ---------------------------------------------------------------------------------
def test_an_agent_is_created_at_version_1_with_every_setting_and_its_own_memory(world: World) -> None:
    # Given an agent with every setting away from its default
    add_memory(world, "handbook")
    record = new_agent(
        world, instructions="Answer refunds.", memories=(Attachment("handbook", True), Attachment("company")),
        capabilities=Capabilities(memory=False), window_messages=8, summary=SummaryThresholds(5_000, 12),
        user_conversations_write_shared=True, anonymous_private_writes="shared",
    )

    # When it is created
    saved = agents(world).save_agent(record, expected_version=0)

    # Then it comes back, and reads back, as given at version 1, its attachments in their order
    assert saved == replace(record, version=1)
    assert agents(world).get_agent(acme(world), "support", now(world)) == saved
    # and its own memory exists, the account's like the agent
    own = memory(world, OWN)
    assert own is not None and (own.user_id, own.deleted_at, own.entry_count) == (None, None, 0)
    assert agents(world).get_agent(acme(world), "nobody", now(world)) is None


def test_a_users_agent_owns_its_own_memory_as_that_user(world: World) -> None:
    # Given / When ana's agent is created
    saved = create(world, "ana-bot", user="ana")

    # Then the agent and its own memory are ana's
    own = memory(world, "agent:ana-bot")
    assert (saved.user_id, own is not None and own.user_id) == ("ana", "ana")


def test_agents_are_listed_by_scope_and_by_trash(world: World) -> None:
    # Given the account's "support", ana's "ana-bot", bob's "bob-bot", and bob's "old-bot" in the trash
    create(world, "support")
    create(world, "ana-bot", user="ana")
    create(world, "bob-bot", user="bob")
    create(world, "old-bot", user="bob")
    trash(world, "old-bot")

    def listed(*, trash: bool = False, user: str | None = None, include_account: bool = True) -> list[str]:
        found = agents(world).list_agents(acme(world), now(world), trash=trash, user_id=user,
                                          include_account=include_account)
        return [a.name for a in found]

    # When they are listed for the account, for ana, and for ana's own only
    # Then each listing holds what that scope sees, by name, live ones apart from the trash
    assert listed() == ["ana-bot", "bob-bot", "support"]
    assert listed(user="ana") == ["ana-bot", "support"]
    assert listed(user="ana", include_account=False) == ["ana-bot"]
    assert listed(trash=True) == ["old-bot"]
    assert listed(trash=True, user="ana") == []
    # and another account sees none of them
    assert agents(world).list_agents(world.other.account_id, now(world), trash=False, user_id=None,
                                     include_account=True) == []


# -- versions -------------------------------------------------------------------------------------------
def test_creating_an_agent_twice_is_a_version_conflict(world: World) -> None:
    # Given "support" at version 1
    create(world)

    # When it is created again, and again once it is in the trash
    with pytest.raises(VersionConflictError) as live:
        create(world, instructions="Another.")
    trash(world)
    with pytest.raises(VersionConflictError) as trashed:
        create(world)

    # Then both are refused naming version 1, and the first stays as it was
    assert (live.value.current_version, trashed.value.current_version) == (1, 1)
    stored = agents(world).get_agent(acme(world), "support", now(world))
    assert stored is not None and (stored.version, stored.instructions) == (1, "")


def test_a_stale_update_is_a_version_conflict_and_changes_nothing(world: World) -> None:
    # Given "support" created, then updated to version 2
    first = create(world, instructions="One.")
    second = update(world, first, instructions="Two.")
    assert (second.version, second.created_at) == (2, first.created_at)

    # When a writer still holding version 1 saves, and one saves an agent that does not exist
    with pytest.raises(VersionConflictError) as stale:
        update(world, first, instructions="Stale.")
    with pytest.raises(VersionConflictError) as missing:
        agents(world).save_agent(new_agent(world, "ghost"), expected_version=3)

    # Then they are refused with the stored versions, and version 2 stands
    assert (stale.value.current_version, missing.value.current_version) == (2, 0)
    stored = agents(world).get_agent(acme(world), "support", now(world))
    assert stored is not None and (stored.version, stored.instructions) == (2, "Two.")
    assert agents(world).get_agent(acme(world), "ghost", now(world)) is None


def test_an_agent_in_the_trash_is_not_changed(world: World) -> None:
    # Given "support" in the trash
    create(world)
    trashed = trash(world)

    # When it is saved at its version
    # Then it is refused: it must be restored first
    with pytest.raises(ConflictError):
        update(world, trashed, instructions="Changed.")


def test_an_agent_whose_own_memory_name_is_taken_is_not_created(world: World) -> None:
    # Given a memory already named "agent:support"
    add_memory(world, OWN)

    # When the agent "support" is created
    with pytest.raises(ConflictError):
        create(world, memories=(Attachment("company"),))

    # Then nothing is written: no agent, and "company" attached to nobody
    assert agents(world).get_agent(acme(world), "support", now(world)) is None
    assert attached_to(world, "company") == set()


# -- attachments ----------------------------------------------------------------------------------------
def test_attachments_show_on_the_memories_and_keep_them_out_of_the_trash(world: World) -> None:
    # Given "handbook", and two agents attaching "company" (one of them "handbook" too, writable)
    add_memory(world, "handbook")
    support = create(world, memories=(Attachment("handbook", writable=True), Attachment("company")))
    create(world, "triage", memories=(Attachment("company"),))

    # When the memories are read
    # Then each names the agents attaching it, and the agent keeps its order
    assert attached_to(world, "company") == {"support", "triage"}
    assert attached_to(world, "handbook") == {"support"}
    assert [a.memory for a in support.memories] == ["handbook", "company"]
    # and a memory that is attached is not moved to the trash
    with pytest.raises(AttachedError) as refused:
        world.container.memories.delete(world.account, "company")
    assert sorted(refused.value.details["attached_to"]) == ["support", "triage"]
    assert memory(world, "company").deleted_at is None


@pytest.mark.parametrize("missing", ["handbook", "nowhere"])
def test_attaching_a_trashed_or_missing_memory_fails_and_writes_nothing(world: World, missing: str) -> None:
    # Given "handbook" in the trash ("nowhere" never existed)
    add_memory(world, "handbook")
    world.container.memories.delete(world.account, "handbook")

    # When an agent is created attaching "company" and that memory
    with pytest.raises(NotFoundError) as refused:
        create(world, memories=(Attachment("company"), Attachment(missing)))

    # Then it is refused naming the memory, and nothing is written
    assert (refused.value.details["field"], refused.value.details["memory"]) == ("memories", missing)
    assert agents(world).get_agent(acme(world), "support", now(world)) is None
    assert memory(world, OWN) is None
    assert attached_to(world, "company") == set()


def test_an_update_attaching_a_trashed_memory_leaves_the_agent_as_it_was(world: World) -> None:
    # Given "support" attaching "company", and "handbook" in the trash
    current = create(world, memories=(Attachment("company"),))
    add_memory(world, "handbook")
    world.container.memories.delete(world.account, "handbook")

    # When an update swaps "company" for "handbook"
    with pytest.raises(NotFoundError):
        update(world, current, memories=(Attachment("handbook"),))

    # Then the agent is still at version 1 attaching "company"
    stored = agents(world).get_agent(acme(world), "support", now(world))
    assert stored == current
    assert attached_to(world, "company") == {"support"}


def test_detaching_on_update_frees_the_memory(world: World) -> None:
    # Given "support" attaching "company" read-only and "handbook" writable
    add_memory(world, "handbook")
    current = create(world, memories=(Attachment("company"), Attachment("handbook", writable=True)))

    # When an update keeps "handbook", now read-only, and lets go of "company"
    updated = update(world, current, memories=(Attachment("handbook"),))

    # Then "company" is attached to nobody and can go to the trash; "handbook" is still attached
    assert updated.memories == (Attachment("handbook", writable=False),)
    assert attached_to(world, "company") == set()
    assert attached_to(world, "handbook") == {"support"}
    world.container.memories.delete(world.account, "company")
    assert memory(world, "company").deleted_at is not None


# -- trash, restore, purge ------------------------------------------------------------------------------
def test_the_trash_and_restore_take_the_own_memory_along(world: World) -> None:
    # Given "support" with an entry in its own memory
    create(world)
    world.save("refund-policy", "Refunds within 14 days.", memory=OWN)

    # When it is moved to the trash
    trashed = trash(world)

    # Then the agent and its own memory are in the trash together, out of sight
    own = memory(world, OWN)
    assert trashed.deleted_at is not None and own is not None
    assert (own.deleted_at, own.purge_after) == (trashed.deleted_at, trashed.purge_after)
    with pytest.raises(NotFoundError):
        world.read("refund-policy", memory=OWN)
    with pytest.raises(NotFoundError):
        trash(world)

    # When it is restored
    restored = agents(world).restore_agent(acme(world), "support", now(world))

    # Then both are back with the entry
    assert (restored.deleted_at, restored.purge_after) == (None, None)
    assert memory(world, OWN).deleted_at is None
    assert world.read("refund-policy", memory=OWN).content == "Refunds within 14 days."
    with pytest.raises(ConflictError):
        agents(world).restore_agent(acme(world), "support", now(world))


def test_an_agent_whose_own_memory_another_agent_attaches_stays_out_of_the_trash(world: World) -> None:
    # Given "triage" attaching "support"'s own memory
    create(world)
    create(world, "triage", memories=(Attachment(OWN),))

    # When "support" is moved to the trash, or purged
    with pytest.raises(AttachedError) as refused:
        trash(world)
    with pytest.raises(AttachedError):
        agents(world).purge_agent(acme(world), "support")

    # Then it is refused naming "triage", and "support" stays live with its memory
    assert refused.value.details["attached_to"] == ["triage"]
    stored = agents(world).get_agent(acme(world), "support", now(world))
    assert stored is not None and stored.deleted_at is None
    assert memory(world, OWN).deleted_at is None


def test_a_purge_removes_the_agent_its_own_memory_and_attachments(world: World) -> None:
    # Given "support" attaching "company", with three entries in its own memory (one of them ana's)
    create(world, memories=(Attachment("company"),))
    world.save("refund-policy", memory=OWN)
    world.save("opening-hours", memory=OWN)
    world.save("tone", "Be casual.", "Ana's tone", user="ana", memory=OWN)

    # When it is purged (live: a purge needs no trash first)
    removed = agents(world).purge_agent(acme(world), "support")

    # Then it counts what went, and the agent, its memory and its attachments are gone
    assert (removed["memories"], removed["entries"]) == (1, 3)
    assert agents(world).get_agent(acme(world), "support", now(world)) is None
    assert memory(world, OWN) is None
    assert attached_to(world, "company") == set()
    with pytest.raises(NotFoundError):
        agents(world).purge_agent(acme(world), "support")
    # and an agent made again by that name starts with an empty own memory
    create(world)
    assert world.names(memory=OWN) == [] and world.names(memory=OWN, user="ana") == []


@pytest.mark.parametrize("memories_first", [False, True])
def test_agents_past_their_time_in_the_trash_are_purged(world: World, memories_first: bool) -> None:
    # Given "support" (attaching "company", an entry in its own memory) in the trash, and a live "triage"
    create(world, memories=(Attachment("company"),))
    world.save("refund-policy", memory=OWN)
    create(world, "triage")
    trash(world)

    # When the purge runs before the 30 days are over
    # Then nothing goes
    assert agents(world).purge_due(now(world)) == []
    assert agents(world).get_agent(acme(world), "support", now(world)) is not None

    # When the 30 days pass
    world.clock.advance(days=30, minutes=1)
    # Then the agent reads as gone at once
    assert agents(world).get_agent(acme(world), "support", now(world)) is None
    # and the sweeps purge it, whichever of memories and agents runs first
    if memories_first:
        assert memories(world).purge_due(now(world)) == 1  # its own memory, nothing else
    assert agents(world).purge_due(now(world)) == [(acme(world), "support")]
    assert memories(world).purge_due(now(world)) == 0
    assert memory(world, OWN) is None
    assert attached_to(world, "company") == set()
    assert [a.name for a in agents(world).list_agents(acme(world), now(world), trash=False, user_id=None,
                                                      include_account=True)] == ["triage"]


def test_an_agent_past_its_trash_time_can_be_created_again_before_any_sweep(world: World) -> None:
    # Given "support" with an entry, in the trash for 30 days and a minute, not swept
    create(world, instructions="Old.")
    world.save("refund-policy", memory=OWN)
    trash(world)
    world.clock.advance(days=30, minutes=1)

    # When it is created afresh
    fresh = create(world, instructions="New.")

    # Then it is a new agent at version 1, with an empty live own memory
    assert (fresh.version, fresh.instructions, fresh.deleted_at) == (1, "New.", None)
    assert memory(world, OWN).deleted_at is None
    assert world.names(memory=OWN) == []


# -- concurrency ----------------------------------------------------------------------------------------
def test_eight_writers_updating_with_the_version_they_read_lose_no_update(world: World) -> None:
    # Given "support" at version 1, and eight writers that each, ten times, read it and save with its version
    create(world)
    landed: list[tuple[int, str]] = []
    conflicts: list[int] = []
    lock = threading.Lock()

    def writer(n: int) -> None:
        for i in range(10):
            seen = agents(world).get_agent(acme(world), "support", now(world))
            assert seen is not None
            text = f"writer {n} save {i}"
            try:
                saved = update(world, seen, instructions=text)
            except VersionConflictError as conflict:
                assert conflict.current_version > seen.version
                with lock:
                    conflicts.append(conflict.current_version)
                continue
            with lock:
                landed.append((saved.version, text))

    # When they all run at once
    run_threads(8, writer)

    # Then every save landed or was refused, each landed save made its own version, and the stored
    # agent is the last one that landed
    assert len(landed) + len(conflicts) == 80 and landed
    versions = sorted(v for v, _ in landed)
    assert versions == list(range(2, 2 + len(landed)))
    stored = agents(world).get_agent(acme(world), "support", now(world))
    assert stored is not None
    assert (stored.version, stored.instructions) == max(landed)
