"""HTTP: requests/s, p50/p99 and server CPU per request of ``agentmem serve`` against a bare ``http.server``.

    .venv/bin/python bench/http_speed.py            # 1, 4, 16 and 64 client threads, 5 s each (about 10 minutes)
    .venv/bin/python bench/http_speed.py --quick    # 1 and 16 threads, 2 s each; docs untouched (about a minute)
    .venv/bin/python bench/http_speed.py --quick --operations read   # entry reads only (the CPU target's)
    .venv/bin/python bench/http_speed.py --turns ../old-tree          # entry reads, this tree and another in turns

The servers, each in a process of its own; the clients are threads of this process, each with its own
kept-alive connection (``http.client``, so the client's own cost stays small):

* ``bare http.server``: a ``ThreadingHTTPServer`` whose handler answers every GET with one fixed JSON body
  the size of an entry read (``bench/http_speed.py --baseline-server PORT`` runs it): the floor of Python's HTTP
  stack on this machine;
* ``agentmem serve``, one worker; and one worker per core when ``agentmem serve --help`` offers
  ``--workers`` (when it does not, only one worker is measured, and the output says so);
* where entry reads are measured, two servers that show what a read's parts cost: ``agentmem serve`` (one
  worker) whose handler answers an entry read with the bare server's fixed body straight from the event (the
  HTTP layer and the event's translation alone), and one whose handler only looks the key up and calls the
  service, answering the entry as the route does (no resolver, validation, rate limits, usage or metrics).
  They run as ``bench/http_speed.py --layer-server http|service serve ...``, every other request (the setup's
  writes) going to the real handler.

Operations on agentmem, in a memory of 100 entries and a conversation of 120 messages: read an entry, save
one (an update of one of the thread's own four names), search the memory, build the conversation's context,
search the journal. The bare server answers its fixed read. For each server, operation and number of
threads: requests/s, p50 and p99 of the client's wall time per request, and the server's CPU time per
request (utime + stime from ``/proc/<pid>/stat`` of the server's process and every process under it,
before and after, over the requests answered), once the server is idle after the data was written (its indexing for
recall done). The rate limits stay on, raised past what the run sends.
First, in this process: ``lambda_handler``'s own CPU time per entry read (what the server adds on top is the
HTTP parsing and the event's translation).

``--turns TREE`` compares this tree with another checkout (``git worktree add`` or ``git archive`` of another
commit; its ``layers/core/python`` goes first on ``PYTHONPATH`` for its servers, with this environment's
packages): the bare server and both trees' ``agentmem serve`` (one worker and one per core) run side by side,
and each round measures entry reads on every one of them in turn (``--rounds``, 8 by default), so a shared
machine's changing load falls on both trees alike. It prints each server's median CPU per read (and range)
and its ratio to the bare server's median, and writes ``bench/results/http-turns.json``.

Prints the tables and the targets (server CPU per entry read ≤ 3× the bare server's per request), writes
``bench/results/http.json``, the plot ``docs/img/http.png`` and the generated block of
``docs/benchmarks.md`` (``--quick``: ``bench/results/http-quick.json`` and ``.png``, the docs untouched). A
phase that fails is reported and the rest still runs; nothing is asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote, urlsplit

from load import AGENTMEM, percentile, started
from report import Check, print_targets, replace_block, targets_markdown

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from serving import free_port  # noqa: E402

RESULTS = ROOT / "bench" / "results"
PLOT = ROOT / "docs" / "img" / "http.png"
DOCS = ROOT / "docs" / "benchmarks.md"
DOCS_BEGIN = "<!-- bench/http_speed.py --markdown: begin -->"
DOCS_END = "<!-- bench/http_speed.py --markdown: end -->"

THREADS = (1, 4, 16, 64)
QUICK_THREADS = (1, 16)
OPERATIONS = ("read", "save", "search", "context", "journal search")
ENTRIES = 100
MESSAGES = 120
NAMES_PER_THREAD = 4  # 64 threads × 4 names + 100 entries stay under a layer's 500
CPU_RATIO_TARGET = 3.0
WORDS = ("refund", "invoice", "plan", "team", "billing", "yearly", "seat", "upgrade", "support", "order",
         "shipping", "discount", "contract", "renewal", "trial")
AGENT = "bench"
MEMORY = quote(f"agent:{AGENT}", safe="")
CONVERSATION = "c1"
# what the bare server answers: about an entry read's body
FIXED_BODY = json.dumps({
    "name": "e042", "version": 1, "description": "note about the refund plan", "category": "note",
    "importance": 0.5, "visibility": "shared", "user": None, "created_at": "2026-12-02T01:00:00Z",
    "updated_at": "2026-12-02T01:00:00Z", "expires_at": None,
    "content": "The customer asked about the yearly plan; the refund is on its way and the invoice follows. " * 3,
}).encode()
# agentmem serve with part of an entry read's path left out (--layer-server KIND): KIND and the server's label
LAYERS = {
    "http": "HTTP layer alone (agentmem serve, fixed answer)",
    "service": "key and service alone (agentmem serve)",
}
# no rate limit reached by the run, the limiter itself still on the path
SERVE_SETTINGS = {f"AGENTMEM_RATE_LIMIT_{which}": "100000000" for which in
                  ("KEY_PER_S", "KEY_BURST", "ACCOUNT_PER_S", "ACCOUNT_BURST")}


# --- the bare server ------------------------------------------------------------------------------------------


class _Fixed(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(FIXED_BODY)))
        self.end_headers()
        self.wfile.write(FIXED_BODY)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Baseline(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # 64 clients connecting at once are all queued (http.server's default is 5)


def serve_baseline(port: int) -> None:
    _Baseline(("127.0.0.1", port), _Fixed).serve_forever()


@contextmanager
def baseline_server(workdir: Path) -> Iterator[tuple[str, str, subprocess.Popen[bytes]]]:
    port = free_port()
    log = workdir / "baseline.log"
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, __file__, "--baseline-server", str(port)], stdout=out,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                connection.request("GET", "/")
                connection.getresponse().read()
                connection.close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the bare server did not start:\n{log.read_text()}") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}", "", process
    finally:
        process.terminate()
        process.wait(timeout=30)


def serve_layer(kind: str, argv: list[str]) -> None:
    """``agentmem serve`` (``argv``) whose entry reads skip part of the request path (``LAYERS``)."""
    from agentmem.api import app as app_module
    from agentmem.cli import main as agentmem

    handler = app_module.lambda_handler
    fixed = FIXED_BODY.decode()

    def reads_only(event: dict[str, Any], context: Any) -> dict[str, Any]:
        parts = event["path"].split("/")  # "", "v1", "memories", memory, "entries", name
        if event["httpMethod"] != "GET" or len(parts) != 6 or parts[2] != "memories" or parts[4] != "entries":
            return handler(event, context)
        body, version = fixed, 1
        if kind == "service":
            from agentmem.api.presenters import entry_json
            from agentmem.bootstrap import get_container

            container = get_container()
            principal = container.keys.authenticate(event["headers"].get("Authorization"))
            entry = container.entries.read(principal, parts[3], parts[5])
            body, version = json.dumps(entry_json(entry, content=True)), entry.version
        return {"statusCode": 200, "headers": {"Content-Type": "application/json", "ETag": f'"{version}"'},
                "body": body, "isBase64Encoded": False}

    app_module.lambda_handler = reads_only  # (agentmem serve takes it from the module when it starts)
    agentmem(argv)


# --- CPU of a process tree ------------------------------------------------------------------------------------


def tree_cpu_s(root: int) -> float:
    """utime + stime of ``root`` and of every live process under it, in seconds (children that have exited
    and been waited for count in their parent's cutime/cstime, which is added too)."""
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "; state is fields[0]
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = sum(int(v) for v in fields[11:15])  # utime, stime, cutime, cstime
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += times.get(pid, 0)
        todo += [child for child, parent in parents.items() if parent == pid]
    return total / ticks


# --- the clients ----------------------------------------------------------------------------------------------


Request = tuple[str, str, bytes | None]


def operation(name: str, thread: int) -> Callable[[int, random.Random], Request]:
    """The request a thread sends for its ``n``-th call of the operation."""
    base = f"/v1/memories/{MEMORY}"
    agent = f"/v1/agents/{AGENT}"

    def words(rng: random.Random) -> str:
        return "+".join(rng.sample(WORDS, 2))

    if name == "read":
        return lambda n, rng: ("GET", f"{base}/entries/e{rng.randrange(ENTRIES):03d}", None)
    if name == "save":
        def save(n: int, rng: random.Random) -> Request:
            body = {"content": f"Thread {thread} wrote {n}: the {rng.choice(WORDS)} {rng.choice(WORDS)}.",
                    "description": f"note {thread}-{n % NAMES_PER_THREAD}"}
            return "PUT", f"{base}/entries/t{thread}-{n % NAMES_PER_THREAD}", json.dumps(body).encode()
        return save
    if name == "search":
        return lambda n, rng: ("GET", f"{base}/search?q={words(rng)}", None)
    if name == "context":
        return lambda n, rng: ("GET", f"{agent}/conversations/{CONVERSATION}/context", None)
    if name == "journal search":
        return lambda n, rng: ("GET", f"{agent}/messages/search?q={words(rng)}", None)
    if name == "fixed":
        return lambda n, rng: ("GET", "/fixed", None)
    raise ValueError(name)


def run_clients(url: str, key: str, op: str, threads: int, seconds: float) -> tuple[list[float], int]:
    """``threads`` clients sending ``op`` for ``seconds``: every 2xx's wall time, and the number of failures."""
    address = urlsplit(url)
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"} if key else {}
    latencies: list[list[float]] = [[] for _ in range(threads)]
    failures = [0] * threads
    start = threading.Barrier(threads + 1)
    stop = [0.0]

    def client(index: int) -> None:
        make = operation(op, index)
        rng = random.Random(index)
        connection = http.client.HTTPConnection(cast(str, address.hostname), address.port, timeout=60)
        mine = latencies[index]
        n = 0
        start.wait()
        while time.monotonic() < stop[0]:
            n += 1
            method, path, body = make(n, rng)
            began = time.perf_counter()
            try:
                connection.request(method, path, body=body, headers=headers)
                response = connection.getresponse()
                response.read()
            except (OSError, http.client.HTTPException):
                failures[index] += 1
                connection.close()
                connection = http.client.HTTPConnection(cast(str, address.hostname), address.port, timeout=60)
                continue
            if response.status >= 300:
                failures[index] += 1
            else:
                mine.append(time.perf_counter() - began)
        connection.close()

    pool = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(threads)]
    for thread in pool:
        thread.start()
    stop[0] = time.monotonic() + seconds
    start.wait()
    for thread in pool:
        thread.join()
    return [v for values in latencies for v in values], sum(failures)


