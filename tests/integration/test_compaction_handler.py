"""The scheduled sweep: the trash purge and the passes left due, through the container, on the embedded backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from agentmem.bootstrap import build_container, set_container
from agentmem.domain.errors import NotFoundError
from agentmem.settings import Settings
from moto_server import FakeLambdaContext

from functions.compaction.handler import handle, lambda_handler


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now


def test_the_sweep_purges_memories_past_their_thirty_days_in_the_trash(tmp_path: Path) -> None:
    # Given an account with two trashed memories, one trashed 31 days ago
    clock = Clock()
    container = build_container(Settings(backend="embedded", data_dir=tmp_path), clock=clock)
    _, secret = container.keys.create_account("acme")
    account = container.keys.authenticate("Bearer " + secret)
    container.memories.create(account, "old-notes")
    container.memories.delete(account, "old-notes")
    clock.now += timedelta(days=31)
    container.memories.create(account, "recent-notes")
    container.memories.delete(account, "recent-notes")
    # When the scheduled sweep runs
    result = handle(container)
    # Then the old one is gone for good and the recent one can still be restored
    assert result["memories_purged"] == 1
    container.memories.restore(account, "recent-notes")
    with pytest.raises(NotFoundError):
        container.memories.restore(account, "old-notes")


def test_the_lambda_entry_point_sweeps_the_process_container(tmp_path: Path) -> None:
    set_container(build_container(Settings(backend="embedded", data_dir=tmp_path)))
    try:
        result = lambda_handler({"source": "aws.events", "detail-type": "Scheduled Event"}, FakeLambdaContext("c"))
    finally:
        set_container(None)
    assert result == {"memories_purged": 0, "agents_purged": 0, "entries_expired": 0, "passes_started": 0}
