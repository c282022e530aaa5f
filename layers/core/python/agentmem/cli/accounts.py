"""``agentmem accounts``: operator commands that act on the backend, not through the API."""

from __future__ import annotations

from pathlib import Path

import click

from .output import json_option, print_json, wants_json
from .serve import BACKENDS


@click.group()
def accounts() -> None:
    """Accounts (operator commands: they act on the backend, not through the API)."""


@accounts.command("create")
@click.argument("name")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--backend", type=BACKENDS, default=None)
@json_option
@click.pass_context
def accounts_create(
    ctx: click.Context, name: str, data_dir: Path | None, backend: str | None, as_json: bool
) -> None:
    """Create an account and print its first account key (shown once)."""
    from agentmem.bootstrap import create_account
    from agentmem.domain.errors import AgentmemError as ServiceError
    from agentmem.settings import load_settings

    settings = load_settings(data_dir=data_dir, backend=backend)
    try:
        account_id, secret = create_account(settings, name)
    except ServiceError as error:
        click.echo(f"error: {error.code}: {error.message}", err=True)
        ctx.exit(1)
    except RuntimeError as error:  # a backend that cannot start here
        click.echo(f"error: {error}", err=True)
        ctx.exit(1)
    if wants_json(ctx, as_json):
        print_json({"account": account_id, "key": secret})
        return
    click.echo(f"account: {account_id}")
    click.echo(f"key:     {secret}")
    click.echo("Store the key now: it is not shown again.", err=True)
