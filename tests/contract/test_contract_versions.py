"""Versions, descriptions and field defaults of saved entries (SPEC §2.1, §2.2)."""

from __future__ import annotations

import threading

import pytest
from agentmem.domain.errors import InvalidError, NotFoundError, VersionConflictError
from contract_world import World


def test_a_new_entry_starts_at_version_1_and_every_change_adds_one(world: World) -> None:
    # Given an empty layer
    # When an entry is created and then replaced twice
    first = world.save("refund-policy", "Refunds within 14 days.")
    second = world.save("refund-policy", "Refunds within 30 days.")
    third = world.save("refund-policy", "Refunds within 60 days.")

    # Then the versions run 1, 2, 3, the first save says it created the entry and the others that they replaced it
    assert [first.entry.version, second.entry.version, third.entry.version] == [1, 2, 3]
    assert [first.created, second.created, third.created] == [True, False, False]
    # and a read returns the last content at the last version
    stored = world.read("refund-policy")
    assert stored.version == 3
    assert stored.content == "Refunds within 60 days."


def test_a_save_answers_with_the_stored_entry_without_content(world: World) -> None:
    # Given / When an entry is saved
    result = world.save("refund-policy", "Refunds within 14 days.", "How refunds work")

    # Then the answer describes what was stored, but leaves the content out
    assert result.entry.name == "refund-policy"
    assert result.entry.description == "How refunds work"
    assert result.entry.content is None
    assert result.entry.updated_by == "api"
    assert result.forced is None


def test_created_at_stays_and_updated_at_moves_on_a_change(world: World) -> None:
    # Given an entry
    created = world.save("refund-policy", "Refunds within 14 days.").entry

    # When it is replaced later
    world.clock.advance(hours=1)
    updated = world.save("refund-policy", "Refunds within 30 days.").entry

    # Then it keeps its creation time and shows the time of the change
    assert updated.created_at == created.created_at
    assert updated.updated_at > created.updated_at


def test_version_0_creates_only_when_the_entry_does_not_exist(world: World) -> None:
    # Given no entry named "refund-policy"
    # When it is saved with version=0 ("must not exist")
    created = world.save("refund-policy", "Refunds within 14 days.", version=0)

    # Then it is created at version 1
    assert created.created is True
    assert created.entry.version == 1

    # When a second writer also saves it with version=0
    with pytest.raises(VersionConflictError) as conflict:
        world.save("refund-policy", "Refunds are never paid.", version=0)

    # Then it is refused with the current version, and the first writer's content stays
    assert conflict.value.current_version == 1
    assert conflict.value.status == 409
    assert world.read("refund-policy").content == "Refunds within 14 days."


def test_a_stale_version_conflicts_carries_the_current_version_and_changes_nothing(world: World) -> None:
    # Given an entry at version 2 with two history rows
    world.save("refund-policy", "Refunds within 14 days.")
    world.save("refund-policy", "Refunds within 30 days.", "Refunds, updated")

    # When a writer who read version 1 saves with version=1
    with pytest.raises(VersionConflictError) as conflict:
        world.save("refund-policy", "Refunds within 90 days.", "Stale description", importance=0.9, version=1)

    # Then it fails with current_version 2
    assert conflict.value.current_version == 2
    assert conflict.value.to_dict()["current_version"] == 2
    # and nothing changed: content, description, importance, version and history are as before
    stored = world.read("refund-policy")
    assert (stored.version, stored.content, stored.description, stored.importance) == (
        2,
        "Refunds within 30 days.",
        "Refunds, updated",
        0.5,
    )
    assert [h.version for h in world.history("refund-policy")] == [2, 1]


def test_the_current_version_lands(world: World) -> None:
    # Given an entry at version 2
    world.save("refund-policy", "Refunds within 14 days.")
    world.save("refund-policy", "Refunds within 30 days.")

    # When a writer saves with version=2
    result = world.save("refund-policy", "Refunds within 45 days.", version=2)

    # Then it lands as version 3
    assert result.entry.version == 3
    assert world.read("refund-policy").content == "Refunds within 45 days."


def test_a_version_for_a_missing_entry_conflicts_with_current_version_0(world: World) -> None:
    # Given no entry named "refund-policy"
    # When it is saved with version=3
    with pytest.raises(VersionConflictError) as conflict:
        world.save("refund-policy", "Refunds within 14 days.", version=3)

    # Then the conflict says it does not exist (0), and nothing is created
    assert conflict.value.current_version == 0
    with pytest.raises(NotFoundError):
        world.read("refund-policy")


def test_delete_with_a_version_removes_only_that_version(world: World) -> None:
    # Given an entry at version 2
    world.save("refund-policy", "Refunds within 14 days.")
    world.save("refund-policy", "Refunds within 30 days.")
    entries = world.container.entries

    # When it is deleted with the stale version 1
    with pytest.raises(VersionConflictError) as conflict:
        entries.delete(world.account, world.memory, "refund-policy", version=1)

    # Then the delete is refused with the current version and the entry is still there
    assert conflict.value.current_version == 2
    assert world.read("refund-policy").version == 2

    # When it is deleted with the current version
    entries.delete(world.account, world.memory, "refund-policy", version=2)

    # Then it is gone, from reads and from the list, and deleting it again is a 404
    with pytest.raises(NotFoundError):
        world.read("refund-policy")
    assert world.names() == []
    with pytest.raises(NotFoundError):
        entries.delete(world.account, world.memory, "refund-policy")


