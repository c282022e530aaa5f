"""Layers and shadowing (SPEC §2.3, §10): the account layer, one layer per user, and who may act on which."""

from __future__ import annotations

import pytest
from agentmem.domain.errors import ForbiddenError, InvalidError, NotFoundError
from agentmem.services.entries import SaveRequest
from contract_world import World, twin_container


def test_the_account_layer_and_a_users_layer_hold_separate_entries(world: World) -> None:
    # Given the same name saved in the account layer and in ana's layer
    world.save("tone", "Be formal.", "House tone")
    world.save("tone", "Be casual with me.", "Ana's tone", user="ana")

    # When each layer is read
    shared = world.read("tone")
    private = world.read("tone", user="ana")

    # Then each holds its own entry, at its own version
    assert (shared.content, shared.visibility, shared.user_id, shared.version) == ("Be formal.", "shared", None, 1)
    assert (private.content, private.visibility, private.user_id, private.version) == (
        "Be casual with me.",
        "private",
        "ana",
        1,
    )
    # and bob's layer holds nothing
    with pytest.raises(NotFoundError):
        world.read("tone", user="bob")


def test_list_shows_one_layer_only(world: World) -> None:
    # Given entries in the account layer and in ana's layer
    world.save("house-rules")
    world.save("opening-hours")
    world.save("ana-allergies", "Ana is allergic to peanuts.", "Allergies", user="ana")

    # When each layer is listed
    # Then the account layer lists its entries newest first, and ana's only hers
    assert world.names() == ["opening-hours", "house-rules"]
    assert world.names(user="ana") == ["ana-allergies"]
    assert world.names(principal=world.ana) == ["ana-allergies"]
    assert world.names(user="bob") == []


def test_list_leaves_content_out_and_pages_newest_first(world: World) -> None:
    # Given three entries saved one after the other
    for name in ("first", "second", "third"):
        world.save(name)

    # When the layer is listed two at a time
    page = world.container.entries.list_entries(world.account, world.memory, limit=2)
    rest = world.container.entries.list_entries(world.account, world.memory, limit=2, cursor=page.next_cursor)

    # Then the pages run newest first, without content, and the last page has no cursor
    assert [e.name for e in page.items] == ["third", "second"]
    assert [e.name for e in rest.items] == ["first"]
    assert all(e.content is None for e in page.items + rest.items)
    assert page.next_cursor is not None
    assert rest.next_cursor is None


def test_a_user_key_acts_for_its_own_user_without_saying_so(world: World) -> None:
    # Given ana's user key
    # When it saves without user=
    result = world.save("ana-allergies", "Ana is allergic to peanuts.", "Allergies", principal=world.ana)

    # Then the entry lands in ana's layer, private, and not in the account layer
    assert result.entry.user_id == "ana"
    assert result.entry.visibility == "private"
    assert world.read("ana-allergies", user="ana").content == "Ana is allergic to peanuts."
    with pytest.raises(NotFoundError):
        world.read("ana-allergies")


def test_a_user_key_cannot_act_for_another_user(world: World) -> None:
    # Given ana's user key and an entry in bob's layer
    world.save("bob-notes", "Bob likes tea.", "Bob's notes", user="bob")
    entries = world.container.entries

    # When ana's key asks for bob's layer, to save, read, list, delete, search or see history
    attempts = [
        lambda: world.save("bob-notes", "Bob hates tea.", principal=world.ana, user="bob"),
        lambda: world.read("bob-notes", principal=world.ana, user="bob"),
        lambda: world.names(principal=world.ana, user="bob"),
        lambda: entries.delete(world.ana, world.memory, "bob-notes", user="bob"),
        lambda: entries.search(world.ana, world.memory, "tea", user="bob"),
        lambda: entries.history(world.ana, world.memory, "bob-notes", user="bob"),
        lambda: entries.read_shadowed(world.ana, world.memory, "bob-notes", user="bob"),
    ]
    # Then every one is forbidden
    for attempt in attempts:
        with pytest.raises(ForbiddenError):
            attempt()
    # and bob's entry is untouched
    stored = world.read("bob-notes", user="bob")
    assert (stored.content, stored.version) == ("Bob likes tea.", 1)


