"""``agentmem serve``: run the API locally (on the backend directly, not through the API)."""

from __future__ import annotations

import errno
from pathlib import Path

import click

BACKENDS = click.Choice(["embedded", "aws"])


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; links to workspace files use it unless AGENTMEM_PUBLIC_URL is set.")
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
    try:
        run_server(settings, host=host, port=port, create_resources=create_resources)
    except OSError as error:
        if error.errno not in (errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES):
            raise
        raise click.ClickException(
            f"cannot listen on {host}:{port}: {error.strerror}. Is another agentmem serve running? "
            "Choose another port with --port."
        ) from None
