"""Lambda entry point of ``/v1/mcp``: the API's own handler, in a function of its own.

``agentmem.api.app.lambda_handler`` serves every route, this one included; what differs is the
function around it, which has the MCP layer (the ``mcp`` SDK and what it brings) that the API function
does not. This function serves nothing but ``/v1/mcp``, so the MCP server is imported here, at init,
rather than by the route on the first request: the import is paid where Lambda pays initialisation
(before the first request when an environment is pre-initialised), and a missing or broken MCP layer
fails the init (``Runtime.ImportModuleError``) instead of the first call.
"""

import agentmem.mcp_server.http  # noqa: F401  (see above; the route imports it lazily otherwise)
from agentmem.api.app import lambda_handler

__all__ = ["lambda_handler"]
