"""The ``agentmem`` command: run the service, and read and write memories from a shell.

Commands that talk to a running service go through the SDK (``agentmem.client``) and
read ``--url`` / ``AGENTMEM_URL`` and ``--api-key`` / ``AGENTMEM_API_KEY``. ``serve``
and ``accounts create`` act on the backend directly. Output is an aligned table (or a
short line) by default and JSON with ``--json``. API errors print one line to stderr
and exit 1; usage errors exit 2.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

import click

from agentmem.client import AgentmemError, Client, ConfigurationError, Entry, Memory, Unreachable
from agentmem.client.transport import Transport

F = TypeVar("F", bound=Callable[..., Any])

BACKENDS = click.Choice(["embedded", "aws"])


# --- output ------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {key: _plain(item) for key, item in dataclasses.asdict(value).items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _print_json(value: Any) -> None:
    click.echo(json.dumps(_plain(value), indent=2, ensure_ascii=False))


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value) or "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return " ".join(str(value).split())  # a table cell is one line


def render_table(rows: Iterable[Sequence[Any]], headers: Sequence[str]) -> str:
    """Rows as left-aligned columns under ``headers``, two spaces apart, no trailing blanks."""
    cells = [[_cell(value) for value in row] for row in rows]
    widths = [len(header) for header in headers]
    for row in cells:
        widths = [max(width, len(cell)) for width, cell in zip(widths, row, strict=True)]
    lines = [[header.upper() for header in headers], *cells]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


def _print_table(rows: Sequence[Sequence[Any]], headers: Sequence[str], empty: str) -> None:
    click.echo(render_table(rows, headers) if rows else empty)


def _wants_json(ctx: click.Context, local: bool) -> bool:
    return local or bool(ctx.find_root().params.get("as_json"))


def json_option(func: F) -> F:
    """``--json`` on a command too, so it may follow the command (``agentmem memories ls --json``)."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")(func)


# --- the client --------------------------------------------------------------------------


def _client(ctx: click.Context) -> Client:
    """The SDK client for this invocation; ``obj={"transport": ...}`` swaps the transport (tests)."""
    root = ctx.find_root()
    obj = root.obj if isinstance(root.obj, dict) else {}
    client = obj.get("client")
    if not isinstance(client, Client):
        transport: Transport | None = obj.get("transport")
        client = Client(root.params.get("url"), root.params.get("api_key"), transport=transport)
        obj["client"] = client
        root.obj = obj
    return client


def _memory(ctx: click.Context, name: str, user: str | None = None) -> Memory:
    return _client(ctx).memory(name, user=user)


class _Cli(click.Group):
    """Turns the SDK's errors into one line on stderr."""

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
def cli(url: str | None, api_key: str | None, as_json: bool) -> None:
    """agentmem: memory for AI agents."""


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="agentmem")


# --- serve and accounts (the backend directly) -------------------------------------------


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8787, show_default=True, type=int)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the embedded backend keeps its data [default ./.agentmem].",
)
@click.option("--backend", type=BACKENDS, default=None, help="Storage backend [default embedded].")
@click.option(
    "--create-resources",
    is_flag=True,
    help="With --backend aws: create the table and buckets if missing (for emulators given by AWS_ENDPOINT_URL_*).",
)
def serve(host: str, port: int, data_dir: Path | None, backend: str | None, create_resources: bool) -> None:
    """Run the API locally."""
    from agentmem.local.server import serve as run_server
    from agentmem.settings import load_settings

    settings = load_settings(data_dir=data_dir, backend=backend)
    if create_resources and settings.backend != "aws":
        raise click.UsageError("--create-resources goes with --backend aws")
    run_server(settings, host=host, port=port, create_resources=create_resources)


@cli.group()
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
    if _wants_json(ctx, as_json):
        _print_json({"account": account_id, "key": secret})
        return
    click.echo(f"account: {account_id}")
    click.echo(f"key:     {secret}")
    click.echo("Store the key now: it is not shown again.", err=True)


# --- keys ----------------------------------------------------------------------------------


@cli.group()
def keys() -> None:
    """API keys of your account."""


@keys.command("create")
@click.option("--user", default=None, help="Make a key that acts for this user only.")
@json_option
@click.pass_context
def keys_create(ctx: click.Context, user: str | None, as_json: bool) -> None:
    """Create a key and print its secret (shown once)."""
    key = _client(ctx).keys.create(user=user)
    if _wants_json(ctx, as_json):
        _print_json(key)
        return
    scope = f"user {key.user}" if key.user else "account"
    click.echo(f"key {key.id} ({scope}): {key.secret}")
    click.echo("Store the key now: it is not shown again.", err=True)


@keys.command("ls")
@json_option
@click.pass_context
def keys_ls(ctx: click.Context, as_json: bool) -> None:
    """List the account's keys."""
    items = _client(ctx).keys.list()
    if _wants_json(ctx, as_json):
        _print_json(items)
        return
    rows = [(k.id, k.kind, k.user, k.last4, k.created_at) for k in items]
    _print_table(rows, ["id", "kind", "user", "last4", "created_at"], "no keys")


