"""``agentmem workspace``: the files of a conversation's workspace (the agent's ``/workspace``)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

import click

from agentmem.client import Workspace

from .connection import agent
from .output import json_option, print_json, print_table, progress, wants_json

F = TypeVar("F", bound=Callable[..., Any])
MAX_EXPIRES_S = 86_400


@click.group()
def workspace() -> None:
    """The files of a conversation's workspace: the folder its agent sees as /workspace."""


def workspace_options(func: F) -> F:
    """``--agent`` and ``--conversation`` (both required) and ``--user``: which workspace."""
    func = click.option("--user", default=None, help="The user the conversation is with (default: the account).")(func)
    func = click.option("--conversation", "key", required=True, metavar="KEY",
                        help="The conversation whose workspace it is.")(func)
    return click.option("--agent", "agent_name", required=True, metavar="NAME", help="The agent.")(func)


def _workspace(ctx: click.Context, agent_name: str, key: str, user: str | None) -> Workspace:
    return agent(ctx, agent_name).workspace(key, user=user)


def _count(number: int, one: str, many: str) -> str:
    return f"{number:,} {one if number == 1 else many}"


def _base_name(path: str) -> str:
    return PurePosixPath(path).name or path



@workspace.command("ls")
@click.argument("prefix", required=False)
@workspace_options
@json_option
@click.pass_context
def workspace_ls(
    ctx: click.Context, prefix: str | None, agent_name: str, key: str, user: str | None, as_json: bool
) -> None:
    """List the workspace's files, in path order.

    With PREFIX, only those whose path starts with it ('reports/' lists a folder).
    """
    files = _workspace(ctx, agent_name, key, user).files(prefix)
    if wants_json(ctx, as_json):
        print_json(files)
        return
    print_table([(f.path, f.size_bytes, f.modified_at) for f in files], ["path", "bytes", "modified_at"], "no files")


@workspace.command("get")
@click.argument("path")
@click.option("-o", "--output", default=None, metavar="FILE",
              help="Save it here: a file, a folder, or - for stdout [default: the file's name, here].")
@workspace_options
@json_option
@click.pass_context
def workspace_get(
    ctx: click.Context, path: str, output: str | None, agent_name: str, key: str, user: str | None, as_json: bool
) -> None:
    """Download a file from the workspace.

    It is saved under its own name in the current folder unless -o says where; a local file of that
    name is replaced (only once the whole file has arrived).
    """
    files = _workspace(ctx, agent_name, key, user)
    if output == "-":
        if wants_json(ctx, as_json):
            raise click.UsageError("with -o - the file's bytes go to stdout; leave --json out")
        stdout = sys.stdout.buffer
        files.download(path, stdout)
        stdout.flush()
        return
    target = Path(output) if output else Path(_base_name(path))
    if target.is_dir():
        target = target / _base_name(path)
    try:
        size = files.download(path, target)
    except OSError as exc:
        raise click.ClickException(f"cannot write {target}: {exc.strerror or exc}") from exc
    if wants_json(ctx, as_json):
        print_json({"path": path, "file": str(target), "size_bytes": size})
    else:
        click.echo(f"downloaded {path} to {target} ({_count(size, 'byte', 'bytes')})")