def test_a_user_key_never_writes_the_account_layer(world: World) -> None:
    # Given an account entry "policy"
    world.save("policy", "Refunds within 14 days.", "Refund policy")
    entries = world.container.entries

    # When ana's key saves "policy" without user=
    world.save("policy", "Refund me whenever I like.", "Mine", principal=world.ana)
    # and deletes "policy"
    entries.delete(world.ana, world.memory, "policy")

    # Then both acted on ana's own layer: the account entry is untouched
    shared = world.read("policy")
    assert (shared.content, shared.description, shared.version) == ("Refunds within 14 days.", "Refund policy", 1)
    with pytest.raises(NotFoundError):
        world.read("policy", user="ana")
    # and a second delete finds nothing of ana's to delete, rather than the account's entry
    with pytest.raises(NotFoundError):
        entries.delete(world.ana, world.memory, "policy")
    assert world.read("policy").version == 1

    # When ana's key asks outright for the account layer (visibility shared or read_only)
    for visibility in ("shared", "read_only"):
        with pytest.raises(ForbiddenError):
            world.save("announcement", "Office closed.", "Closure", principal=world.ana, visibility=visibility)

    # Then it is forbidden (403) and nothing is written anywhere
    assert world.names() == ["policy"]
    assert world.names(user="ana") == []


def test_a_visibility_must_agree_with_the_layer(world: World) -> None:
    # Given an account key
    # When it saves "private" to the account layer, or "shared" to ana's layer
    # Then both are refused naming visibility, and nothing is stored
    with pytest.raises(InvalidError) as private_to_account:
        world.save("policy", visibility="private")
    with pytest.raises(InvalidError) as shared_to_user:
        world.save("policy", user="ana", visibility="shared")
    assert private_to_account.value.details["field"] == "visibility"
    assert shared_to_user.value.details["field"] == "visibility"
    assert world.names() == [] and world.names(user="ana") == []

    # When it saves read_only to the account layer
    world.save("policy", visibility="read_only")

    # Then it is stored read_only
    assert world.read("policy").visibility == "read_only"


def test_a_save_without_visibility_keeps_a_read_only_entry_read_only(world: World) -> None:
    # Given a read_only account entry
    world.save("house-rules", "Be kind.", "House rules", visibility="read_only")

    # When it is replaced through the API without saying a visibility
    world.save("house-rules", "Be very kind.")

    # Then it is still read_only (as category and importance are kept), with the new content
    stored = world.read("house-rules")
    assert (stored.visibility, stored.content, stored.version) == ("read_only", "Be very kind.", 2)

    # When it is saved saying shared
    world.save("house-rules", "Be kind again.", visibility="shared")

    # Then it becomes shared
    assert world.read("house-rules").visibility == "shared"


def test_a_read_only_entry_another_process_wrote_stays_read_only_whatever_this_one_knew(world: World) -> None:
    # Given an entry this process saved shared, which another process then made read_only
    world.save("house-rules", "Be kind.", "House rules")
    world.save("desk-rules", "Tidy desks.", "Desk rules")
    twin = twin_container(world.container, world.clock)
    for name in ("house-rules", "desk-rules"):
        twin.entries.save(world.account, world.memory, name,
                          SaveRequest(content="Read only now.", visibility="read_only"))
    # and one only the other process has seen
    twin.entries.save(world.account, world.memory, "lab-rules",
                      SaveRequest(content="Goggles on.", description="Lab rules", visibility="read_only"))

    # When this process replaces them without saying a visibility (with If-Match, without, never seen)
    results = [
        world.save("house-rules", "Be very kind.", None),
        world.save("desk-rules", "Tidy desks daily.", None, version=2),
        world.save("lab-rules", "Goggles and gloves on.", None),
    ]

    # Then each stays read_only, in the answer and when read back, with the new content
    assert [r.entry.visibility for r in results] == ["read_only"] * 3
    for name, content in (("house-rules", "Be very kind."), ("desk-rules", "Tidy desks daily."),
                          ("lab-rules", "Goggles and gloves on.")):
        stored = world.read(name)
        assert (stored.visibility, stored.content) == ("read_only", content)


