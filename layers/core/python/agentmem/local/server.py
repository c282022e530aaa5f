"""``agentmem serve``: an HTTP server that turns each request into an API Gateway REST
proxy event and calls the same ``lambda_handler`` that runs on AWS."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import threading
import time
import uuid
from email.utils import formatdate
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import unquote, urlsplit

from ..api.limits import oversized
from ..bootstrap import Container, build_adapters, build_container, ensure_default_account, set_container
from ..foreground import FOREGROUND
from ..settings import Settings
from .events import build_rest_event, decode_lambda_response
from .http_guard import (
    WHOLE,
    GuardedHTTPServer,
    HeaderLinesError,
    PacedReader,
    Refusal,
    RequestHeaders,
    Timeouts,
    WholeRequest,
    declared_length,
    is_method_name,
    linger,
    plain_request,
    protocol_error,
    read_headers,
)
from .links import is_link, serve_link
from .port_hold import hold_port
from .rate_limit import RateLimiter

if TYPE_CHECKING:
    from ..adapters.embedded.blobs import FileBlobStore
    from ..adapters.embedded.server_state import ServerState

# Requests larger than this are refused before their body is read; the handler refuses smaller
# ones past its own limit, so both answers are the same 413.
READ_LIMIT = 8 * 1024 * 1024
SERVED_METHODS = ("DELETE", "GET", "HEAD", "POST", "PUT")  # by some path of the API
SWEEP_EVERY_S = 60.0


class LocalContext:
    """The parts of a Lambda context the handler and Powertools read. The request id is made when first read
    (a log line, a trace): most requests read none."""

    function_name = "agentmem-local"
    function_version = "$LATEST"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:local:000000000000:function:agentmem-local"
    log_group_name = "local"
    log_stream_name = "local"

    __slots__ = ("_request_id",)

    def __init__(self, aws_request_id: str | None = None) -> None:
        self._request_id = aws_request_id

    @property
    def aws_request_id(self) -> str:
        if self._request_id is None:
            self._request_id = str(uuid.uuid4())
        return self._request_id

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


_FRAMING_HEADERS = ("content-length", "connection")  # the server's to write, not the handler's
_date: tuple[int, str] = (0, "")  # the Date header of the current second, made once a second


def _quiet_powertools() -> None:
    # Locally there is no CloudWatch to read metric logs or X-Ray to take traces.
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")


class ApiRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # answers always start with a status line, even to a request line refused before its version was read
    default_request_version = "HTTP/1.0"
    server_version = "agentmem"
    # Without TCP_NODELAY a kept-alive connection waits ~40 ms per response (Nagle's algorithm
    # against the client's delayed ACK).
    disable_nagle_algorithm = True
    # a buffered writer: headers and body leave together when the request is done
    wbufsize = 64 * 1024
    handler: Any = None  # set by make_server: the Lambda handler to call (it serves one event at a time)
    # set by make_server: the handler's refusal of a request whatever its body (api.app.answer_before_body),
    # asked before a body still on its way is read
    screen: Any = None
    container: Container | None = None  # set by make_server: whose workspace links this server serves
    max_body_bytes = 1_000_000  # set by make_server from the settings, for the message of a 413
    timeouts = Timeouts()  # set by make_server from the settings
    access_log = False  # set by make_server: AGENTMEM_ACCESS_LOG asks for a line per request on stderr
    # read by read_headers, not into an email message
    headers: RequestHeaders  # type: ignore[assignment]
    server: GuardedHTTPServer  # (socketserver declares the base class)
    raw_requestline: bytes
    _reader: PacedReader | WholeRequest
    _answered = False  # the current request has had its answer
    _unread: int | None = 0  # bytes of its body left unread: None for a length not known
    _expecting = False  # the client waits for 100 Continue before it sends the body

    # -- the connection: timeouts, errors of the HTTP layer, a lingering close (local/http_guard.py) ---------
    def setup(self) -> None:
        super().setup()
        self.rfile.close()
        pending, began_at = self.server.take_pending(self.connection)
        self._reader = PacedReader(self.connection, self.timeouts, pending=pending, began_at=began_at)
        self.rfile = io.BufferedReader(self._reader)

    # -- a request read whole by the connection loop (local/connection_loop.py) --------------------------------
    @classmethod
    def serves_buffered(cls, target: str) -> bool:
        """Whether a request for ``target``, read whole, is answered in the loop: all but a link's, which streams."""
        return not is_link(_split_target(target)[0])

    @classmethod
    def answer_buffered(cls, server: GuardedHTTPServer, connection: socket.socket, client_address: Any,
                        request: bytes) -> tuple[bytes, bool]:
        """The answer to one request read whole (its bytes as sent), and whether the connection closes after it:
        the same reading and answering as on a connection's thread, from and into memory."""
        handler = cls.__new__(cls)
        handler.request = handler.connection = connection
        handler.client_address, handler.server = client_address, server
        handler.rfile, handler.wfile = io.BytesIO(request), io.BytesIO()
        handler._reader = WHOLE
        handler.close_connection = True
        if not handler._read_plain(request):
            handler.handle_one_request()
        return handler.wfile.getvalue(), handler.close_connection

    def _read_plain(self, request: bytes) -> bool:
        """Read and answer a request read whole whose request line and headers are plain (``plain_request``),
        in one pass: what ``handle_one_request`` and ``parse_request`` make of it, without their line-by-line
        reading. False, nothing read, for any other request."""
        head_end = request.find(b"\r\n\r\n")
        parsed = plain_request(request, head_end) if head_end >= 0 else None
        if parsed is None:
            return False
        (command, path, version), pairs = parsed
        self.raw_requestline = request[:request.find(b"\r\n") + 2]
        self.requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")  # as sent, for the access log
        self.command, self.request_version = command, version
        self.path = "/" + path.lstrip("/") if path.startswith("//") else path  # as parse_request (gh-87389)
        self.headers = headers = RequestHeaders(pairs)
        self._answered, self._unread = False, 0
        refused = headers.repeated()
        if refused is not None:
            self._error(refused.status, refused.code, refused.message, **refused.details)
            return True
        connection = (headers.get("Connection") or "").lower()
        self.close_connection = connection == "close" or (version == "HTTP/1.0" and connection != "keep-alive")
        self.rfile.seek(head_end + 4)
        getattr(self, "do_" + command)()
        return True

    def handle(self) -> None:
        self.close_connection = True
        while True:
            self.handle_one_request()
            if self.close_connection:
                return

    def handle_one_request(self) -> None:
        self._reader.await_request()
        self._answered, self._unread, self._expecting = False, 0, False
        super().handle_one_request()  # a read past its deadline ends here, the connection to be closed
        timed_out = self._reader.timed_out
        if timed_out not in (None, "idle") and not self._answered:
            self._unread = 0
            self._error(408, "request_timeout", f"{timed_out}; the connection is closed")

    def parse_request(self) -> bool:
        """``http.server``'s reading of the request line (its checks and answers, as they are), then the headers
        read once by ``read_headers`` instead of through an email parser."""
        self.command = None  # type: ignore[assignment]  # set in case of an error on the first line
        self.request_version = version = self.default_request_version
        self.close_connection = True
        requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        self.requestline = requestline
        words = requestline.split()
        if not words:
            return False
        if len(words) >= 3:  # enough to know the protocol's version
            version = words[-1]
            number = version[5:].split(".") if version.startswith("HTTP/") else []
            if len(number) != 2 or not all(part.isascii() and part.isdigit() and len(part) <= 10 for part in number):
                self.send_error(HTTPStatus.BAD_REQUEST, f"Bad request version ({version!r})")
                return False
            major, minor = int(number[0]), int(number[1])
            if (major, minor) >= (1, 1):
                self.close_connection = False
            if major >= 2:
                self.send_error(HTTPStatus.HTTP_VERSION_NOT_SUPPORTED, f"Invalid HTTP version ({version[5:]})")
                return False
            self.request_version = version
        if not 2 <= len(words) <= 3:
            self.send_error(HTTPStatus.BAD_REQUEST, f"Bad request syntax ({requestline!r})")
            return False
        command, path = words[:2]
        if len(words) == 2:
            self.close_connection = True
            if command != "GET":
                self.send_error(HTTPStatus.BAD_REQUEST, f"Bad HTTP/0.9 request type ({command!r})")
                return False
        self.command, self.path = command, path
        if path.startswith("//"):  # gh-87389: never an absolute URI without a scheme
            self.path = "/" + path.lstrip("/")
        try:
            self.headers = read_headers(self.rfile)
        except HeaderLinesError as error:
            self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, str(error))
            return False
        except Refusal as refusal:
            self._unread = None
            self._error(refusal.status, refusal.code, refusal.message, **refusal.details)
            return False
        connection = (self.headers.get("Connection") or "").lower()
        if connection == "close":
            self.close_connection = True
        elif connection == "keep-alive":
            self.close_connection = False
        expect = self.headers.get("Expect") or ""
        if expect.lower() == "100-continue" and self.request_version >= "HTTP/1.1":
            return self.handle_expect_100()
        return True

    def date_time_string(self, timestamp: float | None = None) -> str:
        global _date
        if timestamp is not None:
            return super().date_time_string(timestamp)
        now = int(time.time())
        if _date[0] != now:
            _date = (now, formatdate(now, usegmt=True))
        return _date[1]

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        refusal = protocol_error(int(code), message)
        self._unread = None  # what the client still sends (the rest of a huge header) is read and dropped
        self._error(refusal.status, refusal.code, refusal.message, **refusal.details)

    def handle_expect_100(self) -> bool:
        # the body is asked for once the request is known to be served whatever it holds (_continue): one
        # refused unread is not asked for, the client gets the final answer instead
        self._expecting = True
        return True

    def _continue(self) -> None:
        """Ask for the body, if the client waits to be asked."""
        if self._expecting:
            self._expecting = False
            self.send_response_only(100)
            self.end_headers()
            self.wfile.flush()

    def finish(self) -> None:
        try:
            if self.close_connection and self._unread != 0:
                self.wfile.flush()
                linger(self.connection, cast(PacedReader, self._reader), self._unread)
        except OSError:
            pass
        super().finish()

    if not TYPE_CHECKING:  # (type checkers would take every attribute of the class for this)
        def __getattr__(self, name: str) -> Any:
            # every method reaches the API, which answers 405 with Allow for those a path does not serve
            if name.startswith("do_"):
                return self._answer
            raise AttributeError(name)

    def log_message(self, format: str, *args: Any) -> None:
        if self.access_log:
            super().log_message(format, *args)

    def _reply(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        """Write the answer: what ``send_response``, ``send_header`` and ``end_headers`` write, made in one go."""
        self._answered = True
        if self.access_log:
            self.log_request(status)
        phrase = self.responses[status][0] if status in self.responses else ""  # as send_response_only reads it
        lines = [f"{self.protocol_version} {status} {phrase}\r\nServer: {_SERVER}\r\n"
                 f"Date: {self.date_time_string()}\r\n"]
        lines += [f"{key}: {value}\r\n" for key, value in headers if key.lower() not in _FRAMING_HEADERS]
        lines.append(f"Content-Length: {len(body)}\r\n")
        if self.server.closing:  # a stopping server: the client's next request goes elsewhere
            self.close_connection = True
        if self.close_connection:
            lines.append("Connection: close\r\n")
        lines.append("\r\n")
        head = "".join(lines).encode("latin-1", "strict")
        self.wfile.write(head if self.command == "HEAD" else head + body)

    def _error(self, status: int, code: str, message: str, **details: Any) -> None:
        body = json.dumps({"error": {"code": code, "message": message, **details}}).encode()
        self.close_connection = True
        headers = [("Content-Type", "application/json")]
        if status == 405:
            headers.append(("Allow", ", ".join(details.get("allowed", SERVED_METHODS))))
        self._reply(status, headers, body)

    def _handle(self) -> None:
        try:
            declared = self._framing()
        except Refusal as refusal:
            self._error(refusal.status, refusal.code, refusal.message, **refusal.details)
            return
        path, query = _split_target(self.path)
        if is_link(path):  # (any method: one a link does not take is its 405, with Allow)
            container = type(self).container
            if declared:
                self._continue()  # (an upload link takes up to 100 MB, streamed to disk)
                self._reader.await_body(declared)
            serve_link(self, None if container is None else link_store(container), declared)
            return
        length = declared or 0
        if length > READ_LIMIT:
            refused = oversized(self.command, unquote(path), length, type(self).max_body_bytes)
            if refused is None:
                self._error(413, "too_large", f"the request body is {length:,} bytes; too large", limit=READ_LIMIT)
            else:  # the same 413 the handler gives a smaller body over its limit, details and all
                self._error(413, "too_large", refused.message, **refused.details)
            return
        # HEAD is a GET whose body is left out (as API Gateway answers it)
        method = "GET" if self.command == "HEAD" else self.command
        body = None
        if length:
            if self._reader is not WHOLE and self._refused_unread(method, path, query, length):
                return
            self._reader.await_body(length)
            body = self.rfile.read(length)
        self._unread = 0
        event = build_rest_event(method, path, query, self.headers.as_dict(), body,
                                 source_ip=self.client_address[0], copy_headers=False)
        with FOREGROUND.serving():  # background work in this process gives way meanwhile (foreground.py)
            result = type(self).handler(event, LocalContext())
        status, headers, payload = decode_lambda_response(result)
        self._reply(status, headers, payload)

    def _refused_unread(self, method: str, path: str, query: str, length: int) -> bool:
        """Before reading a body still on its way: answer the handler's refusal of the request whatever the body
        (``screen``: a 401 for its key, a 404 or 405 for its route, a 413 for its size) and close, or ask for
        the body if the client waits to be asked. Whether it was refused."""
        screen = type(self).screen
        if screen is not None:
            event = build_rest_event(method, path, query, self.headers.as_dict(), None,
                                     source_ip=self.client_address[0])
            refusal = screen(event, length, LocalContext())
            if refusal is not None:
                status, headers, payload = decode_lambda_response(refusal)
                self.close_connection = True  # what comes of the body is read and dropped, briefly (finish)
                self._reply(status, headers, payload)
                return True
        self._continue()
        return False

    def _answer(self) -> None:
        with self.server.answering():
            self._handle()

    do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _answer

    def _framing(self) -> int | None:
        """The request's method, target and body length, or the ``Refusal`` of what cannot be served."""
        self._unread = None  # until the length is known, what follows the headers is not
        if not is_method_name(self.command):
            raise Refusal(400, "invalid", f"{self.command!r} is not an HTTP method name")
        if not self.path.startswith("/") and "://" not in self.path:  # CONNECT host:port, OPTIONS *
            raise Refusal(405, "method_not_allowed", f"{self.command} {self.path} is not served: this server is "
                          "not a proxy; send requests for /v1/... paths", allowed=list(SERVED_METHODS))
        declared = declared_length(self.headers)
        self._unread = declared or 0
        return declared


_SERVER = ApiRequestHandler.server_version + " " + ApiRequestHandler.sys_version  # version_string(), once


def _split_target(target: str) -> tuple[str, str]:
    """The request target's path and query, as ``urlsplit`` reads them (its fragment dropped); an origin-form
    target, which is every request but a proxy's, without it."""
    if target.startswith("/") and "#" not in target:
        path, _, query = target.partition("?")
        return path, query
    url = urlsplit(target)
    return url.path, url.query


def make_server(container: Container, host: str = "127.0.0.1", port: int = 8787, *,
                listener: socket.socket | None = None, shared: ServerState | None = None) -> GuardedHTTPServer:
    """A server bound to host:port (port 0 picks a free one) serving this container, with the settings'
    timeouts, connection cap and rate limits. A worker of several (local/workers.py) serves its own
    ``listener``, with the rate limits' buckets and the job runs in the file the workers share (``shared``)."""
    _quiet_powertools()
    settings = container.settings
    container.shared = shared
    container.rate_limiter = RateLimiter.from_settings(settings, shared=shared)
    set_container(container)
    from ..api.app import answer_before_body, lambda_handler

    handler_class = type(
        "BoundApiRequestHandler",
        (ApiRequestHandler,),
        {"handler": staticmethod(lambda_handler), "max_body_bytes": settings.max_body_bytes,
         "screen": staticmethod(answer_before_body), "container": container,
         "timeouts": Timeouts.from_settings(settings), "access_log": bool(os.environ.get("AGENTMEM_ACCESS_LOG"))},
    )
    server = GuardedHTTPServer((host, port), handler_class, settings.serve_max_connections, listener,
                               max_per_source=settings.serve_max_connections_per_source)
    if not container.settings.public_url:
        bound = str(server.server_address[0])
        shown = "127.0.0.1" if bound in ("0.0.0.0", "::", "") else bound
        _link_address(container, f"http://{shown}:{server.server_address[1]}")
    return server


def _link_address(container: Container, address: str) -> None:
    """Links start with the address this server listens on. The blob stores are built on first use, from
    the settings; a store built already (a test's container) is told directly."""
    container.settings = container.settings.model_copy(update={"public_url": address})
    if container.adapters is not None:
        store = link_store(container)
        if store is not None and store.links is not None:
            store.links.base_url = address


def link_store(container: Container) -> FileBlobStore | None:
    """The embedded workspace store, whose signed links this server serves (None on the AWS backend)."""
    from ..adapters.embedded.blobs import FileBlobStore

    if container.settings.backend != "embedded":
        return None
    store = container.require_adapters().workspaces
    return store if isinstance(store, FileBlobStore) else None


def _announce_key(settings: Settings, secret: str | None) -> None:
    key_file = Path(settings.data_dir) / "dev-key"
    if settings.api_key:
        print("Using AGENTMEM_API_KEY as the default account's key.")
    elif secret:
        key_file.write_text(secret + "\n")
        key_file.chmod(0o600)
        print(f"Created account 'default'. Its API key (shown once, also written to {key_file}):")
        print(f"  {secret}")
    elif key_file.exists():
        print(f"API key of the 'default' account: {key_file}")


def _embedded_index(container: Container) -> Any:
    """The embedded backend's semantic index (``SqliteVectorIndex``), when there is one."""
    if container.settings.backend != "embedded" or container.search_index is None:
        return None  # no semantic index (none chosen, or an install without the embedded extra): nothing to import
    from ..adapters.embedded.vector_index import SqliteVectorIndex

    index = container.search_index
    return index if isinstance(index, SqliteVectorIndex) else None


def _start_indexer(container: Container) -> Any:
    """The embedded backend's semantic indexer (a thread that embeds what the store queues), when there is one."""
    index = _embedded_index(container)
    if index is None:
        return None
    from ..adapters.embedded.vector_index import IndexWorker

    worker = IndexWorker(index)
    worker.start()
    return worker


def _beside_the_indexer(container: Container) -> Any:
    """A worker without the indexer (``--workers N``, all but the first): a thread that follows the first worker's
    indexer (``IndexWorker(follow=True)``): it loads the saved graphs as the worker starts, so its first searches
    do not wait for them (seconds for millions of vectors) past their deadline, then brings them up to date as the
    indexer writes. Its searches leave the backlog to that indexer, as the first worker's own do."""
    index = _embedded_index(container)
    if index is None:
        return None
    from ..adapters.embedded.vector_index import IndexWorker

    follower = IndexWorker(index, follow=True)
    follower.start()
    return follower


def serve(settings: Settings, host: str = "127.0.0.1", port: int = 8787, *, create_resources: bool = False,
          workers: int = 1) -> None:
    """Run until interrupted; sweeps the trash and expired entries every minute.

    ``create_resources`` (AWS backend against emulators): make the table and buckets if missing. ``workers``
    above 1: that many processes on the port (local/workers.py); 1 serves in this process.
    """
    if workers > 1:
        from .workers import serve_workers

        serve_workers(settings, host, port, workers, create_resources=create_resources)
        return
    hold = hold_port(port, host, settings.data_dir) if port else None  # before binding: see port_hold.py
    try:
        Path(settings.data_dir).mkdir(parents=True, exist_ok=True)
        container = build_container(settings, create_resources=create_resources)
        if create_resources:
            container.adapters = build_adapters(settings, create_resources=True)
        server = make_server(container, host, port)  # bind first: a port in use leaves the data dir as it was
        if hold is None:  # (port 0: the port picked)
            hold = hold_port(int(server.server_address[1]), host, settings.data_dir)
        secret = ensure_default_account(container)
        _announce_key(settings, secret)
        announce(settings, host, int(server.server_address[1]))
        try:
            serve_until_stopped(container, server)
        finally:
            print("agentmem stopped.", flush=True)
    finally:
        if hold is not None:
            hold.release()


def announce(settings: Settings, host: str, port: int) -> None:
    print(f"agentmem {settings.backend} backend, data in {Path(settings.data_dir).resolve()}")
    print(f"Listening on http://{host}:{port}  (API docs: http://{host}:{port}/v1/docs)")
    print(f"  export AGENTMEM_URL=http://{host}:{port}", flush=True)


def serve_until_stopped(container: Container, server: GuardedHTTPServer, *, background: bool = True,
                        drain_s: float = 0.0, flush_every_s: float | None = None) -> None:
    """Serve until SIGTERM (or Ctrl-C); with ``background``, also run the sweep and the semantic indexer; with
    ``flush_every_s``, write the buffered usage counts that often (a worker's, for a usage read in another).
    Then stop them, wait up to ``drain_s`` for the requests being answered, and write the buffered usage counts."""
    stop = threading.Event()

    def sweep() -> None:
        while not stop.wait(SWEEP_EVERY_S):
            container.sweep()

    def flush() -> None:
        while flush_every_s is not None and not stop.wait(flush_every_s):
            container.usage.flush()

    if background:
        threading.Thread(target=sweep, name="agentmem-sweep", daemon=True).start()
        indexer = _start_indexer(container)
    else:
        indexer = _beside_the_indexer(container)
    if flush_every_s is not None:
        threading.Thread(target=flush, name="agentmem-usage", daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        if indexer is not None:
            indexer.stop()
        if drain_s:
            server.closing = True
            server.wait_idle(drain_s)
        container.usage.flush()
        server.server_close()
