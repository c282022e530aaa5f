"""``agentmem serve-emulated``: the API on the AWS backend, against emulators it starts and stops itself.

It starts DynamoDB Local and moto's server (``agentmem.local.emulators``) on free ports, points boto3 at
them with test credentials, and runs ``agentmem serve --backend aws --create-resources``. Summary passes run
in this process (there is no state machine). On Ctrl-C or SIGTERM the server stops, then the emulators; on
Linux they also go if this process is killed. Everything is in memory: it is gone when it stops.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from types import FrameType

import click

from .serve import serve, start_failure

# settings that would send the emulated backend to real AWS resources: left out for this process
REAL_AWS_SETTINGS = ("AGENTMEM_STATE_MACHINE_ARN", "AGENTMEM_OPENSEARCH_ENDPOINT")


def _stop_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds through the clean-up (the server puts its own handler over this)


@click.command("serve-emulated")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8787, show_default=True, type=int, help="0 picks a free port.")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=Path(".agentmem-aws"),
              show_default=True, help="Where the `dev-key` file of the default account is written.")
@click.option("--dynamodb-local", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
              help="The folder of DynamoDBLocal.jar [default: node_modules/amplify-dynamodb-simulator/emulator].")
@click.pass_context
def serve_emulated(ctx: click.Context, host: str, port: int, data_dir: Path, dynamodb_local: Path | None) -> None:
    """Run the API on the AWS backend against DynamoDB Local and moto's S3, started here (needs Java)."""
    from agentmem.local.emulators import EmulatorError, Emulators
    from agentmem.local.port_hold import PortHeld, check_port

    try:  # before the emulators start: a port another agentmem server holds is refused as serve refuses it
        check_port(port, host, data_dir)
    except PortHeld as error:
        raise click.ClickException(start_failure(error, host, port, data_dir)) from None
    previous = signal.signal(signal.SIGTERM, _stop_on_sigterm)
    emulators = Emulators(dynamodb_local=dynamodb_local)
    try:
        try:
            emulators.start()
        except EmulatorError as error:
            raise click.ClickException(str(error)) from None
        for emulator in emulators.running:
            click.echo(f"{emulator.name} on {emulator.endpoint} (pid {emulator.pid})")
        for name in REAL_AWS_SETTINGS:
            if os.environ.pop(name, None) is not None:
                click.echo(f"({name} is left out: everything runs on the emulators)")
        os.environ.update(emulators.environment())
        ctx.invoke(serve, host=host, port=port, data_dir=data_dir, backend="aws", create_resources=True)
    finally:
        started = bool(emulators.running)
        emulators.stop()
        signal.signal(signal.SIGTERM, previous)
        if started:
            click.echo("emulators stopped.")
