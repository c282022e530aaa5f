"""``agentmem conversations``: an agent's conversations, their journal, the context for a turn, summaries."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import IO, Any

import click

from agentmem.client import Context, Conversation, ConversationInfo, Message, Page
from agentmem.client.transcripts import TRANSCRIPT_FORMATS, read_transcript

from .connection import agent
from .output import json_option, print_fields, print_found, print_json, print_table, progress, wants_json

_USER_HELP = "The user the conversation is with (default: the account itself)."
ROLES = click.Choice(["user", "assistant", "tool_call", "tool_result"])
SURFACES = click.Choice(["agent", "mcp", "external", "test", "browser"])
TEXT_WIDTH = 80  # characters of a message shown in a table row


@click.group()
def conversations() -> None:
    """An agent's conversations: the journal, the context for a turn, the summary."""


def _conversation(ctx: click.Context, name: str, key: str, user: str | None) -> Conversation:
    return agent(ctx, name).conversation(key, user=user)


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def message_text(message: Message) -> str:
    """What a row says, on one line: a tool call's name, id and arguments; a tool result's id and result."""
    if message.role == "tool_call":
        return f"{message.tool_name}({message.tool_call_id}) {_json_text(message.arguments or {})}"
    if message.role == "tool_result":
        shown = message.result if message.result is not None else message.content
        return f"{message.tool_call_id} → {_json_text(shown)}"
    return message.content


def _short(text: str, width: int = TEXT_WIDTH) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def _seqs(first: int | None, last: int | None) -> str:
    if first is None or last is None:
        return "-"
    return str(first) if first == last else f"{first}–{last}"


@conversations.command("ls")
@click.argument("agent_name", metavar="AGENT")
@click.option("--user", default=None, help="List the agent's conversations with this user.")
@json_option
@click.pass_context
def conversations_ls(ctx: click.Context, agent_name: str, user: str | None, as_json: bool) -> None:
    """List an agent's conversations, most recently updated first."""
    items = agent(ctx, agent_name).conversations(user=user)
    if wants_json(ctx, as_json):
        print_json(items)
        return
    rows = [(c.key, c.user_id, c.messages, c.turns, c.covers_through_seq, "yes" if c.summary_due else "no",
             c.updated_at) for c in items]
    print_table(rows, ["key", "user", "messages", "turns", "summarised", "summary_due", "updated_at"],
                "no conversations")


@conversations.command("show")
@click.argument("agent_name", metavar="AGENT")
@click.argument("key")
@click.option("--user", default=None, help=_USER_HELP)
@json_option
@click.pass_context
def conversations_show(ctx: click.Context, agent_name: str, key: str, user: str | None, as_json: bool) -> None:
    """Show a conversation: its length, what its summary covers, its window."""
    info = _conversation(ctx, agent_name, key, user).info()
    if wants_json(ctx, as_json):
        print_json(info)
        return
    print_conversation(info)


def print_conversation(info: ConversationInfo) -> None:
    print_fields([
        ("key", info.key),
        ("agent", info.agent),
        ("user", info.user_id),
        ("surface", info.surface),
        ("messages", info.messages),
        ("turns", info.turns),
        ("covers_through_seq", info.covers_through_seq),
        ("forgotten_through_seq", info.forgotten_through_seq),
        ("unfolded_messages", info.unfolded_messages),
        ("unfolded_tokens", info.unfolded_tokens),
        ("summary_due", "yes" if info.summary_due else "no"),
        ("window_messages", info.window_messages),
        ("created_at", info.created_at),
        ("updated_at", info.updated_at),
    ])


def _json_option_value(text: str | None, option: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint=option) from exc


def _messages_file(file: IO[str]) -> list[dict[str, Any]]:
    """A JSON array of messages, or an object holding one under ``messages``."""
    try:
        data = json.load(file)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--file") from exc
    if isinstance(data, dict) and "messages" in data:
        data = data["messages"]
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise click.BadParameter("must hold a JSON array of message objects", param_hint="--file")
    return data


@conversations.command("append")
@click.argument("agent_name", metavar="AGENT")
@click.argument("key")
@click.option("--role", type=ROLES, default="user", show_default=True, help="Who speaks.")
@click.option("--content", default=None, help="The message's text.")
@click.option("--tool-name", default=None, help="The tool a tool_call calls (or a tool_result answers).")
@click.option("--tool-call-id", default=None, help="Pairs a tool_call with its tool_result.")
@click.option("--args", "args_json", default=None, metavar="JSON", help="A tool_call's arguments, a JSON object.")
@click.option("--result", "result_json", default=None, metavar="JSON", help="A tool_result's result, any JSON.")
@click.option("--client-id", default=None, help="Makes a repeated append store the message once.")
@click.option("--file", "file", type=click.File("r"), default=None,
              help="Append a batch: a JSON array of messages (- reads stdin).")
