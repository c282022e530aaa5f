"""How the CLI prints: aligned tables, ``label: value`` blocks, or JSON with ``--json``."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from agentmem.client import Found

F = TypeVar("F", bound=Callable[..., Any])


def plain(value: Any) -> Any:
    """``value`` as JSON-ready data: dataclasses become objects, named tuples objects too."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {key: plain(item) for key, item in dataclasses.asdict(value).items()}
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    return value


def print_found(found: Found[Any], one: str, many: str) -> None:
    """Under a search's table, on stderr, what its answer says when it found less than it could: the semantic
    side fell back (``found.fallback``), or the index has not caught up with ``found.index_lag`` of the
    ``one`` / ``many`` searched."""
    if found.fallback:
        click.echo(f"answered in {found.mode or 'a lesser'} mode ({found.fallback})", err=True)
    lag = found.index_lag
    if lag is not None and lag > 0:
        click.echo(f"the semantic index has not caught up with {lag} {one if lag == 1 else many} yet: until it "
                   "does, those are found by their words only", err=True)


def print_json(value: Any) -> None:
    click.echo(json.dumps(plain(value), indent=2, ensure_ascii=False))


def cell(value: Any) -> str:
    """One table cell: ``-`` for nothing, lists joined with commas, always one line."""
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value) or "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return " ".join(str(value).split())  # a table cell is one line


def render_table(rows: Iterable[Sequence[Any]], headers: Sequence[str]) -> str:
    """Rows as left-aligned columns under ``headers``, two spaces apart, no trailing blanks."""
    cells = [[cell(value) for value in row] for row in rows]
    widths = [len(header) for header in headers]
    for row in cells:
        widths = [max(width, len(text)) for width, text in zip(widths, row, strict=True)]
    lines = [[header.upper() for header in headers], *cells]
    return "\n".join(
        "  ".join(text.ljust(width) for text, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


def print_table(rows: Sequence[Sequence[Any]], headers: Sequence[str], empty: str) -> None:
    click.echo(render_table(rows, headers) if rows else empty)


def print_fields(fields: Sequence[tuple[str, Any]]) -> None:
    """``label: value`` lines, the values aligned in one column."""
    width = max(len(label) for label, _ in fields) + 1
    for label, value in fields:
        click.echo(f"{label + ':':<{width}} {cell(value)}")


def wants_json(ctx: click.Context, local: bool) -> bool:
    """``--json`` on the command, or the global one before it."""
    return local or bool(ctx.find_root().params.get("as_json"))


def json_option(func: F) -> F:
    """``--json`` on a command too, so it may follow the command (``agentmem memories ls --json``)."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")(func)


@contextmanager
def progress(total: int, label: str, show: bool = True) -> Iterator[Callable[[int], None] | None]:
    """A progress bar over ``total`` units on stderr (so stdout stays clean), when ``show``."""
    if not show:
        yield None
        return
    with click.progressbar(length=total, label=label, file=sys.stderr) as bar:
        yield bar.update
