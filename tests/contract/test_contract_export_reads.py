"""What an export reads (SPEC §6.3), the same on every backend: ``EntryService.layers`` (the memory's layers that hold
entries, through ``EntryStore.layers``) and ``list_entries(content=True)`` (a layer's pages, each entry whole)."""

from __future__ import annotations

import pytest
from agentmem.domain.errors import ForbiddenError, NotFoundError
from agentmem.domain.models import Layer
from contract_world import World


def test_layers_are_the_ones_holding_entries_account_first_then_by_user(world: World) -> None:
    # Given entries in the account layer and in the layers of zoe and ana
    world.save("tone")
    world.save("tone", user="zoe")
    world.save("pref", user="ana")
    world.save("city", user="ana")
    # Then the account key lists every layer, with how many entries each holds
    assert world.container.entries.layers(world.account, world.memory) == [(None, 1), ("ana", 2), ("zoe", 1)]
    # and ana's key, or the account key acting for ana, only the account layer and ana's
    assert world.container.entries.layers(world.ana, world.memory) == [(None, 1), ("ana", 2)]
    assert world.container.entries.layers(world.account, world.memory, user="ana") == [(None, 1), ("ana", 2)]
    with pytest.raises(ForbiddenError):
        world.container.entries.layers(world.ana, world.memory, user="zoe")
    # When zoe's only entry is deleted, zoe's layer holds nothing and is left out
    world.container.entries.delete(world.account, world.memory, "tone", user="zoe")
    assert world.container.entries.layers(world.account, world.memory) == [(None, 1), ("ana", 2)]


def test_a_purged_layer_and_another_tenant_are_not_listed(world: World) -> None:
    world.save("tone")
    world.save("pref", user="ana")
    world.container.entries.store.purge_layer(Layer(world.account.account_id, world.memory, "ana"))
    assert world.container.entries.layers(world.account, world.memory) == [(None, 1)]
    with pytest.raises(NotFoundError):
        world.container.entries.layers(world.other, world.memory)


def test_a_layer_is_listed_with_content_page_by_page(world: World) -> None:
    # Given five entries in ana's layer
    for n in range(5):
        world.clock.advance(seconds=1)
        world.save(f"note-{n}", content=f"note {n} — ü", user="ana")
    entries = world.container.entries
    # When it is listed two at a time with content
    first = entries.list_entries(world.account, world.memory, user="ana", limit=2, content=True)
    rest = entries.list_entries(world.account, world.memory, user="ana", limit=3, cursor=first.next_cursor,
                                content=True)
    # Then every entry comes once, newest first, whole
    whole = first.items + rest.items
    assert [e.name for e in whole] == [f"note-{n}" for n in (4, 3, 2, 1, 0)]
    assert [e.content for e in whole] == [f"note {n} — ü" for n in (4, 3, 2, 1, 0)]
    assert all(e.content_hash.startswith("sha256:") for e in whole)
    # and without content the listing leaves it out, as before
    assert all(e.content is None for e in entries.list_entries(world.account, world.memory, user="ana").items)
