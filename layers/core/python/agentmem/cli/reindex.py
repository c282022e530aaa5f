"""``agentmem reindex``: rebuild the semantic index from the store (on the backend directly, not through the API).

After a change of embedder or of its dimension (``AGENTMEM_EMBEDDER``, ``AGENTMEM_EMBEDDING_DIMENSION``), vectors
written by the old one are never compared with the new one's; this command queues every entry (of one memory
with ``--memory``) and every journal message (only those with ``--journal``) again and embeds them, with a
progress bar. It is resumable by construction: the queue lives in the database, and a vector already written by
the current embedder for the same text is not embedded again, so running it again after an interruption
picks up where it stopped.
"""

from __future__ import annotations

from pathlib import Path

import click

from .output import progress


@click.command()
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The embedded backend's data [default ./.agentmem].")
@click.option("--memory", default=None, metavar="NAME", help="Only this memory's entries.")
@click.option("--journal", is_flag=True, help="Only the journals' messages.")
def reindex(data_dir: Path | None, memory: str | None, journal: bool) -> None:
    """Rebuild the semantic index from the store."""
    from agentmem.adapters.embedded.vector_index import SqliteVectorIndex
    from agentmem.bootstrap import build_container
    from agentmem.settings import load_settings

    settings = load_settings(data_dir=data_dir)
    if settings.backend != "embedded":
        raise click.ClickException(
            "on AWS the index is rebuilt from the table's stream by the indexer function; this command rebuilds "
            "the embedded backend's index (--data-dir)"
        )
    if memory is not None and journal:
        raise click.UsageError("--memory and --journal each choose what to rebuild; give one of them, or neither")
    container = build_container(settings)
    index = container.search_index
    if not isinstance(index, SqliteVectorIndex):
        raise click.ClickException("no semantic index is configured (AGENTMEM_EMBEDDER=none)")
    queued = index.reindex(memory=memory, journal=journal)
    total = index.pending()
    click.echo(f"queued {queued:,} rows for {index.embedder.name}; {total:,} to embed", err=True)
    with progress(total, "embedding") as update:
        while True:
            done = index.catch_up(2048)
            if not done:
                break
            if update is not None:
                update(done)
    click.echo(f"reindexed: {index.vectors():,} vectors by {index.embedder.name}")