def test_delete_with_version_0_of_an_existing_entry_conflicts(world: World) -> None:
    # Given an entry at version 1
    world.save("refund-policy")

    # When a delete says it must not exist
    with pytest.raises(VersionConflictError) as conflict:
        world.container.entries.delete(world.account, world.memory, "refund-policy", version=0)

    # Then it is refused and the entry stays
    assert conflict.value.current_version == 1
    assert world.read("refund-policy").version == 1


def test_without_a_version_the_last_writer_wins(world: World) -> None:
    # Given two writers who both read version 1
    world.save("refund-policy", "Refunds within 14 days.")
    seen = world.read("refund-policy").version

    # When both save without a version, one after the other
    world.save("refund-policy", "Writer A: refunds within 30 days.", "Writer A")
    world.save("refund-policy", "Writer B: refunds within 60 days.", "Writer B")

    # Then neither is refused, and the last one is what is stored, whole
    stored = world.read("refund-policy")
    assert seen == 1
    assert stored.version == 3
    assert (stored.content, stored.description) == ("Writer B: refunds within 60 days.", "Writer B")


def test_concurrent_saves_at_the_same_version_let_exactly_one_land(world: World) -> None:
    # Given an entry at version 1 and eight writers who all read it
    world.save("counter", "start")
    outcomes: list[str] = []
    lock = threading.Lock()

    def write(n: int) -> None:
        try:
            world.save("counter", f"writer {n}", version=1)
            outcome = f"landed {n}"
        except VersionConflictError as conflict:
            outcome = f"conflict {conflict.current_version}"
        with lock:
            outcomes.append(outcome)

    # When they all save with version=1 at the same time
    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # Then exactly one lands, the others see version 2, and the stored content is the winner's
    landed = [o for o in outcomes if o.startswith("landed")]
    assert len(landed) == 1
    assert sorted(o for o in outcomes if o.startswith("conflict")) == ["conflict 2"] * 7
    stored = world.read("counter")
    assert stored.version == 2
    assert stored.content == "writer " + landed[0].split()[1]


def test_a_new_entry_needs_a_description(world: World) -> None:
    # Given no entry named "refund-policy"
    # When it is saved without a description
    with pytest.raises(InvalidError) as invalid:
        world.save("refund-policy", "Refunds within 14 days.", None)

    # Then it is refused naming the field, and nothing is stored
    assert invalid.value.details["field"] == "description"
    assert invalid.value.status == 400
    assert world.names() == []


def test_a_save_without_a_description_keeps_the_current_one(world: World) -> None:
    # Given an entry described "How refunds work"
    world.save("refund-policy", "Refunds within 14 days.", "How refunds work")

    # When it is replaced without a description
    world.save("refund-policy", "Refunds within 30 days.", None)

    # Then the description is kept
    assert world.read("refund-policy").description == "How refunds work"

    # When it is replaced with a new description
    world.save("refund-policy", "Refunds within 30 days.", "Refunds, 30 days")

    # Then the new one is stored
    assert world.read("refund-policy").description == "Refunds, 30 days"


def test_category_and_importance_have_defaults_and_are_kept_when_omitted(world: World) -> None:
    # Given / When an entry is saved without category or importance
    world.save("refund-policy")

    # Then it is a "note" of importance 0.5
    fresh = world.read("refund-policy")
    assert (fresh.category, fresh.importance) == ("note", 0.5)

    # When it is saved as a fact of importance 0.9, and then replaced without either
    world.save("refund-policy", category="fact", importance=0.9)
    world.save("refund-policy", "Refunds within 30 days.")

    # Then the category and importance are kept
    kept = world.read("refund-policy")
    assert (kept.category, kept.importance, kept.version) == ("fact", 0.9, 3)


@pytest.mark.parametrize(
    ("name", "fields", "field"),
    [
        ("Refund Policy", {}, "name"),
        ("context.summary", {}, "name"),
        ("refund-policy", {"importance": 1.5}, "importance"),
        ("refund-policy", {"category": "Not-A-Tag"}, "category"),
        ("refund-policy", {"content": ""}, "content"),
        ("refund-policy", {"content": "x" * 20_001}, "content"),
        ("refund-policy", {"description": "d" * 201}, "description"),
        ("refund-policy", {"expires_at": "next tuesday"}, "expires_at"),
        ("refund-policy", {"version": -1}, "version"),
    ],
)
def test_an_invalid_field_is_refused_naming_it_and_nothing_is_stored(
    world: World, name: str, fields: dict[str, object], field: str
) -> None:
    # Given an empty layer
    # When a save breaks one field rule
    with pytest.raises(InvalidError) as invalid:
        world.save(name, **fields)

    # Then the error names that field and the layer is still empty
    assert invalid.value.details["field"] == field
    assert world.names() == []
