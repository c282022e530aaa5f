"""The README's examples work as written against the server `make run` starts.

The Python block runs as a script with only AGENTMEM_URL / AGENTMEM_API_KEY set, the
curl block runs in bash, and the CLI block runs its commands one by one.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from doc_blocks import fenced_blocks
from serving import served_as_make_run

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _blocks(language: str) -> list[str]:
    return fenced_blocks(README, language)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """`agentmem serve` as the README's `make run` starts it, in a fresh folder."""
    with served_as_make_run(tmp_path_factory.mktemp("readme")) as env:
        yield env


def test_the_python_example_runs_and_shows_a_conflict(served: dict[str, str]) -> None:
    # Given the README's SDK example (the first Python block; test_docs_in_order runs every block in order)
    example = _blocks("python")[0]
    # When it runs as a script against the server
    result = subprocess.run(
        [sys.executable, "-c", example], env=served, capture_output=True, text=True, timeout=60
    )
    # Then it succeeds, reads version 1 and reports the stale save's conflict at version 2
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "1 Refund within 30 days of purchase, to the original card."
    assert "changed meanwhile; now at version 2" in result.stdout
    assert any(line.startswith("refunds None ") for line in lines)


def test_the_curl_example_runs(served: dict[str, str]) -> None:
    # Given the README's curl block (with a memory of its own so the runs do not collide)
    [block] = [b for b in _blocks("bash") if "curl" in b]
    script = "set -euo pipefail\n" + block.replace("memories/company", "memories/curl-company")
    # When bash runs it
    result = subprocess.run(
        ["bash", "-c", script], env=served, capture_output=True, text=True, timeout=60, cwd=served["WORKDIR"]
    )
    # Then every call answered as the README's comments say: ETag 1, then version 2, then a search hit
    assert result.returncode == 0, result.stderr
    assert 'ETag: "1"' in result.stdout
    assert '"version":2' in result.stdout
    assert '"mode":"hybrid"' in result.stdout


def test_the_cli_examples_run(served: dict[str, str]) -> None:
    # Given the README's CLI block
    [block] = [b for b in _blocks("bash") if ".venv/bin/agentmem" in b]
    commands = [line.split("#")[0].strip().replace(".venv/bin/agentmem", "agentmem") for line in block.splitlines()]
    # When each command runs (the history command needs the entry the SDK example saved)
    auth = {"Authorization": f"Bearer {served['AGENTMEM_API_KEY']}"}
    requests.put(f"{served['AGENTMEM_URL']}/v1/memories/company", headers=auth, timeout=10)
    subprocess.run([sys.executable, "-c", _blocks("python")[0]], env=served, capture_output=True, timeout=60)
    outputs = []
    for command in filter(None, commands):
        result = subprocess.run(
            ["bash", "-c", command], env=served, capture_output=True, text=True, timeout=60, cwd=served["WORKDIR"]
        )
        # Then each succeeds
        assert result.returncode == 0, f"{command}: {result.stderr}"
        outputs.append(result.stdout)
    assert "saved company/tone at version 1" in "".join(outputs)
    # and the operator command printed the new account's first key
    assert re.search(r"^key:\s+am_\S{20,}$", outputs[-1], flags=re.M), outputs[-1]