@click.option("--surface", type=SURFACES, default=None, help="Where the conversation happens [default agent].")
@click.option("--window", type=click.IntRange(1, 20), default=None, help="Lower this conversation's window (1-20).")
@click.option("--user", default=None, help=_USER_HELP)
@json_option
@click.pass_context
def conversations_append(
    ctx: click.Context, agent_name: str, key: str, role: str, content: str | None, tool_name: str | None,
    tool_call_id: str | None, args_json: str | None, result_json: str | None, client_id: str | None,
    file: IO[str] | None, surface: str | None, window: int | None, user: str | None, as_json: bool,
) -> None:
    """Append one message (--role, --content...) or a batch (--file) to a conversation's journal."""
    one = (content, tool_name, tool_call_id, args_json, result_json, client_id)
    role_given = ctx.get_parameter_source("role") is not click.core.ParameterSource.DEFAULT
    if file is not None and (role_given or any(value is not None for value in one)):
        raise click.UsageError("give one message with --content (and the tool options) or a batch with --file")
    messages: list[dict[str, Any]] | list[Message]
    if file is not None:
        messages = _messages_file(file)
    elif content is None and role in ("user", "assistant"):
        raise click.UsageError(f"a {role} message needs --content")
    else:
        arguments = _json_option_value(args_json, "--args")
        if arguments is not None and not isinstance(arguments, dict):
            raise click.BadParameter("must be a JSON object", param_hint="--args")
        messages = [Message(role, content or "", tool_name=tool_name, tool_call_id=tool_call_id,
                            arguments=arguments, result=_json_option_value(result_json, "--result"),
                            client_id=client_id)]
    result = _conversation(ctx, agent_name, key, user).append(messages, surface=surface, window_messages=window)
    if wants_json(ctx, as_json):
        print_json(result)
        return
    seqs = result.seqs
    where = _seqs(min(seqs, default=None), max(seqs, default=None))
    sent = len(result.messages)
    if result.added == 0:
        click.echo(f"already stored in {agent_name}/{key}: seq {where}")
        return
    again = f" ({sent - result.added} already stored)" if result.added < sent else ""
    click.echo(f"appended {_count(result.added, 'message', 'messages')} to {agent_name}/{key}: seq {where}{again}")


@conversations.command("import")
@click.argument("agent_name", metavar="AGENT")
@click.argument("key")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@click.option("--format", "fmt", type=click.Choice(TRANSCRIPT_FORMATS), default="jsonl", show_default=True,
              help="jsonl: agentmem's rows, one per line; openai, anthropic, bedrock: that API's messages "
                   "(JSON Lines, a list, or a request body holding messages).")
@click.option("--surface", type=SURFACES, default=None, help="Where the conversation happens [default agent].")
@click.option("--user", default=None, help=_USER_HELP)
@json_option
@click.pass_context
def conversations_import(
    ctx: click.Context, agent_name: str, key: str, file: IO[str], fmt: str, surface: str | None, user: str | None,
    as_json: bool,
) -> None:
    """Import a transcript FILE (- reads stdin) into a conversation's journal, 40 rows at a time.

    Every row is stored once: importing the same file again adds nothing, and a file that grew adds only
    what is new. A bad line stops the import before anything is sent, naming the line."""
    transcript = read_transcript(file, fmt)
    chat = _conversation(ctx, agent_name, key, user)
    json_out = wants_json(ctx, as_json)
    with progress(len(transcript.rows), "importing", show=not json_out and bool(transcript.rows)) as update:
        report = chat.import_transcript(transcript, surface=surface, on_progress=update)
    if json_out:
        print_json(report)
        return
    where = _seqs(report.first_seq, report.last_seq)
    click.echo(f"imported {_count(report.messages, 'message', 'messages')} into {agent_name}/{key} "
               f"({_count(report.rows, 'row', 'rows')}, seq {where}): {report.added} added, "
               f"{report.already_there} already there, {len(report.skipped)} skipped")
    for reason in report.skipped:
        click.echo(f"  skipped {reason}")


