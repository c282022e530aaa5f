"""Serving the embedded backend's workspace links (``/v1/links/...``), as S3 serves presigned URLs.

The local server streams them straight from the store, outside the Lambda handler: a download goes
out with ``sendfile`` (Range requests answer 206), an upload is read to disk in chunks, so a 100 MB
file never sits in memory. The SDK's in-process transport uses ``serve_link_bytes`` for the same rules.
"""

from __future__ import annotations

import email.utils
import io
import json
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO
from urllib.parse import parse_qsl, unquote, urlsplit

from ..adapters.embedded.blobs import FileBlobStore, Readable
from ..adapters.embedded.links import LINK_ROOT, LinkRefusedError, SignedLink
from ..api.json_body import lone_surrogate
from ..domain.errors import AgentmemError, InvalidError, MethodNotAllowedError, NotFoundError
from ..domain.workspaces import content_disposition, content_type
from ..ports.blobs import BlobNotFoundError

if TYPE_CHECKING:
    from http.server import BaseHTTPRequestHandler

_RANGE = re.compile(r"bytes=([0-9]*)-([0-9]*)")
# a position past any file: a Range's number of more digits than this is read as it (Python reads no integer of
# more than 4,300 digits, and a file has fewer than 19)
_PAST_ANY_FILE = 10**18
METHODS = ("GET", "HEAD", "PUT")  # what a link answers (a download link GET and HEAD, an upload link PUT)


def is_link(url_path: str) -> bool:
    return url_path.startswith(LINK_ROOT)


@dataclass(frozen=True)
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""
    source: BinaryIO | None = None  # the open file to send after the headers (a replace cannot swap it midway)
    span: tuple[int, int] = (0, 0)  # (offset, length) of it to send


def _error(error: AgentmemError) -> Answer:
    body = json.dumps({"error": error.to_dict()}).encode()
    headers = [("Content-Type", "application/json")]
    if "allowed" in error.details:
        headers.append(("Allow", ", ".join(error.details["allowed"])))
    return Answer(error.status, headers, body)


def _verify(store: FileBlobStore | None, method: str, target: str) -> tuple[FileBlobStore, SignedLink]:
    if method not in METHODS:
        raise MethodNotAllowedError(f"{method} is not served on a link; use {', '.join(METHODS)}",
                                    allowed=list(METHODS))
    if store is None or store.links is None:
        raise NotFoundError("links are served by the embedded backend only")
    url = urlsplit(target)
    key = unquote(url.path[len(LINK_ROOT):])
    return store, store.links.verify(method, key, _terms(url.query))


def _terms(query: str) -> dict[str, str]:
    """A link's query, each value as text: one whose percent-escapes are not UTF-8 is refused naming it (the
    same rule as the API's query parameters), rather than read with replacement characters."""
    terms = dict(parse_qsl(query, keep_blank_values=True, errors="surrogateescape"))
    for name, value in terms.items():
        if lone_surrogate(name) is not None or lone_surrogate(value) is not None:
            shown = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            raise InvalidError(f"the link's {shown} is not UTF-8 text", field=shown)
    return terms


