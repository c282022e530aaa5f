"""``agentmem agents``: agents, what they attach, and their memory tools."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import click

from agentmem.client import AgentInfo, Conflict, MemoryAttachment, PurgeReceipt

from .connection import agent, client
from .output import json_option, print_fields, print_json, print_table, wants_json

_USER_HELP = "The user's own agent (default: the account's agent)."
_ACTING_HELP = "Act for this user (a user's agent acts for its own user)."
DIALECTS = click.Choice(["noclick", "noorle"])
FORMATS = click.Choice(["mcp", "openai", "anthropic", "bedrock"])
SURFACES = click.Choice(["agent", "mcp", "external", "test", "browser"])


@click.group()
def agents() -> None:
    """Agents of your account (or of one user)."""


def _attached(items: Sequence[MemoryAttachment]) -> str:
    """``company,notes(w)``: the attached memories, ``(w)`` after those it writes."""
    return ",".join(f"{item.name}(w)" if item.writable else item.name for item in items) or "-"


@agents.command("ls")
@click.option("--user", default=None, help="List this user's agents.")
@click.option("--trash", is_flag=True, help="List the agents in the trash.")
@json_option
@click.pass_context
def agents_ls(ctx: click.Context, user: str | None, trash: bool, as_json: bool) -> None:
    """List agents."""
    items = client(ctx).agents.list(user=user, trash=trash)
    if wants_json(ctx, as_json):
        print_json(items)
        return
    if trash:
        rows: list[Sequence[Any]] = [(a.name, a.user_id, a.deleted_at, a.purge_after) for a in items]
        print_table(rows, ["name", "user", "deleted_at", "purge_after"], "the trash is empty")
    else:
        rows = [(a.name, a.user_id, _attached(a.memories), a.version, a.updated_at) for a in items]
        print_table(rows, ["name", "user", "memories", "version", "updated_at"], "no agents")


@agents.command("create")
@click.argument("name")
@click.option("--user", default=None, help="Create the agent for this user.")
@click.option("--instructions", default=None, help="What the agent is for.")
@click.option("--memory", "read_only", multiple=True, metavar="NAME", help="Attach this memory read-only.")
@click.option("--writable", multiple=True, metavar="NAME", help="Attach this memory writable.")
@click.option("--no-memory-capability", is_flag=True, help="The agent never writes entries.")
@click.option("--window", type=click.IntRange(1, 20), default=None, help="Recent messages it sees (1-20).")
@json_option
@click.pass_context
def agents_create(
    ctx: click.Context,
    name: str,
    user: str | None,
    instructions: str | None,
    read_only: tuple[str, ...],
    writable: tuple[str, ...],
    no_memory_capability: bool,
    window: int | None,
    as_json: bool,
) -> None:
    """Create an agent (an existing one is an error).

    Memories are attached in the order given: those of --memory first, then those of --writable.
    """
    both = sorted(set(read_only) & set(writable))
    if both:
        raise click.UsageError(f"attach {', '.join(both)} with --memory or --writable, not both")
    attachments = [MemoryAttachment(n) for n in read_only] + [MemoryAttachment(n, True) for n in writable]
    try:
        created = client(ctx).agents.create(
            name,
            user=user,
            instructions=instructions,
            memories=attachments,
            memory=False if no_memory_capability else None,
            window_messages=window,
        )
    except Conflict as exists:
        if exists.current_version is None:
            raise
        scope = f" --user {user}" if user is not None else ""
        click.echo(f"error: agent {name!r} already exists (version {exists.current_version}): see it with "
                   f"`agentmem agents show {name}{scope}`, or pick another name", err=True)
        ctx.exit(1)
    info = created.last_info
    if wants_json(ctx, as_json):
        print_json(info)
    else:
        click.echo(f"agent {name} created (version {info.version if info else 1})")


@agents.command("show")
@click.argument("name")
@click.option("--user", default=None, help=_USER_HELP)
@json_option
@click.pass_context
def agents_show(ctx: click.Context, name: str, user: str | None, as_json: bool) -> None:
    """Show an agent's settings, then its instructions."""
    info = agent(ctx, name, user).info()
    if wants_json(ctx, as_json):
        print_json(info)
        return
    print_agent(info)


