"""The AWS adapters against moto's server (one per session, per xdist worker), and the Lambda entry points.

``functions/`` and ``infra/`` sit at the repository root, which pytest puts on ``sys.path``
(``[tool.pytest.ini_options] pythonpath = ["."]``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from moto_server import MotoServer  # tests/support, on sys.path through tests/conftest.py


@pytest.fixture(scope="session")
def moto() -> Iterator[MotoServer]:
    """moto's server, executing state machines, with Lambda invokes routed to handlers in this process."""
    server = MotoServer().start()
    yield server
    server.stop()


@pytest.fixture
def sfn(moto: MotoServer) -> Any:
    return moto.client("stepfunctions")
