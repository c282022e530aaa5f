"""Concurrent writers and more than one server process on one store (SPEC §2.2, §2.4, §12).

No lost update, no mixed entry, and the layer limit holds under concurrent creates, whatever the
backend: a SQLite write lock, or DynamoDB's conditional transactions.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

import pytest
from agentmem.domain.errors import AgentmemError, LayerFullError, NotFoundError, VersionConflictError
from agentmem.services.entries import EntryService, SaveRequest
from contract_world import World, twin_container


def run_threads(count: int, work: Callable[[int], None]) -> None:
    errors: list[BaseException] = []

    def guarded(n: int) -> None:
        try:
            work(n)
        except BaseException as error:  # a failing thread must fail the test, not vanish
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def test_eight_writers_saving_with_versions_lose_no_update(world: World) -> None:
    # Given an entry at version 1 and eight writers that each, fifty times, read it and save with its version
    world.save("counter", "start", "A busy entry")
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()

    def writer(n: int) -> None:
        for i in range(50):
            seen = world.read("counter").version
            try:
                world.save("counter", f"writer {n} save {i}", version=seen)
                outcome = "landed"
            except VersionConflictError as conflict:
                assert conflict.status == 409 and conflict.current_version > seen
                outcome = "conflict"
            with lock:
                outcomes[outcome] += 1

    # When they all run at once
    run_threads(8, writer)

    # Then every save either landed or was refused with a 409, and no landed save was lost:
    # the version counts exactly the saves that landed, and the history holds one row for each
    assert outcomes["landed"] + outcomes["conflict"] == 400
    assert outcomes["landed"] >= 1
    stored = world.read("counter")
    assert stored.version == 1 + outcomes["landed"]
    assert len(world.history("counter")) == 1 + outcomes["landed"]


def test_concurrent_saves_without_a_version_never_mix_two_writers(world: World) -> None:
    # Given an entry, and eight writers that each replace content and description ten times, no version
    world.save("profile", "start", "Start")

    def writer(n: int) -> None:
        for i in range(10):
            world.save("profile", f"content of writer {n}, save {i}", f"description of writer {n}, save {i}")

    # When they all run at once
    run_threads(8, writer)

    # Then none was refused, each made a version, and what is stored is one writer's save, whole
    stored = world.read("profile")
    assert stored.version == 81
    assert stored.content is not None
    assert stored.content.replace("content of", "description of") == stored.description
    assert len(world.history("profile")) == 81


def test_concurrent_creates_into_a_layer_one_short_of_full_let_exactly_one_land(world: World) -> None:
    # Given a layer limit of 5 and a layer holding 4 entries
    entries = EntryService(world.container.stores.entries, world.container.memories, world.clock, layer_limit=5)
    for n in range(4):
        entries.save(world.account, world.memory, f"item-{n}", SaveRequest(content=f"Item {n}.", description="Item"))
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()

    def creator(n: int) -> None:
        try:
            entries.save(world.account, world.memory, f"new-{n}", SaveRequest(content="New.", description="New"))
            outcome = "created"
        except LayerFullError:
            outcome = "full"
        with lock:
            outcomes[outcome] += 1

    # When eight callers create eight new names at the same time
    run_threads(8, creator)

    # Then exactly one lands, the other seven are refused with layer_full, and the layer holds 5
    assert outcomes == Counter({"created": 1, "full": 7})
    assert len(world.names()) == 5
    assert world.container.memories.get(world.account, world.memory).entry_count == 5


def test_a_delete_frees_a_slot_in_a_full_layer(world: World) -> None:
    # Given a full layer (limit 3)
    entries = EntryService(world.container.stores.entries, world.container.memories, world.clock, layer_limit=3)
    for n in range(3):
        entries.save(world.account, world.memory, f"item-{n}", SaveRequest(content="Item.", description="Item"))
    with pytest.raises(LayerFullError):
        entries.save(world.account, world.memory, "one-more", SaveRequest(content="More.", description="More"))

    # When an entry is deleted
    entries.delete(world.account, world.memory, "item-1")

    # Then a new name fits again, and the next one does not
    assert entries.save(
        world.account, world.memory, "one-more", SaveRequest(content="More.", description="More")
    ).created
    with pytest.raises(LayerFullError):
        entries.save(world.account, world.memory, "too-many", SaveRequest(content="More.", description="More"))


def test_a_second_server_with_an_old_view_cannot_overwrite_a_newer_version(world: World) -> None:
    # Given two servers on one store (two processes, or two Lambda instances), and the first has read
    # version 1 of an entry
    world.save("policy", "Refunds within 14 days.", "Refund policy", category="fact")
    first = world.container.entries
    second = twin_container(world.container, world.clock).entries
    assert first.read(world.account, world.memory, "policy").version == 1

    # When the second server saves version 2 with a new description
    second.save(world.account, world.memory, "policy", SaveRequest(content="Refunds within 30 days.",
                                                                     description="Refunds, 30 days", version=1))

    # Then the first server's save at version 1 is refused with the current version 2
    with pytest.raises(VersionConflictError) as conflict:
        first.save(world.account, world.memory, "policy", SaveRequest(content="Stale.", version=1))
    assert conflict.value.current_version == 2

    # and its save without a version lands on top of version 2, keeping version 2's description
    result = first.save(world.account, world.memory, "policy", SaveRequest(content="Refunds within 60 days."))
    assert result.entry.version == 3
    stored = second.read(world.account, world.memory, "policy")
    assert (stored.content, stored.description, stored.category) == (
        "Refunds within 60 days.", "Refunds, 30 days", "fact",
    )

    # When the second server deletes it, the first server neither reads it nor deletes it again
    second.delete(world.account, world.memory, "policy")
    with pytest.raises(NotFoundError):
        first.read(world.account, world.memory, "policy")
    with pytest.raises(NotFoundError):
        first.delete(world.account, world.memory, "policy")
    # and the first server's save with version 3 is refused: the entry no longer exists
    with pytest.raises(VersionConflictError) as gone:
        first.save(world.account, world.memory, "policy", SaveRequest(content="Back?", version=3))
    assert gone.value.current_version == 0


def test_an_entry_deleted_and_created_again_keeps_the_old_runs_history(world: World) -> None:
    # Given an entry saved twice, deleted, and created again
    world.save("policy", "Refunds within 14 days.", "Refunds")
    world.save("policy", "Refunds within 30 days.")
    world.container.entries.delete(world.account, world.memory, "policy")
    world.save("policy", "No refunds.", "Refunds, again")

    # When its history is asked for
    history = world.history("policy")

    # Then both runs are there, newest first, the new one continuing the old one's versions, and each version
    # reads as it was: the old run's 1 and 2, the new entry's 4
    assert [(h.operation, h.version) for h in history] == [("create", 4), ("delete", 3), ("update", 2), ("create", 1)]
    assert world.read("policy", version=1).content == "Refunds within 14 days."
    assert world.read("policy", version=2).content == "Refunds within 30 days."
    assert world.read("policy", version=4).content == "No refunds."


def test_a_failed_write_in_a_crowd_is_always_a_conflict_or_a_full_layer(world: World) -> None:
    # Given a layer limit of 6 and twelve writers creating, replacing and deleting the same few names
    entries = EntryService(world.container.stores.entries, world.container.memories, world.clock, layer_limit=6)
    unexpected: list[AgentmemError] = []

    def writer(n: int) -> None:
        for i in range(12):
            name = f"shared-{(n + i) % 8}"
            try:
                if i % 3 == 2:
                    entries.delete(world.account, world.memory, name)
                else:
                    entries.save(world.account, world.memory, name, SaveRequest(content=f"{n}/{i}", description="x"))
            except (VersionConflictError, LayerFullError, NotFoundError):
                pass
            except AgentmemError as error:
                unexpected.append(error)

    # When they all run at once
    run_threads(12, writer)

    # Then nothing failed any other way, the limit held, and the count agrees with the list
    assert unexpected == []
    names = world.names()
    assert len(names) <= 6
    assert world.container.memories.get(world.account, world.memory).entry_count == len(names)
