"""Agents and what they attach (SPEC §3.1, §3.2): scope rules, limits, the trash, purge."""

from __future__ import annotations

import pytest
from agentmem.domain.agents import Attachment
from agentmem.domain.errors import (
    AttachedError,
    ConflictError,
    ForbiddenError,
    InvalidError,
    NotFoundError,
    VersionConflictError,
)
from agentmem.services.agents import AgentSettings
from contract_world import World


def attach(*names: str, writable: tuple[str, ...] = ()) -> AgentSettings:
    return AgentSettings(memories=tuple(Attachment(n, n in writable) for n in names))


def attached_to(world: World, memory: str) -> tuple[str, ...]:
    return world.container.memories.get(world.account, memory).attached_to


def test_an_agent_comes_with_its_own_memory_addressable_as_agent_name(world: World) -> None:
    # Given an account agent
    agent, created = world.container.agents.put(world.account, "support", AgentSettings(instructions="Help."))
    # Then it was created at version 1 with its own memory
    assert (created, agent.version, agent.own_memory, agent.user_id) == (True, 1, "agent:support", None)
    # and that memory takes entries like any other, in both layers
    world.save("tone", "Warm.", "Tone", memory="agent:support")
    world.save("tone", "Formal with me.", "Tone", memory="agent:support", user="ana")
    assert world.read("tone", memory="agent:support", user="ana").content == "Formal with me."
    names = {m.name for m in world.container.memories.list_memories(world.account)}
    assert "agent:support" in names


def test_attachments_show_in_attached_to_and_block_deleting_the_memory(world: World) -> None:
    # Given company attached to two agents
    world.container.agents.put(world.account, "support", attach("company"))
    world.container.agents.put(world.account, "scribe", attach("company", writable=("company",)))
    assert sorted(attached_to(world, "company")) == ["scribe", "support"]
    # When the memory is deleted, it is refused, listing the agents, and it stays
    with pytest.raises(AttachedError) as refused:
        world.container.memories.delete(world.account, "company")
    assert sorted(refused.value.details["attached_to"]) == ["scribe", "support"]
    # When both agents let go of it, it can be deleted
    world.container.agents.put(world.account, "support", attach())
    world.container.agents.put(world.account, "scribe", attach())
    assert attached_to(world, "company") == ()
    assert world.container.memories.delete(world.account, "company").deleted_at is not None


def test_ten_attachments_are_allowed_and_the_eleventh_is_refused(world: World) -> None:
    names = [f"m{i}" for i in range(11)]
    for name in names:
        world.container.memories.create(world.account, name)
    agent, _ = world.container.agents.put(world.account, "support", attach(*names[:10]))
    assert [a.memory for a in agent.memories] == names[:10]  # kept in attachment order
    with pytest.raises(InvalidError) as refused:
        world.container.agents.put(world.account, "support", attach(*names))
    assert refused.value.details["field"] == "memories"
    # nothing changed
    assert world.container.agents.get(world.account, "support").version == agent.version
    assert attached_to(world, "m10") == ()


def test_a_missing_memory_or_one_in_the_trash_cannot_be_attached(world: World) -> None:
    world.container.memories.create(world.account, "old")
    world.container.memories.delete(world.account, "old")
    for name in ("nowhere", "old"):
        with pytest.raises(NotFoundError):
            world.container.agents.put(world.account, "support", attach(name))
    with pytest.raises(NotFoundError):
        world.container.agents.get(world.account, "support")  # the failed create left nothing


def test_scope_rules_of_attachments(world: World) -> None:
    agents = world.container.agents
    world.container.memories.create(world.ana, "ana-notes")
    world.container.memories.create(world.bob, "bob-notes")
    # An account agent never attaches a user's memory
    with pytest.raises(ForbiddenError):
        agents.put(world.account, "support", attach("ana-notes"))
    # A user's agent attaches its user's memories, writable too, and the account's read-only
    mine, _ = agents.put(world.ana, "ana-helper", attach("ana-notes", "company", writable=("ana-notes",)))
    assert mine.user_id == "ana"
    # but never the account's writable
    with pytest.raises(ForbiddenError):
        agents.put(world.ana, "ana-helper", attach("company", writable=("company",)))
    # and never another user's memory: to a user key that memory does not exist
    with pytest.raises(NotFoundError):
        agents.put(world.ana, "ana-helper", attach("bob-notes"))
    # an account key gets the reason instead
    with pytest.raises(ForbiddenError):
        agents.put(world.account, "ana-helper", attach("bob-notes"), user="ana")
    # only a call acting for the memory's own scope attaches it writable
    with pytest.raises(ForbiddenError):
        agents.put(world.account, "ana-helper", attach("ana-notes", writable=("ana-notes",)))
    assert agents.get(world.ana, "ana-helper").memories == (Attachment("ana-notes", True), Attachment("company"))


