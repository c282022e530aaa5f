"""History kept 30 days, old versions, and entries that expire (SPEC §2.1 expires_at, §2.2 history)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from agentmem.domain.clock import iso
from agentmem.domain.errors import InvalidError, NotFoundError
from contract_world import World


def test_history_lists_create_update_and_delete_newest_first(world: World) -> None:
    # Given an entry created, updated, then deleted
    world.save("refund-policy", "Refunds within 14 days.")
    world.clock.advance(minutes=5)
    world.save("refund-policy", "Refunds within 30 days.")
    world.clock.advance(minutes=5)
    world.container.entries.delete(world.account, world.memory, "refund-policy")

    # When its history is asked for
    history = world.history("refund-policy")

    # Then it lists the three changes, newest first, each with its version, who and when
    assert [h.operation for h in history] == ["delete", "update", "create"]
    assert [h.version for h in history] == [3, 2, 1]
    assert all(h.updated_by == "api" for h in history)
    changed = [h.changed_at for h in history]
    assert changed == sorted(changed, reverse=True) and len(set(changed)) == 3
    # and each change of content shows as a different content hash
    assert history[1].content_hash != history[2].content_hash
    assert all(h.content_hash for h in history)


def test_history_of_a_name_that_never_existed_is_not_found(world: World) -> None:
    # Given / When / Then
    with pytest.raises(NotFoundError):
        world.history("never-saved")


def test_an_old_version_can_be_read_while_history_keeps_it(world: World) -> None:
    # Given an entry at version 3
    world.save("refund-policy", "Refunds within 14 days.", "Refunds, v1")
    world.save("refund-policy", "Refunds within 30 days.", "Refunds, v2")
    world.save("refund-policy", "Refunds within 60 days.", "Refunds, v3")

    # When versions 1 and 2 are read
    first = world.read("refund-policy", version=1)
    second = world.read("refund-policy", version=2)

    # Then each comes back as it was
    assert (first.version, first.content, first.description) == (1, "Refunds within 14 days.", "Refunds, v1")
    assert (second.version, second.content, second.description) == (2, "Refunds within 30 days.", "Refunds, v2")
    # and the current version reads as the live entry, while a version never written is not found
    assert world.read("refund-policy", version=3).content == "Refunds within 60 days."
    with pytest.raises(NotFoundError):
        world.read("refund-policy", version=4)


def test_an_old_version_of_a_deleted_entry_can_still_be_read_as_an_undo(world: World) -> None:
    # Given an entry at version 2 that was deleted
    world.save("refund-policy", "Refunds within 14 days.")
    world.save("refund-policy", "Refunds within 30 days.")
    world.container.entries.delete(world.account, world.memory, "refund-policy")

    # When version 2 is read
    old = world.read("refund-policy", version=2)

    # Then its content is there to restore from
    assert old.content == "Refunds within 30 days."
    with pytest.raises(NotFoundError):
        world.read("refund-policy")


def test_history_is_kept_30_days(world: World) -> None:
    # Given an entry created and updated today
    world.save("refund-policy", "Refunds within 14 days.")
    world.save("refund-policy", "Refunds within 30 days.")

    # When 29 days pass
    world.clock.advance(days=29)

    # Then both changes and the old version are still there
    assert [h.version for h in world.history("refund-policy")] == [2, 1]
    assert world.read("refund-policy", version=1).content == "Refunds within 14 days."

    # When another 2 days pass (31 in all)
    world.clock.advance(days=2)

    # Then the history is empty and the old version is gone, but the entry itself lives on
    assert world.history("refund-policy") == []
    with pytest.raises(NotFoundError):
        world.read("refund-policy", version=1)
    current = world.read("refund-policy")
    assert (current.version, current.content) == (2, "Refunds within 30 days.")


def test_the_sweep_drops_history_past_its_keep_time(world: World) -> None:
    # Given a deleted entry whose history is 31 days old
    world.save("refund-policy", "Refunds within 14 days.")
    world.container.entries.delete(world.account, world.memory, "refund-policy")
    world.clock.advance(days=31)

    # When the housekeeping sweep runs
    world.container.sweep()

    # Then nothing of it is left
    with pytest.raises(NotFoundError):
        world.history("refund-policy")


def test_an_expires_at_in_the_past_is_refused(world: World) -> None:
    # Given an empty layer
    past = iso(world.clock.now - timedelta(minutes=1))

    # When an entry is saved to expire a minute ago
    with pytest.raises(InvalidError) as invalid:
        world.save("flash-sale", "20% off today.", "Sale", expires_at=past)

    # Then it is refused naming expires_at and nothing is stored
    assert invalid.value.details["field"] == "expires_at"
    assert world.names() == []


def test_an_expired_entry_is_invisible_to_read_list_and_search(world: World) -> None:
    # Given "flash-sale" expiring in an hour, and "refund-policy" that never expires
    expires = iso(world.clock.now + timedelta(hours=1))
    saved = world.save("flash-sale", "Twenty percent off every sofa.", "Sofa sale", expires_at=expires)
    world.save("refund-policy", "Refunds within 14 days.", "How refunds work")
    assert saved.entry.expires_at == expires

    # While it has not expired, it is read, listed and found
    assert world.read("flash-sale").content == "Twenty percent off every sofa."
    assert world.names() == ["refund-policy", "flash-sale"]
    assert world.found("sofa") == ["flash-sale"]

    # When two hours pass
    world.clock.advance(hours=2)

    # Then it is gone from read, shadowed read, list, search and the memory's entry count
    with pytest.raises(NotFoundError):
        world.read("flash-sale")
    with pytest.raises(NotFoundError):
        world.container.entries.read_shadowed(world.account, world.memory, "flash-sale", user="ana")
    assert world.names() == ["refund-policy"]
    assert world.found("sofa") == []
    assert world.found("sofa sale") == []
    assert world.container.memories.get(world.account, world.memory).entry_count == 1


def test_an_expired_users_entry_is_invisible_too(world: World) -> None:
    # Given ana's entry expiring in a day
    expires = iso(world.clock.now + timedelta(days=1))
    world.save("ana-discount", "Ana has a sofa voucher.", "Voucher", user="ana", expires_at=expires)

    # When two days pass
    world.clock.advance(days=2)

    # Then ana can no longer read, list or find it
    with pytest.raises(NotFoundError):
        world.read("ana-discount", principal=world.ana)
    assert world.names(principal=world.ana) == []
    assert world.found("sofa", principal=world.ana) == []


def test_the_name_of_an_expired_entry_can_be_created_again(world: World) -> None:
    # Given "flash-sale" at version 2 that has expired
    expires = iso(world.clock.now + timedelta(hours=1))
    world.save("flash-sale", "Twenty percent off.", "Sale", expires_at=expires)
    world.save("flash-sale", "Thirty percent off.", expires_at=expires)
    world.clock.advance(hours=2)

    # When it is saved again as a new entry (version=0: must not exist)
    result = world.save("flash-sale", "Forty percent off.", "Next sale", version=0)

    # Then it is created afresh without an expiry, at version 3: after the expired entry's last, never again 1
    assert (result.created, result.entry.version, result.entry.expires_at) == (True, 3, None)
    again = world.read("flash-sale")
    assert (again.content, again.description) == ("Forty percent off.", "Next sale")
    # and the expired entry's versions stay gone with it: the new entry's history is its own
    assert [(h.version, h.operation) for h in world.history("flash-sale")] == [(3, "create")]
    for version in (1, 2):
        with pytest.raises(NotFoundError):
            world.read("flash-sale", version=version)


def test_an_old_version_reads_as_it_was_not_with_todays_fields(world: World) -> None:
    # Given version 1 saved as a "fact" of importance 0.9, then changed to a "procedure" of 0.2
    world.save("refund-policy", "Refunds within 14 days.", category="fact", importance=0.9)
    world.clock.advance(minutes=5)
    world.save("refund-policy", "Refunds within 30 days.", category="procedure", importance=0.2)

    # When version 1 is read
    old = world.read("refund-policy", version=1)

    # Then it carries its own content, category, importance and creation time
    assert (old.content, old.category, old.importance) == ("Refunds within 14 days.", "fact", 0.9)
    assert old.created_at == world.read("refund-policy").created_at


def test_an_expired_entry_cannot_be_read_through_its_old_versions(world: World) -> None:
    # Given an entry that expires in an hour, changed once
    expires = iso(world.clock() + timedelta(hours=1))
    world.save("flash-sale", "20% off until noon.", expires_at=expires)
    world.save("flash-sale", "25% off until noon.")

    # When the hour has passed
    world.clock.advance(hours=2)

    # Then neither the entry, nor any version of it, nor its history can be read
    with pytest.raises(NotFoundError):
        world.read("flash-sale")
    for version in (1, 2):
        with pytest.raises(NotFoundError):
            world.read("flash-sale", version=version)
    with pytest.raises(NotFoundError):
        world.history("flash-sale")


def test_a_save_without_expires_at_keeps_the_expiry_and_clear_expiry_removes_it(world: World) -> None:
    # Given an entry that expires tomorrow
    expires = iso(world.clock() + timedelta(days=1))
    first = world.save("promo", "Free shipping.", expires_at=expires)

    # When it is saved again without expires_at
    kept = world.save("promo", "Free shipping on all orders.")

    # Then it still expires tomorrow
    assert kept.entry.expires_at == first.entry.expires_at is not None

    # When it is saved asking to clear the expiry
    cleared = world.save("promo", "Free shipping, always.", clear_expiry=True)

    # Then it no longer expires, and is still there after the old expiry
    assert cleared.entry.expires_at is None
    world.clock.advance(days=2)
    assert world.read("promo").content == "Free shipping, always."


def test_lifting_an_expiry_keeps_the_old_versions_readable(world: World) -> None:
    # Given version 1 saved to expire in an hour, and version 2 saved without any expiry
    world.save("promo", "Free shipping today.", expires_at=iso(world.clock() + timedelta(hours=1)))
    world.save("promo", "Free shipping, always.", clear_expiry=True)

    # When the hour has passed
    world.clock.advance(hours=2)

    # Then the entry is live, and version 1 is still in its history and readable
    assert world.read("promo").version == 2
    assert [h.version for h in world.history("promo")] == [2, 1]
    assert world.read("promo", version=1).content == "Free shipping today."
