"""``agentmem memories``: the memories of your account (or of one user)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from .connection import client, memory
from .output import json_option, print_json, print_table, wants_json


@click.group()
def memories() -> None:
    """Memories of your account (or of one user)."""


@memories.command("ls")
@click.option("--user", default=None, help="List this user's memories.")
@click.option("--trash", is_flag=True, help="List the memories in the trash.")
@json_option
@click.pass_context
def memories_ls(ctx: click.Context, user: str | None, trash: bool, as_json: bool) -> None:
    """List memories."""
    items = client(ctx).memories.list(user=user, trash=trash)
    if wants_json(ctx, as_json):
        print_json(items)
        return
    if trash:
        rows: list[Sequence[Any]] = [
            (m.name, m.user_id, m.entry_count, m.deleted_at, m.purge_after) for m in items
        ]
        print_table(rows, ["name", "user", "entries", "deleted_at", "purge_after"], "the trash is empty")
    else:
        rows = [(m.name, m.user_id, m.entry_count, m.attached_to, m.created_at) for m in items]
        print_table(rows, ["name", "user", "entries", "attached_to", "created_at"], "no memories")


@memories.command("create")
@click.argument("name")
@click.option("--user", default=None, help="Create the memory for this user.")
@json_option
@click.pass_context
def memories_create(ctx: click.Context, name: str, user: str | None, as_json: bool) -> None:
    """Create a memory (or show the existing one)."""
    created = client(ctx).memories.create(name, user=user)
    if wants_json(ctx, as_json):
        print_json(created.last_info)
    else:
        click.echo(f"memory {name} is ready")


@memories.command("rm")
@click.argument("name")
@json_option
@click.pass_context
def memories_rm(ctx: click.Context, name: str, as_json: bool) -> None:
    """Move a memory and its entries to the trash."""
    info = memory(ctx, name).delete()
    if wants_json(ctx, as_json):
        print_json(info)
    else:
        until = f" (restorable until {info.purge_after})" if info.purge_after else ""
        click.echo(f"memory {name} moved to the trash{until}")


@memories.command("restore")
@click.argument("name")
@json_option
@click.pass_context
def memories_restore(ctx: click.Context, name: str, as_json: bool) -> None:
    """Bring a memory back from the trash."""
    info = memory(ctx, name).restore()
    if wants_json(ctx, as_json):
        print_json(info)
    else:
        click.echo(f"memory {name} restored")
