"""``agentmem reindex`` on the AWS backend: the table scanned into the OpenSearch index, resumable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from .output import progress


def _state_path(table: str, given: Path | None) -> Path:
    return given or Path(f".agentmem-reindex-{table}.json")


def _saved(path: Path, what: dict[str, Any]) -> str | None:
    """The cursor saved by an earlier run of the same rebuild (None when there is none, or it rebuilt other
    things)."""
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or state.get("what") != what:
        return None
    cursor = state.get("cursor")
    return cursor if isinstance(cursor, str) else None


def rebuild_table(settings: Any, *, memory: str | None, journal: bool, state_file: Path | None,
                  resume: str | None, restart: bool) -> None:
    from agentmem.adapters.aws.dynamodb import dynamodb_client
    from agentmem.adapters.aws.reindex import Cursor, TableRebuild
    from agentmem.bootstrap import build_container
    from agentmem.domain.clock import iso, utcnow

    if not settings.opensearch_endpoint:
        raise click.ClickException("no search index to rebuild: set AGENTMEM_OPENSEARCH_ENDPOINT (the stack's "
                                   "collection endpoint)")
    container = build_container(settings)
    index, embedder = container.search_index, container.embedder
    if index is None or embedder is None:
        raise click.ClickException("no embedder is configured (AGENTMEM_EMBEDDER=none): nothing to rebuild")
    what = {"table": settings.table, "memory": memory, "journal": journal, "embedder": embedder.name}
    path = _state_path(settings.table, state_file)
    token = resume or (None if restart else _saved(path, what))
    try:
        cursor = Cursor.parse(token) if token else None
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--resume") from None
    if cursor is not None and cursor.phase == "done":
        click.echo(f"already rebuilt (by {path}); --restart rebuilds again", err=True)
        return
    index.setup()
    rebuild = TableRebuild(dynamodb_client(), settings.table, index, embedder, container.stores.conversations,
                           iso(utcnow()))
    total = rebuild.estimate()
    click.echo(f"{'resuming' if cursor else 'rebuilding'} {settings.table} into the search index by "
               f"{embedder.name} (about {total:,} table items)", err=True)
    written = {"entries": 0, "messages": 0}
    last = cursor
    try:
        with progress(max(total, 1), "scanning") as update:
            for step in rebuild.run(memory=memory, journal=journal, cursor=cursor):
                written[step.kind] += step.written
                last = step.cursor
                path.write_text(json.dumps({"what": what, "cursor": last.token()}))
                if update is not None and step.scanned:
                    update(step.scanned)
    except KeyboardInterrupt:
        hint = f" --resume {last.token()}" if last else ""
        raise click.ClickException(f"interrupted; run the same command again to go on (or{hint})") from None
    path.write_text(json.dumps({"what": what, "cursor": Cursor("done").token()}))
    click.echo(f"reindexed: {written['entries']:,} entries, {written['messages']:,} messages by {embedder.name}")
