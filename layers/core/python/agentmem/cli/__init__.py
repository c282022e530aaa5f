"""The ``agentmem`` command: run the service, and manage memories, entries, agents, conversations, workspaces
and keys from a shell.

Commands that talk to a running service go through the SDK (``agentmem.client``) and
read ``--url`` / ``AGENTMEM_URL`` and ``--api-key`` / ``AGENTMEM_API_KEY``. ``serve``
and ``accounts create`` act on the backend directly. Output is an aligned table (or a
short line) by default and JSON with ``--json``. API errors print one line to stderr
and exit 1; usage errors exit 2.

One module per command group: ``serve``, ``emulated`` (``serve-emulated``), ``accounts``, ``keys``, ``memories``,
``entries``, ``agents``, ``conversations``, ``workspace``, ``users``, ``mcp``, ``reindex``, ``transfer`` (``export``
and ``import``); ``output`` prints, ``connection`` builds the SDK client.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from agentmem.client import AgentmemError, ConfigurationError, Unreachable

from .accounts import accounts
from .agents import agents
from .conversations import conversations
from .emulated import serve_emulated
from .entries import entries
from .keys import keys
from .mcp import mcp
from .memories import memories
from .output import render_table
from .reindex import reindex
from .serve import serve
from .transfer import export, import_
from .users import users
from .workspace import workspace

__all__ = ["DISTRIBUTION", "cli", "installed_version", "main", "render_table"]

DISTRIBUTION = "agentmem-server"
"""The name this package is published under (``pip install agentmem-server``); ``agentmem`` on PyPI is another
project's."""


def installed_version() -> str:
    """The version in the installed distribution's metadata, or the source tree's when run from a checkout."""
    from importlib import metadata

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        from agentmem import __version__

        return __version__


class _Cli(click.Group):
    """Turns the SDK's errors, invalid settings and AWS failures a person can fix into one line on stderr."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Unreachable as exc:
            if exc.timed_out:
                click.echo(f"error: agentmem at {exc.url} did not answer in time ({exc.reason})", err=True)
            else:
                click.echo(
                    f"error: cannot reach agentmem at {exc.url} — is `agentmem serve` running?", err=True
                )
            ctx.exit(1)
        except ConfigurationError:
            click.echo("error: no API key: pass --api-key or set AGENTMEM_API_KEY", err=True)
            ctx.exit(2)
        except AgentmemError as exc:
            click.echo(f"error: {exc.code}: {exc.message}", err=True)
            ctx.exit(1)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as exc:  # invalid settings, the AWS failures a person can fix: one line, not a traceback
            from agentmem.adapters.aws.failures import describe_failure
            from agentmem.settings import SettingsError

            if isinstance(exc, SettingsError):
                click.echo(f"error: {exc}", err=True)
                ctx.exit(2)
            line = describe_failure(exc)
            if line is None:
                raise
            click.echo(f"error: {line}", err=True)
            ctx.exit(1)


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``--version``: click's version option, reading the metadata only when asked (and the source's in a checkout)."""
    if value and not ctx.resilient_parsing:
        click.echo(f"agentmem {installed_version()} ({DISTRIBUTION})")
        ctx.exit()


@click.group(cls=_Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--url",
    envvar="AGENTMEM_URL",
    default=None,
    metavar="URL",
    help="Service URL [env AGENTMEM_URL; default http://127.0.0.1:8787].",
)
@click.option(
    "--api-key",
    envvar="AGENTMEM_API_KEY",
    default=None,
    metavar="KEY",
    help="API key [env AGENTMEM_API_KEY].",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
@click.option(
    "--version", "-V", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
    help="Print the installed version and exit.",
)
def cli(url: str | None, api_key: str | None, as_json: bool) -> None:
    """agentmem: memory for AI agents."""


@click.command()
def version() -> None:
    """Print the installed version (as --version does)."""
    click.echo(f"agentmem {installed_version()} ({DISTRIBUTION})")


for _command in (version, serve, serve_emulated, accounts, keys, memories, entries, agents, conversations, workspace,
                 users, mcp, reindex, export, import_):
    cli.add_command(_command)


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="agentmem")
