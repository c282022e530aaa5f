"""Lambda entry point of the REST API. The routes live in the package (``agentmem.api``)."""

from agentmem.api.app import lambda_handler

__all__ = ["lambda_handler"]
