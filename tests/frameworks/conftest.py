"""agentmem installed beside an agent framework's latest release, in that framework's own environment
(``.ci/frameworks``): a real ``agentmem serve`` per module, with the key it wrote, for the tests here.

These tests run only where ``AGENTMEM_FRAMEWORK`` names the framework the environment holds (tests/conftest.py
leaves the folder out otherwise): each needs only agentmem's base install, pytest and that framework.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import requests
from serving import AGENTMEM, free_port, wait_healthy  # tests/support, on sys.path through tests/conftest.py


@dataclass(frozen=True)
class Served:
    base_url: str
    key: str

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    def env(self) -> dict[str, str]:
        return {"AGENTMEM_URL": self.base_url, "AGENTMEM_API_KEY": self.key}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``agentmem serve`` on a free port and a fresh data dir."""
    data_dir = tmp_path_factory.mktemp("framework") / "data"
    data_dir.mkdir()
    log = data_dir.parent / "serve.log"
    base_url = f"http://127.0.0.1:{free_port()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(AGENTMEM), "serve", "--data-dir", str(data_dir), "--port", base_url.rsplit(":", 1)[1]],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
        )
    try:
        wait_healthy(proc, base_url, log.read_text)
        yield Served(base_url, (data_dir / "dev-key").read_text().strip())
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture
def agent(served: Served) -> str:
    """A fresh account agent."""
    name = f"support-{uuid.uuid4().hex[:8]}"
    response = requests.put(f"{served.base_url}/v1/agents/{name}", json={"instructions": "Answer billing questions."},
                            headers=served.headers(), timeout=10)
    assert response.status_code == 201, response.text
    return name
