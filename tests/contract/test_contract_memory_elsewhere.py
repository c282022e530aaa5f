"""A memory moved to the trash by another process (another Lambda instance, another `agentmem serve`): this
process's writes into it are refused at once, and its reads within the short time it may keep the memory's
record (SPEC §3.1: a memory in the trash holds no reachable entries)."""

from __future__ import annotations

from typing import Any

import pytest
from agentmem.domain.errors import NotFoundError
from agentmem.services.agents import AgentSettings
from contract_world import World, twin_container


def _record_cache(world: World) -> Any:
    """The process's cache of memory records, when its backend keeps one."""
    return getattr(world.container.stores.memories, "cache", None)


def test_writes_into_a_memory_another_process_trashed_are_refused_at_once(world: World) -> None:
    # Given this process has just used the memory (saved two entries, read one)
    world.save("refunds")
    world.save("shipping", "Ships in 2 days.", "Shipping")
    world.read("refunds")
    twin = twin_container(world.container, world.clock)

    # When another process moves the memory to the trash
    twin.memories.delete(world.account, world.memory)

    # Then this process's creates, updates and deletes in it are refused as a missing memory
    with pytest.raises(NotFoundError):
        world.save("returns", "Returns within 30 days.", "Returns")
    with pytest.raises(NotFoundError):
        world.save("refunds", "Refunds within 7 days.")
    with pytest.raises(NotFoundError):
        world.container.entries.delete(world.account, world.memory, "shipping")
    # and nothing was stored: restored, the memory holds what it held
    twin.memories.restore(world.account, world.memory)
    assert sorted(world.names()) == ["refunds", "shipping"]
    assert world.read("refunds").content == "Refunds are paid back within 14 days."


def test_reads_of_a_memory_another_process_trashed_end_within_seconds(world: World) -> None:
    # Given this process has just read the memory's entries
    world.save("refunds")
    world.read("refunds")
    twin = twin_container(world.container, world.clock)

    # When another process moves the memory to the trash and a few seconds pass (5 s: the record cache's life)
    twin.memories.delete(world.account, world.memory)
    cache = _record_cache(world)
    if cache is not None:
        now = cache.clock()
        cache.clock = lambda: now + 5.0

    # Then reading, listing and searching it are a missing memory
    with pytest.raises(NotFoundError):
        world.read("refunds")
    with pytest.raises(NotFoundError):
        world.names()
    with pytest.raises(NotFoundError):
        world.search("refunds")


def test_a_memory_this_process_trashes_or_restores_is_seen_so_at_once(world: World) -> None:
    # Given this process has just read the memory's entries
    world.save("refunds")
    world.read("refunds")

    # When it moves the memory to the trash, its reads are refused at once
    world.container.memories.delete(world.account, world.memory)
    with pytest.raises(NotFoundError):
        world.read("refunds")

    # and when another process restores it, this process reads it at once (a trashed record is never kept)
    twin_container(world.container, world.clock).memories.restore(world.account, world.memory)
    assert world.read("refunds").name == "refunds"


def test_an_agents_own_memory_trashed_with_its_agent_is_seen_so_at_once(world: World) -> None:
    # Given an agent whose own memory this process has just written
    agents = world.container.agents
    agents.put(world.account, "support-bot", AgentSettings(instructions="Help customers."))
    own = "agent:support-bot"
    world.save("tone", "Friendly.", "Tone", memory=own)

    # When this process moves the agent to the trash (its own memory goes with it)
    agents.delete(world.account, "support-bot")

    # Then the own memory's entries are unreachable at once
    with pytest.raises(NotFoundError):
        world.read("tone", memory=own)
