"""Versions of a name never repeat (SPEC §2.1): an entry created again after a delete, or after it expired,
continues after its predecessor's last version, so a version kept from the old entry can never match the
new one, and ``read(version=N)`` names one version only. A purge or an erasure forgets the name for good,
its versions with it."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from agentmem.domain.clock import iso
from agentmem.domain.errors import AgentmemError, NotFoundError, VersionConflictError
from agentmem.services.entries import SaveRequest
from contract_world import World, twin_container


def _delete(world: World, name: str, *, user: str | None = None, version: int | None = None) -> None:
    world.container.entries.delete(world.account, world.memory, name, user=user, version=version)


def test_an_entry_created_again_after_a_delete_continues_its_versions(world: World) -> None:
    # Given an entry at version 2, deleted (the delete is version 3)
    world.save("refund-policy", "Refunds within 14 days.")
    world.save("refund-policy", "Refunds within 30 days.")
    _delete(world, "refund-policy")

    # When the name is saved again, twice
    again = world.save("refund-policy", "No refunds.", "Refunds, again")
    after = world.save("refund-policy", "No refunds at all.")

    # Then it is a new entry at version 4, then 5
    assert (again.created, again.entry.version) == (True, 4)
    assert (after.created, after.entry.version) == (False, 5)
    assert world.read("refund-policy").version == 5


def test_a_version_kept_from_before_a_delete_never_matches_the_new_entry(world: World) -> None:
    # Given a client that read "refund-policy" at version 1, then the entry was deleted and created again
    kept = world.save("refund-policy", "Refunds within 14 days.").entry.version
    _delete(world, "refund-policy")
    world.save("refund-policy", "Refunds are final.", "Refunds, again")

    # When the client saves and deletes with the version it kept
    # Then both are refused with the new entry's version, and the new entry is as it was
    with pytest.raises(VersionConflictError) as saved:
        world.save("refund-policy", "Refunds within 90 days.", version=kept)
    with pytest.raises(VersionConflictError) as deleted:
        _delete(world, "refund-policy", version=kept)
    assert saved.value.details["current_version"] == deleted.value.details["current_version"] == 3
    assert world.read("refund-policy").content == "Refunds are final."


def test_every_version_of_both_entries_reads_as_it_was(world: World) -> None:
    # Given an entry at version 2, deleted (3), created again (4) and changed (5)
    for content in ("Refunds within 14 days.", "Refunds within 30 days."):
        world.save("refund-policy", content)
    _delete(world, "refund-policy")
    for content in ("No refunds.", "No refunds at all."):
        world.save("refund-policy", content)

    # When each version is read
    # Then each is the one it was, the delete's version is none, and the history lists both entries
    contents = {v: world.read("refund-policy", version=v).content for v in (1, 2, 4, 5)}
    assert contents == {1: "Refunds within 14 days.", 2: "Refunds within 30 days.", 4: "No refunds.",
                        5: "No refunds at all."}
    with pytest.raises(NotFoundError):
        world.read("refund-policy", version=3)
    assert [(h.version, h.operation) for h in world.history("refund-policy")] == [
        (5, "update"), (4, "create"), (3, "delete"), (2, "update"), (1, "create"),
    ]


def test_a_name_deleted_in_one_process_continues_in_another(world: World) -> None:
    # Given an entry at version 2 that another process (or Lambda instance) deleted
    world.save("refund-policy", "Refunds within 14 days.")
    world.save("refund-policy", "Refunds within 30 days.")
    other = twin_container(world.container, world.clock)
    other.entries.delete(world.account, world.memory, "refund-policy")

    # When this process, which saw version 2 last, creates it again (version 0: it must not exist)
    again = world.save("refund-policy", "No refunds.", "Refunds, again", version=0)

    # Then it continues after the other process's delete
    assert (again.created, again.entry.version) == (True, 4)
    # And a third process, which saw none of it, deletes it (version 5) and creates it again after that
    third = twin_container(world.container, world.clock)
    third.entries.delete(world.account, world.memory, "refund-policy")
    fresh = third.entries.save(world.account, world.memory, "refund-policy",
                               SaveRequest(content="Refunds, once more.", description="d"))
    assert (fresh.created, fresh.entry.version) == (True, 6)


def test_concurrent_creates_after_a_delete_never_share_a_version(world: World) -> None:
    # Given an entry deleted at version 2, and eight writers, each a process of its own
    world.save("refund-policy", "Refunds within 14 days.")
    _delete(world, "refund-policy")
    writers = [twin_container(world.container, world.clock) for _ in range(8)]
    versions: list[int] = []
    created: list[bool] = []
    failures: list[AgentmemError] = []
    start = threading.Barrier(len(writers))

    def write(n: int) -> None:
        start.wait()
        try:
            result = writers[n].entries.save(world.account, world.memory, "refund-policy",
                                             SaveRequest(content=f"Writer {n}.", description=f"writer {n}"))
        except AgentmemError as error:
            failures.append(error)
            return
        versions.append(result.entry.version)
        created.append(result.created)

    # When they all save the name at once (no version: the last writer wins)
    threads = [threading.Thread(target=write, args=(n,)) for n in range(len(writers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # Then every save landed with a version of its own, continuing after the delete's, and one created it
    assert failures == []
    assert sorted(versions) == list(range(3, 3 + len(writers)))
    assert created.count(True) == 1
    assert world.read("refund-policy").version == 2 + len(writers)


def test_concurrent_must_not_exist_creates_after_a_delete_land_once(world: World) -> None:
    # Given an entry deleted at version 2, and eight writers creating it with version 0
    world.save("refund-policy", "Refunds within 14 days.")
    world.save("refund-policy", "Refunds within 30 days.")
    _delete(world, "refund-policy")
    writers = [twin_container(world.container, world.clock) for _ in range(8)]
    landed: list[int] = []
    refused: list[int] = []
    start = threading.Barrier(len(writers))

    def write(n: int) -> None:
        start.wait()
        try:
            result = writers[n].entries.save(world.account, world.memory, "refund-policy",
                                             SaveRequest(content=f"Writer {n}.", description="d", version=0))
        except VersionConflictError as conflict:
            refused.append(conflict.details["current_version"])
            return
        landed.append(result.entry.version)

    # When they all try at once
    threads = [threading.Thread(target=write, args=(n,)) for n in range(len(writers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # Then exactly one lands, at version 4, and the others are told it now exists at 4
    assert landed == [4]
    assert refused == [4] * (len(writers) - 1)


def test_an_entry_created_again_after_it_expired_continues_its_versions(world: World) -> None:
    # Given "flash-sale" at version 2, expired, and removed by the store's housekeeping (the TTL)
    expires = iso(world.clock.now + timedelta(hours=1))
    world.save("flash-sale", "Twenty percent off.", "Sale", expires_at=expires)
    world.save("flash-sale", "Thirty percent off.")
    world.clock.advance(hours=2)
    world.container.sweep()

    # When it is created again, from a process that never saw it
    other = twin_container(world.container, world.clock)
    again = other.entries.save(world.account, world.memory, "flash-sale",
                               SaveRequest(content="Forty percent off.", description="Next sale", version=0))

    # Then it continues at version 3
    assert (again.created, again.entry.version) == (True, 3)


def test_a_trashed_and_restored_memory_keeps_counting(world: World) -> None:
    # Given an entry at version 2 in a memory put in the trash and restored
    world.save("refund-policy", "Refunds within 14 days.")
    world.save("refund-policy", "Refunds within 30 days.")
    world.container.memories.delete(world.account, world.memory)
    world.container.memories.restore(world.account, world.memory)

    # When it is changed, deleted and created again
    changed = world.save("refund-policy", "Refunds within 60 days.")
    _delete(world, "refund-policy")
    again = world.save("refund-policy", "No refunds.", "Refunds, again")

    # Then its versions go on from where they were: 3, the delete 4, then 5
    assert (changed.entry.version, again.entry.version) == (3, 5)


def test_a_purged_memory_forgets_its_names_versions_for_good(world: World) -> None:
    # Given an entry deleted at version 3 in "company", which then spent 31 days in the trash and was purged
    world.save("refund-policy", "Refunds within 14 days.")
    world.save("refund-policy", "Refunds within 30 days.")
    _delete(world, "refund-policy")
    world.container.memories.delete(world.account, world.memory)
    world.clock.advance(days=31)
    world.container.sweep()

    # When a new "company" gets an entry of that name
    world.container.memories.create(world.account, world.memory)
    fresh = world.save("refund-policy", "Refunds within 7 days.")

    # Then nothing of the old one is left to continue from: it starts at 1
    assert (fresh.created, fresh.entry.version) == (True, 1)
    assert [h.version for h in world.history("refund-policy")] == [1]


def test_an_erased_user_leaves_no_versions_behind(world: World) -> None:
    # Given ana's entry, changed and deleted (version 3), beside the account's entry of the same name
    world.save("tone", "Be casual.", "Ana's tone", user="ana")
    world.save("tone", "Be formal.", user="ana")
    _delete(world, "tone", user="ana")
    world.save("tone", "Be friendly.", "House tone")

    # When ana is erased and later saves that name again
    world.container.erasure.erase_user(world.account, "ana")
    fresh = world.save("tone", "Be brief.", "Ana's tone", user="ana")

    # Then her new entry starts at 1, as if the name had never been hers, and the account's is untouched
    assert (fresh.created, fresh.entry.version) == (True, 1)
    assert [h.version for h in world.history("tone", user="ana")] == [1]
    assert world.read("tone").version == 1
