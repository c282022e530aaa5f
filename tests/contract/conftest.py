"""The contract suite runs every test once per backend: the ``world`` fixture is parametrized over BUILDERS."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from contract_world import BUILDERS, FakeClock, World, make_world


@pytest.fixture(params=list(BUILDERS))
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    """A fresh backend on its own data dir, with the accounts, keys and memory of ``make_world``."""
    clock = FakeClock()
    container = BUILDERS[request.param](tmp_path, clock)
    yield make_world(container, clock)
