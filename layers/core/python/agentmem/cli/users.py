"""``agentmem users``: the users of your account (erasing one, for good)."""

from __future__ import annotations

import click

from .connection import client
from .output import json_option, print_json, print_table, wants_json


@click.group()
def users() -> None:
    """The users of your account."""


@users.command("erase")
@click.argument("user")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
@click.pass_context
def users_erase(ctx: click.Context, user: str, yes: bool, as_json: bool) -> None:
    """Erase a user for good: their layers, agents, conversations, files and keys (account key only)."""
    if not yes:
        click.confirm(
            f"Erase user {user} for good: their entries, agents, conversations and files?", abort=True, err=True
        )
    receipt = client(ctx).erase_user(user)
    if wants_json(ctx, as_json):
        print_json(receipt)
        return
    click.echo(f"erased user {receipt.user or user}")
    print_table(list(receipt.removed.items()), ["removed", "count"], "nothing was removed")
