"""A second ``agentmem serve`` (or ``serve-emulated``) on the port of one running: it fails to start, in one line
naming the port and the server holding it, and the first answers every request meanwhile (local/port_hold.py).

The workers of a server listen with ``SO_REUSEPORT``, which the kernel grants any process of the same user: a
second server with workers used to start beside the first, and the connections were spread over both."""

from __future__ import annotations

import subprocess
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from functional_support import AGENTMEM, auth, clean_env, running_server


class Probes:
    """Requests with the first server's key, one connection each, until stopped: their statuses counted (a
    connection the other server answered would be a 401)."""

    def __init__(self, base_url: str, key: str) -> None:
        self.base_url, self.key = base_url, key
        self.statuses: Counter[str] = Counter()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Probes:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.thread.join(10)

    def _run(self) -> None:
        while not self.stopping.is_set():
            try:
                got = requests.get(f"{self.base_url}/v1/memories", timeout=5,
                                   headers={**auth(self.key), "Connection": "close"})
                self.statuses[str(got.status_code)] += 1
            except requests.RequestException as error:
                self.statuses[type(error).__name__] += 1


@pytest.fixture(scope="module", params=[2, 1], ids=["first-with-workers", "first-in-one-process"])
def first(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int, Path, str]]:
    data_dir = tmp_path_factory.mktemp("first") / "data"
    with running_server(data_dir, workers=request.param, AGENTMEM_EMBEDDER="hashing") as (base_url, proc, _log):
        yield base_url, proc.pid, data_dir, (data_dir / "dev-key").read_text().strip()


@pytest.mark.parametrize("command", [
    ["serve", "--workers", "2"],
    ["serve", "--workers", "1"],
    ["serve", "--backend", "aws", "--workers", "2"],
    ["serve-emulated"],
], ids=["serve-with-workers", "serve-in-one-process", "serve-aws", "serve-emulated"])
def test_a_second_server_on_the_port_fails_in_one_line_and_the_first_answers_throughout(
    first: tuple[str, int, Path, str], tmp_path: Path, command: list[str]
) -> None:
    base_url, pid, data_dir, key = first
    port = base_url.rsplit(":", 1)[1]
    # Given requests with the first server's key going on
    with Probes(base_url, key) as probes:
        # When another server is started on its port, on a data dir of its own
        done = subprocess.run([str(AGENTMEM), *command, "--data-dir", str(tmp_path / "other"), "--port", port],
                              capture_output=True, text=True, env=clean_env(AGENTMEM_EMBEDDER="hashing"), timeout=120,
                              check=False)
        # (and the first is asked a while longer)
        before = sum(probes.statuses.values())
        while sum(probes.statuses.values()) < before + 20:
            probes.stopping.wait(0.05)
    # Then it exits 1 with one line naming the port and the server holding it
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"Error: cannot listen on 127.0.0.1:{port}: port {port} is held by another agentmem "
                               f"server (pid {pid}: agentmem serve --data-dir {data_dir}"), lines[0]
    assert f"data dir {data_dir.resolve()})" in lines[0] and lines[0].endswith("choose another port with --port.")
    # And it has left no data behind
    assert not (tmp_path / "other").exists()
    # And the first answered every request, with its key
    assert set(probes.statuses) == {"200"}, probes.statuses