@conversations.command("messages")
@click.argument("agent_name", metavar="AGENT")
@click.argument("key")
@click.option("--after", type=click.IntRange(min=0), default=None, help="Only the messages after this seq.")
@click.option("--limit", type=click.IntRange(1, 1000), default=None, help="At most this many (default 100).")
@click.option("--all", "every", is_flag=True, help="Every message, page after page.")
@click.option("--user", default=None, help=_USER_HELP)
@json_option
@click.pass_context
def conversations_messages(
    ctx: click.Context, agent_name: str, key: str, after: int | None, limit: int | None, every: bool,
    user: str | None, as_json: bool,
) -> None:
    """Read a conversation's journal back, whole and in order (one page unless --all)."""
    if every and limit is not None:
        raise click.UsageError("--all reads every message; leave --limit out")
    conversation = _conversation(ctx, agent_name, key, user)
    if every:
        page: Page[Message] = Page(conversation.messages(after=after), None)
    else:
        page = conversation.messages_page(after=after, limit=limit)
    if wants_json(ctx, as_json):
        print_json(page)
        return
    rows: list[Sequence[Any]] = [(m.seq, m.turn, m.role, _short(message_text(m))) for m in page]
    print_table(rows, ["seq", "turn", "role", "message"], "no messages")
    if page.next_cursor is not None:
        click.echo(f"… more after seq {page.next_cursor}: add --after {page.next_cursor}, or --all", err=True)


@conversations.command("context")
@click.argument("agent_name", metavar="AGENT")
@click.argument("key")
@click.option("--surface", type=SURFACES, default=None, help="The surface the turn is on [default agent].")
@click.option("--format", "fmt", type=click.Choice(["bedrock", "anthropic", "openai"]), default=None,
              help="Print the system and messages that model API takes, as JSON.")
@click.option("--user", default=None, help=_USER_HELP)
@json_option
@click.pass_context
def conversations_context(
    ctx: click.Context, agent_name: str, key: str, surface: str | None, fmt: str | None, user: str | None,
    as_json: bool,
) -> None:
    """Print what the model sees next turn: pinned block, memory index, summary, recent window."""
    context = _conversation(ctx, agent_name, key, user).context(surface=surface, format=fmt)
    if fmt is not None and not wants_json(ctx, as_json):
        print_json({"messages": context.messages} if context.system is None
                   else {"system": context.system, "messages": context.messages})
        return
    if wants_json(ctx, as_json):
        print_json(context)
        return
    print_context(context)


def print_context(context: Context) -> None:
    window = context.window
    seqs = window.seqs
    whom = f"user {context.user_id}" if context.user_id else "the account"
    summary = context.summary
    click.echo(f"context of {context.agent}/{context.conversation} with {whom} on {context.surface}: "
               f"{len(context.messages)} messages, {context.tokens} tokens")
    click.echo(
        f"  pinned {context.pinned.tokens} · memory index {context.memory_index.tokens} · "
        f"summary {summary.tokens if summary else 0} · window {window.tokens} "
        f"({len(window.messages)} of {window.cap} rows, seq {_seqs(min(seqs, default=None), max(seqs, default=None))})"
    )
    pinned, index = context.pinned, context.memory_index
    parts = [
        (f"system: pinned ({_count(len(pinned.entries), 'entry', 'entries')}, {pinned.tokens} tokens)", pinned.text),
        (f"system: memory index ({_count(index.shown, 'entry', 'entries')}, {index.tokens} tokens)", index.text),
    ]
    if summary is not None:
        parts.append((f"system: summary through seq {summary.covers_through_seq} ({summary.tokens} tokens)",
                      summary.text))
    for title, text in parts:
        if text:
            click.echo()
            click.echo(f"=== {title} ===")
            click.echo(text)
    for message in window.messages:
        click.echo()
        if message.role == "tool_call":
            click.echo(f"=== tool_call {message.tool_name} · id {message.tool_call_id} · seq {message.seq} ===")
            click.echo(_json_text(message.arguments or {}))
        elif message.role == "tool_result":
            click.echo(f"=== tool_result · id {message.tool_call_id} · seq {message.seq} ===")
            click.echo(_json_text(message.result) if message.result is not None else message.content)
        else:
            click.echo(f"=== {message.role} · seq {message.seq} · turn {message.turn} ===")
            click.echo(message.content)


@conversations.command("search")
@click.argument("agent_name", metavar="AGENT")
@click.argument("query")
@click.option("--conversation", default=None, metavar="KEY", help="Only this conversation.")
@click.option("--limit", type=click.IntRange(1, 100), default=None, help="At most this many hits (default 10).")
@click.option("--surface", type=SURFACES, default=None, help="The surface searching [default agent].")
@click.option("--user", default=None, help="Search the agent's conversations with this user.")
@click.option("--after", default=None, metavar="TIME",
              help="Only messages written after this time (ISO 8601: 2026-03-01 or 2026-03-01T09:30:00Z).")
