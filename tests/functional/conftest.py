"""Functional tests: a real ``agentmem serve`` subprocess, spoken to over HTTP with ``requests``.

The session's server runs on a free port with a temporary data dir, in one process; ``workers_server`` is
one of two worker processes (``agentmem serve --workers 2``). Tests that need a server of
their own (first start, second start, ``AGENTMEM_API_KEY``) use ``functional_support.running_server``;
on the AWS backend, ``functional_support.running_aws_server`` (DynamoDB Local, stopped when the session ends).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import dynamodb_local  # tests/support, on sys.path through tests/conftest.py
import pytest
import requests
from functional_support import Server, auth, running_aws_server, running_server
from workers_support import Workers, connections_by_worker, slow_summariser, wait_for_workers

SUMMARY_DELAY_S = 1.0  # the workers' summariser takes this long: a pass is still running when it is asked again


@pytest.fixture(scope="session", autouse=True)
def _stop_dynamodb_local() -> Iterator[None]:
    """This process's DynamoDB Local (if a test started it) ends with the session."""
    yield
    dynamodb_local.stop_shared()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The session's server, with the `default` account's key from ``dev-key``."""
    data_dir = tmp_path_factory.mktemp("functional") / "data"
    with running_server(data_dir) as (base_url, _proc, log):
        key = (data_dir / "dev-key").read_text().strip()
        yield Server(base_url=base_url, key=key, data_dir=data_dir, log=log)


@pytest.fixture(scope="session")
def workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workers]:
    """The session's server of two worker processes, whose summary passes take a second (their summariser
    waits that long before it answers)."""
    data_dir = tmp_path_factory.mktemp("functional-workers") / "data"
    with slow_summariser(SUMMARY_DELAY_S) as summary_url, running_server(
        data_dir, workers=2, AGENTMEM_SUMMARISER="openai", AGENTMEM_SUMMARY_URL=summary_url,
        AGENTMEM_SUMMARY_MODEL="slow",
    ) as (base_url, proc, log):
        wait_for_workers(proc.pid, 2)
        key = (data_dir / "dev-key").read_text().strip()
        for held in connections_by_worker(base_url, key, proc.pid).values():  # every worker is answering
            for conn in held:
                conn.close()
        yield Workers(Server(base_url=base_url, key=key, data_dir=data_dir, log=log), proc)


@pytest.fixture(scope="session")
def workers_server(workers: Workers) -> Server:
    return workers.server


@pytest.fixture(scope="module", params=("embedded", "aws"))
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The server a module's requests go to when they run on both backends: the session's embedded one, or
    one on the AWS backend (DynamoDB Local and moto's S3), for the module."""
    if request.param == "embedded":
        server: Server = request.getfixturevalue("server")
        assert requests.get(server.url("/v1/health"), timeout=10).json()["backend"] == "embedded"
        yield server
        return
    with running_aws_server(tmp_path_factory.mktemp("functional-aws") / "data") as server:
        assert requests.get(server.url("/v1/health"), timeout=10).json()["backend"] == "aws"
        yield server


@pytest.fixture
def http(server: Server) -> Iterator[requests.Session]:
    """A session authenticated with the default account's key."""
    with requests.Session() as session:
        session.headers.update(auth(server.key))
        yield session


@pytest.fixture
def memory(server: Server, http: requests.Session) -> str:
    """A fresh account memory of the default account."""
    name = f"mem-{uuid.uuid4().hex[:12]}"
    response = http.put(server.url(f"/v1/memories/{name}"))
    assert response.status_code == 201, response.text
    return name
