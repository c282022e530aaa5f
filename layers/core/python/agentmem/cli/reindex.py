"""``agentmem reindex``: rebuild the semantic index from the store (on the backend directly, not through the API).

After a change of embedder or of its dimension (``AGENTMEM_EMBEDDER``, ``AGENTMEM_EMBEDDING_DIMENSION``), vectors
written by the old one are never compared with the new one's; this command writes every entry (of one memory
with ``--memory``) and every journal message (only those with ``--journal``) again, with a progress bar.

Embedded backend: it is resumable by construction: the queue lives in the database, and a vector already
written by the current embedder for the same text is not embedded again, so running it again after an
interruption picks up where it stopped.

AWS backend (``AGENTMEM_BACKEND=aws``, with ``AGENTMEM_OPENSEARCH_ENDPOINT``): the table is scanned page by
page (``adapters/aws/reindex.py``); after every page the cursor is saved in ``--state`` and printed when the run
is interrupted, so the same command (or ``--resume CURSOR``) goes on from there. ``--journal`` there rebuilds
the entries and then the journals (a new collection needs both); ``--memory`` the entries of one memory.
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
@click.option("--state", "state_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="AWS: where the cursor is kept between runs [default ./.agentmem-reindex-<table>.json].")
@click.option("--resume", default=None, metavar="CURSOR", help="AWS: go on from this cursor.")
@click.option("--restart", is_flag=True, help="AWS: start from the beginning, whatever the state file holds.")
def reindex(data_dir: Path | None, memory: str | None, journal: bool, state_file: Path | None,
            resume: str | None, restart: bool) -> None:
    """Rebuild the semantic index from the store."""
    from agentmem.bootstrap import build_container
    from agentmem.settings import load_settings

    settings = load_settings(data_dir=data_dir)
    if memory is not None and journal:
        raise click.UsageError("--memory and --journal each choose what to rebuild; give one of them, or neither")
    if settings.backend == "aws":
        from .reindex_aws import rebuild_table

        rebuild_table(settings, memory=memory, journal=journal, state_file=state_file, resume=resume,
                      restart=restart)
        return
    if resume is not None or restart or state_file is not None:
        raise click.UsageError("--state, --resume and --restart are for the AWS backend; the embedded rebuild "
                               "resumes by itself")
    from agentmem.bootstrap import semantic_fallback_note

    container = build_container(settings)
    index = container.search_index
    if index is None:
        note = semantic_fallback_note(settings)
        raise click.ClickException(note.removeprefix("note: ") if note is not None
                                   else "no semantic index is configured (AGENTMEM_EMBEDDER=none)")
    from agentmem.adapters.embedded.vector_index import SqliteVectorIndex

    if not isinstance(index, SqliteVectorIndex):
        raise click.ClickException("no semantic index is configured (AGENTMEM_EMBEDDER=none)")
    queued = index.reindex(memory=memory, journal=journal)
    what = (f"entries of memory '{memory}'" if memory is not None
            else "journal messages" if journal else "entries and journal messages")
    total = index.pending()
    click.echo(f"queued {queued:,} {what} for {index.embedder.name}; {total:,} to embed", err=True)
    applied = 0
    with progress(total, "embedding") as update:
        while True:
            done = index.catch_up(2048)
            if not done:
                break
            applied += done
            if update is not None:
                update(done)
    # what this run did, then what the index holds in all (other memories' vectors included); a running
    # `agentmem serve` drains the same queue, so some of it may have been applied there
    said = f"reindexed: queued {queued:,} {what}, applied {applied:,} queued changes with {index.embedder.name}"
    elsewhere = max(total - applied - index.pending(), 0)
    if elsewhere:
        said += f" ({elsewhere:,} more applied meanwhile by a running server's indexer)"
    click.echo(f"{said}; the index holds {index.vectors():,} vectors in all")
