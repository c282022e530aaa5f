"""``agentmem keys``: the API keys of your account."""

from __future__ import annotations

import click

from .connection import client
from .output import json_option, print_json, print_table, wants_json


@click.group()
def keys() -> None:
    """API keys of your account."""


@keys.command("create")
@click.option("--user", default=None, help="Make a key that acts for this user only.")
@json_option
@click.pass_context
def keys_create(ctx: click.Context, user: str | None, as_json: bool) -> None:
    """Create a key and print its secret (shown once)."""
    key = client(ctx).keys.create(user=user)
    if wants_json(ctx, as_json):
        print_json(key)
        return
    scope = f"user {key.user}" if key.user else "account"
    click.echo(f"key {key.id} ({scope}): {key.secret}")
    click.echo("Store the key now: it is not shown again.", err=True)


@keys.command("ls")
@json_option
@click.pass_context
def keys_ls(ctx: click.Context, as_json: bool) -> None:
    """List the account's keys."""
    items = client(ctx).keys.list()
    if wants_json(ctx, as_json):
        print_json(items)
        return
    rows = [(k.id, k.kind, k.user, k.last4, k.created_at) for k in items]
    print_table(rows, ["id", "kind", "user", "last4", "created_at"], "no keys")


@keys.command("rm")
@click.argument("key_id")
@json_option
@click.pass_context
def keys_rm(ctx: click.Context, key_id: str, as_json: bool) -> None:
    """Revoke a key."""
    client(ctx).keys.delete(key_id)
    if wants_json(ctx, as_json):
        print_json({"deleted": key_id})
    else:
        click.echo(f"revoked key {key_id}")
