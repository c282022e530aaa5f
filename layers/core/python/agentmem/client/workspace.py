"""``Workspace``: the files of one conversation, the folder its agent sees as ``/workspace`` (SPEC §8).

    support = Agent.from_name("support")
    workspace = support.workspace("ticket-7", user="user_42")
    workspace.write("notes/plan.md", "# Plan\\n")               # a str is stored as UTF-8
    workspace.upload("data/export.csv", "/tmp/export.csv")      # streamed from disk, up to 100 MB
    for file in workspace.files(prefix="notes/"):
        print(file.path, file.size_bytes, file.modified_at)
    link = workspace.url("notes/plan.md", expires_in_s=600)    # works without a key for 10 minutes

Building a handle sends nothing. Files up to ``Workspace.direct_write_max`` (4 MiB) are written through the
API; larger ones go straight to storage through an upload link, and a file the API sends on to a download
link (one over 4 MiB) is fetched from there, without the caller doing anything different. Links work without
a key and are sent without one: a relative link (the in-process transport's) through the client's transport,
an absolute one (S3, ``agentmem serve``) over HTTP with ``requests``.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, BinaryIO, ClassVar
from urllib.parse import parse_qsl, urlsplit

from .client import USER_AGENT
from .errors import Invalid, NotFound, TooLarge, Unreachable, error_from_response
from .models import UploadLink, WorkspaceFile
from .rules import Call, Op, json_op
from .transport import TransportResponse, segment

if TYPE_CHECKING:
    import requests

    from .agent import Agent, AgentRequests
    from .client import Client
    from .conversation import Conversation
    from .rules import ParamValue

MIB = 1024 * 1024
DEFAULT_LINK_EXPIRES_S = 3600
_REDIRECTS = (301, 302, 303, 307, 308)

Progress = Callable[[int], None]
"""Called with the number of bytes just transferred (an increment, as ``click.progressbar.update`` takes)."""
LocalFile = str | os.PathLike[str] | BinaryIO
WorkspaceFileList = list[WorkspaceFile]


class WorkspaceRequests:
    """What a workspace handle asks and what the answers mean, for ``Workspace`` and ``AsyncWorkspace``."""

    agent: AgentRequests
    key: str
    user: str | None
    direct_write_max: ClassVar[int] = 4 * MIB  # files up to this size are written through the API
    chunk_bytes: ClassVar[int] = 1 * MIB  # what a streamed transfer reads or writes at a time

    def _put_op(self, path: str, data: bytes) -> Op[WorkspaceFile]:
        """``PUT .../workspace/files/{path}`` with the raw bytes as the body."""

        def parse(response: TransportResponse) -> WorkspaceFile:
            answer = response.json()
            return WorkspaceFile.from_dict(answer if isinstance(answer, dict) else {"path": path,
                                                                                    "size_bytes": len(data)})

        return Op(Call("PUT", self._file_path(path), self._scope(), content=data), parse)

    def _get_call(self, path: str) -> Call:
        return Call("GET", self._file_path(path), self._scope(), headers={"Accept": "*/*"})

    def _delete_op(self, path: str) -> Op[None]:
        return Op(Call("DELETE", self._file_path(path), self._scope()), lambda response: None)

    def _files_params(self, prefix: str | None, expires_in_s: int | None) -> dict[str, ParamValue]:
        return {**self._scope(), "prefix": prefix or None, "expires_in_s": expires_in_s}

    def _link_op(self, body: dict[str, Any]) -> Op[dict[str, Any]]:
        return json_op(Call("POST", self._path("links"), self._scope(), body), dict)

    # --- helpers --------------------------------------------------------------------------

    def _path(self, *rest: str) -> str:
        return self.agent._path("conversations", segment(self.key), "workspace", *rest)

    def _file_path(self, path: str) -> str:
        if not isinstance(path, str) or not path:
            raise Invalid("path is required: a file's path in the workspace, like 'reports/q3.csv'", 400, "invalid",
                          {"field": "path"})
        return self._path("files", "/".join(_segment(part) for part in path.split("/")))

    def _scope(self) -> dict[str, ParamValue]:
        return {"user": self.user}


class Workspace(WorkspaceRequests):
    """A handle on the workspace of the conversation ``key`` of ``agent`` with ``user`` (``None``: the
    account itself). Make one with ``agent.workspace(key, user=...)``.

    Paths are relative and ``/``-separated (``reports/q3.csv``); the service refuses others with
    ``Invalid`` (400, ``field="path"``). A missing file is ``NotFound``; a file over 100 MB ``TooLarge``.
    """

    agent: Agent

    def __init__(self, agent: Agent, key: str, *, user: str | None = None) -> None:
        self.agent = agent
        self.key = key
        self.user = user

    def __repr__(self) -> str:
        scope = f", user={self.user!r}" if self.user is not None else ""
        return f"Workspace({self.agent.name!r}, {self.key!r}{scope})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Workspace) and (other.agent, other.key, other.user) == (
            self.agent, self.key, self.user)

    def __hash__(self) -> int:
        return hash(("workspace", self.agent, self.key, self.user))

    @property
    def client(self) -> Client:
        return self.agent.client

    @property
    def conversation(self) -> Conversation:
        """The conversation this workspace belongs to (no request is sent)."""
        return self.agent.conversation(self.key, user=self.user)

    # --- writing --------------------------------------------------------------------------

    def write(self, path: str, data: bytes | str) -> WorkspaceFile:
        """Store ``data`` (a ``str`` is encoded as UTF-8) at ``path``, replacing any file there.

        Up to ``direct_write_max`` bytes it is one request to the API; larger files (up to 100 MB) go
        through an upload link. Returns the stored file's description.
        """
        payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        return self._store(path, payload, len(payload))

    def upload(self, path: str, source: LocalFile, *, progress: Progress | None = None) -> WorkspaceFile:
        """Store a local file at ``path``: ``source`` is a file name or a binary file object (read from
        its current position to its end).

        A file larger than ``direct_write_max`` is streamed to storage through an upload link, never
        held in memory whole (but for a relative link: the in-process transport takes a body whole); a
        smaller one is written through the API. ``progress`` is called with
        each number of bytes sent. A file object that cannot seek (a pipe) is first spooled to a
        temporary file, to learn its size.
        """
        with _opened(source, spool_in_memory=self.direct_write_max) as (file, size):
            body = _Counting(file, size, progress)
            return self._store(path, body.read() if size <= self.direct_write_max else body, size)

    def upload_url(self, path: str, size_bytes: int, expires_in_s: int = DEFAULT_LINK_EXPIRES_S) -> UploadLink:
        """A link to upload ``size_bytes`` bytes to ``path`` without a key: an HTTP PUT of exactly that
        many bytes to ``link.url`` with ``link.headers``, within ``expires_in_s`` seconds (at most a day)."""
        body = {"path": path, "method": "PUT", "size_bytes": size_bytes, "expires_in_s": expires_in_s}
        return UploadLink.from_dict(self.client.request_json("POST", self._path("links"), params=self._scope(),
                                                             body=body))

    # --- reading --------------------------------------------------------------------------

    def read(self, path: str) -> bytes:
        """The bytes of the file at ``path`` (a large one is fetched through its download link)."""
        sink = io.BytesIO()
        self._fetch(path, sink.write)
        return sink.getvalue()

    def download(self, path: str, dest: LocalFile, *, progress: Progress | None = None) -> int:
        """Save the file at ``path`` to ``dest`` (a file name, or a binary file object written at its
        current position), streamed in chunks; returns the number of bytes written. ``progress`` is
        called with each number of bytes received.

        A file name is written whole or not at all: the bytes go to ``<dest>.part`` first, which then
        replaces ``dest``.
        """
        def sink_to(file: IO[bytes]) -> Callable[[bytes], None]:
            def write(chunk: bytes) -> None:
                file.write(chunk)
                if progress is not None and chunk:
                    progress(len(chunk))
            return write

        if not isinstance(dest, (str, os.PathLike)):
            return self._fetch(path, sink_to(dest))
        target = Path(dest)
        partial = target.with_name(target.name + ".part")
        try:
            with open(partial, "wb") as file:
                size = self._fetch(path, sink_to(file))
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
        return size

    def iter_files(self, prefix: str | None = None, *, expires_in_s: int | None = None) -> Iterator[WorkspaceFile]:
        """The workspace's files whose path starts with ``prefix`` (all without one), in path order, page
        by page as needed; each ``url`` a fresh download link valid ``expires_in_s`` seconds (default 1 hour)."""
        params = self._files_params(prefix, expires_in_s)
        return self.client.iterate(self._path("files"), WorkspaceFile.from_dict, params)

    def files(self, prefix: str | None = None, *, expires_in_s: int | None = None) -> WorkspaceFileList:
        """Every file of the workspace whose path starts with ``prefix`` (see ``iter_files``)."""
        return [*self.iter_files(prefix, expires_in_s=expires_in_s)]

    def info(self, path: str) -> WorkspaceFile:
        """The description of the file at ``path`` (``NotFound`` when there is none)."""
        for found in self.iter_files(path):
            if found.path == path:
                return found
        raise NotFound(f"no file {path!r} in the workspace of conversation {self.key!r}", 404, "not_found",
                       {"path": path})

    def url(self, path: str, expires_in_s: int = DEFAULT_LINK_EXPIRES_S) -> str:
        """A download link for the file at ``path`` that works without a key for ``expires_in_s`` seconds
        (default 1 hour, at most 86,400: a day). ``NotFound`` when there is no such file."""
        body = {"path": path, "method": "GET", "expires_in_s": expires_in_s}
        data = self.client.request_json("POST", self._path("links"), params=self._scope(), body=body)
        return str(data.get("url", ""))

    # --- removing -------------------------------------------------------------------------

    def delete(self, path: str) -> None:
        """Delete the file at ``path`` (``NotFound`` when there is none)."""
        self.client.run(self._delete_op(path))

    # --- transfers ------------------------------------------------------------------------

    def _store(self, path: str, body: bytes | _Counting, size: int) -> WorkspaceFile:
        """Write ``size`` bytes at ``path``: through the API when ``body`` is bytes of at most
        ``direct_write_max`` (or through a link if the API finds them too large), else through a link."""
        if isinstance(body, bytes) and size <= self.direct_write_max:
            try:
                return self._put(path, body)
            except TooLarge:  # a gateway with a smaller limit than ours: the link takes any size
                pass
        link = self.upload_url(path, size)
        self._link("PUT", link.url, headers=link.headers, body=body)
        try:
            return self.info(path)
        except NotFound:  # stored, but not listed yet
            return WorkspaceFile(path, size)

    def _put(self, path: str, data: bytes) -> WorkspaceFile:
        """``PUT .../workspace/files/{path}`` with the raw bytes as the body."""
        return self.client.run(self._put_op(path, data))

    def _fetch(self, path: str, write: Callable[[bytes], Any]) -> int:
        """Hand the file's bytes to ``write`` (a large file's chunk by chunk); the number of bytes."""
        response = self.client.send(self._get_call(path))
        location = response.headers.get("location")
        if response.status in _REDIRECTS and location:
            return self._download_link(location, write)
        write(response.body)
        return len(response.body)

    def _download_link(self, url: str, write: Callable[[bytes], Any]) -> int:
        if _is_relative(url):
            body = self._link("GET", url).body
            write(body)
            return len(body)
        import requests

        size = 0
        try:
            with _http("GET", url, headers={"User-Agent": USER_AGENT}, timeout=self.client.timeout,
                       stream=True) as response:
                if response.status_code >= 400:
                    raise _link_error(response)
                for chunk in response.iter_content(self.chunk_bytes):
                    write(chunk)
                    size += len(chunk)
        except requests.RequestException as exc:
            raise _unreachable(url, exc) from exc
        return size

    def _link(
        self, method: str, url: str, *, headers: dict[str, str] | None = None, body: bytes | _Counting | None = None
    ) -> TransportResponse:
        """One request to a link, without a key; raises the typed error of an error answer."""
        sent = {"User-Agent": USER_AGENT, **(headers or {})}
        if _is_relative(url):
            parts = urlsplit(url)
            query = dict(parse_qsl(parts.query, keep_blank_values=True))
            data = body.read() if isinstance(body, _Counting) else body
            response = self.client.transport.request(method, parts.path, params=query or None, headers=sent,
                                                     body=data)
            if response.status >= 400:
                raise error_from_response(response.status, response.headers, response.body)
            return response
        import requests

        try:
            with _http(method, url, headers=sent, timeout=self.client.timeout, body=body) as answer:
                if answer.status_code >= 400:
                    raise _link_error(answer)
                return TransportResponse(answer.status_code, {k.lower(): v for k, v in answer.headers.items()},
                                         answer.content)
        except requests.RequestException as exc:
            raise _unreachable(url, exc) from exc



def _segment(part: str) -> str:
    """One segment of a file's path in a URL; ``.`` and ``..`` encoded, so they reach the service
    (which refuses them) instead of being resolved away by an HTTP client."""
    return "%2E" * len(part) if part in (".", "..") else segment(part)


def _is_relative(url: str) -> bool:
    return not urlsplit(url).scheme


def _no_auth(request: requests.PreparedRequest) -> requests.PreparedRequest:
    """No Authorization header on a link (not even one from ~/.netrc: it would break a presigned URL)."""
    return request


def _http(
    method: str, url: str, *, headers: dict[str, str], timeout: float, body: bytes | _Counting | None = None,
    stream: bool = False,
) -> requests.Response:
    import requests

    data: Any = body if body else None  # requests sends a zero-length body as Content-Length: 0
    return requests.request(method, url, headers=headers, data=data, timeout=timeout, stream=stream,
                            allow_redirects=False, auth=_no_auth)


def _link_error(response: requests.Response) -> Exception:
    return error_from_response(response.status_code, {k.lower(): v for k, v in response.headers.items()},
                               response.content)


def _unreachable(url: str, exc: Exception) -> Unreachable:
    parts = urlsplit(url)  # the host only: the query holds the link's signature
    import requests

    return Unreachable(f"{parts.scheme}://{parts.netloc}", str(exc) or type(exc).__name__,
                       timed_out=isinstance(exc, requests.Timeout))


class _Counting:
    """``size`` bytes of a file object read as an HTTP body (never more), each chunk reported to ``progress``.

    ``len()`` is the size, so ``requests`` sends a Content-Length (storage refuses chunked uploads).
    """

    def __init__(self, file: IO[bytes], size: int, progress: Progress | None) -> None:
        self._file = file
        self._size = size
        self._left = size
        self._progress = progress

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return True

    def read(self, amount: int | None = -1) -> bytes:
        if self._left <= 0:
            return b""
        wanted = self._left if amount is None or amount < 0 else min(amount, self._left)
        chunk = self._file.read(wanted)
        self._left -= len(chunk)
        if chunk and self._progress is not None:
            self._progress(len(chunk))
        return chunk


@contextlib.contextmanager
def _opened(source: LocalFile, *, spool_in_memory: int) -> Iterator[tuple[IO[bytes], int]]:
    """The file to upload and the number of bytes to send from it."""
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as file:
            yield file, os.fstat(file.fileno()).st_size
        return
    seekable = getattr(source, "seekable", None)
    if callable(seekable) and seekable():
        start = source.tell()
        end = source.seek(0, io.SEEK_END)
        source.seek(start)
        yield source, max(0, end - start)
        return
    with tempfile.SpooledTemporaryFile(max_size=spool_in_memory) as spool:
        shutil.copyfileobj(source, spool)
        size = spool.tell()
        spool.seek(0)
        yield spool, size
