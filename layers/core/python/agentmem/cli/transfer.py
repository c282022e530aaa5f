"""``agentmem export`` and ``agentmem import``: memories to and from a JSON Lines file (docs/export.md).

Both go through the SDK (``Client.export``, ``Client.import_entries``), so through the public API: an export is
what the API lets the key read, an import is ordinary saves (screening and the layer rules apply).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import IO, Any

import click

from agentmem.client.exports import EntryImportReport, ExportFileError, Progress, read_export

from .connection import client
from .output import json_option, print_json, wants_json


class _Bar:
    """A progress bar on stderr, started once the walk knows its total; nothing when ``show`` is false."""

    def __init__(self, label: str, show: bool) -> None:
        self.label = label
        self.show = show and sys.stderr.isatty()  # a log or a pipe gets the summary line, not a bar's frames
        self._bar: Any = None
        self._shown = 0

    def __call__(self, progress: Progress) -> None:
        if not self.show or progress.total <= 0:
            return
        if self._bar is None:
            self._context: AbstractContextManager[Any] = click.progressbar(
                length=progress.total, label=self.label, file=sys.stderr)
            self._bar = self._context.__enter__()
        self._bar.update(progress.done - self._shown)
        self._shown = progress.done

    def close(self) -> None:
        if self._bar is not None:
            self._context.__exit__(None, None, None)
            self._bar = None


@contextmanager
def _bar(label: str, show: bool) -> Iterator[_Bar]:
    bar = _Bar(label, show)
    try:
        yield bar
    finally:
        bar.close()


@click.command("export")
@click.option("-o", "--output", "output", default="-", metavar="FILE",
              help="Write the export here (default: standard output).")
@click.option("--memory", "memories", multiple=True, metavar="NAME",
              help="Export this memory only (repeat for more); default: every memory of the account.")
@click.option("--user", default=None, metavar="USER",
              help="Only this user's data: their layer of each memory and their own memories.")
@json_option
@click.pass_context
def export(ctx: click.Context, output: str, memories: tuple[str, ...], user: str | None, as_json: bool) -> None:
    """Export memories to JSON Lines (every layer; content, metadata, version, expiry).

    Every memory of the account unless --memory names some; with --user, that user's data only."""
    quiet = wants_json(ctx, as_json)
    to_stdout = output == "-"
    with _bar("exporting", show=not quiet and not to_stdout) as bar:
        lines = client(ctx).export(memories=list(memories) or None, user=user, progress=bar)
        if to_stdout:
            for line in lines:
                click.echo(line, nl=False)
            return
        target = Path(output)
        partial = target.with_name(target.name + ".partial")  # a failed export leaves no half file under the name
        try:
            with open(partial, "w", encoding="utf-8") as handle:
                entries, memories_count = _write(handle, lines)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        os.replace(partial, target)
    if quiet:
        print_json({"file": str(target), "memories": memories_count, "entries": entries, "user": user})
    else:
        click.echo(f"exported {entries} {'entry' if entries == 1 else 'entries'} of {memories_count} "
                   f"{'memory' if memories_count == 1 else 'memories'} to {target}")


def _write(handle: IO[str], lines: Iterator[str]) -> tuple[int, int]:
    entries = memories = 0
    for line in lines:
        entries += line.startswith('{"type":"entry"')
        memories += line.startswith('{"type":"memory"')
        handle.write(line)
    return entries, memories


def _read(path: str) -> list[str]:
    if path == "-":
        return sys.stdin.readlines()
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.readlines()
    except UnicodeDecodeError:
        raise click.ClickException(f"{path}: not an agentmem export (not UTF-8 text)") from None
    except OSError as error:
        raise click.ClickException(f"{path}: {error.strerror or error}") from None


@click.command("import")
@click.argument("file", metavar="FILE")
@click.option("--dry-run", is_flag=True, help="Say what would change; write nothing.")
@json_option
@click.pass_context
def import_(ctx: click.Context, file: str, dry_run: bool, as_json: bool) -> None:
    """Import an export file (idempotent; - reads standard input).

    The whole file is checked before anything is written. An entry the service refuses is reported and the rest
    is imported; the exit status is then 1."""
    quiet = wants_json(ctx, as_json)
    lines = _read(file)
    try:
        read_export(lines)
    except ExportFileError as error:
        click.echo(f"error: {file}: {error} (nothing was imported)", err=True)
        ctx.exit(1)
    with _bar("checking" if dry_run else "importing", show=not quiet) as bar:
        report = client(ctx).import_entries(lines, dry_run=dry_run, progress=bar)
    if quiet:
        print_json({"dry_run": report.dry_run, "memories_created": report.memories_created,
                    "counts": report.counts, "outcomes": report.outcomes,
                    "left_out": {"conversations": report.conversations_left_out,
                                 "messages": report.messages_left_out}})
    else:
        _print_report(report)
    if not report.ok:
        ctx.exit(1)


def _where(memory: str, layer: str | None, name: str) -> str:
    return f"{memory}/{name} ({'account layer' if layer is None else f'user {layer}'})"


def _print_report(report: EntryImportReport) -> None:
    verbs = {"created": "would create", "updated": "would update"} if report.dry_run else {}
    for memory in report.memories_created:
        click.echo(f"{'would create' if report.dry_run else 'created'} memory {memory}")
    for outcome in report.outcomes:
        if outcome.action == "refused":
            click.echo(f"refused: {_where(outcome.memory, outcome.layer, outcome.name)}: {outcome.reason}", err=True)
        elif report.dry_run and outcome.action in verbs:
            click.echo(f"{verbs[outcome.action]}: {_where(outcome.memory, outcome.layer, outcome.name)}")
    if report.conversations_left_out:
        click.echo(f"left out: {report.messages_left_out} messages of {report.conversations_left_out} "
                   f"conversation(s) (an import brings memories only)")
    counts = report.counts
    done = "would import" if report.dry_run else "imported"
    click.echo(f"{done}: {counts['created']} created, {counts['updated']} updated, {counts['unchanged']} unchanged, "
               f"{counts['expired']} expired (left out), {counts['refused']} refused")
