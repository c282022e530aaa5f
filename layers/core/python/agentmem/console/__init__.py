"""The console: a web page that calls the public API like any client (``docs/console.md``).

This package holds only the page's static files and what serves them; the page itself talks to ``/v1``
with the key the person typed, and never to the services or the stores.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from ..settings import Settings

PREFIX = "/console"
ASSET_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
# the page runs only its own files: no inline script or style, no other origin (but where its uploads go), never
# inside a frame
POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src {connect}; "
    "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
OTHER_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    # revalidated on every load (a cheap 304 by ETag), so an upgrade's files are never mixed with old ones
    "Cache-Control": "no-cache",
}


def security_headers(settings: Settings) -> dict[str, str]:
    """The headers every console file leaves with: its policy lets the page call the API ('self') and PUT a
    workspace file to where the backend's upload links point (:func:`upload_origin`), nothing else."""
    origin = upload_origin(settings)
    connect = "'self'" if origin is None else f"'self' {origin}"
    return {"Content-Security-Policy": POLICY.format(connect=connect), **OTHER_HEADERS}


def upload_origin(settings: Settings) -> str | None:
    """The origin of the backend's workspace upload links when it is not the page's own: on AWS the workspace
    bucket's S3 endpoint, as the S3 adapter's presigner addresses it (``https://<bucket>.s3.<region>.amazonaws.com``,
    an emulator's endpoint when ``AWS_ENDPOINT_URL_S3`` points at one). On the embedded backend links lead to the
    server itself (``/v1/links/…``): None."""
    if settings.backend != "aws":
        return None
    return _s3_origin(settings.workspace_bucket, settings.region,
                      os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL"))


@cache
def _s3_origin(bucket: str, region: str | None, endpoint_override: str | None) -> str:
    """Asked of the adapter that signs the links (once per process and settings): its presigner's endpoint, with
    the bucket in the host name when it addresses buckets virtually (AWS), in the path otherwise (an emulator)."""
    import boto3

    from ..adapters.aws.s3 import S3BlobStore

    presigner = S3BlobStore(bucket, boto3_session=boto3.Session(region_name=region)).presigner  # no call is made
    endpoint = urlsplit(presigner.meta.endpoint_url)
    virtual = (getattr(presigner.meta.config, "s3", None) or {}).get("addressing_style") == "virtual"
    return f"{endpoint.scheme}://{bucket + '.' if virtual else ''}{endpoint.netloc}"


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