@workspace.command("put")
@click.argument("local", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.argument("path", required=False)
@workspace_options
@json_option
@click.pass_context
def workspace_put(
    ctx: click.Context, local: str, path: str | None, agent_name: str, key: str, user: str | None, as_json: bool
) -> None:
    """Upload a local file to the workspace.

    LOCAL (- reads stdin) is stored at PATH [default: LOCAL's name], replacing a file already there.
    Files over 4 MiB go straight to storage through an upload link (up to 100 MB), with a progress bar.
    """
    files = _workspace(ctx, agent_name, key, user)
    if local == "-":
        if not path:
            raise click.UsageError("reading stdin (-), give the PATH to store it at")
        stored = files.upload(path, sys.stdin.buffer)
    else:
        path = path or Path(local).name
        size = os.path.getsize(local)
        with progress(size, f"uploading {path}", size > files.direct_write_max) as update:
            stored = files.upload(path, local, progress=update)
    if wants_json(ctx, as_json):
        print_json(stored)
    else:
        click.echo(f"uploaded {local} to {stored.path} ({_count(stored.size_bytes, 'byte', 'bytes')})")


@workspace.command("rm")
@click.argument("paths", metavar="PATH...", nargs=-1, required=True)
@workspace_options
@json_option
@click.pass_context
def workspace_rm(
    ctx: click.Context, paths: tuple[str, ...], agent_name: str, key: str, user: str | None, as_json: bool
) -> None:
    """Delete files from the workspace, for good."""
    files = _workspace(ctx, agent_name, key, user)
    deleted: list[dict[str, Any]] = []
    for path in paths:
        files.delete(path)
        deleted.append({"path": path, "deleted": True})
        if not wants_json(ctx, as_json):
            click.echo(f"deleted {path}")
    if wants_json(ctx, as_json):
        print_json(deleted)


@workspace.command("url")
@click.argument("path")
@click.option("--expires-in", type=click.IntRange(1, MAX_EXPIRES_S), default=3600, show_default=True,
              metavar="SECONDS", help="How long the link works (at most 86400: a day).")
@workspace_options
@json_option
@click.pass_context
def workspace_url(
    ctx: click.Context, path: str, expires_in: int, agent_name: str, key: str, user: str | None, as_json: bool
) -> None:
    """Print a download link to a file.

    The link works without an API key until it expires (--expires-in, at most a day).
    """
    link = _workspace(ctx, agent_name, key, user).url(path, expires_in_s=expires_in)
    if wants_json(ctx, as_json):
        print_json({"path": path, "url": link, "expires_in_s": expires_in})
    else:
        click.echo(link)


def _folder(prefix: str | None) -> str:
    """The workspace folder a sync works in, as a path prefix: ``''`` (all of it) or ``reports/``."""
    cleaned = (prefix or "").strip("/")
    return f"{cleaned}/" if cleaned else ""


def _local_files(root: Path) -> Iterator[tuple[str, Path]]:
    """Every file under ``root`` (following links to files, not to folders) as (relative posix path, path),
    in path order."""
    for folder, subfolders, names in os.walk(root):
        subfolders.sort()
        for name in sorted(names):
            found = Path(folder) / name
            if found.is_file():
                yield found.relative_to(root).as_posix(), found


def _local_target(root: Path, relative: str) -> Path | None:
    """Where the workspace file ``relative`` (to the synced folder) goes under ``root``; ``None`` for a
    path that would land outside it."""
    parts = relative.split("/")
    if not relative or any(part in ("", ".", "..") for part in parts) or any("\\" in part for part in parts):
        return None
    return root.joinpath(*parts)


@workspace.command("sync")
@click.argument("local_dir", metavar="LOCAL_DIR", type=click.Path(file_okay=False, path_type=Path))
@click.option("--up", "direction", flag_value="up", help="Upload LOCAL_DIR to the workspace.")
@click.option("--down", "direction", flag_value="down", help="Download the workspace into LOCAL_DIR.")
@click.option("--prefix", default=None, metavar="FOLDER",
              help="Sync with this folder of the workspace instead of all of it.")
@click.option("--force", is_flag=True, help="Copy every file, even those whose size already matches.")
@click.option("--dry-run", is_flag=True, help="Only list what would be copied.")
@workspace_options
@json_option
@click.pass_context
def workspace_sync(
    ctx: click.Context, local_dir: Path, direction: str | None, prefix: str | None, force: bool, dry_run: bool,
    agent_name: str, key: str, user: str | None, as_json: bool,
) -> None:
    """Copy a folder to the workspace or back.

    --up copies LOCAL_DIR to the workspace, --down the workspace to LOCAL_DIR.
    Files are matched by their path under LOCAL_DIR and under --prefix in the workspace. A file is
    copied when the other side has none at that path or has one of another size; a file of the same
    size is taken as unchanged and skipped (--force copies it anyway). Nothing is deleted on either
    side. --down creates LOCAL_DIR and its folders as needed; a local file copied over is replaced.
    """
    if direction is None:
        raise click.UsageError("say which way: --up (local folder to workspace) or --down (workspace to folder)")
    files = _workspace(ctx, agent_name, key, user)
    folder = _folder(prefix)
    remote = {f.path: f.size_bytes for f in files.iter_files(folder or None)}
    plan: list[tuple[str, Path, int]] = []  # (workspace path, local path, bytes)
    skipped = 0
    if direction == "up":
        if not local_dir.is_dir():
            raise click.BadParameter(f"no folder {str(local_dir)!r}", param_hint="LOCAL_DIR")
        for relative, local in _local_files(local_dir):
            size = local.stat().st_size
            if force or remote.get(folder + relative) != size:
                plan.append((folder + relative, local, size))
            else:
                skipped += 1
    else:
        for path, size in remote.items():
            target = _local_target(local_dir, path[len(folder):])
            if target is None:
                click.echo(f"warning: skipped {path}: it cannot be a file under {local_dir}", err=True)
                continue
            if force or not target.is_file() or target.stat().st_size != size:
                plan.append((path, target, size))
            else:
                skipped += 1
    total = sum(size for _, _, size in plan)
    started = time.monotonic()
    if not dry_run:
        verb = "uploading" if direction == "up" else "downloading"
        with progress(total, verb, bool(plan)) as update:
            for path, local, _ in plan:
                try:
                    if direction == "up":
                        files.upload(path, local, progress=update)
                    else:
                        local.parent.mkdir(parents=True, exist_ok=True)
                        files.download(path, local, progress=update)
                except OSError as exc:
                    doing = "read" if direction == "up" else "write"
                    raise click.ClickException(f"cannot {doing} {local}: {exc.strerror or exc}") from exc
    seconds = time.monotonic() - started
    if wants_json(ctx, as_json):
        print_json({"direction": direction, "local_dir": str(local_dir), "prefix": folder, "dry_run": dry_run,
                    "files": len(plan), "bytes": total, "seconds": round(seconds, 3), "skipped": skipped,
                    "paths": [path for path, _, _ in plan]})
        return
    if dry_run:
        for path, local, size in plan:
            arrow = f"{local} → {path}" if direction == "up" else f"{path} → {local}"
            click.echo(f"would copy {arrow} ({_count(size, 'byte', 'bytes')})")
    done = ("would upload" if dry_run else "uploaded") if direction == "up" else (
        "would download" if dry_run else "downloaded")
    click.echo(f"{done} {_count(len(plan), 'file', 'files')}, {_count(total, 'byte', 'bytes')} in {seconds:.1f}s; "
               f"{_count(skipped, 'file', 'files')} unchanged")