def settle(pid: int, timeout_s: float = 120.0) -> float:
    """Wait until the server's processes are idle (what the data just written set off, indexing it for recall,
    is done): their CPU under 5 % of a core over half a second. The seconds waited."""
    began = time.monotonic()
    while time.monotonic() - began < timeout_s:
        before = tree_cpu_s(pid)
        time.sleep(0.5)
        if tree_cpu_s(pid) - before < 0.025:
            break
    return round(time.monotonic() - began, 1)


def measure(url: str, key: str, pid: int, op: str, threads: int, seconds: float) -> dict[str, Any]:
    """One level: requests/s, latency, and the server's CPU per request, counting what the requests set off
    in the background (a save's indexing for recall) until the server is idle again, and nothing that the
    levels before set off (the server is idle when the level starts)."""
    run_clients(url, key, op, threads, min(1.0, seconds / 3))  # warm-up, not kept
    settled = settle(pid)
    cpu_before, wall_before = tree_cpu_s(pid), time.monotonic()
    values, failures = run_clients(url, key, op, threads, seconds)
    wall, cpu_in_level = time.monotonic() - wall_before, tree_cpu_s(pid) - cpu_before
    after = settle(pid)
    cpu = tree_cpu_s(pid) - cpu_before
    answered = len(values) + failures
    return {
        "operation": op, "threads": threads, "requests": len(values), "failures": failures,
        "requests_per_s": round(len(values) / wall, 1),
        "p50_ms": round(percentile(values, 0.5) * 1e3, 3), "p99_ms": round(percentile(values, 0.99) * 1e3, 3),
        "server_cpu_ms_per_request": round(cpu / answered * 1e3, 4) if answered else None,
        "server_cpu_share": round(cpu_in_level / wall, 2),
        "background_cpu_ms_per_request": round((cpu - cpu_in_level) / answered * 1e3, 4) if answered else None,
        "settled_before_s": settled, "settled_after_s": after,
    }


