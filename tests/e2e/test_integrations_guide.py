"""docs/integrations.md works as written: its async client example runs against the real API handler in-process
(``AsyncInProcessTransport`` in place of HTTP), prints what its comments say, and stores what it says."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import agentmem
import agentmem.client.aio as aio
import pytest
from agentmem.api.app import lambda_handler
from agentmem.bootstrap import build_container, ensure_default_account, set_container
from agentmem.settings import Settings
from doc_blocks import fenced_blocks, run_block

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "integrations.md").read_text()


@pytest.fixture
def key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    container = build_container(Settings(data_dir=tmp_path))
    account_key = ensure_default_account(container)
    assert account_key is not None
    set_container(container)
    monkeypatch.setenv("AGENTMEM_URL", "http://in-process")
    monkeypatch.setenv("AGENTMEM_API_KEY", account_key)
    # the page's AsyncClient() reaches the handler in-process instead of over HTTP
    monkeypatch.setattr(aio, "default_transport", lambda url, timeout: aio.AsyncInProcessTransport(lambda_handler))
    yield account_key
    set_container(None)


def test_the_async_client_example_runs_as_written(key: str) -> None:
    block = fenced_blocks(PAGE, "python")[0]  # the async client's; the frameworks' blocks follow (tests/integrations)
    namespace: dict[str, Any] = {"__name__": "integrations_guide"}
    run_block(block, namespace, "docs/integrations.md python block 1")
    # Then the memory, the agent and the conversation are there, as the sync client sees them
    client = agentmem.Client("http://in-process", key, transport=agentmem.InProcessTransport(lambda_handler))
    company = client.memory("company")
    assert sorted(entry.name for entry in company.entries()) == ["refunds", "tone"]
    support = client.agent("support")
    assert [m.name for m in support.memories] == ["company"]
    assert [m.content for m in support.conversation("ticket-7", user="user_42").messages()] == [
        "Hi, I'm Ana. Can I get a refund?", "Hello Ana!"]