def print_agent(info: AgentInfo) -> None:
    fields: list[tuple[str, Any]] = [
        ("name", info.name),
        ("user", info.user_id),
        ("own_memory", info.own_memory),
        ("memories", _attached(info.memories)),
        ("memory_capability", "on" if info.memory_capability else "off"),
        ("window_messages", info.window_messages),
        ("version", info.version),
        ("updated_at", info.updated_at),
    ]
    if info.deleted_at:
        fields += [("deleted_at", info.deleted_at), ("purge_after", info.purge_after)]
    print_fields(fields)
    click.echo()
    click.echo(info.instructions)


@agents.command("rm")
@click.argument("name")
@click.option("--user", default=None, help=_USER_HELP)
@json_option
@click.pass_context
def agents_rm(ctx: click.Context, name: str, user: str | None, as_json: bool) -> None:
    """Move an agent to the trash."""
    info = agent(ctx, name, user).delete()
    if wants_json(ctx, as_json):
        print_json(info)
    else:
        until = f" (restorable until {info.purge_after})" if info.purge_after else ""
        click.echo(f"agent {name} moved to the trash{until}")


@agents.command("restore")
@click.argument("name")
@click.option("--user", default=None, help=_USER_HELP)
@json_option
@click.pass_context
def agents_restore(ctx: click.Context, name: str, user: str | None, as_json: bool) -> None:
    """Bring an agent back from the trash."""
    info = agent(ctx, name, user).restore()
    if wants_json(ctx, as_json):
        print_json(info)
    else:
        click.echo(f"agent {name} restored")


@agents.command("purge")
@click.argument("name")
@click.option("--user", default=None, help=_USER_HELP)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
@click.pass_context
def agents_purge(ctx: click.Context, name: str, user: str | None, yes: bool, as_json: bool) -> None:
    """Delete an agent for good: its own memory, conversations and workspaces go too."""
    if not yes:
        click.confirm(
            f"Delete agent {name} for good, with its own memory and conversations?", abort=True, err=True
        )
    receipt = agent(ctx, name, user).purge()
    if wants_json(ctx, as_json):
        print_json(receipt)
        return
    print_receipt(receipt)


def print_receipt(receipt: PurgeReceipt) -> None:
    click.echo(f"purged agent {receipt.agent or '-'}")
    rows = [(kind, count) for kind, count in receipt.removed.items()]
    print_table(rows, ["removed", "count"], "nothing else was removed")


@agents.command("tools")
@click.argument("name")
@click.option("--dialect", type=DIALECTS, default="noclick", show_default=True, help="Tool names.")
@click.option("--format", "fmt", type=FORMATS, default="mcp", show_default=True, help="Definition format.")
@click.option("--surface", type=SURFACES, default=None, help="The surface the tools are for [default agent].")
@click.option("--user", default=None, help=_ACTING_HELP)
@click.pass_context
def agents_tools(
    ctx: click.Context, name: str, dialect: str, fmt: str, surface: str | None, user: str | None
) -> None:
    """Print the agent's tool definitions as JSON, ready to hand to a model API."""
    print_json(agent(ctx, name).tools(dialect, fmt, surface=surface, user=user))


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--args") from exc
    if not isinstance(value, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--args")
    return value


@agents.command("call")
@click.argument("name")
@click.argument("tool")
@click.option("--args", "args_json", default="{}", metavar="JSON", help="The tool's arguments, a JSON object.")
@click.option("--conversation", default=None, metavar="KEY", help="The conversation the call belongs to.")
@click.option("--user", default=None, help=_ACTING_HELP)
@click.option("--surface", type=SURFACES, default=None, help="Where the call comes from [default agent].")
@json_option
@click.pass_context
def agents_call(
    ctx: click.Context,
    name: str,
    tool: str,
    args_json: str,
    conversation: str | None,
    user: str | None,
    surface: str | None,
    as_json: bool,
) -> None:
    """Run one of the agent's tools and print its text (the whole result with --json)."""
    arguments = _arguments(args_json)
    result = agent(ctx, name).call_tool(tool, arguments, conversation=conversation, user=user, surface=surface)
    if wants_json(ctx, as_json):
        print_json(result)
    else:
        click.echo(result.text)