# --- setting up agentmem's data -------------------------------------------------------------------------------


def prepare(url: str, key: str) -> None:
    """The agent, its memory's entries and a conversation, through the API."""
    address = urlsplit(url)
    connection = http.client.HTTPConnection(cast(str, address.hostname), address.port, timeout=60)
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def send(method: str, path: str, body: Any) -> None:
        connection.request(method, path, body=json.dumps(body).encode(), headers=headers)
        response = connection.getresponse()
        text = response.read()
        if response.status >= 300:
            raise RuntimeError(f"{method} {path}: {response.status} {text[:200]!r}")

    rng = random.Random(5)
    send("PUT", f"/v1/agents/{AGENT}", {})
    for i in range(ENTRIES):
        chosen = rng.sample(WORDS, 4)
        send("PUT", f"/v1/memories/{MEMORY}/entries/e{i:03d}",
             {"content": f"Entry {i}: the customer's {chosen[0]} and {chosen[1]}; the {chosen[2]} is "
                         f"{chosen[3]}. " * 3, "description": f"about {chosen[0]} and {chosen[1]}"})
    for start in range(0, MESSAGES, 20):
        rows = [{"role": "user" if i % 2 == 0 else "assistant",
                 "content": f"Message {i}: the {rng.choice(WORDS)} for order {i} and its {rng.choice(WORDS)}."}
                for i in range(start, start + 20)]
        send("POST", f"/v1/agents/{AGENT}/conversations/{CONVERSATION}/messages", {"messages": rows})
    connection.close()