def _download(store: FileBlobStore, link: SignedLink, method: str, range_header: str | None) -> Answer:
    try:
        source = open(store.object_path(link.key), "rb")  # noqa: SIM115 (closed by whoever sends it)
    except (BlobNotFoundError, FileNotFoundError, IsADirectoryError):
        raise NotFoundError("the file is gone: it was deleted") from None
    found = os.fstat(source.fileno())
    size = found.st_size
    name = link.filename or link.key.rsplit("/", 1)[-1]
    headers = [
        ("Content-Type", content_type(name)), ("Content-Disposition", content_disposition(name)),
        ("Accept-Ranges", "bytes"), ("Last-Modified", email.utils.formatdate(found.st_mtime, usegmt=True)),
        ("Cache-Control", "private, no-store"), ("X-Content-Type-Options", "nosniff"),
    ]
    start, length, status = 0, size, 200
    wanted = _RANGE.fullmatch(range_header.strip()) if range_header else None
    if wanted and (wanted.group(1) or wanted.group(2)):
        first, last = wanted.group(1), wanted.group(2)
        if first:
            start = _position(first)
            end = min(_position(last), size - 1) if last else size - 1
        else:  # bytes=-N: the last N bytes
            start = max(0, size - _position(last))
            end = size - 1
        if start >= size or end < start:
            source.close()
            return Answer(416, [("Content-Range", f"bytes */{size}"), ("Content-Type", "application/json")],
                          b'{"error": {"code": "invalid", "message": "the range is outside the file"}}')
        length, status = end - start + 1, 206
        headers.append(("Content-Range", f"bytes {start}-{end}/{size}"))
    headers.append(("Content-Length", str(length)))
    if method == "HEAD":
        source.close()
        return Answer(status, headers)
    return Answer(status, headers, source=source, span=(start, length))


def _position(digits: str) -> int:
    """A position a Range names (its digits, as many as sent), or one past any file when there are too many."""
    return int(digits) if len(digits) <= 18 else _PAST_ANY_FILE


def _check_upload(link: SignedLink, length: int | None) -> int:
    if length is None:
        raise InvalidError("send a Content-Length (not a chunked body): an upload link takes a body of its exact "
                           "size", field="body")
    if link.size is not None and length != link.size:
        raise LinkRefusedError(f"this link uploads exactly {link.size:,} bytes; the body is {length:,}")
    return length


def _uploaded(length: int) -> Answer:
    return Answer(200, [("Content-Type", "application/json")], json.dumps({"size_bytes": length}).encode())


def _answer(
    store: FileBlobStore | None, method: str, target: str, range_header: str | None, length: int | None,
    body: Readable,
) -> Answer:
    """A link request's answer: an upload of ``length`` bytes read from ``body`` (PUT), or a download."""
    try:
        found, link = _verify(store, method, target)
        if method == "PUT":
            size = _check_upload(link, length)
            found.put_stream(link.key, body, size)
            return _uploaded(size)
        return _download(found, link, method, range_header)
    except AgentmemError as error:
        return _error(error)


def serve_link(handler: BaseHTTPRequestHandler, store: FileBlobStore | None, length: int | None) -> None:
    """Answer one link request on the server's connection (GET, HEAD or PUT; any other method is a 405 with
    ``Allow``); ``length`` is the body's, from its ``Content-Length`` (the server has refused any other framing)."""
    answer = _answer(store, handler.command, handler.path, handler.headers.get("Range"), length, handler.rfile)
    if length and (handler.command != "PUT" or answer.status >= 400):
        handler.close_connection = True  # the body was not read (or not whole)
    _send(handler, answer)


def _send(handler: BaseHTTPRequestHandler, answer: Answer) -> None:
    handler.send_response(answer.status)
    for name, value in answer.headers:
        handler.send_header(name, value)
    if not any(name == "Content-Length" for name, _ in answer.headers):
        handler.send_header("Content-Length", str(len(answer.body)))
    if handler.close_connection:
        handler.send_header("Connection", "close")
    handler.end_headers()
    if answer.source is None:
        if handler.command != "HEAD":
            handler.wfile.write(answer.body)
        return
    with answer.source:
        handler.wfile.flush()
        offset, length = answer.span
        handler.connection.sendfile(answer.source, offset, length)


def serve_link_bytes(
    store: FileBlobStore | None, method: str, target: str, headers: dict[str, str], body: bytes | None
) -> tuple[int, dict[str, str], bytes]:
    """The same answer for a request held in memory (the SDK's in-process transport)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    answer = _answer(store, method, target, lowered.get("range"), len(body or b""), io.BytesIO(body or b""))
    payload = answer.body
    if answer.source is not None:
        with answer.source:
            answer.source.seek(answer.span[0])
            payload = answer.source.read(answer.span[1])
    return answer.status, dict(answer.headers), payload
