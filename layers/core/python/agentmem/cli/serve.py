"""``agentmem serve``: run the API locally (on the backend directly, not through the API)."""

from __future__ import annotations

import errno
import socket
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from agentmem.settings import Settings

BACKENDS = click.Choice(["embedded", "aws"])


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; links to workspace files use it unless AGENTMEM_PUBLIC_URL is set.")
@click.option("--port", default=8787, show_default=True, type=int, help="0 picks a free port.")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the embedded backend keeps its data [default ./.agentmem].",
)
@click.option("--backend", type=BACKENDS, default=None, help="Storage backend [default embedded].")
@click.option(
    "--workers",
    type=int,
    default=None,
    help="Processes answering on the port [default: AGENTMEM_SERVE_WORKERS, else one per core]; 1 serves in "
    "this process.",
)
@click.option(
    "--create-resources",
    is_flag=True,
    help="With --backend aws: create the table and buckets if missing (for emulators given by AWS_ENDPOINT_URL_*).",
)
def serve(host: str, port: int, data_dir: Path | None, backend: str | None, workers: int | None,
          create_resources: bool) -> None:
    """Run the API locally."""
    from agentmem.local.server import serve as run_server
    from agentmem.settings import MAX_SERVE_WORKERS, load_settings

    if not 0 <= port <= 65535:
        raise click.ClickException(f"--port is a TCP port, 0 to 65535 (0 picks a free one), not {port}")
    if workers is not None and not 1 <= workers <= MAX_SERVE_WORKERS:
        raise click.ClickException(f"--workers is a number of processes, 1 to {MAX_SERVE_WORKERS}, not {workers}")
    settings = load_settings(data_dir=data_dir, backend=backend, serve_workers=workers)
    if create_resources and settings.backend != "aws":
        raise click.UsageError("--create-resources goes with --backend aws")
    if settings.backend == "aws":
        click.echo(summary_passes(settings))
    from agentmem.bootstrap import semantic_fallback_note

    note = semantic_fallback_note(settings)
    if note is not None:  # an install without the embedded extra: keyword-only recall, said once, no traceback
        click.echo(note, err=True)
    try:
        run_server(settings, host=host, port=port, create_resources=create_resources, workers=settings.serve_workers)
    except OSError as error:
        raise click.ClickException(start_failure(error, host, port, settings.data_dir)) from None
    except sqlite3.Error as error:
        raise click.ClickException(f"cannot open the database in {settings.data_dir}: {error}") from None


def start_failure(error: OSError, host: str, port: int, data_dir: Path) -> str:
    """One line saying why the server could not start: the address to listen on (or the server holding the
    port), or the data dir."""
    from agentmem.local.port_hold import PortHeld

    reason = error.strerror or str(error)
    if isinstance(error, PortHeld):
        return f"cannot listen on {host}:{port}: {reason}. Stop it, or choose another port with --port."
    if error.filename is not None:  # a file or directory: the data dir, or something in it
        where = "" if Path(error.filename) == Path(data_dir) else f" ({error.filename})"
        return f"cannot use the data dir {data_dir}: {reason}{where}. Choose another with --data-dir."
    if isinstance(error, socket.gaierror):
        return f"cannot listen on {host}:{port}: {host!r} is not an address of this machine ({reason})"
    if error.errno == errno.EADDRINUSE:
        return (f"cannot listen on {host}:{port}: {reason}. Is another agentmem serve running? "
                "Choose another port with --port.")
    if error.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {host}:{port}: {reason} ({host} is not an address of this machine)"
    if error.errno == errno.EACCES:
        return (f"cannot listen on {host}:{port}: {reason} (ports below 1024 need privileges). "
                "Choose another with --port.")
    return f"cannot start on {host}:{port}: {reason}"


def summary_passes(settings: Settings) -> str:
    """Where this server's summary passes run, said at start on the AWS backend."""
    from agentmem.bootstrap import passes_in_process

    summariser = "extractive" if settings.summariser == "extractive" else f"Bedrock {settings.summary_model_id}"
    if passes_in_process(settings):
        return (f"Summary passes run in this process ({summariser} summariser): "
                "AGENTMEM_STATE_MACHINE_ARN is not set.")
    return f"Summary passes run on the state machine {settings.state_machine_arn}."
