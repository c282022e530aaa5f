"""``Memory.export()`` / ``Memory.import_entries()`` and the account-wide ``Client.export()`` /
``Client.import_entries()``, on the real API handler in-process, through the sync client and the async one: the
same walk gives the same lines and the same reports."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from agentmem.api.app import lambda_handler
from agentmem.bootstrap import build_container, ensure_default_account, set_container
from agentmem.client import AsyncClient, AsyncInProcessTransport, Client, ExportFileError, InProcessTransport
from agentmem.client.exports import Progress
from agentmem.settings import Settings


@pytest.fixture(autouse=True)
def quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")


@pytest.fixture
def clients(tmp_path: Path) -> Iterator[tuple[Client, AsyncClient]]:
    container = build_container(Settings(data_dir=tmp_path))
    key = ensure_default_account(container)
    set_container(container)
    yield (Client("http://in-process", key, transport=InProcessTransport(lambda_handler)),
           AsyncClient("http://in-process", key, transport=AsyncInProcessTransport(lambda_handler)))
    set_container(None)


def run(awaitable: Any) -> Any:
    return asyncio.run(awaitable)


async def collect(lines: AsyncIterator[str]) -> list[str]:
    return [line async for line in lines]


def without_times(lines: list[str]) -> list[str]:
    """The lines minus the header's moment of export (two exports are otherwise equal)."""
    import json

    header = json.loads(lines[0])
    header.pop("exported_at")
    return [json.dumps(header), *lines[1:]]


def test_a_memory_exports_and_copies_into_another_the_same_through_both_clients(
    clients: tuple[Client, AsyncClient],
) -> None:
    sync, aio = clients
    # Given a memory with an account layer and a user's layer
    company = sync.memories.create("company")
    company.save("tone", "Warm, brief.", description="How we write", visibility="read_only")
    company.save("tea", "No sugar.", description="Ana's tea", user="ana", category="user_profile", importance=0.8)
    sync.agents.create("support")
    # When it is exported through each client
    seen: list[Progress] = []
    lines = [*company.export(progress=seen.append)]
    async_lines = run(collect(aio.memory("company").export()))
    # Then both give the same lines: a header, the memory, its entries of both layers
    assert without_times(lines) == without_times(async_lines)
    assert len(lines) == 4 and seen[0] == Progress(0, 2) and seen[-1] == Progress(2, 2)
    # When it is imported into a new memory through each client, then again
    copy = sync.memories.create("copy")
    first = copy.import_entries(lines)
    again = run(aio.memory("copy").import_entries(lines))
    # Then the first creates both entries in their layers, the second finds them unchanged
    assert [(o.layer, o.name, o.action) for o in first.outcomes] == [(None, "tone", "created"),
                                                                       ("ana", "tea", "created")]
    assert again.counts["unchanged"] == 2 and again.ok
    assert copy.read("tea", user="ana").content == "No sugar."
    assert copy.read("tone").visibility == "read_only"


def test_the_account_export_holds_every_memory_and_an_agents_needs_its_agent(
    clients: tuple[Client, AsyncClient], tmp_path: Path,
) -> None:
    sync, aio = clients
    sync.memories.create("company").save("tone", "Warm.", description="How we write")
    sync.memories.create("notes", user="bo").save("dog", "Rex.", description="Bo's dog")
    sync.agents.create("support").memory.save("fact", "Opens at 9.", description="Hours")
    file = tmp_path / "all.jsonl"
    file.write_text("".join(sync.export()))
    assert without_times(file.read_text().splitlines()) == without_times(
        [line.rstrip("\n") for line in run(collect(aio.export()))])
    # When the file is imported into a fresh service without the agent
    container = build_container(Settings(data_dir=tmp_path / "fresh"))
    set_container(container)
    fresh = Client("http://in-process", ensure_default_account(container), transport=InProcessTransport(lambda_handler))
    report = fresh.import_entries(file)
    # Then the memories are made, and the agent's own memory is refused, saying what to do
    assert sorted(report.memories_created) == ["company", "notes"]
    [refused] = report.refused
    assert (refused.memory, refused.name) == ("agent:support", "fact")
    assert "create the agent first" in (refused.reason or "")
    assert fresh.memory("notes", user="bo").read("dog").content == "Rex."
    # and once the agent exists, importing again brings its memory's entry
    fresh.agents.create("support")
    assert fresh.import_entries(file).counts == {"created": 1, "updated": 0, "unchanged": 2, "expired": 0,
                                                 "refused": 0}


def test_a_file_of_many_memories_does_not_go_into_one_and_a_bad_file_writes_nothing(
    clients: tuple[Client, AsyncClient],
) -> None:
    sync, _ = clients
    sync.memories.create("a").save("x", "1", description="d")
    sync.memories.create("b").save("y", "2", description="d")
    lines = [*sync.export()]
    target = sync.memories.create("target")
    with pytest.raises(ValueError, match="holds 2 memories"):
        target.import_entries(lines)
    with pytest.raises(ExportFileError, match="line 3: not JSON"):
        sync.import_entries([*lines[:2], "{oops\n", *lines[2:]])
    assert target.entries() == []


def test_exporting_a_memory_that_is_not_there_says_so_and_a_name_given_twice_is_exported_once(
    clients: tuple[Client, AsyncClient],
) -> None:
    from agentmem.client import NotFound

    sync, _ = clients
    sync.memories.create("company").save("tone", "Warm.", description="How we write")
    with pytest.raises(NotFound, match="no memory named 'nothing-here'"):
        list(sync.export(memories=["company", "nothing-here"]))
    assert sum('"type":"memory"' in line for line in sync.export(memories=["company", "company"])) == 1
