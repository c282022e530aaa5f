"""The console: a web page that calls the public API like any client (``docs/console.md``).

This package holds only the page's static files and what serves them; the page itself talks to ``/v1``
with the key the person typed, and never to the services or the stores.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources

PREFIX = "/console"
ASSET_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
# the page runs only its own files: no inline script or style, no other origin, never inside a frame
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    # revalidated on every load (a cheap 304 by ETag), so an upgrade's files are never mixed with old ones
    "Cache-Control": "no-cache",
}


@dataclass(frozen=True)
class Asset:
    body: str
    content_type: str
    etag: str


@cache
def asset(name: str) -> Asset | None:
    """A file of ``static/`` by its name (``index.html`` for the page itself); None for anything else."""
    suffix = name[name.rfind("."):] if "." in name else ""
    if "/" in name or "\\" in name or name.startswith(".") or suffix not in ASSET_TYPES:
        return None
    file = resources.files(__name__).joinpath("static", name)
    if not file.is_file():
        return None
    body = file.read_text(encoding="utf-8")
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]
    return Asset(body=body, content_type=ASSET_TYPES[suffix], etag=f'"{digest}"')


def is_console_path(path: str) -> bool:
    """Paths the console's files are served on, without an API key (the files hold no data)."""
    return path == "/" or path == PREFIX or path.startswith(PREFIX + "/")
