"""An agent's memory tools over MCP (SPEC §9): the noclick-dialect tools of one agent on the ``mcp`` surface.

Two transports, one tool surface:

- stdio (``run_stdio``, ``python -m agentmem.mcp_server --agent NAME``): a local process an MCP host
  launches; it lists and runs the tools through the agentmem API (``AGENTMEM_URL`` / ``AGENTMEM_API_KEY``);
- streamable HTTP at ``POST /v1/mcp?agent=NAME`` inside the API itself (``agentmem.mcp_server.http``), whose
  protocol is written here (``protocol.py``) rather than taken from the SDK, for the cold start.

Nothing here is imported with the API. The ``mcp`` SDK loads only with the stdio server; the HTTP route never
imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..client import Client


def run_stdio(agent: str, user: str | None = None, client: Client | None = None) -> None:
    """Serve ``agent``'s tools over stdin/stdout until the host closes them (see ``stdio.run_stdio``)."""
    from .stdio import run_stdio as run

    run(agent, user, client)


__all__ = ["run_stdio"]
