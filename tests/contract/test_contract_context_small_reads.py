"""The context's tests again on DynamoDB, with the index reading two entries of a layer at a time: every layer of
more than two entries is then one the build does not read whole, so its count, its shadowed names, its pinned
block and its pages past the first come from the counter, its pins and the lookups (``context_index.py``), and
must say exactly what a build that read every entry says, after every change the tests make."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from agentmem.adapters.aws.dynamodb import context_index
from contract_world import FakeClock, World, build_aws, make_world

# the tests, collected again here, where the fixtures below replace the conftest's
from test_contract_context import *  # noqa: F403
from test_contract_context_index import *  # noqa: F403
from test_contract_context_reads_ahead import *  # noqa: F403


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    monkeypatch.setattr(context_index, "INDEX_READ", 2)
    clock = FakeClock()
    with build_aws(tmp_path, clock) as container:
        yield make_world(container, clock)
