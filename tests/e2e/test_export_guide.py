"""docs/export.md works as written, in page order, twice on the same server.

The page's Python blocks run in one session (one namespace) and its shell blocks in bash, in the folder the
session runs in, against `agentmem serve` started as `make run` starts it, with AGENTMEM_URL and AGENTMEM_API_KEY
set and `.venv/bin/agentmem` the CLI; every `print(...)  # value` must be what the block printed, and every
shell command's `# value` what it printed (`e.g.` ones are illustrations). Then the whole page runs again on the
same server and prints the same. The blocks shown but not run (`text`) are checked for what they name.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import agentmem
import pytest
from doc_blocks import fenced_blocks, run_block
from serving import AGENTMEM, served_as_make_run

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "export.md").read_text()
README = (ROOT / "README.md").read_text()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """`agentmem serve` as `make run` starts it in a fresh folder, with `.venv/bin/agentmem` there as in a checkout."""
    with served_as_make_run(tmp_path_factory.mktemp("export-page")) as env:
        venv_bin = Path(env["WORKDIR"]) / ".venv" / "bin"
        venv_bin.mkdir(parents=True)
        (venv_bin / "agentmem").symlink_to(AGENTMEM)
        yield env


def blocks_in_order() -> list[tuple[str, str]]:
    """The page's Python and bash blocks, in page order."""
    found = re.findall(r"^```(python|bash)\n(.*?)^```", PAGE, flags=re.S | re.M)
    return [(language, body) for language, body in found]


def run_shell_block(block: str, env: dict[str, str], where: str) -> None:
    """Each command of the block in bash; what its `# value` comment says is what it printed."""
    for line in filter(None, (raw.strip() for raw in block.splitlines())):
        command, _, promised = line.partition("  #")
        done = subprocess.run(["bash", "-c", f"set -euo pipefail\n{command}"], env=env, cwd=env["WORKDIR"],
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, f"{where}: {command}: {done.stderr}"
        promised = promised.strip()
        if promised and not promised.startswith("e.g."):
            assert done.stdout.strip() == promised, f"{where}: {command} printed {done.stdout!r}"


def run_page(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setenv("AGENTMEM_URL", env["AGENTMEM_URL"])
    monkeypatch.setenv("AGENTMEM_API_KEY", env["AGENTMEM_API_KEY"])
    monkeypatch.chdir(env["WORKDIR"])
    agentmem.set_default_client(None)
    namespace: dict[str, object] = {}
    printed: list[str] = []
    try:
        for n, (language, block) in enumerate(blocks_in_order(), start=1):
            where = f"docs/export.md block {n}"
            if language == "python":
                printed.append(run_block(block, namespace, where))
            else:
                run_shell_block(block, env, where)
    finally:
        agentmem.set_default_client(None)
    return printed


def test_the_page_runs_as_written_twice_on_the_same_server(
    served: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the page's blocks
    assert len(fenced_blocks(PAGE, "python")) >= 7 and len(fenced_blocks(PAGE, "bash")) >= 3
    # When they run in order, then again
    first = run_page(served, monkeypatch)
    second = run_page(served, monkeypatch)
    # Then each printed what it says, the second time as the first
    assert first == second
    workdir = Path(served["WORKDIR"])
    assert (workdir / "handbook.jsonl").read_text().startswith('{"format":"agentmem-export","format_version":1,')
    assert not list(workdir.glob("*.partial"))


def test_the_blocks_shown_but_not_run_use_commands_that_exist() -> None:
    shown = "\n".join(fenced_blocks(PAGE, "text"))
    commands = re.findall(r"agentmem (export|import)\b", shown)
    assert commands == ["export", "import"]
    helps = {name: subprocess.run([str(AGENTMEM), name, "--help"], capture_output=True, text=True, timeout=60,
                                  env={**os.environ}, check=False) for name in ("export", "import")}
    assert all(done.returncode == 0 for done in helps.values())
    for option in ("--memory", "--user", "-o", "--json"):
        assert option in helps["export"].stdout
    assert "--dry-run" in helps["import"].stdout


def test_the_readme_lists_the_page() -> None:
    assert "[docs/export.md](docs/export.md)" in README
