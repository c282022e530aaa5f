"""``agentmem mcp``: serve an agent's memory tools to an MCP host over stdio."""

from __future__ import annotations

import click

from .connection import client


@click.command("mcp")
@click.option("--agent", "agent_name", required=True, help="The agent whose tools to serve.")
@click.option("--user", default=None, help="The user the MCP client acts for (none: an anonymous client).")
@click.pass_context
def mcp(ctx: click.Context, agent_name: str, user: str | None) -> None:
    """Serve AGENT's memory tools over MCP on stdin/stdout (the `mcp` surface: no journal tools).

    An MCP host (a desktop assistant, an IDE) launches this command; the tools run against the
    service at --url / AGENTMEM_URL with --api-key / AGENTMEM_API_KEY.
    """
    from agentmem.mcp_server import run_stdio

    run_stdio(agent_name, user, client(ctx))
