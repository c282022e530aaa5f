"""The SDK client of one CLI invocation, built from ``--url`` / ``--api-key`` (or the environment)."""

from __future__ import annotations

import click

from agentmem.client import Agent, Client, Memory
from agentmem.client.transport import Transport


def client(ctx: click.Context) -> Client:
    """The SDK client for this invocation; ``obj={"transport": ...}`` swaps the transport (tests)."""
    root = ctx.find_root()
    obj = root.obj if isinstance(root.obj, dict) else {}
    found = obj.get("client")
    if not isinstance(found, Client):
        transport: Transport | None = obj.get("transport")
        found = Client(root.params.get("url"), root.params.get("api_key"), transport=transport)
        obj["client"] = found
        root.obj = obj
    return found


def memory(ctx: click.Context, name: str, user: str | None = None) -> Memory:
    return client(ctx).memory(name, user=user)


def agent(ctx: click.Context, name: str, user: str | None = None) -> Agent:
    return client(ctx).agent(name, user=user)
