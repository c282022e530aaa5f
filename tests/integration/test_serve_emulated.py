"""`make run-aws` (`agentmem serve-emulated`): the AWS backend in one command. It starts DynamoDB Local and moto's
server itself, serves the API on them, runs summary passes in its own process, and takes the emulators with
it when it stops."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from serving import AGENTMEM, free_port, wait_healthy

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _answers(endpoint: str) -> bool:
    host, port = endpoint.removeprefix("http://").split(":")
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((host, int(port))) == 0


@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    # Given a shell with no AWS settings at all (no credentials, no endpoints), in a folder of its own
    workdir = tmp_path_factory.mktemp("run-aws")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTMEM_", "AWS_"))}
    port = free_port()
    log = workdir / "launcher.log"
    with log.open("wb") as out:
        process = subprocess.Popen([str(AGENTMEM), "serve-emulated", "--port", str(port)], cwd=workdir, env=env,
                                   stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(process, url, log.read_text, timeout=120)
        output = log.read_text()
        emulators = {name: (endpoint, int(pid)) for name, endpoint, pid in
                     re.findall(r"^(DynamoDB Local|moto's server) on (http://\S+) \(pid (\d+)\)$", output, re.M)}
        key = (workdir / ".agentmem-aws" / "dev-key").read_text().strip()
        yield {"process": process, "url": url, "key": key, "log": log, "emulators": emulators}
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)


def test_the_makefile_and_the_readme_run_it(launched: dict[str, Any]) -> None:
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^run-aws:.*\n\t(.+)$", makefile, re.M)
    assert recipe is not None and recipe[1] == "$(BIN)/agentmem serve-emulated --port $(PORT)"
    assert "make run-aws" in (ROOT / "README.md").read_text()


def test_it_starts_both_emulators_and_says_where_summary_passes_run(launched: dict[str, Any]) -> None:
    output = launched["log"].read_text()
    assert set(launched["emulators"]) == {"DynamoDB Local", "moto's server"}
    assert all(_answers(endpoint) for endpoint, _ in launched["emulators"].values())
    assert "Summary passes run in this process (extractive summariser)" in output
    health = requests.get(f"{launched['url']}/v1/health", timeout=5).json()
    assert health["backend"] == "aws"


def test_entries_and_a_summary_pass_work_on_the_emulators(launched: dict[str, Any]) -> None:
    http = requests.Session()
    http.headers["Authorization"] = f"Bearer {launched['key']}"
    url = launched["url"]
    # Given an entry saved and read back
    assert http.put(f"{url}/v1/memories/company", timeout=10).status_code in (200, 201)
    saved = http.put(f"{url}/v1/memories/company/entries/refunds", timeout=10,
                     json={"content": "Refund within 30 days.", "description": "Our refund rules"})
    assert saved.status_code == 201
    assert http.get(f"{url}/v1/memories/company/entries/refunds", timeout=10).json()["content"] == (
        "Refund within 30 days.")
    # and a conversation longer than its window
    assert http.put(f"{url}/v1/agents/support", json={}, timeout=10).status_code in (200, 201)
    rows = []
    for turn in range(16):
        rows += [{"role": "user", "content": f"Remember that ticket {turn} is about invoice INV-{turn:03d}."},
                 {"role": "assistant", "content": f"Noted: ticket {turn}."}]
    conversation = f"{url}/v1/agents/support/conversations/ticket-7"
    appended = http.post(f"{conversation}/messages", params={"user": "ana"}, json={"messages": rows}, timeout=30)
    assert (appended.status_code, appended.json()["added"]) == (201, 32)
    assert http.get(f"{conversation}/checkpoint", params={"user": "ana"}, timeout=10).status_code == 404
    # When a summary pass is asked for
    compacted = http.post(f"{conversation}/compact", params={"user": "ana"}, timeout=10)
    assert compacted.status_code == 202 and compacted.json()["job_id"]
    # Then it runs in the server's process and the checkpoint appears, covering what left the window
    deadline = time.monotonic() + 60
    while True:
        checkpoint = http.get(f"{conversation}/checkpoint", params={"user": "ana"}, timeout=10)
        if checkpoint.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert checkpoint.status_code == 200, checkpoint.text
    body = checkpoint.json()
    assert body["conversation"] == "ticket-7"
    assert "ticket 0 is about invoice INV-000" in body["content"]
    assert 0 < body["covers_through_seq"] < 32


def test_sigterm_stops_the_server_and_the_emulators(launched: dict[str, Any]) -> None:
    # When the launcher is sent SIGTERM
    process = launched["process"]
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0
    # Then the server and both emulators are gone
    deadline = time.monotonic() + 10
    while not all(_gone(pid) for _, pid in launched["emulators"].values()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(_gone(pid) for _, pid in launched["emulators"].values()), launched["emulators"]
    assert not any(_answers(endpoint) for endpoint, _ in launched["emulators"].values())
    assert "emulators stopped." in launched["log"].read_text()
