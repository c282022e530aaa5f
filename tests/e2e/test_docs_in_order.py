"""Every page of the README and docs/ runs as written, in page order, the way a reader works through it.

One `agentmem serve`, started as `make run` starts it in a fresh folder (the reader's clone: the server's data
in `.agentmem`, the virtualenv as `.venv`). Then each page, README.md first and docs/ in the order the README
sends a reader through them, gets a reader of its own: one Python session for its Python blocks (state carries
from block to block, as in a REPL) and one bash shell for its shell blocks, both in that folder, with only what
the README's quick start has the reader export (`AGENTMEM_URL`, `AGENTMEM_API_KEY`, run from its own export
block) and the virtualenv on PATH. A Python block passes when it raises nothing and prints each value its
comments give (`doc_blocks.check_printed`); a shell block when no command fails, as `set -e -o pipefail` would
stop at it. The server listens on a free port, so `127.0.0.1:8787` in a block reads as that port.

A block is not run when the page says so on the line before its fence, `<!-- not run: reason -->` (installing,
starting another server, Docker, AWS, a model API), or for the whole page, `<!-- page not run: reason -->`;
such a block is still checked for syntax (`bash -n`, `compile`). Blocks fenced as anything but `python`,
`bash` or `sh` (`text`, `json`, none) are output and samples, never run.

Then every page runs again, in the same order, on the same server that all of them have now used: a page must
make what it uses, destroy only what it made, and print what its comments say on a server that is not new.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from doc_blocks import page_blocks
from doc_reader import Reader, reader_environment, syntax_problem
from serving import AGENTMEM, served_as_make_run

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def reading_order() -> list[str]:
    """README.md, then docs/ in the order the README links them (its Documentation list is that order after
    the quick start's install page); a page the README does not link comes last, by name."""
    linked = list(dict.fromkeys(re.findall(r"\]\((docs/[a-z_-]+\.md)", README)))
    listed = re.findall(r"^- \[(docs/[a-z_-]+\.md)\]", README, flags=re.M)
    first = [page for page in linked if page not in listed and linked.index(page) < linked.index(listed[0])][:1]
    pages = first + [page for page in listed if page not in first]
    pages += [page for page in linked if page not in pages]
    pages += sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md") if f"docs/{p.name}" not in pages)
    return ["README.md", *pages]


PAGES = reading_order()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """`agentmem serve` as `make run` starts it, in the reader's folder (with the virtualenv as `.venv`)."""
    folder = tmp_path_factory.mktemp("clone")
    (folder / ".venv").symlink_to(AGENTMEM.parent.parent)
    with served_as_make_run(folder) as env:
        yield env


@pytest.fixture(scope="module")
def reader_env(served: dict[str, str]) -> dict[str, str]:
    """The reader's shell after the README's quick start: its export block run in the reader's folder."""
    [exports] = [b for b in page_blocks(README) if b.runs and "export AGENTMEM_URL" in b.body]
    env = reader_environment(served)
    shown = subprocess.run(["bash", "-c", as_served(exports.body, served) + "\nenv -0"], cwd=served["WORKDIR"],
                           env=env, capture_output=True, text=True, timeout=30, check=True).stdout
    exported = dict(pair.split("=", 1) for pair in shown.split("\0") if pair.startswith("AGENTMEM_"))
    assert set(exported) == {"AGENTMEM_URL", "AGENTMEM_API_KEY"}, exported
    assert exported["AGENTMEM_URL"] == served["AGENTMEM_URL"] and exported["AGENTMEM_API_KEY"]
    return {**env, **exported}


def as_served(body: str, served: dict[str, str]) -> str:
    return body.replace("127.0.0.1:8787", served["AGENTMEM_URL"].removeprefix("http://"))


def test_the_reading_order_covers_every_page() -> None:
    assert PAGES[:2] == ["README.md", "docs/install.md"]
    assert sorted(PAGES[1:]) == sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))


@pytest.mark.parametrize("page", [pytest.param((run, page), id=f"{run}-{page}")
                                  for run in ("first", "again") for page in PAGES])
def test_the_page_runs_as_written(page: tuple[str, str], served: dict[str, str], reader_env: dict[str, str],
                                  tmp_path: Path) -> None:
    _, name = page
    blocks = page_blocks((ROOT / name).read_text())
    # Given the page's blocks: those it says are not run are still well-formed
    for block in blocks:
        if block.not_run is not None and (problem := syntax_problem(block)):
            pytest.fail(f"{name}:{block.line} (not run: {block.not_run}) does not parse: {problem}")
    # When a reader runs the others in page order, each in the page's one Python session or bash shell
    reader = Reader(name, Path(served["WORKDIR"]), reader_env, tmp_path)
    try:
        for block in blocks:
            if block.runs:
                reader.run(replace(block, body=as_served(block.body, served)))
    finally:
        reader.close()
    # Then every one ran and passed (with -s, the page's counts and its slowest blocks)
    assert reader.count == sum(1 for block in blocks if block.runs)
    slowest = sorted(reader.seconds.items(), key=lambda item: -item[1])[:3]
    print(f"{name}: {reader.count} blocks run, {sum(1 for b in blocks if b.not_run)} not run; slowest:",
          ", ".join(f"{where} {seconds:.1f} s" for where, seconds in slowest))
