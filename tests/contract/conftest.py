"""The contract suite runs every test once per backend: the ``world`` fixture is parametrized over BUILDERS."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dynamodb_local
import pytest
from contract_world import BUILDERS, FakeClock, World, make_world


@pytest.fixture(scope="session", autouse=True)
def _stop_dynamodb_local() -> Iterator[None]:
    """DynamoDB Local starts on the first AWS test of this process and stops when the session ends."""
    yield
    dynamodb_local.stop_shared()


@pytest.fixture(params=list(BUILDERS))
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    """A fresh backend (its own data dir or table), with the accounts, keys and memory of ``make_world``."""
    clock = FakeClock()
    with BUILDERS[request.param](tmp_path, clock) as container:
        yield make_world(container, clock)