def test_a_users_memory_has_only_its_users_layer(world: World) -> None:
    # Given a memory owned by ana
    world.container.memories.create(world.ana, "ana-diary")

    # When the account key saves into it without user=
    result = world.save("monday", "Went running.", "Monday", memory="ana-diary")

    # Then the entry is in ana's layer, private, and ana's key reads it
    assert (result.entry.user_id, result.entry.visibility) == ("ana", "private")
    assert world.read("monday", principal=world.ana, memory="ana-diary").content == "Went running."
    # and bob can neither see the memory nor its entries
    with pytest.raises(NotFoundError):
        world.read("monday", principal=world.bob, memory="ana-diary")
    with pytest.raises(NotFoundError):
        world.save("monday", "Bob was here.", principal=world.bob, memory="ana-diary")
    with pytest.raises(NotFoundError):
        world.read("monday", user="bob", memory="ana-diary")


def test_read_shadowed_prefers_the_users_own_copy(world: World) -> None:
    # Given an account entry "tone"
    world.save("tone", "Be formal.", "House tone")
    entries = world.container.entries

    # When ana has no copy of her own
    # Then she sees the account's
    assert entries.read_shadowed(world.ana, world.memory, "tone", user="ana").content == "Be formal."

    # When ana saves her own copy
    world.save("tone", "Be casual with me.", "Ana's tone", user="ana")

    # Then ana sees hers, and bob still sees the account's
    mine = entries.read_shadowed(world.ana, world.memory, "tone", user="ana")
    assert (mine.content, mine.user_id) == ("Be casual with me.", "ana")
    theirs = entries.read_shadowed(world.account, world.memory, "tone", user="bob")
    assert (theirs.content, theirs.user_id) == ("Be formal.", None)

    # When ana deletes her copy
    entries.delete(world.ana, world.memory, "tone")

    # Then she sees the account's again
    assert entries.read_shadowed(world.ana, world.memory, "tone", user="ana").content == "Be formal."
    with pytest.raises(NotFoundError):
        entries.read_shadowed(world.ana, world.memory, "no-such-entry", user="ana")


def test_saving_a_name_only_the_account_has_creates_the_users_copy(world: World) -> None:
    # Given an account entry "policy" at version 2
    world.save("policy", "Refunds within 14 days.", "Refund policy")
    world.save("policy", "Refunds within 30 days.")

    # When ana saves "policy" in her layer
    result = world.save("policy", "Ana gets refunds within 90 days.", "Ana's refund deal", user="ana")

    # Then ana's own copy is created at version 1
    assert (result.created, result.entry.version, result.entry.user_id) == (True, 1, "ana")
    # and the account entry is untouched, still what other users see
    shared = world.read("policy")
    assert (shared.content, shared.version) == ("Refunds within 30 days.", 2)
    seen_by_bob = world.container.entries.read_shadowed(world.bob, world.memory, "policy", user="bob")
    assert seen_by_bob.content == "Refunds within 30 days."


def test_search_for_a_user_shows_their_copy_and_hides_the_shadowed_account_copy(world: World) -> None:
    # Given account entries "policy" and "returns" that both mention refunds,
    world.save("policy", "Refunds within 14 days.", "Refund policy")
    world.save("returns", "Returns are accepted with a refund receipt.", "Returns")
    # and ana's own "policy" that does not mention them
    world.save("policy", "Ask the manager for anything.", "Ana's deal", user="ana")

    # When ana searches for "refund"
    found = world.search("refund", principal=world.ana)

    # Then the account's "returns" is found, but the account's "policy" is hidden by ana's copy,
    # even though only the account copy matches the query
    assert [(e.name, e.user_id) for e in found] == [("returns", None)]

    # When ana searches for a word only her copy holds
    # Then her copy is found
    assert [(e.name, e.user_id) for e in world.search("manager", user="ana")] == [("policy", "ana")]

    # When bob, who has no copy, searches for "refund"
    # Then he finds both account entries
    assert sorted(world.found("refund", principal=world.bob)) == ["policy", "returns"]
