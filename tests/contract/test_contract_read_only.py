"""One rule for ``read_only`` account entries on every path (SPEC §2.1, §2.3; ``domain/access.py``
``check_read_only``): nobody makes a user's copy of one — not a user key through the API, not an account key
acting for a user, not the agent tools in either dialect, not MCP — so it is never shadowed, and every reader
(the API's read and search, ``memory__read``, the pinned block, the memory index) shows the account's entry.
A ``shared`` entry is copied as before, and every reader then prefers the user's copy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from agentmem.domain.agents import Attachment
from agentmem.domain.errors import AgentmemError
from contract_world import World
from test_contract_conversations import Chat, make_agent, tool

POLICY = "Refunds within 14 days, never more."


def refusal(call: Callable[[], Any]) -> tuple[int, str | None]:
    with pytest.raises(AgentmemError) as refused:
        call()
    return refused.value.status, refused.value.details.get("reason")


def readers(world: World, name: str) -> dict[str, str]:
    """What each reader shows of ``name`` to ana: the content, or where it is missing."""
    entries = world.container.entries
    found = tool(world, "memory__read", {"name": name, "memory": "company"})["entry"]["content"]
    searched = [r.entry for r in entries.search(world.ana, "company", "refunds")]
    context = Chat(world).context()
    pinned = context["pinned"]["text"]
    index = context["memory_index"]["text"]
    return {
        "memory__read": found,
        "search": next((e.content or "" for e in searched if e.name == name), "missing"),
        "shadowed read": entries.read_shadowed(world.ana, "company", name, user="ana").content or "",
        "pinned": "account's" if POLICY in pinned else ("ana's" if "Mine:" in pinned else "missing"),
        "index": "listed" if name in index else "missing",
    }


def test_no_path_makes_a_users_copy_of_a_read_only_entry_and_every_reader_shows_the_accounts(world: World) -> None:
    # Given an agent attaching the account memory "company" read-only, and a read_only entry in it
    make_agent(world, memories=(Attachment("company", writable=True),))
    world.save("refunds", POLICY, "Refund policy", memory="company", visibility="read_only")
    entries = world.container.entries
    mine = {"content": "Mine: refunds whenever I like.", "memory": "company", "name": "refunds"}

    # When ana saves that name by every path: her user key (REST), the account key for her, the tools in both
    # dialects, MCP
    attempts = {
        "user key": lambda: world.save("refunds", mine["content"], None, memory="company", principal=world.ana),
        "account key, user=ana": lambda: world.save("refunds", mine["content"], None, memory="company", user="ana"),
        "memory__save": lambda: tool(world, "memory__save", mine),
        "memory_store": lambda: tool(world, "memory_store", {"key": "refunds", "content": mine["content"],
                                                             "memory": "company"}),
        "mcp": lambda: tool(world, "memory__save", mine, surface="mcp"),
    }
    # Then every one is refused alike: 403 read_only
    assert {path: refusal(attempt) for path, attempt in attempts.items()} == {
        path: (403, "read_only") for path in attempts}
    # and nothing landed in her layer
    assert world.names(memory="company", user="ana") == []
    # and every reader shows her the account's entry
    assert readers(world, "refunds") == {"memory__read": POLICY, "search": POLICY, "shadowed read": POLICY,
                                         "pinned": "account's", "index": "listed"}
    # while the account still changes it, for everyone
    world.save("refunds", POLICY + " Ask first.", None, memory="company")
    assert entries.read_shadowed(world.ana, "company", "refunds", user="ana").content == POLICY + " Ask first."


def test_a_shared_entry_is_copied_for_the_user_and_every_reader_prefers_the_copy(world: World) -> None:
    # Given a plain shared entry in the account memory
    make_agent(world, memories=(Attachment("company", writable=True),))
    world.save("refunds", POLICY, "Refund policy", memory="company")

    # When ana's key saves that name
    saved = world.save("refunds", "Mine: refunds whenever I like.", None, memory="company", principal=world.ana)

    # Then it is her own copy, with the account's description, and the account's entry is untouched
    assert (saved.created, saved.entry.user_id, saved.entry.description) == (True, "ana", "Refund policy")
    assert world.read("refunds", memory="company").content == POLICY
    # and every reader shows her the copy (the pinned block pins neither: neither is read_only nor a profile)
    assert readers(world, "refunds") == {"memory__read": "Mine: refunds whenever I like.",
                                         "search": "Mine: refunds whenever I like.",
                                         "shadowed read": "Mine: refunds whenever I like.",
                                         "pinned": "missing", "index": "listed"}
    # and the same save through the tools makes (here: changes) the same copy
    tool(world, "memory__save", {"name": "refunds", "content": "Mine, again.", "memory": "company"})
    assert world.read("refunds", memory="company", user="ana").content == "Mine, again."
    assert world.read("refunds", memory="company").content == POLICY