@click.option("--before", default=None, metavar="TIME", help="Only messages written before this time (ISO 8601).")
@json_option
@click.pass_context
def conversations_search(
    ctx: click.Context, agent_name: str, query: str, conversation: str | None, limit: int | None,
    surface: str | None, user: str | None, after: str | None, before: str | None, as_json: bool,
) -> None:
    """Find messages of an agent's conversations by meaning and words (journal search), best first."""
    hits = agent(ctx, agent_name).search_messages(query, user=user, conversation=conversation, limit=limit,
                                                 surface=surface, after=after, before=before)
    if wants_json(ctx, as_json):
        print_json(hits)
        return
    rows = [(h.conversation, h.seq, h.role, (h.created_at or "")[:16].replace("T", " "), h.score, h.snippet)
            for h in hits]
    print_table(rows, ["conversation", "seq", "role", "written", "score", "snippet"], "no messages found")
    print_found(hits, "message", "messages")


@conversations.command("tool-call")
@click.argument("agent_name", metavar="AGENT")
@click.argument("key")
@click.argument("tool_call_id", metavar="ID")
@click.option("--surface", type=SURFACES, default=None, help="The surface asking [default agent].")
@click.option("--user", default=None, help=_USER_HELP)
@json_option
@click.pass_context
def conversations_tool_call(
    ctx: click.Context, agent_name: str, key: str, tool_call_id: str, surface: str | None, user: str | None,
    as_json: bool,
) -> None:
    """Show an earlier tool call whole: its arguments and its result."""
    call = _conversation(ctx, agent_name, key, user).tool_call(tool_call_id, surface=surface)
    if wants_json(ctx, as_json):
        print_json(call)
        return
    print_fields([("tool_call_id", call.tool_call_id), ("tool_name", call.tool_name),
                  ("call_seq", call.call_seq), ("result_seq", call.result_seq)])
    click.echo()
    click.echo("arguments:")
    click.echo(json.dumps(call.arguments, indent=2, ensure_ascii=False))
    click.echo("result:")
    if call.result is None and call.result_content:
        click.echo(call.result_content)
    else:
        click.echo(json.dumps(call.result, indent=2, ensure_ascii=False))


@conversations.command("checkpoint")
@click.argument("agent_name", metavar="AGENT")
@click.argument("key")
@click.option("--user", default=None, help=_USER_HELP)
@json_option
@click.pass_context
def conversations_checkpoint(ctx: click.Context, agent_name: str, key: str, user: str | None, as_json: bool) -> None:
    """Show a conversation's checkpoint: its rolling summary and the messages it covers."""
    checkpoint = _conversation(ctx, agent_name, key, user).checkpoint()
    if wants_json(ctx, as_json):
        print_json(checkpoint)
        return
    if checkpoint is None:
        click.echo(f"conversation {key} has no checkpoint (no summary pass has run, or it was deleted)")
        return
    print_fields([("name", checkpoint.name), ("memory", checkpoint.memory), ("user", checkpoint.user_id),
                  ("version", checkpoint.version), ("covers_through_seq", checkpoint.covers_through_seq),
                  ("updated_by", checkpoint.updated_by), ("updated_at", checkpoint.updated_at)])
    click.echo()
    click.echo(checkpoint.content or "")


@conversations.command("compact")
@click.argument("agent_name", metavar="AGENT")
@click.argument("key")
@click.option("--user", default=None, help=_USER_HELP)
@json_option
@click.pass_context
def conversations_compact(ctx: click.Context, agent_name: str, key: str, user: str | None, as_json: bool) -> None:
    """Start a summary pass now (it runs in the background)."""
    job_id = _conversation(ctx, agent_name, key, user).compact()
    if wants_json(ctx, as_json):
        print_json({"job_id": job_id})
    else:
        click.echo(f"summary pass started: {job_id}")


@conversations.command("rm")
@click.argument("agent_name", metavar="AGENT")
@click.argument("key")
@click.option("--purge", is_flag=True, help="Remove its journal, checkpoint, workspace and index too, for good.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (with --purge).")
@click.option("--user", default=None, help=_USER_HELP)
@json_option
@click.pass_context
def conversations_rm(
    ctx: click.Context, agent_name: str, key: str, purge: bool, yes: bool, user: str | None, as_json: bool
) -> None:
    """Delete a conversation; its journal and checkpoint stay unless --purge."""
    if purge and not yes:
        click.confirm(f"Delete conversation {key} of {agent_name} for good, with its journal and checkpoint?",
                      abort=True, err=True)
    receipt = _conversation(ctx, agent_name, key, user).delete(purge=purge)
    if wants_json(ctx, as_json):
        print_json(receipt)
        return
    if not receipt.purged:
        click.echo(f"conversation {key} deleted; its journal and checkpoint stay (--purge removes them)")
        return
    click.echo(f"purged conversation {key}")
    print_table(list(receipt.removed.items()), ["removed", "count"], "nothing else was removed")
