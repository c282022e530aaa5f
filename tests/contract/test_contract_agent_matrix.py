"""Who may do what through an agent's tools: every cell of surface × tool × layer × attachment.

The expected outcome of each cell is written here from SPEC §3 and §7 alone, not from the code:

* journal tools exist on the ``agent`` and ``test`` surfaces only (403 elsewhere);
* a ``browser`` never sees the account's memories: naming one is 404;
* reads (search, read) are allowed everywhere else;
* writes (save, delete) are refused with 403 on ``external`` and ``test``, on a memory attached
  read-only, and on an account's memory by an anonymous ``mcp`` client (it reads them); otherwise
  they land — in the user's layer in a user's conversation, in the account layer in a conversation
  with the account itself;
* a refused call changes nothing.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import pytest
from agentmem.domain.agents import Attachment
from agentmem.domain.errors import AgentmemError
from agentmem.services.agents import AgentSettings
from contract_world import World

AGENT = "matrix"
OWN = f"agent:{AGENT}"
SURFACES = ("agent", "mcp", "external", "test", "browser")
USERS = (None, "u1")  # None: the account layer (a conversation with the account); u1: a user's layer
TARGETS = {"own": None, "attached_ro": "company", "attached_rw": "notes"}  # the tool's `memory` argument
MEMORY_OF = {"own": OWN, "attached_ro": "company", "attached_rw": "notes"}
TOOLS = {  # tool → (operation, dialect's name for the entry)
    "memory__search": ("search", None),
    "memory_recall": ("search", None),
    "memory__read": ("read", "name"),
    "memory__save": ("save", "name"),
    "memory_store": ("save", "key"),
    "memory__delete": ("delete", "name"),
    "memory_forget": ("delete", "key"),
}
JOURNAL_TOOLS = {"journal_message_search": {"query": "refund"}, "journal_tool_call_view": {"tool_call_id": "t1"}}


def expected_status(surface: str, user: str | None, target: str, operation: str) -> int:
    if target != "own" and surface == "browser":
        return 404  # company and notes are the account's memories
    if operation in ("search", "read"):
        return 200
    if surface in ("external", "test"):
        return 403
    if target == "attached_ro":
        return 403
    if target != "own" and surface == "mcp" and user is None:
        return 403  # an anonymous MCP client reads the account's memories, never writes them
    return 200


@dataclass
class Cell:
    surface: str
    user: str | None
    target: str
    tool: str

    def __str__(self) -> str:
        return f"{self.tool} on {self.surface}, {self.user or 'account'} layer, {self.target}"


def _setup(world: World) -> None:
    container = world.container
    container.memories.create(world.account, "notes")
    container.agents.put(world.account, AGENT, AgentSettings(
        memories=(Attachment("company", writable=False), Attachment("notes", writable=True)),
    ))
    for memory in (OWN, "company", "notes"):
        world.save("seed", f"seed of {memory}", "A seeded entry", memory=memory)
    world.save("seed", f"seed of {OWN} for u1", "A seeded entry", memory=OWN, user="u1")


def _snapshot(world: World) -> dict[tuple[str, str | None], list[tuple[str, int]]]:
    state = {}
    for memory, user in itertools.product((OWN, "company", "notes"), USERS):
        page = world.container.entries.list_entries(world.account, memory, user=user, limit=100)
        state[(memory, user)] = sorted((e.name, e.version) for e in page.items)
    return state


def _call(world: World, cell: Cell, arguments: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    try:
        outcome = world.container.tools.execute(
            world.account, AGENT, cell.tool, arguments, conversation="c1", user=cell.user, surface=cell.surface,
        )
    except AgentmemError as error:
        return error.status, error.to_dict()
    return 200, outcome.result


def _arguments(cell: Cell, entry: str) -> dict[str, Any]:
    operation, key = TOOLS[cell.tool]
    arguments: dict[str, Any] = {}
    memory = TARGETS[cell.target]
    if memory is not None:
        arguments["memory"] = memory
    if operation == "search":
        arguments["query"] = "seed"
    else:
        assert key is not None
        arguments[key] = "seed" if operation == "read" else entry
    if operation == "save":
        arguments.update(content=f"written by {cell}", description="Written through a tool")
    return arguments


def _check_landed(world: World, cell: Cell, entry: str, result: dict[str, Any], problems: list[str]) -> None:
    operation, _ = TOOLS[cell.tool]
    memory = MEMORY_OF[cell.target]
    layer = world.container.entries.list_entries(world.account, memory, user=cell.user, limit=100).items
    names = {e.name for e in layer}
    if operation == "save" and entry not in names:
        problems.append(f"{cell}: the save did not land in {memory}, {cell.user or 'account'} layer")
    if operation == "delete" and entry in names:
        problems.append(f"{cell}: the delete left the entry in {memory}, {cell.user or 'account'} layer")
    if operation == "read":
        content = result["entry"]["content"]
        want = f"seed of {memory} for u1" if (memory == OWN and cell.user) else f"seed of {memory}"
        if content != want:
            problems.append(f"{cell}: read {content!r}, expected {want!r}")
    if operation == "search":
        memories = {item["memory"] for item in result["items"]}
        if cell.target != "own":
            want_memories = {memory}
        else:
            want_memories = {OWN} if cell.surface == "browser" else {OWN, "company", "notes"}
        if memories != want_memories:
            problems.append(f"{cell}: searched {sorted(memories)}, expected {sorted(want_memories)}")


def test_every_cell_of_surface_tool_layer_attachment(world: World) -> None:
    # Given an account agent with its own memory, `company` attached read-only and `notes` writable
    _setup(world)
    problems: list[str] = []
    cells = [Cell(*c) for c in itertools.product(SURFACES, USERS, TARGETS, TOOLS)]
    for number, cell in enumerate(cells):
        operation, _ = TOOLS[cell.tool]
        entry = f"cell-{number}"
        if operation == "delete":  # something to delete, in the layer the call acts on
            world.save(entry, "to be deleted", "A victim", memory=MEMORY_OF[cell.target], user=cell.user)
        before = _snapshot(world)
        # When the tool is called
        status, result = _call(world, cell, _arguments(cell, entry))
        # Then the outcome is the one SPEC §3 and §7 give
        want = expected_status(cell.surface, cell.user, cell.target, operation)
        if status != want:
            problems.append(f"{cell}: answered {status} {result}, expected {want}")
            continue
        if status != 200:
            if _snapshot(world) != before:
                problems.append(f"{cell}: refused with {status} but the store changed")
            continue
        _check_landed(world, cell, entry, result, problems)
    assert not problems, f"{len(problems)} of {len(cells)} cells are wrong:\n" + "\n".join(problems)


@pytest.mark.parametrize("tool", list(JOURNAL_TOOLS))
def test_journal_tools_exist_on_agent_and_test_surfaces_only(world: World, tool: str) -> None:
    _setup(world)
    for surface, user in itertools.product(SURFACES, USERS):
        cell = Cell(surface, user, "own", tool)
        status, body = _call(world, cell, JOURNAL_TOOLS[tool])
        if surface in ("agent", "test"):
            # search answers (nothing found yet); the view of a call this conversation never made is 404
            assert status == (200 if tool == "journal_message_search" else 404), f"{cell}: {status} {body}"
        else:
            assert status == 403, f"{cell}: {status} {body}"


@pytest.mark.parametrize("tool", ["memory__save", "memory_store"])
def test_anonymous_mcp_refuses_a_private_write_unless_the_agent_opts_into_shared(world: World, tool: str) -> None:
    _setup(world)
    key = "name" if tool == "memory__save" else "key"
    arguments = {key: "private-note", "content": "Keep this to me.", "description": "A note",
                 "visibility": "private"}
    cell = Cell("mcp", None, "own", tool)
    before = _snapshot(world)
    # When an anonymous MCP client asks for a private entry
    status, body = _call(world, cell, arguments)
    # Then it is refused with no_user_context, and nothing is stored
    assert (status, body["code"]) == (422, "no_user_context")
    assert _snapshot(world) == before
    # When the agent opts into storing such writes shared
    world.container.agents.put(world.account, AGENT, AgentSettings(anonymous_private_writes="shared"))
    status, body = _call(world, cell, arguments)
    # Then it is stored in the account layer, and the answer says it was downgraded
    assert status == 200
    assert body["downgraded"] == "no_user_context"
    assert body["entry"]["visibility"] == "shared"
    assert "private-note" in {e.name for e in world.container.entries.list_entries(world.account, OWN).items}


@pytest.mark.parametrize("surface", SURFACES)
def test_memory_capability_off_refuses_every_write_and_still_reads(world: World, surface: str) -> None:
    _setup(world)
    world.container.agents.put(world.account, AGENT, AgentSettings(memory_capability=False))
    before = _snapshot(world)
    for tool, arguments in (
        ("memory__save", {"name": "x", "content": "y", "description": "z"}),
        ("memory__delete", {"name": "seed"}),
        ("memory_store", {"key": "x", "content": "y", "description": "z"}),
        ("memory_forget", {"key": "seed"}),
    ):
        status, body = _call(world, Cell(surface, "u1", "own", tool), arguments)
        assert status == 403, f"{tool} on {surface}: {status} {body}"
    assert _snapshot(world) == before
    status, body = _call(world, Cell(surface, "u1", "own", "memory__read"), {"name": "seed"})
    assert (status, body["entry"]["content"]) == (200, f"seed of {OWN} for u1")
