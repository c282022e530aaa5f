"""``agentmem entries``: the entries of a memory, one layer at a time."""

from __future__ import annotations

import sys
from typing import IO

import click

from agentmem.client import Entry

from . import connection
from .output import json_option, print_fields, print_found, print_json, print_table, wants_json

_USER_HELP = "Act on this user's layer (default: the account's)."


@click.group()
def entries() -> None:
    """Entries of a memory (one layer at a time: the account's, or a user's with --user)."""


@entries.command("ls")
@click.argument("memory")
@click.option("--user", default=None, help=_USER_HELP)
@json_option
@click.pass_context
def entries_ls(ctx: click.Context, memory: str, user: str | None, as_json: bool) -> None:
    """List a layer's entries, newest first."""
    items = connection.memory(ctx, memory).entries(user=user)
    if wants_json(ctx, as_json):
        print_json(items)
        return
    rows = [(e.name, e.version, e.updated_by, e.updated_at, e.description) for e in items]
    print_table(rows, ["name", "version", "updated_by", "updated_at", "description"], "no entries")


@entries.command("get")
@click.argument("memory")
@click.argument("name")
@click.option("--user", default=None, help=_USER_HELP)
@click.option("--version", type=int, default=None, help="Read this older version.")
@json_option
@click.pass_context
def entries_get(
    ctx: click.Context, memory: str, name: str, user: str | None, version: int | None, as_json: bool
) -> None:
    """Show one entry with its content."""
    entry = connection.memory(ctx, memory).read(name, user=user, version=version)
    if wants_json(ctx, as_json):
        print_json(entry)
        return
    print_entry(entry)


def print_entry(entry: Entry) -> None:
    fields = [
        ("name", entry.name),
        ("description", entry.description),
        ("version", entry.version),
        ("category", entry.category),
        ("importance", entry.importance),
        ("visibility", entry.visibility),
        ("updated_by", entry.updated_by),
        ("updated_at", entry.updated_at),
    ]
    if entry.expires_at:
        fields.append(("expires_at", entry.expires_at))
    if entry.conversation:
        fields.append(("conversation", entry.conversation))
    print_fields(fields)
    click.echo()
    click.echo(entry.content or "")


def read_content(content: str | None, file: IO[str] | None) -> str:
    if content is not None and file is not None:
        raise click.UsageError("give the content with --content or --file, not both")
    if file is not None:
        return file.read()
    if content is not None and content != "-":
        return content
    text = "" if content is None and sys.stdin.isatty() else sys.stdin.read()
    if content is None and not text:
        raise click.UsageError("give the content with --content TEXT, --file PATH, or on stdin ('-')")
    return text


@entries.command("put")
@click.argument("memory")
@click.argument("name")
@click.option("--content", default=None, help="The content ('-' reads stdin).")
@click.option(
    "--file",
    "file",
    type=click.File("r", encoding="utf-8"),
    default=None,
    help="Read the content from this file ('-' for stdin).",
)
@click.option("--description", default=None, help="One line; required for a new entry.")
@click.option(
    "--version", type=int, default=None, help="Save only if the stored version is this one (0: only if new)."
)
@click.option("--category", default=None)
@click.option("--importance", type=float, default=None)
@click.option("--visibility", type=click.Choice(["private", "shared", "read_only"]), default=None)
@click.option("--expires-at", default=None, help="ISO-8601 time after which the entry is gone.")
@click.option("--no-expiry", is_flag=True, help="Remove the entry's expiry (a save without --expires-at keeps it).")
@click.option("--user", default=None, help=_USER_HELP)
@json_option
@click.pass_context
def entries_put(
    ctx: click.Context,
    memory: str,
    name: str,
    content: str | None,
    file: IO[str] | None,
    description: str | None,
    version: int | None,
    category: str | None,
    importance: float | None,
    visibility: str | None,
    expires_at: str | None,
    no_expiry: bool,
    user: str | None,
    as_json: bool,
) -> None:
    """Create or replace an entry."""
    if no_expiry and expires_at is not None:
        raise click.UsageError("use --expires-at or --no-expiry, not both")
    text = read_content(content, file)
    entry = connection.memory(ctx, memory).save(
        name,
        text,
        description=description,
        version=version,
        user=user,
        category=category,
        importance=importance,
        visibility=visibility,
        expires_at=expires_at,
        clear_expiry=no_expiry,
    )
    if wants_json(ctx, as_json):
        print_json(entry)
        return
    forced = f" (stored {entry.visibility}: {entry.forced})" if entry.forced else ""
    click.echo(f"saved {memory}/{entry.name} at version {entry.version}{forced}")


@entries.command("rm")
@click.argument("memory")
@click.argument("name")
@click.option("--version", type=int, default=None, help="Delete only if the stored version is this one.")
@click.option("--user", default=None, help=_USER_HELP)
@json_option
@click.pass_context
def entries_rm(
    ctx: click.Context, memory: str, name: str, version: int | None, user: str | None, as_json: bool
) -> None:
    """Delete an entry."""
    connection.memory(ctx, memory).forget(name, version=version, user=user)
    if wants_json(ctx, as_json):
        print_json({"deleted": name, "memory": memory})
    else:
        click.echo(f"deleted {memory}/{name}")


@entries.command("search")
@click.argument("memory")
@click.argument("query")
@click.option("--limit", type=click.IntRange(1, 100), default=10, show_default=True)
@click.option("--user", default=None, help="Search this user's layer and the account's.")
@json_option
@click.pass_context
def entries_search(
    ctx: click.Context, memory: str, query: str, limit: int, user: str | None, as_json: bool
) -> None:
    """Find entries by meaning and by words (hybrid recall), best first."""
    items = connection.memory(ctx, memory).search(query, limit=limit, user=user)
    if wants_json(ctx, as_json):
        print_json(items)
        return
    rows = [(e.name, e.user_id, e.score, e.description) for e in items]
    print_table(rows, ["name", "user", "score", "description"], "no matches")
    print_found(items, "entry", "entries")


@entries.command("history")
@click.argument("memory")
@click.argument("name")
@click.option("--user", default=None, help=_USER_HELP)
@json_option
@click.pass_context
def entries_history(ctx: click.Context, memory: str, name: str, user: str | None, as_json: bool) -> None:
    """An entry's changes, newest first."""
    items = connection.memory(ctx, memory).history(name, user=user)
    if wants_json(ctx, as_json):
        print_json(items)
        return
    rows = [(h.version, h.operation, h.updated_by, h.changed_at, h.description) for h in items]
    print_table(rows, ["version", "operation", "updated_by", "changed_at", "description"], "no history")