@keys.command("rm")
@click.argument("key_id")
@json_option
@click.pass_context
def keys_rm(ctx: click.Context, key_id: str, as_json: bool) -> None:
    """Revoke a key."""
    _client(ctx).keys.delete(key_id)
    if _wants_json(ctx, as_json):
        _print_json({"deleted": key_id})
    else:
        click.echo(f"revoked key {key_id}")


# --- memories ------------------------------------------------------------------------------


@cli.group()
def memories() -> None:
    """Memories of your account (or of one user)."""


@memories.command("ls")
@click.option("--user", default=None, help="List this user's memories.")
@click.option("--trash", is_flag=True, help="List the memories in the trash.")
@json_option
@click.pass_context
def memories_ls(ctx: click.Context, user: str | None, trash: bool, as_json: bool) -> None:
    """List memories."""
    items = _client(ctx).memories.list(user=user, trash=trash)
    if _wants_json(ctx, as_json):
        _print_json(items)
        return
    if trash:
        rows: list[Sequence[Any]] = [
            (m.name, m.user_id, m.entry_count, m.deleted_at, m.purge_after) for m in items
        ]
        _print_table(rows, ["name", "user", "entries", "deleted_at", "purge_after"], "the trash is empty")
    else:
        rows = [(m.name, m.user_id, m.entry_count, m.attached_to, m.created_at) for m in items]
        _print_table(rows, ["name", "user", "entries", "attached_to", "created_at"], "no memories")


@memories.command("create")
@click.argument("name")
@click.option("--user", default=None, help="Create the memory for this user.")
@json_option
@click.pass_context
def memories_create(ctx: click.Context, name: str, user: str | None, as_json: bool) -> None:
    """Create a memory (or show the existing one)."""
    memory = _client(ctx).memories.create(name, user=user)
    if _wants_json(ctx, as_json):
        _print_json(memory.last_info)
    else:
        click.echo(f"memory {name} is ready")


@memories.command("rm")
@click.argument("name")
@json_option
@click.pass_context
def memories_rm(ctx: click.Context, name: str, as_json: bool) -> None:
    """Move a memory and its entries to the trash."""
    info = _memory(ctx, name).delete()
    if _wants_json(ctx, as_json):
        _print_json(info)
    else:
        until = f" (restorable until {info.purge_after})" if info.purge_after else ""
        click.echo(f"memory {name} moved to the trash{until}")


@memories.command("restore")
@click.argument("name")
@json_option
@click.pass_context
def memories_restore(ctx: click.Context, name: str, as_json: bool) -> None:
    """Bring a memory back from the trash."""
    info = _memory(ctx, name).restore()
    if _wants_json(ctx, as_json):
        _print_json(info)
    else:
        click.echo(f"memory {name} restored")


# --- entries -------------------------------------------------------------------------------

_USER_HELP = "Act on this user's layer (default: the account's)."


@cli.group()
def entries() -> None:
    """Entries of a memory (one layer at a time: the account's, or a user's with --user)."""


@entries.command("ls")
@click.argument("memory")
@click.option("--user", default=None, help=_USER_HELP)
@json_option
@click.pass_context
def entries_ls(ctx: click.Context, memory: str, user: str | None, as_json: bool) -> None:
    """List a layer's entries, newest first."""
    items = _memory(ctx, memory).entries(user=user)
    if _wants_json(ctx, as_json):
        _print_json(items)
        return
    rows = [(e.name, e.version, e.updated_by, e.updated_at, e.description) for e in items]
    _print_table(rows, ["name", "version", "updated_by", "updated_at", "description"], "no entries")


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
    entry = _memory(ctx, memory).read(name, user=user, version=version)
    if _wants_json(ctx, as_json):
        _print_json(entry)
        return
    _print_entry(entry)


def _print_entry(entry: Entry) -> None:
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
    width = max(len(label) for label, _ in fields) + 1
    for label, value in fields:
        click.echo(f"{label + ':':<{width}} {_cell(value)}")
    click.echo()
    click.echo(entry.content or "")


def _read_content(content: str | None, file: IO[str] | None) -> str:
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
    text = _read_content(content, file)
    entry = _memory(ctx, memory).save(
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
    if _wants_json(ctx, as_json):
        _print_json(entry)
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
    _memory(ctx, memory).forget(name, version=version, user=user)
    if _wants_json(ctx, as_json):
        _print_json({"deleted": name, "memory": memory})
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
    """Find entries by their words."""
    items = _memory(ctx, memory).search(query, limit=limit, user=user)
    if _wants_json(ctx, as_json):
        _print_json(items)
        return
    rows = [(e.name, e.user_id, e.score, e.description) for e in items]
    _print_table(rows, ["name", "user", "score", "description"], "no matches")


@entries.command("history")
@click.argument("memory")
@click.argument("name")
@click.option("--user", default=None, help=_USER_HELP)
@json_option
@click.pass_context
def entries_history(ctx: click.Context, memory: str, name: str, user: str | None, as_json: bool) -> None:
    """An entry's changes, newest first."""
    items = _memory(ctx, memory).history(name, user=user)
    if _wants_json(ctx, as_json):
        _print_json(items)
        return
    rows = [(h.version, h.operation, h.updated_by, h.changed_at, h.description) for h in items]
    _print_table(rows, ["version", "operation", "updated_by", "changed_at", "description"], "no history")


if __name__ == "__main__":
    main()
