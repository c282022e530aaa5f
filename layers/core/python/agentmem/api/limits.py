"""How large a request body may be, checked before anything else (the API handler and the local server).

A workspace file written through the API may be up to 4 MiB, and its 413 points at upload links; every
other body is JSON, at most ``max_body_bytes``. Nothing here imports Powertools: the local server
checks a body's declared size before reading it.
"""

from __future__ import annotations

import re

from ..domain.errors import AgentmemError, TooLargeError
from ..domain.workspaces import check_api_write

# headers a request may send once: of two, one reader would take the first and another the last (a key checked
# that is not the key used, a body framed by one length and read by the other); two are a 400 naming the header
SINGLE_HEADERS = ("Authorization", "Content-Length", "If-Match", "If-None-Match")

# a workspace file's path is the rest of the URL after /workspace/files/, slashes and all
FILE_PATH = re.compile(r"^/v1/agents/[^/]+/conversations/[^/]+/workspace/files/(.+)$", re.DOTALL)


def file_path(event_path: str) -> str:
    """The file's path from a request's (decoded) URL path ('' when it names none)."""
    found = FILE_PATH.match(event_path)
    return found.group(1) if found else ""


def is_file_write(method: str, event_path: str) -> bool:
    return method.upper() == "PUT" and FILE_PATH.match(event_path) is not None


def oversized(method: str, path: str, size: int, max_body_bytes: int) -> AgentmemError | None:
    """The 413 for a body over its limit: a workspace file's (pointing at upload links) or the API's."""
    if is_file_write(method, path):
        try:
            check_api_write(size)
        except TooLargeError as error:
            return error
        return None
    if size > max_body_bytes:
        return TooLargeError(f"the request body is {size:,} bytes; at most {max_body_bytes:,} are accepted",
                             limit=max_body_bytes)
    return None
