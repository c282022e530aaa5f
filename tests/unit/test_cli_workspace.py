"""``agentmem workspace``, driven with click's CliRunner against the real API handler in-process on a temp
data dir (links are served by the in-process transport)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agentmem.api.app import lambda_handler
from agentmem.bootstrap import build_container, ensure_default_account, set_container
from agentmem.cli import cli
from agentmem.client import Agent, Client, InProcessTransport, NotFound, Workspace
from agentmem.settings import Settings
from click.testing import CliRunner, Result

MIB = 1024 * 1024
WHERE = ("--agent", "support", "--conversation", "ticket-7", "--user", "user_42")


class Shell:
    """Runs ``agentmem workspace`` commands with the account key against the in-process API."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.client = Client("http://in-process", key, transport=InProcessTransport(lambda_handler))

    def __call__(self, *args: str, stdin: bytes | str | None = None) -> Result:
        obj = {"transport": InProcessTransport(lambda_handler)}
        return CliRunner().invoke(cli, ["--api-key", self.key, "workspace", *args], obj=obj, input=stdin)

    def ok(self, *args: str, stdin: bytes | str | None = None) -> Result:
        result = self(*args, stdin=stdin)
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return result

    def json(self, *args: str, stdin: bytes | str | None = None) -> Any:
        return json.loads(self.ok(*args, "--json", stdin=stdin).stdout)

    @property
    def workspace(self) -> Workspace:
        return Agent("support", client=self.client).workspace("ticket-7", user="user_42")


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Shell]:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")  # metric lines would land on stdout
    monkeypatch.delenv("AGENTMEM_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    container = build_container(Settings(data_dir=tmp_path / "data"))
    set_container(container)
    key = ensure_default_account(container)
    assert key is not None
    shell = Shell(key)
    Agent.create("support", instructions="Answer billing questions.", client=shell.client)
    yield shell
    set_container(None)


def blob(size: int, seed: int = 7) -> bytes:
    pattern = bytes((seed * 31 + i * 17) % 256 for i in range(4099))
    return (pattern * (size // len(pattern) + 1))[:size]


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root``, by its posix path relative to it."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# --- put, ls, get, url, rm -----------------------------------------------------------------------


def test_put_ls_get_url_rm(run: Shell, tmp_path: Path) -> None:
    # Given a local file
    local = tmp_path / "plan.md"
    local.write_text("# Plan\nPay invoice 7.\n")
    # When it is put under a folder, and again under its own name
    put = run.ok("put", str(local), "notes/plan.md", *WHERE)
    run.ok("put", str(local), *WHERE)
    # Then each says where it went
    assert put.stdout == f"uploaded {local} to notes/plan.md (22 bytes)\n"
    assert run.workspace.read("notes/plan.md") == b"# Plan\nPay invoice 7.\n"
    assert run.workspace.read("plan.md") == b"# Plan\nPay invoice 7.\n"
    # When the files are listed
    lines = run.ok("ls", *WHERE).stdout.splitlines()
    # Then a table shows each, in path order
    assert lines[0].split() == ["PATH", "BYTES", "MODIFIED_AT"]
    assert [line.split()[:2] for line in lines[1:]] == [["notes/plan.md", "22"], ["plan.md", "22"]]
    assert [f["path"] for f in run.json("ls", "notes/", *WHERE)] == ["notes/plan.md"]
    assert run.json("ls", *WHERE)[0]["url"]
    # When it is fetched to the default name, to a named file, into a folder and to stdout
    (tmp_path / "plan.md").unlink()
    got = run.ok("get", "notes/plan.md", *WHERE)
    run.ok("get", "notes/plan.md", "-o", "copy.md", *WHERE)
    (tmp_path / "into").mkdir()
    run.ok("get", "notes/plan.md", "-o", "into", *WHERE)
    shown = run.ok("get", "notes/plan.md", "-o", "-", *WHERE)
    # Then each holds the bytes
    assert got.stdout == "downloaded notes/plan.md to plan.md (22 bytes)\n"
    for name in ("plan.md", "copy.md", "into/plan.md"):
        assert (tmp_path / name).read_text() == "# Plan\nPay invoice 7.\n"
    assert shown.stdout_bytes == b"# Plan\nPay invoice 7.\n"
    assert run.json("get", "notes/plan.md", "-o", "j.md", *WHERE) == {
        "path": "notes/plan.md", "file": "j.md", "size_bytes": 22}
    # When a link is asked for
    link = run.ok("url", "notes/plan.md", "--expires-in", "600", *WHERE).stdout.strip()
    answer = run.json("url", "notes/plan.md", *WHERE)
    # Then it is a signed link
    assert link.startswith("/v1/links/") and "signature=" in link
    assert answer["expires_in_s"] == 3600 and answer["url"].startswith("/v1/links/")
    # When the files are removed
    removed = run.ok("rm", "notes/plan.md", "plan.md", *WHERE)
    # Then they are gone
    assert removed.stdout == "deleted notes/plan.md\ndeleted plan.md\n"
    assert run.ok("ls", *WHERE).stdout == "no files\n"


def test_put_reads_stdin_and_binary_bytes_survive(run: Shell) -> None:
    data = bytes(range(256)) * 4
    assert run.json("put", "-", "bin/all.bin", *WHERE, stdin=data)["size_bytes"] == 1024
    assert run.workspace.read("bin/all.bin") == data
    assert run.ok("get", "bin/all.bin", "-o", "-", *WHERE).stdout_bytes == data
    # stdin needs a PATH
    refused = run("put", "-", *WHERE, stdin=b"x")
    assert refused.exit_code == 2 and "give the PATH" in refused.stderr


def test_a_large_put_goes_through_an_upload_link_with_a_progress_bar(run: Shell, tmp_path: Path) -> None:
    local = tmp_path / "big.bin"
    data = blob(5 * MIB)
    local.write_bytes(data)
    result = run.ok("put", str(local), "big.bin", *WHERE)
    assert result.stdout == f"uploaded {local} to big.bin ({len(data):,} bytes)\n"
    assert "uploading big.bin" in result.stderr
    assert run.workspace.read("big.bin") == data


def test_a_different_users_workspace_is_another_folder(run: Shell, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    run.ok("put", "a.txt", *WHERE)
    assert run.ok("ls", "--agent", "support", "--conversation", "ticket-7").stdout == "no files\n"
    assert run.ok("ls", "--agent", "support", "--conversation", "ticket-7", "--user", "user_7").stdout == "no files\n"


# --- errors --------------------------------------------------------------------------------------


def test_errors_are_one_clear_line(run: Shell, tmp_path: Path) -> None:
    # A missing local file is a usage error
    missing = run("put", "nope.txt", *WHERE)
    assert missing.exit_code == 2 and "'nope.txt' does not exist" in missing.stderr
    # A path the server refuses prints its 400 message
    (tmp_path / "a.txt").write_text("a")
    for bad in ("../escape.txt", "/abs.txt", "a//b.txt"):
        refused = run("put", "a.txt", bad, *WHERE)
        assert refused.exit_code == 1, refused.stderr
        assert refused.stderr.startswith("error: invalid: path "), refused.stderr
        assert refused.stderr.count("\n") == 1
    # A missing workspace file is not found, and get leaves nothing behind
    absent = run("get", "missing.txt", *WHERE)
    assert absent.exit_code == 1 and absent.stderr.startswith("error: not_found: ")
    assert not (tmp_path / "missing.txt").exists() and not (tmp_path / "missing.txt.part").exists()
    assert run("rm", "missing.txt", *WHERE).exit_code == 1
    # A local file that cannot be written says so
    run.ok("put", "a.txt", *WHERE)
    unwritable = run("get", "a.txt", "-o", "no-such-folder/a.txt", *WHERE)
    assert unwritable.exit_code == 1 and "cannot write no-such-folder/a.txt" in unwritable.stderr
    # Options are checked before anything is sent
    assert run("url", "a.txt", "--expires-in", "86401", *WHERE).exit_code == 2
    assert run("ls", "--agent", "support").exit_code == 2  # --conversation is required
    assert run("ls", "--conversation", "ticket-7").exit_code == 2  # --agent is required
    both = run("get", "a.txt", "-o", "-", "--json", *WHERE)
    assert both.exit_code == 2 and "leave --json out" in both.stderr
    # An unknown agent is not found
    unknown = run("ls", "--agent", "nobody", "--conversation", "ticket-7")
    assert unknown.exit_code == 1 and unknown.stderr.startswith("error: not_found: ")


# --- sync ----------------------------------------------------------------------------------------


def test_sync_up_then_down_copies_a_folder_byte_for_byte(run: Shell, tmp_path: Path) -> None:
    # Given a folder with nested files, an empty one and one over 4 MiB
    source = tmp_path / "project"
    (source / "src" / "deep").mkdir(parents=True)
    (source / "docs").mkdir()
    (source / "README.md").write_text("# Project\n")
    (source / "src" / "main.py").write_text("print('hi')\n")
    (source / "src" / "deep" / "data.bin").write_bytes(blob(5 * MIB))
    (source / "docs" / "empty.txt").write_bytes(b"")
    (source / "docs" / "naïve name.txt").write_text("ü")
    total = sum(len(data) for data in tree(source).values())
    # When it is synced up
    up = run.ok("sync", str(source), "--up", *WHERE)
    # Then every file was uploaded, with a progress bar and a summary line
    assert up.stdout.startswith(f"uploaded 5 files, {total:,} bytes in ")
    assert up.stdout.rstrip().endswith("; 0 files unchanged")
    assert "uploading" in up.stderr
    assert sorted(f.path for f in run.workspace.files()) == sorted(tree(source))
    # When it is synced down into a new folder
    copy = tmp_path / "copy"
    down = run.ok("sync", str(copy), "--down", *WHERE)
    # Then the two folders are byte-identical
    assert down.stdout.startswith(f"downloaded 5 files, {total:,} bytes in ")
    assert tree(copy) == tree(source)
    # When nothing changed, a second sync either way copies nothing
    assert run.json("sync", str(source), "--up", *WHERE)["files"] == 0
    again = run.json("sync", str(copy), "--down", *WHERE)
    assert (again["files"], again["skipped"]) == (0, 5)
    # When a file changes size and one is added, only those go up
    (source / "src" / "main.py").write_text("print('hello')\n")
    (source / "src" / "new.txt").write_text("new")
    changed = run.json("sync", str(source), "--up", *WHERE)
    assert sorted(changed["paths"]) == ["src/main.py", "src/new.txt"]
    assert (changed["files"], changed["skipped"], changed["direction"]) == (2, 4, "up")
    assert run.workspace.read("src/main.py") == b"print('hello')\n"
    # and --force copies everything
    assert run.json("sync", str(copy), "--down", "--force", *WHERE)["files"] == 6
    assert tree(copy) == tree(source)


def test_sync_with_a_prefix_and_a_dry_run(run: Shell, tmp_path: Path) -> None:
    source = tmp_path / "reports"
    source.mkdir()
    (source / "q3.csv").write_text("a,b\n")
    (source / "q4.csv").write_text("c,d,e\n")
    run.workspace.write("other.txt", "not under the prefix")
    # A dry run lists the plan and copies nothing
    dry = run.ok("sync", str(source), "--up", "--prefix", "reports/2024", "--dry-run", *WHERE)
    assert f"would copy {source / 'q3.csv'} → reports/2024/q3.csv (4 bytes)" in dry.stdout
    assert "would upload 2 files, 10 bytes" in dry.stdout
    assert [f.path for f in run.workspace.files()] == ["other.txt"]
    # With a prefix the folder maps onto a folder of the workspace
    run.ok("sync", str(source), "--up", "--prefix", "reports/2024/", *WHERE)
    assert [f.path for f in run.workspace.files("reports/")] == ["reports/2024/q3.csv", "reports/2024/q4.csv"]
    back = tmp_path / "back"
    run.ok("sync", str(back), "--down", "--prefix", "reports/2024", *WHERE)
    assert tree(back) == {"q3.csv": b"a,b\n", "q4.csv": b"c,d,e\n"}


def test_sync_needs_a_direction_and_an_existing_folder_to_upload(run: Shell, tmp_path: Path) -> None:
    nowhere = run("sync", str(tmp_path), *WHERE)
    assert nowhere.exit_code == 2 and "--up" in nowhere.stderr and "--down" in nowhere.stderr
    missing = run("sync", str(tmp_path / "missing"), "--up", *WHERE)
    assert missing.exit_code == 2 and "no folder" in missing.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run.ok("sync", str(empty), "--up", *WHERE).stdout.startswith("uploaded 0 files, 0 bytes in ")
    with pytest.raises(NotFound):
        run.workspace.info("anything")


def test_the_group_is_listed_in_the_help(run: Shell) -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert "workspace" in result.stdout
    help_text = run.ok("--help").stdout
    for command in ("ls", "get", "put", "rm", "url", "sync"):
        assert f"  {command} " in help_text
    assert "size" in run.ok("sync", "--help").stdout