# --- in process -----------------------------------------------------------------------------------------------


@contextmanager
def in_process_reads(reads: int) -> Iterator[tuple[Any, Any, list[dict[str, Any]], Callable[[int], None]]]:
    """An embedded container with ``ENTRIES`` entries in one memory, the API's handler, ``reads`` entry-read
    events and a call of the service's read by index (the server left out)."""
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    from agentmem.bootstrap import build_container, set_container
    from agentmem.local.events import build_rest_event
    from agentmem.local.server import LocalContext
    from agentmem.services.entries import SaveRequest
    from agentmem.settings import Settings

    with tempfile.TemporaryDirectory(prefix="agentmem-http-") as tmp:
        container = build_container(Settings(data_dir=Path(tmp)))
        set_container(container)
        import agentmem.api.app as api

        _, secret = container.keys.create_account("bench")
        principal = container.keys.authenticate("Bearer " + secret)
        container.memories.create(principal, "kb")
        for i in range(ENTRIES):
            container.entries.save(principal, "kb", f"e{i:03d}", SaveRequest(
                content=f"Entry {i}: the customer's refund and its invoice. " * 3, description=f"entry {i}"))
        headers = {"Authorization": f"Bearer {secret}", "Host": "127.0.0.1"}
        rng = random.Random(2)
        events = [build_rest_event("GET", f"/v1/memories/kb/entries/e{rng.randrange(ENTRIES):03d}", "", headers)
                  for _ in range(reads)]
        context = cast(Any, LocalContext())  # (what the handler reads of a Lambda context)
        for event in events[:200]:  # warm-up
            assert api.lambda_handler(dict(event), context)["statusCode"] == 200

        def service_read(i: int) -> None:
            container.entries.read(principal, "kb", f"e{i % ENTRIES:03d}")

        yield api, context, events, service_read


def in_process_read(reads: int) -> dict[str, Any]:
    """``lambda_handler``'s CPU time per entry read in this process (median of 5 blocks), the server left out
    (CPU time, not wall time: on a shared machine another's work does not count in it)."""
    with in_process_reads(reads) as (api, context, events, service_read):
        blocks = []
        for _ in range(5):
            batch = [dict(event) for event in events]
            began = time.process_time()
            for event in batch:
                api.lambda_handler(event, context)
            blocks.append((time.process_time() - began) / len(batch))
        service = []
        for _ in range(5):
            began = time.process_time()
            for i in range(reads):
                service_read(i)
            service.append((time.process_time() - began) / reads)
    return {"reads": reads, "lambda_handler_us_per_read": round(sorted(blocks)[2] * 1e6, 1),
            "service_us_per_read": round(sorted(service)[2] * 1e6, 1)}


def in_process_threads(reads: int, threads: tuple[int, ...]) -> list[dict[str, Any]]:
    """The process's CPU per entry read when ``threads`` threads call the handler at once (median of 3 blocks):
    through ``lambda_handler`` (one event at a time) and, to see what that lock costs, straight into what it
    guards. The second is a measure only: without the lock the threads may see each other's event."""
    rows = []
    with in_process_reads(reads) as (api, context, events, _service_read):
        for count in threads:
            for locked in (True, False) if count > 1 else (True,):
                call = api.lambda_handler if locked else api._instrumented
                share = len(events) // count

                def work(k: int, call: Callable[..., dict[str, Any]] = call, share: int = share) -> None:
                    for event in events[k * share : (k + 1) * share]:
                        call(dict(event), context)

                blocks = []
                for _ in range(3):
                    workers = [threading.Thread(target=work, args=(k,)) for k in range(count)]
                    began = time.process_time()
                    for worker in workers:
                        worker.start()
                    for worker in workers:
                        worker.join()
                    blocks.append((time.process_time() - began) / (share * count))
                rows.append({"threads": count, "one_event_at_a_time": locked,
                             "cpu_us_per_read": round(sorted(blocks)[1] * 1e6, 1)})
    return rows


CACHE_CLEARING_BYTES = 8 << 20  # copied before a read to clear the CPU's caches: what sleeping between requests does


