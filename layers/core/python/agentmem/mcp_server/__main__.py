"""``python -m agentmem.mcp_server --agent NAME [--user U]``: the stdio MCP server of one agent.

The API's URL and key come from ``AGENTMEM_URL`` and ``AGENTMEM_API_KEY``.
"""

from __future__ import annotations

import argparse
import sys

from ..client import AgentmemError
from . import run_stdio


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agentmem.mcp_server",
        description="Serve an agent's memory tools over MCP on stdin/stdout (AGENTMEM_URL, AGENTMEM_API_KEY).",
    )
    parser.add_argument("--agent", required=True, help="the agent whose tools to serve")
    parser.add_argument("--user", default=None, help="the user the MCP client acts for (none: anonymous)")
    args = parser.parse_args(argv)
    try:
        run_stdio(args.agent, args.user)
    except AgentmemError as error:
        print(f"agentmem mcp: {error.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
