"""Following a workspace link as a browser would, with no key: an S3 presigned URL over HTTP, or an
embedded store's link answered as ``agentmem serve`` answers it (``local.links.serve_link_bytes``)."""

from __future__ import annotations

import urllib.error
import urllib.request

from agentmem.adapters.embedded.blobs import FileBlobStore
from agentmem.local.links import serve_link_bytes
from agentmem.ports.blobs import BlobStore


def follow_link(store: BlobStore, url: str, method: str = "GET", body: bytes | None = None,
                timeout: float = 30) -> tuple[int, bytes]:
    """The status and body a link answers."""
    if isinstance(store, FileBlobStore):
        status, _, payload = serve_link_bytes(store, method, url, {}, body)
        return status, payload
    headers = {"Content-Type": "application/octet-stream"} if body is not None else {}
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