def in_process_loop(reads: int, rounds: int) -> dict[str, Any]:
    """The connection loop's path of an entry read in this process, the sockets left out: a request's bytes to
    its answer's (``answer_buffered``: the HTTP reading, the event, ``lambda_handler``, the answer), thread CPU
    per read, median of each round, with the CPU's caches warm and cleared before each read (closer to what a
    server that sleeps between requests sees)."""
    import socket as sockets

    from agentmem.local.server import make_server

    os.environ.update(SERVE_SETTINGS)
    with in_process_reads(reads) as (_api, _context, events, _service_read):
        from agentmem.bootstrap import get_container

        container = get_container()
        server = make_server(container, port=0)
        try:
            secret = events[0]["headers"]["Authorization"]
            requests = [(f"GET {event['path']} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: identity\r\n"
                         f"Authorization: {secret}\r\nContent-Type: application/json\r\n\r\n").encode()
                        for event in events]
            clearing = bytearray(CACHE_CLEARING_BYTES)
            answer = server.RequestHandlerClass.answer_buffered  # type: ignore[attr-defined]
            found: dict[str, list[float]] = {"warm": [], "caches cleared": []}
            with sockets.socket() as sock:
                for _ in range(rounds):
                    for mode, times in found.items():
                        spent = []
                        for request in requests:
                            if mode != "warm":
                                bytes(clearing)
                            began = time.thread_time_ns()
                            reply, _close = answer(server, sock, ("127.0.0.1", 9), request)
                            spent.append(time.thread_time_ns() - began)
                            if not reply.startswith(b"HTTP/1.1 200"):
                                raise RuntimeError(f"an entry read was not answered: {reply[:200]!r}")
                        times.append(statistics.median(spent) / 1e3)
        finally:
            server.server_close()
    return {"reads": reads, "rounds": rounds,
            "us_per_read": {mode: [round(t, 1) for t in times] for mode, times in found.items()},
            "median_us_per_read": {mode: round(statistics.median(times), 1) for mode, times in found.items()}}


def print_in_process_threads(rows: list[dict[str, Any]]) -> None:
    print("\nin process, the handler called from several threads at once: CPU per entry read")
    print(f"  {'threads':>7}  {'path':<40} {'CPU µs/read':>11}")
    for row in rows:
        locked = row["one_event_at_a_time"]
        path = "lambda_handler (one event at a time)" if locked else "without the lock (a measure only)"
        print(f"  {row['threads']:>7}  {path:<40} {row['cpu_us_per_read']:>11}")


# --- this tree against another, in turns -----------------------------------------------------------------------


def run_turns(other: Path, rounds: int, threads: tuple[int, ...], seconds: float) -> dict[str, Any]:
    """Entry reads on the bare server and on both trees' ``agentmem serve`` (1 worker and one per core), side by
    side, every server measured in turn within each round."""
    cores = os.cpu_count() or 1
    trees = {"this tree": ROOT / "layers" / "core" / "python",
             f"other tree ({other.name})": other / "layers" / "core" / "python"}
    results: dict[str, Any] = {"benchmark": "http-turns", "other": str(other), "rounds": rounds,
                               "threads": list(threads), "seconds_per_level": seconds, "servers": {},
                               "failed_phases": []}
    load_before = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="agentmem-http-turns-") as tmp, ExitStack() as stack:
        servers: dict[str, tuple[str, str, int, str]] = {}
        workdir = Path(tmp) / "bare"
        workdir.mkdir()
        url, key, process = stack.enter_context(baseline_server(workdir))
        servers["bare http.server"] = (url, key, process.pid, "fixed")
        for workers in sorted({1, cores}):
            for tree, path in trees.items():
                label = f"{tree}, {workers} worker{'s' if workers > 1 else ''}"
                workdir = Path(tmp) / f"server-{len(servers)}"
                workdir.mkdir()
                try:
                    url, key, process = stack.enter_context(started(
                        "embedded", workdir, ["--workers", str(workers)], {"PYTHONPATH": str(path), **SERVE_SETTINGS}))
                    prepare(url, key)
                except Exception:
                    results["failed_phases"].append({"phase": label, "error": traceback.format_exc(limit=4)})
                    continue
                servers[label] = (url, key, process.pid, "read")
        for _url, _key, pid, op in servers.values():
            if op == "read":
                settle(pid)
        for number in range(rounds):
            print(f"round {number + 1} of {rounds} …", flush=True)
            for count in threads:
                for label, (url, key, pid, op) in servers.items():
                    try:
                        level = measure(url, key, pid, op, count, seconds)
                    except Exception:
                        results["failed_phases"].append({"phase": f"{label} × {count}",
                                                         "error": traceback.format_exc(limit=4)})
                        continue
                    results["servers"].setdefault(label, {}).setdefault(str(count), []).append(level)
    results["machine"] = {"platform": platform.platform(), "cpus": cores, "python": platform.python_version(),
                          "load_average_before": load_before,
                          "load_average_after": [round(x, 2) for x in os.getloadavg()],
                          "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")}
    return results


