"""Lambda entry point of ``/v1/mcp``: the API's own handler, in a function of its own.

``agentmem.api.app.lambda_handler`` serves every route, this one included. This function serves nothing but
``/v1/mcp``, so the route's MCP module is imported here, at init, rather than by the route on the first
request: the import is paid where Lambda pays initialisation (before the first request when an environment is
pre-initialised). The module speaks MCP itself (``agentmem.mcp_server.protocol``): no ``mcp`` SDK, starlette or
anyio is imported, and the function needs no layer beyond the two every function has.
"""

import agentmem.mcp_server.http  # noqa: F401  (see above; the route imports it lazily otherwise)
from agentmem.api.app import lambda_handler

__all__ = ["lambda_handler"]
