"""What the end-to-end tests share: the SDK's default client talking to the API handler in-process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import agentmem
import pytest
from agentmem.api.app import lambda_handler
from agentmem.bootstrap import build_container, ensure_default_account, set_container
from agentmem.settings import Settings


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[agentmem.Client]:
    """The API handler on a temp data dir, and the SDK's default client talking to it in-process."""
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")  # metric lines would mix into printed output
    container = build_container(Settings(data_dir=tmp_path))
    key = ensure_default_account(container)
    set_container(container)
    client = agentmem.Client("http://in-process", key, transport=agentmem.InProcessTransport(lambda_handler))
    agentmem.set_default_client(client)
    yield client
    agentmem.set_default_client(None)
    set_container(None)