def turns_rows(results: dict[str, Any]) -> list[list[str]]:
    """Per server and thread count: the median CPU per read, its range, and the median's ratio to the bare
    server's median at that thread count."""
    rows = []
    for count in results["threads"]:
        bare = [level["server_cpu_ms_per_request"] for level in
                results["servers"].get("bare http.server", {}).get(str(count), [])]
        floor = sorted(bare)[len(bare) // 2] if bare else None
        for label, by_threads in results["servers"].items():
            cpu = sorted(level["server_cpu_ms_per_request"] for level in by_threads.get(str(count), []))
            if not cpu:
                continue
            median = cpu[len(cpu) // 2]
            ratio = f"{median / floor:.2f}×" if floor else "—"
            rows.append([label, str(count), f"{median:.3f}", f"{cpu[0]:.3f}–{cpu[-1]:.3f}", ratio, str(len(cpu))])
    return rows


TURNS_HEADERS = ["server", "threads", "CPU ms/read, median", "range", "median × bare", "rounds"]


def print_turns(results: dict[str, Any]) -> None:
    info = results["machine"]
    print(f"\nentry reads in turns ({results['rounds']} rounds of {results['seconds_per_level']} s, {info['date']}, "
          f"{info['cpus']} CPUs, load average {info['load_average_before']} before, "
          f"{info['load_average_after']} after)")
    rows = turns_rows(results)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(TURNS_HEADERS)]
    print("  " + "  ".join(h.ljust(w) for h, w in zip(TURNS_HEADERS, widths, strict=True)))
    for row in rows:
        print("  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths, strict=True))))
    for failed in results["failed_phases"]:
        print(f"FAILED {failed['phase']}:\n{failed['error']}")


# --- the run --------------------------------------------------------------------------------------------------


def offers_workers() -> bool:
    try:
        shown = subprocess.run([str(AGENTMEM), "serve", "--help"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--workers" in shown.stdout


def _layer_server(data_dir: Path, *, one: list[str], command: list[str]) -> Any:
    """One part of an entry read served alone (``--layer-server``), with one worker when there are workers."""
    return started("embedded", data_dir, one, SERVE_SETTINGS, command=command)


def run(threads: tuple[int, ...], seconds: float, operations: tuple[str, ...] = OPERATIONS) -> dict[str, Any]:
    cores = os.cpu_count() or 1
    results: dict[str, Any] = {"benchmark": "http", "threads": list(threads), "seconds_per_level": seconds,
                               "operations": list(operations), "servers": {}, "failed_phases": [], "notes": []}
    print("in process: lambda_handler per entry read …", flush=True)
    try:
        results["in_process"] = in_process_read(2000 if seconds < 5 else 5000)
    except Exception:
        results["failed_phases"].append({"phase": "in process", "error": traceback.format_exc(limit=4)})
    servers: list[tuple[str, Callable[[Path], Any], tuple[str, ...]]] = [
        ("bare http.server", baseline_server, ("fixed",)),
    ]
    one = ["--workers", "1"] if offers_workers() else []
    if "read" in operations:
        for kind, label in LAYERS.items():
            command = [sys.executable, __file__, "--layer-server", kind]
            servers.append((label, partial(_layer_server, one=one, command=command), ("read",)))
    if one:
        servers.append(("agentmem serve, 1 worker", lambda d: started("embedded", d, ["--workers", "1"],
                                                                      SERVE_SETTINGS), operations))
        servers.append((f"agentmem serve, {cores} workers",
                        lambda d: started("embedded", d, ["--workers", str(cores)], SERVE_SETTINGS), operations))
    else:
        servers.append(("agentmem serve, 1 worker", lambda d: started("embedded", d, [], SERVE_SETTINGS),
                        operations))
        results["notes"].append("`agentmem serve` offers no --workers here: one worker measured only")
        print("agentmem serve offers no --workers: measuring one worker only", flush=True)
    with tempfile.TemporaryDirectory(prefix="agentmem-http-") as tmp:
        for number, (label, start, ops) in enumerate(servers):
            workdir = Path(tmp) / f"server-{number}"
            workdir.mkdir()
            levels: list[dict[str, Any]] = []
            results["servers"][label] = levels
            try:
                with start(workdir) as (url, key, process):
                    if key:
                        prepare(url, key)
                        results.setdefault("settled_s", {})[label] = settle(process.pid)
                    for op in ops:
                        for count in threads:
                            print(f"{label}: {op}, {count} threads …", flush=True)
                            try:
                                levels.append(measure(url, key, process.pid, op, count, seconds))
                            except Exception:
                                results["failed_phases"].append({"phase": f"{label}: {op} × {count}",
                                                                 "error": traceback.format_exc(limit=4)})
            except Exception:
                results["failed_phases"].append({"phase": label, "error": traceback.format_exc(limit=4)})
    results["targets"] = targets(results)
    results["machine"] = {"platform": platform.platform(), "cpus": cores, "python": platform.python_version(),
                          "load_average_after": [round(x, 2) for x in os.getloadavg()],
                          "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                          "note": "a machine shared with other work while measured"}
    return results


def _cpu(results: dict[str, Any], server: str, op: str, threads: int) -> float | None:
    for level in results["servers"].get(server, []):
        if level["operation"] == op and level["threads"] == threads:
            return cast(float | None, level["server_cpu_ms_per_request"])
    return None


def targets(results: dict[str, Any]) -> list[Check]:
    checks: list[Check] = []
    for server in results["servers"]:
        if not server.startswith("agentmem"):
            continue
        for threads in results["threads"]:
            ours, floor = _cpu(results, server, "read", threads), _cpu(results, "bare http.server", "fixed", threads)
            if ours is None or not floor:
                continue
            ratio = ours / floor
            checks.append({"target": f"{server}, {threads} threads: CPU per entry read ≤ {CPU_RATIO_TARGET:g}× "
                                     "the bare server's", "value": round(ratio, 2), "ours_ms": ours,
                           "floor_ms": floor, "met": ratio <= CPU_RATIO_TARGET})
    return checks


def _value_text(check: Check) -> str:
    return f"{check['value']}× ({check['ours_ms']:.3f} ms against {check['floor_ms']:.3f} ms)"


def table_rows(results: dict[str, Any]) -> list[list[str]]:
    rows = []
    for server, levels in results["servers"].items():
        for level in levels:
            cpu = level["server_cpu_ms_per_request"]
            rows.append([server, "fixed read" if level["operation"] == "fixed" else level["operation"],
                         str(level["threads"]), f"{level['requests_per_s']:,.0f}", f"{level['p50_ms']:.2f}",
                         f"{level['p99_ms']:.2f}", "—" if cpu is None else f"{cpu:.3f}", str(level["failures"])])
    return rows


HEADERS = ["server", "operation", "threads", "requests/s", "p50 ms", "p99 ms", "server CPU ms/request", "failed"]


def print_report(results: dict[str, Any]) -> None:
    info = results["machine"]
    print(f"\nagentmem HTTP benchmark ({results['seconds_per_level']} s per level, {info['date']}, "
          f"{info['cpus']} CPUs, load average after {info['load_average_after']})")
    for note in results["notes"]:
        print(f"  note: {note}")
    inproc = results.get("in_process")
    if inproc:
        print(f"  in process: lambda_handler {inproc['lambda_handler_us_per_read']} µs of CPU per entry read "
              f"(the service alone {inproc['service_us_per_read']} µs)")
    rows = table_rows(results)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(HEADERS)]
    print("  " + "  ".join(h.ljust(w) for h, w in zip(HEADERS, widths, strict=True)))
    for row in rows:
        print("  " + "  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths, strict=True))))
    print()
    print_targets(results["targets"], _value_text, width=72)
    for failed in results["failed_phases"]:
        print(f"FAILED {failed['phase']}:\n{failed['error']}")


def markdown(results: dict[str, Any]) -> str:
    info = results["machine"]
    out = [f"Run of {info['date']} ({results['seconds_per_level']} s per level; {info['cpus']} CPUs, "
           f"load average {', '.join(str(x) for x in info['load_average_after'])} at the end: "
           "a machine shared with other work).", ""]
    out += [f"_{note}._" for note in results["notes"]] + ([""] if results["notes"] else [])
    inproc = results.get("in_process")
    if inproc:
        out += [f"In process, `lambda_handler` takes **{inproc['lambda_handler_us_per_read']} µs** of CPU per "
                    f"entry read (the service alone {inproc['service_us_per_read']} µs).", ""]
    out += ["| " + " | ".join(HEADERS) + " |", "|---|---|--:|--:|--:|--:|--:|--:|"]
    out += ["| " + " | ".join(row) + " |" for row in table_rows(results)]
    out += targets_markdown(results["targets"], _value_text)
    if results["failed_phases"]:
        out += ["", "Failed phases: " + ", ".join(f["phase"] for f in results["failed_phases"])]
    return "\n".join(out) + "\n"


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for server, levels in results["servers"].items():
        for op in ("fixed", "read", "save", "context"):
            chosen = [level for level in levels if level["operation"] == op]
            if not chosen:
                continue
            label = f"{server}: {'fixed read' if op == 'fixed' else op}"
            style = "--" if server.startswith("bare") else "-"
            x = [level["threads"] for level in chosen]
            left.plot(x, [level["requests_per_s"] for level in chosen], marker="o", linestyle=style, label=label)
            right.plot(x, [level["server_cpu_ms_per_request"] for level in chosen], marker="o", linestyle=style,
                       label=label)
    for axis, title, unit in ((left, "Throughput", "requests/s"), (right, "Server CPU per request", "ms")):
        axis.set_xscale("log", base=2)
        axis.set_xticks(list(results["threads"]), [str(t) for t in results["threads"]])
        axis.set_xlabel("client threads (another process)")
        axis.set_ylabel(unit)
        axis.set_title(title)
        axis.set_yscale("log")
        axis.grid(alpha=0.3)
    left.legend(fontsize=7)
    figure.suptitle(f"agentmem serve against a bare http.server ({results['machine']['cpus']} cores, shared)",
                    fontsize=10)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)


def main() -> int:
    if sys.argv[1:2] == ["--layer-server"]:
        serve_layer(sys.argv[2], sys.argv[3:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 and 16 threads, 2 s each; docs untouched")
    parser.add_argument("--seconds", type=float, help="seconds per level (default 5, quick 2)")
    parser.add_argument("--threads", type=int, nargs="+", help="client threads (default 1 4 16 64, quick 1 16)")
    parser.add_argument("--operations", nargs="+", choices=OPERATIONS, metavar="OPERATION",
                        help=f"agentmem's operations measured (default all: {', '.join(OPERATIONS)}); with fewer than "
                             "all, the results go to bench/results/http-quick.json and the docs are left as they are")
    parser.add_argument("--turns", type=Path, metavar="TREE",
                        help="entry reads only: this tree and the checkout TREE side by side, in turns "
                             "(docs untouched)")
    parser.add_argument("--rounds", type=int, default=8, help="with --turns: rounds, each measuring every server")
    parser.add_argument("--in-process-threads", action="store_true",
                        help="only the handler in this process, called from 1, 4 and 16 threads at once (or "
                             "--threads): CPU per entry read with and without its one-event-at-a-time lock")
    parser.add_argument("--in-process-loop", action="store_true",
                        help="only the connection loop's path of an entry read in this process (request bytes to "
                             "answer bytes), thread CPU per read with the CPU's caches warm and cleared")
    parser.add_argument("--baseline-server", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline_server:
        serve_baseline(args.baseline_server)
        return 0
    if args.in_process_threads:
        rows = in_process_threads(16_000, tuple(args.threads or (1, 4, 16)))
        print_in_process_threads(rows)
        out = RESULTS / "http-in-process-threads.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"benchmark": "http-in-process-threads", "rows": rows}, indent=2) + "\n")
        print(f"wrote {out.relative_to(ROOT)}")
        return 0
    if args.in_process_loop:
        loop = in_process_loop(3000, args.rounds)
        print("\nin process, the connection loop's path of an entry read (answer_buffered): thread CPU per read")
        for mode, median in loop["median_us_per_read"].items():
            print(f"  {mode:<15} {median:>7} µs  (rounds: {', '.join(map(str, loop['us_per_read'][mode]))})")
        out = RESULTS / "http-in-process-loop.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"benchmark": "http-in-process-loop", **loop}, indent=2) + "\n")
        print(f"wrote {out.relative_to(ROOT)}")
        return 0
    if args.turns:
        if not (args.turns / "layers" / "core" / "python" / "agentmem").is_dir():
            parser.error(f"{args.turns} is not a checkout of agentmem (no layers/core/python/agentmem)")
        turns = run_turns(args.turns.resolve(), args.rounds, tuple(args.threads or QUICK_THREADS),
                          args.seconds or 2.0)
        print_turns(turns)
        out = RESULTS / "http-turns.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(turns, indent=2) + "\n")
        print(f"wrote {out.relative_to(ROOT)}")
        return 0
    threads = tuple(args.threads or (QUICK_THREADS if args.quick else THREADS))
    operations = tuple(op for op in OPERATIONS if op in (args.operations or OPERATIONS))
    partial = args.quick or operations != OPERATIONS
    results = run(threads, args.seconds or (2.0 if args.quick else 5.0), operations)
    results["quick"] = partial
    print_report(results)
    name = "http-quick" if partial else "http"
    out = RESULTS / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    try:
        png = RESULTS / f"{name}.png" if partial else PLOT
        plot(results, png)
        print(f"wrote {png.relative_to(ROOT)}")
    except Exception:
        print(f"the plot failed:\n{traceback.format_exc(limit=3)}")
    if not partial and replace_block(DOCS, DOCS_BEGIN, DOCS_END, markdown(results)):
        print(f"updated {DOCS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