def test_a_users_agent_is_seen_by_its_user_and_the_account_only(world: World) -> None:
    agents = world.container.agents
    agents.put(world.ana, "ana-helper", AgentSettings())
    agents.put(world.account, "support", AgentSettings())
    assert [a.name for a in agents.list_agents(world.ana)] == ["ana-helper", "support"]
    assert [a.name for a in agents.list_agents(world.bob)] == ["support"]
    assert [a.name for a in agents.list_agents(world.account)] == ["ana-helper", "support"]
    with pytest.raises(NotFoundError):
        agents.get(world.bob, "ana-helper")
    with pytest.raises(NotFoundError):
        agents.get(world.other, "support")  # another tenant
    # a user key never changes the account's agent
    with pytest.raises(ForbiddenError):
        agents.put(world.ana, "support", AgentSettings(instructions="Mine now."))
    # its own memory has the user's layer only
    world.save("plan", "Team plan.", "Plan", memory="agent:ana-helper", principal=world.ana)
    assert world.read("plan", memory="agent:ana-helper", principal=world.ana).user_id == "ana"


def test_settings_are_checked_and_versioned(world: World) -> None:
    agents = world.container.agents
    agent, _ = agents.put(world.account, "support", AgentSettings(window_messages=12))
    with pytest.raises(InvalidError):
        agents.put(world.account, "support", AgentSettings(window_messages=21))
    with pytest.raises(InvalidError):
        agents.put(world.account, "support", attach("agent:support"))
    with pytest.raises(VersionConflictError):
        agents.put(world.account, "support", AgentSettings(instructions="x"), expected_version=0)
    changed, created = agents.put(world.account, "support", AgentSettings(instructions="New."),
                                  expected_version=agent.version)
    assert (created, changed.version, changed.window_messages, changed.instructions) == (False, 2, 12, "New.")
    with pytest.raises(VersionConflictError):
        agents.put(world.account, "support", AgentSettings(instructions="Stale."), expected_version=1)


def test_trash_restore_and_purge(world: World) -> None:
    agents = world.container.agents
    agents.put(world.account, "support", attach("company"))
    world.save("tone", "Warm.", "Tone", memory="agent:support")
    # its own memory cannot be deleted on its own
    with pytest.raises(ConflictError):
        world.container.memories.delete(world.account, "agent:support")
    # deleting the agent takes its own memory to the trash with it
    agents.delete(world.account, "support")
    with pytest.raises(NotFoundError):
        agents.get(world.account, "support")
    with pytest.raises(NotFoundError):
        world.read("tone", memory="agent:support")
    assert [a.name for a in agents.list_agents(world.account, trash=True)] == ["support"]
    # the name is taken while it is in the trash
    with pytest.raises(ConflictError):
        agents.put(world.account, "support", AgentSettings())
    agents.restore(world.account, "support")
    assert world.read("tone", memory="agent:support").content == "Warm."
    # purge removes it for good, with a receipt, and lets go of what it attached
    receipt = agents.purge(world.account, "support")
    assert (receipt["agents"], receipt["memories"], receipt["entries"]) == (1, 1, 1)
    with pytest.raises(NotFoundError):
        world.container.memories.get(world.account, "agent:support")
    assert attached_to(world, "company") == ()
    # the name is free again, with an empty memory
    agents.put(world.account, "support", AgentSettings())
    assert world.names(memory="agent:support") == []


def test_an_agents_own_memory_attached_elsewhere_keeps_the_agent_from_the_trash(world: World) -> None:
    agents = world.container.agents
    agents.put(world.account, "scribe", AgentSettings())
    agents.put(world.account, "support", attach("agent:scribe"))
    with pytest.raises(AttachedError):
        agents.delete(world.account, "scribe")
    assert agents.get(world.account, "scribe").deleted_at is None


def test_trashed_agents_are_purged_after_thirty_days(world: World) -> None:
    agents = world.container.agents
    agents.put(world.account, "support", attach("company"))
    agents.delete(world.account, "support")
    world.clock.advance(days=31)
    world.container.sweep()
    assert agents.list_agents(world.account, trash=True) == []
    assert attached_to(world, "company") == ()
    agents.put(world.account, "support", AgentSettings())  # the name is free
