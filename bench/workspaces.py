"""Workspaces benchmark: files of 1 KB, 1 MB, 50 MB and 100 MB written and read through `agentmem serve`.

    .venv/bin/python bench/workspaces.py            # full run (about 30 s on 2 cores)
    .venv/bin/python bench/workspaces.py --quick    # fewer samples and runs, no docs update (about 10 s)
    .venv/bin/python bench/workspaces.py --markdown bench/results/workspaces.json   # the tables, measuring nothing
    .venv/bin/python bench/workspaces.py --replot bench/results/workspaces.json     # redraw the plot

Starts ``agentmem serve`` (this venv's console script, as ``make run`` does) as a separate process on a free
port with a fresh data dir in a temporary directory, and drives it from this process over keep-alive
connections on loopback. Sizes are binary: 1 KB = 1,024 bytes, 1 MB = 1,048,576 bytes (as the service's
limits count them: 100 MB = 104,857,600 bytes); MB/s is in the same MB. The payloads are random bytes.

* **Through the API**: ``PUT .../workspace/files/{path}`` (the raw bytes as the body) and ``GET`` of the same
  path, 1 KB and 1 MB files, one ``requests.Session`` with the account key. Each write goes to a new path;
  each read picks one of the written files at random. p50/p95/p99 per request, files/s and MB/s of the
  timed loop.
* **Through links**: a 50 MB file written through an upload link (``POST .../workspace/links`` with
  ``method: PUT`` and ``size_bytes``, then a PUT of the bytes to the link, no key) and read through a
  download link (``POST .../workspace/links``, then a streamed GET of the link, 1 MB at a time), several
  runs; MB/s of the transfer itself (the link's own request is timed apart). Then the same with the SDK,
  as an application would use it: ``Workspace.upload(path, local_file)`` and ``Workspace.download(path,
  local_file)``, which ask for the links themselves, from and to files on disk.
* **The disk, without the server**: beside each 50 MB upload (before it on even runs, after it on odd ones),
  the benchmark writes the same bytes to a new file in the same temporary directory, 1 MB at a time, and
  fsyncs it: what the server's store does with an upload's bytes, with no HTTP and no server around it.
* **The server's memory**: a thread samples the server process's resident set (``VmRSS`` in
  ``/proc/<pid>/status``) every 5 ms, and each phase records it before and after, its peak in the phase,
  and the kernel's high-water mark (``VmHWM``). The phases after the 50 MB ones transfer a 100 MB file
  (the largest a workspace takes) through links, and last, for contrast, a 4 MB file through the API
  (the largest the API takes; its body is held in memory). A link transfer streams, so the server's memory
  should not grow with the file's size.

Prints a table, writes ``bench/results/workspaces.json`` and ``docs/img/workspaces.png`` and replaces the
generated block of docs/benchmarks.md (``--quick``: ``bench/results/workspaces-quick.json`` and a plot
beside it, no docs update). Timings are never asserted; the targets are printed with a pass/miss mark.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import quote

import requests
from report import print_targets, replace_block, targets_markdown

ROOT = Path(__file__).resolve().parent.parent
AGENTMEM = Path(sys.executable).with_name("agentmem")
KB = 1024
MB = 1024 * 1024
AGENT, CONVERSATION, USER = "bench", "files-1", "bench_user"
SAMPLE_EVERY_S = 0.005
CHUNK = MB  # what a streamed download reads at a time (the SDK's chunk)

TARGETS = {
    "link_download_mb_per_s": 200.0,  # a 50 MB file through a download link, on loopback
    "link_rss_growth_mb": 10.0,  # the server's peak RSS during a link transfer, over its RSS before it
}
DOCS_BEGIN = "<!-- bench/workspaces.py --markdown: begin -->"
DOCS_END = "<!-- bench/workspaces.py --markdown: end -->"


@dataclass(frozen=True)
class Plan:
    """How many timed requests or runs each phase takes at most, and how long it may run."""

    small_requests: int  # 1 KB writes (and as many reads)
    medium_requests: int  # 1 MB writes (and reads)
    budget_s: float  # per phase of small or medium requests
    large_runs: int  # 50 MB through links, raw HTTP
    sdk_runs: int  # 50 MB through the SDK
    api_max_runs: int  # the largest file the API takes (4 MB), through the API


FULL = Plan(small_requests=3000, medium_requests=400, budget_s=5.0, large_runs=7, sdk_runs=3, api_max_runs=5)
QUICK = Plan(small_requests=600, medium_requests=80, budget_s=1.5, large_runs=3, sdk_runs=1, api_max_runs=2)


def log(message: str) -> None:
    print(f"  · {message}", file=sys.stderr, flush=True)


# --- the server ---------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _proc_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in KiB."""
    values: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            values[name] = int(rest.split()[0])
    return values


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14 and 15)


class Server:
    """``agentmem serve`` on a fresh data dir, and a thread sampling its resident memory."""

    def __init__(self, data_dir: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = data_dir.parent / "serve.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
        env.update({"POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_TRACE_DISABLED": "true",
                    "POWERTOOLS_LOG_LEVEL": "WARNING"})
        with self.log_path.open("wb") as out:
            self.process = subprocess.Popen(
                [str(AGENTMEM), "serve", "--port", str(self.port), "--data-dir", str(data_dir)],
                env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )
        self.pid = self.process.pid
        self.started = time.perf_counter()
        self._wait_healthy(data_dir)
        self.key = (data_dir / "dev-key").read_text().strip()
        self.samples: list[tuple[float, int]] = []  # (seconds since start, VmRSS KiB)
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, name="rss-sampler", daemon=True)
        self._sampler.start()

    def _wait_healthy(self, data_dir: Path, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"agentmem serve exited with {self.process.returncode}:\n{self.output()}")
            try:
                if requests.get(self.url + "/v1/health", timeout=1).status_code == 200 and \
                        (data_dir / "dev-key").exists():
                    return
            except requests.ConnectionError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"agentmem serve did not answer in {timeout:.0f} s:\n{self.output()}")

    def output(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def _sample(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY_S):
            try:
                rss = _proc_status(self.pid)["VmRSS"]
            except (OSError, KeyError):
                return
            self.samples.append((time.perf_counter() - self.started, rss))

    def now(self) -> float:
        return time.perf_counter() - self.started

    def memory(self) -> dict[str, float]:
        status = _proc_status(self.pid)
        return {"rss_mb": round(status["VmRSS"] / 1024, 1), "hwm_mb": round(status["VmHWM"] / 1024, 1)}

    def stop(self) -> None:
        self._stop.set()
        self._sampler.join(timeout=2)
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


class Phases:
    """Each phase's span, the server's memory around it and its peak inside it, and the server's CPU time."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.rows: dict[str, dict[str, Any]] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        server = self.server
        before, cpu, start = server.memory(), _cpu_seconds(server.pid), server.now()
        yield
        end, after = server.now(), server.memory()
        inside = [rss for t, rss in server.samples if start <= t <= end]
        peak = round(max([*inside, int(before["rss_mb"] * 1024), int(after["rss_mb"] * 1024)]) / 1024, 1)
        self.rows[name] = {
            "start_s": round(start, 3), "end_s": round(end, 3),
            "rss_before_mb": before["rss_mb"], "rss_peak_mb": peak, "rss_after_mb": after["rss_mb"],
            "rss_growth_mb": round(peak - before["rss_mb"], 1),
            "hwm_before_mb": before["hwm_mb"], "hwm_after_mb": after["hwm_mb"],
            "samples": len(inside),
            "server_cpu_s": round(_cpu_seconds(server.pid) - cpu, 3),
        }


# --- timing ---------------------------------------------------------------------------------------------------


def percentiles(samples_s: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples_s)

    def at(q: float) -> float:  # nearest rank
        return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))] * 1000

    return {"p50_ms": round(at(0.50), 3), "p95_ms": round(at(0.95), 3), "p99_ms": round(at(0.99), 3)}


def timed_loop(call: Callable[[int], None], count: int, budget_s: float, size: int, min_samples: int = 20
               ) -> dict[str, Any]:
    """``call(i)`` for i in 0..count-1 until the budget is spent (at least ``min_samples``): per-request latency,
    files/s and MB/s of the loop."""
    latencies: list[float] = []
    clock = time.perf_counter
    started = clock()
    deadline = started + budget_s
    for i in range(count):
        t0 = clock()
        call(i)
        t1 = clock()
        latencies.append(t1 - t0)
        if t1 > deadline and len(latencies) >= min_samples:
            break
    elapsed = clock() - started
    return {"n": len(latencies), "seconds": round(elapsed, 3), "files_per_s": round(len(latencies) / elapsed, 1),
            "mb_per_s": round(len(latencies) * size / MB / elapsed, 2), **percentiles(latencies)}


def runs_summary(seconds: Sequence[float], size: int) -> dict[str, Any]:
    rates = [size / MB / s for s in seconds]
    return {"runs": len(seconds), "seconds": [round(s, 4) for s in seconds],
            "mb_per_s_median": round(statistics.median(rates), 1), "mb_per_s_min": round(min(rates), 1),
            "mb_per_s_max": round(max(rates), 1)}


# --- the benchmark ------------------------------------------------------------------------------------------


class Bench:
    def __init__(self, server: Server, plan: Plan, scratch: Path) -> None:
        self.server = server
        self.plan = plan
        self.scratch = scratch
        self.api = requests.Session()
        self.api.headers.update({"Authorization": f"Bearer {server.key}"})
        self.links = requests.Session()  # links are used without a key
        self.base = f"{server.url}/v1/agents/{AGENT}/conversations/{CONVERSATION}/workspace"
        self.params = {"user": USER}
        self.rng = random.Random(7)

    def file_url(self, path: str) -> str:
        return f"{self.base}/files/{quote(path, safe='/')}"

    def put_file(self, path: str, data: bytes) -> None:
        answer = self.api.put(self.file_url(path), params=self.params, data=data,
                              headers={"Content-Type": "application/octet-stream"}, timeout=120)
        if answer.status_code != 200:
            raise RuntimeError(f"PUT {path}: {answer.status_code} {answer.text[:300]}")

    def get_file(self, path: str, size: int) -> None:
        answer = self.api.get(self.file_url(path), params=self.params, timeout=120)
        if answer.status_code != 200 or len(answer.content) != size:
            raise RuntimeError(f"GET {path}: {answer.status_code} {len(answer.content)} bytes")

    def link(self, path: str, method: str, size: int | None = None) -> tuple[str, float]:
        """A link, and how long asking for it took (s)."""
        body: dict[str, Any] = {"path": path, "method": method}
        if size is not None:
            body["size_bytes"] = size
        t0 = time.perf_counter()
        answer = self.api.post(f"{self.base}/links", params=self.params, json=body, timeout=30)
        took = time.perf_counter() - t0
        if answer.status_code != 201:
            raise RuntimeError(f"POST links {body}: {answer.status_code} {answer.text[:300]}")
        return str(answer.json()["url"]), took

    def upload_through_link(self, path: str, data: bytes) -> tuple[float, float]:
        """(seconds of the PUT to the link, seconds asking for the link)."""
        url, asked = self.link(path, "PUT", len(data))
        t0 = time.perf_counter()
        answer = self.links.put(url, data=data, timeout=300)
        took = time.perf_counter() - t0
        if answer.status_code != 200:
            raise RuntimeError(f"PUT link {path}: {answer.status_code} {answer.text[:300]}")
        return took, asked

    def download_through_link(self, path: str, size: int, digest: str | None = None) -> tuple[float, float]:
        """(seconds of the streamed GET of the link, seconds asking for the link)."""
        url, asked = self.link(path, "GET")
        got = 0
        hasher = hashlib.sha256() if digest else None
        t0 = time.perf_counter()
        with self.links.get(url, stream=True, timeout=300) as answer:
            if answer.status_code != 200:
                raise RuntimeError(f"GET link {path}: {answer.status_code} {answer.text[:300]}")
            for chunk in answer.iter_content(CHUNK):
                got += len(chunk)
                if hasher is not None:
                    hasher.update(chunk)
        took = time.perf_counter() - t0
        if got != size or (hasher is not None and hasher.hexdigest() != digest):
            raise RuntimeError(f"GET link {path}: {got:,} bytes of {size:,}, or not the bytes uploaded")
        return took, asked

    # --- phases ---------------------------------------------------------------------------------------

    def warm_up(self) -> None:
        """First requests build what the server builds lazily (the handler, the stores, the link signer)."""
        self.api.put(f"{self.server.url}/v1/agents/{AGENT}", json={}, timeout=30).raise_for_status()
        data = os.urandom(64 * KB)
        for i in range(20):
            self.put_file(f"warm/{i}.bin", data)
            self.get_file(f"warm/{i}.bin", len(data))
        for i in range(3):
            self.upload_through_link(f"warm/link-{i}.bin", data)
            self.download_through_link(f"warm/link-{i}.bin", len(data))

    def api_sizes(self, label: str, size: int, count: int) -> dict[str, Any]:
        data = os.urandom(size)
        folder = f"api/{label}"
        log(f"API: {count:,} writes of {label} at most")
        writes = timed_loop(lambda i: self.put_file(f"{folder}/{i:05d}.bin", data), count, self.plan.budget_s, size)
        written = writes["n"]
        picks = [self.rng.randrange(written) for _ in range(count)]
        log(f"API: {count:,} reads of {label} at most")
        reads = timed_loop(lambda i: self.get_file(f"{folder}/{picks[i]:05d}.bin", size), count,
                           self.plan.budget_s, size)
        return {"size_bytes": size, "write": writes, "read": reads}

    def disk_write(self, data: bytes) -> float:
        """Seconds to write ``data`` to a new file on the same disk, 1 MB at a time, and fsync it: what an upload
        does with the bytes once they arrive (the server's store flushes every file to disk before answering)."""
        path = self.scratch / "disk-baseline.bin"
        view = memoryview(data)
        t0 = time.perf_counter()
        with open(path, "wb") as out:
            for start in range(0, len(data), CHUNK):
                out.write(view[start : start + CHUNK])
            out.flush()
            os.fsync(out.fileno())
        took = time.perf_counter() - t0
        path.unlink()
        return took

    def links_runs(self, label: str, size: int, runs: int, *, disk: bool = False) -> dict[str, Any]:
        data = os.urandom(size)
        digest = hashlib.sha256(data).hexdigest()
        up, up_ask, down, down_ask, local = [], [], [], [], []
        for run in range(runs):
            log(f"links: {label}, run {run + 1} of {runs}")
            # the disk's own speed, next to each upload: first on even runs, second on odd ones, since the
            # write that comes second can find the disk still busy with the first
            if disk and run % 2 == 0:
                local.append(self.disk_write(data))
            took, asked = self.upload_through_link(f"links/{label}-{run}.bin", data)
            up.append(took)
            up_ask.append(asked)
            if disk and run % 2 == 1:
                local.append(self.disk_write(data))
            # the first download checks the bytes (untimed), the rest are timed
            if run == 0:
                self.download_through_link(f"links/{label}-0.bin", size, digest)
            took, asked = self.download_through_link(f"links/{label}-{run}.bin", size)
            down.append(took)
            down_ask.append(asked)
        figures = {"size_bytes": size,
                   "upload": {**runs_summary(up, size),
                              "link_request_ms_median": round(statistics.median(up_ask) * 1e3, 2)},
                   "download": {**runs_summary(down, size),
                                "link_request_ms_median": round(statistics.median(down_ask) * 1e3, 2)}}
        if local:
            figures["disk_write_fsync"] = runs_summary(local, size)
        return figures

    def sdk_runs(self, label: str, size: int, runs: int) -> dict[str, Any]:
        from agentmem.client import Client

        client = Client(self.server.url, self.server.key)
        workspace = client.agent(AGENT).workspace(CONVERSATION, user=USER)
        source = self.scratch / f"sdk-{label}.bin"
        source.write_bytes(os.urandom(size))
        up, down = [], []
        for run in range(runs):
            log(f"SDK: {label}, run {run + 1} of {runs}")
            t0 = time.perf_counter()
            stored = workspace.upload(f"sdk/{label}-{run}.bin", source)
            up.append(time.perf_counter() - t0)
            if stored.size_bytes != size:
                raise RuntimeError(f"SDK upload stored {stored.size_bytes:,} bytes of {size:,}")
            target = self.scratch / f"sdk-{label}-{run}.copy"
            t0 = time.perf_counter()
            got = workspace.download(f"sdk/{label}-{run}.bin", target)
            down.append(time.perf_counter() - t0)
            if got != size:
                raise RuntimeError(f"SDK download wrote {got:,} bytes of {size:,}")
            target.unlink()
        source.unlink()
        return {"size_bytes": size, "upload": runs_summary(up, size), "download": runs_summary(down, size)}

    def api_max(self, runs: int) -> dict[str, Any]:
        """The largest file the API takes, written and read through it: its body is held in memory."""
        size = api_max_bytes()
        data = os.urandom(size)
        writes, reads = [], []
        for run in range(runs):
            t0 = time.perf_counter()
            self.put_file(f"api/6mb-{run}.bin", data)
            writes.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            self.get_file(f"api/6mb-{run}.bin", size)
            reads.append(time.perf_counter() - t0)
        return {"size_bytes": size, "write": runs_summary(writes, size), "read": runs_summary(reads, size)}


def api_max_bytes() -> int:
    """The largest file the service takes through the API (``PUT``/``GET .../workspace/files/{path}``)."""
    from agentmem.domain import workspaces

    return int(workspaces.MAX_API_FILE_BYTES)


def run(plan: Plan, quick: bool) -> dict[str, Any]:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="agentmem-bench-ws-") as tmp:
        tmp_path = Path(tmp)
        scratch = tmp_path / "scratch"
        scratch.mkdir()
        log("starting agentmem serve")
        server = Server(tmp_path / "data")
        results: dict[str, Any] = {"benchmark": "workspaces", "quick": quick, "machine": machine(tmp_path),
                                   "setup": {"plan": plan.__dict__, "server": "agentmem serve (subprocess)",
                                             "client": f"requests {metadata.version('requests')}, keep-alive",
                                             "sample_every_ms": SAMPLE_EVERY_S * 1000}}
        try:
            bench = Bench(server, plan, scratch)
            phases = Phases(server)
            results["memory_at_start"] = server.memory()
            log("warming up")
            with phases.phase("warm-up"):
                bench.warm_up()
            results["memory_after_warm_up"] = server.memory()
            api: dict[str, Any] = {}
            with phases.phase("1 KB through the API"):
                api["1 KB"] = bench.api_sizes("1 KB", KB, plan.small_requests)
            with phases.phase("1 MB through the API"):
                api["1 MB"] = bench.api_sizes("1 MB", MB, plan.medium_requests)
            results["api"] = api
            links: dict[str, Any] = {}
            with phases.phase("50 MB through links"):
                links["50 MB"] = bench.links_runs("50 MB", 50 * MB, plan.large_runs, disk=True)
            with phases.phase("100 MB through links"):
                links["100 MB"] = bench.links_runs("100 MB", 100 * MB, 1)
            results["links"] = links
            with phases.phase("50 MB through the SDK"):
                results["sdk"] = {"50 MB": bench.sdk_runs("50 MB", 50 * MB, plan.sdk_runs)}
            api_label = f"{api_max_bytes() / MB:g} MB"
            log(f"{api_label} through the API (the largest it takes)")
            with phases.phase(f"{api_label} through the API"):
                results["api_max"] = bench.api_max(plan.api_max_runs)
            results["phases"] = phases.rows
            results["rss_samples"] = thin(server.samples, 1500)
        except Exception:
            print(server.output(), file=sys.stderr)
            raise
        finally:
            server.stop()
    results["targets"] = check_targets(results)
    results["seconds"] = round(time.perf_counter() - started, 1)
    return results


def thin(samples: Sequence[tuple[float, int]], most: int) -> list[list[float]]:
    """At most ``most`` samples for the plot, keeping each stretch's highest (peaks must survive)."""
    step = max(1, -(-len(samples) // most))
    out = []
    for i in range(0, len(samples), step):
        part = samples[i : i + step]
        t, rss = max(part, key=lambda s: s[1])
        out.append([round(t, 3), round(rss / 1024, 2)])
    return out


def machine(tmp: Path) -> dict[str, Any]:
    info: dict[str, Any] = {"date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                            "cpu_count": os.cpu_count(), "platform": platform.platform(),
                            "python": platform.python_version()}
    try:
        info["cpu_model"] = next(line.split(":", 1)[1].strip() for line in
                                 Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name"))
    except (OSError, StopIteration):
        info["cpu_model"] = ""
    try:
        kib = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal"))
        info["memory_gb"] = round(kib / 1024 / 1024, 1)
    except (OSError, StopIteration):
        info["memory_gb"] = None
    best, kind = "", "unknown"
    try:
        for line in Path("/proc/mounts").read_text().splitlines():
            parts = line.split()
            if str(tmp).startswith(parts[1]) and len(parts[1]) > len(best):
                best, kind = parts[1], parts[2]
    except OSError:
        pass
    info["tmp_filesystem"] = kind
    info["load_average_before"] = [round(x, 2) for x in os.getloadavg()]
    info["packages"] = {}
    for package in ("agentmem", "requests", "urllib3"):
        try:
            info["packages"][package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            info["packages"][package] = None
    return info


# --- the report ----------------------------------------------------------------------------------------------


def check_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    checks: list[dict[str, Any]] = []

    def add(what: str, value: float, goal: float, better: str, unit: str) -> None:
        met = value >= goal if better == "higher" else value <= goal
        checks.append({"target": what, "value": value, "goal": goal, "better": better, "unit": unit, "met": met})

    download = results["links"]["50 MB"]["download"]["mb_per_s_median"]
    add(f"50 MB download link ≥ {TARGETS['link_download_mb_per_s']:.0f} MB/s (median of runs)", download,
        TARGETS["link_download_mb_per_s"], "higher", "MB/s")
    for name in ("50 MB through links", "100 MB through links"):
        growth = results["phases"][name]["rss_growth_mb"]
        add(f"server RSS growth, {name} ≤ {TARGETS['link_rss_growth_mb']:.0f} MB", growth,
            TARGETS["link_rss_growth_mb"], "lower", "MB")
    return checks


def _rows(results: dict[str, Any]) -> list[tuple[str, str, dict[str, Any], str]]:
    """(file size, how, figures, kind) for every transfer row; kind "requests" or "runs"."""
    rows: list[tuple[str, str, dict[str, Any], str]] = []
    for label, figures in results["api"].items():
        rows.append((label, "API: PUT .../workspace/files/{path}", figures["write"], "requests"))
        rows.append((label, "API: GET .../workspace/files/{path}", figures["read"], "requests"))
    for label, figures in results["links"].items():
        rows.append((label, "upload link: PUT", figures["upload"], "runs"))
        rows.append((label, "download link: GET, streamed", figures["download"], "runs"))
        if "disk_write_fsync" in figures:
            rows.append((label, "no server: write + fsync, same disk", figures["disk_write_fsync"], "runs"))
    for label, figures in results["sdk"].items():
        rows.append((label, "SDK: Workspace.upload from a file", figures["upload"], "runs"))
        rows.append((label, "SDK: Workspace.download to a file", figures["download"], "runs"))
    api_max = results["api_max"]
    label = f"{api_max['size_bytes'] / MB:g} MB"
    rows.append((label, "API: PUT (the largest it takes)", api_max["write"], "runs"))
    rows.append((label, "API: GET", api_max["read"], "runs"))
    return rows


def _value_text(check: dict[str, Any]) -> str:
    return f"{check['value']:,.1f} {check['unit']}"


def print_report(results: dict[str, Any]) -> None:
    info = results["machine"]
    print()
    print(f"agentmem workspaces benchmark ({'quick' if results['quick'] else 'full'} run, {info['date']})")
    print(f"{info['cpu_count']} CPUs ({info['cpu_model']}), Python {info['python']}, {info['platform']}, "
          f"temporary files on {info['tmp_filesystem']}")
    print()
    print("Transfers to and from `agentmem serve` on loopback (one client thread, keep-alive)")
    header = (f"{'file':>6}  {'how':<38} {'n':>5} {'MB/s':>9} {'files/s':>9} {'p50 ms':>9} {'p95 ms':>9} "
              f"{'p99 ms':>9}")
    print(header)
    print("-" * len(header))
    for label, how, row, kind in _rows(results):
        if kind == "requests":
            print(f"{label:>6}  {how:<38} {row['n']:>5} {row['mb_per_s']:>9,.1f} {row['files_per_s']:>9,.0f} "
                  f"{row['p50_ms']:>9.2f} {row['p95_ms']:>9.2f} {row['p99_ms']:>9.2f}")
        else:
            seconds = sorted(row["seconds"])
            print(f"{label:>6}  {how:<38} {row['runs']:>5} {row['mb_per_s_median']:>9,.1f} "
                  f"{1 / statistics.median(seconds):>9,.1f} {statistics.median(seconds) * 1000:>9.1f} "
                  f"{'':>9} {'':>9}   (MB/s {row['mb_per_s_min']:,.0f}–{row['mb_per_s_max']:,.0f})")
    links = results["links"]["50 MB"]
    print(f"(asking for a link: {links['upload']['link_request_ms_median']:.2f} ms for an upload link, "
          f"{links['download']['link_request_ms_median']:.2f} ms for a download link, median; not in the MB/s)")
    print()
    print("The server's resident memory (VmRSS; MB)")
    h2 = f"{'phase':<24} {'before':>8} {'peak':>8} {'after':>8} {'growth':>8} {'VmHWM':>14} {'server CPU s':>13}"
    print(h2)
    print("-" * len(h2))
    for name, row in results["phases"].items():
        print(f"{name:<24} {row['rss_before_mb']:>8.1f} {row['rss_peak_mb']:>8.1f} {row['rss_after_mb']:>8.1f} "
              f"{row['rss_growth_mb']:>+8.1f} {row['hwm_before_mb']:>6.1f} → {row['hwm_after_mb']:<5.1f} "
              f"{row['server_cpu_s']:>13.2f}")
    print()
    print_targets(results["targets"], _value_text, width=60)


def markdown(results: dict[str, Any]) -> str:
    """The run's figures as the Markdown tables docs/benchmarks.md shows between its bench markers."""
    info = results["machine"]
    load = ", ".join(f"{x:.2f}" for x in info["load_average_before"])
    out = [f"Run of {info['date']} ({'quick' if results['quick'] else 'full'}, {results['seconds']} s): "
           f"{info['cpu_count']} CPUs ({info['cpu_model']}), {info['memory_gb']} GB, Python {info['python']}, "
           f"{info['platform']}, temporary files on {info['tmp_filesystem']}; requests "
           f"{info['packages']['requests']}, urllib3 {info['packages']['urllib3']}; load average {load} "
           "before the start.", ""]
    out += ["**Through the API** (one request per file, keep-alive; MB/s and files/s of the timed loop)", "",
            "| file | request | n | MB/s | files/s | p50 ms | p95 ms | p99 ms |",
            "|--:|---|--:|--:|--:|--:|--:|--:|"]
    for label, how, row, kind in _rows(results):
        if kind == "requests":
            out.append(f"| {label} | {how.removeprefix('API: ')} | {row['n']:,} | {row['mb_per_s']:,.1f} | "
                       f"{row['files_per_s']:,.0f} | {row['p50_ms']:.2f} | {row['p95_ms']:.2f} | "
                       f"{row['p99_ms']:.2f} |")
    out += ["", "**Large files** (each run one file; MB/s of the transfer, median of the runs, with the slowest "
            "and fastest)", "",
            "| file | how | runs | MB/s, median | MB/s, min–max | seconds, median |", "|--:|---|--:|--:|--:|--:|"]
    for label, how, row, kind in _rows(results):
        if kind == "runs":
            out.append(f"| {label} | {how} | {row['runs']} | {row['mb_per_s_median']:,.1f} | "
                       f"{row['mb_per_s_min']:,.0f}–{row['mb_per_s_max']:,.0f} | "
                       f"{statistics.median(row['seconds']):.3f} |")
    links = results["links"]["50 MB"]
    out += ["", f"Asking for the link (`POST .../workspace/links`), not counted above: "
            f"{links['upload']['link_request_ms_median']:.2f} ms for an upload link, "
            f"{links['download']['link_request_ms_median']:.2f} ms for a download link (median)."]
    out += ["", "**The server's resident memory** (MB; `VmRSS` sampled every "
            f"{results['setup']['sample_every_ms']:.0f} ms; growth = peak in the phase − before it; `VmHWM` is the "
            "kernel's high-water mark since the server started)", "",
            "| phase | before | peak | after | growth | VmHWM before → after | server CPU s |",
            "|---|--:|--:|--:|--:|--:|--:|"]
    for name, row in results["phases"].items():
        out.append(f"| {name} | {row['rss_before_mb']:.1f} | {row['rss_peak_mb']:.1f} | {row['rss_after_mb']:.1f} | "
                   f"{row['rss_growth_mb']:+.1f} | {row['hwm_before_mb']:.1f} → {row['hwm_after_mb']:.1f} | "
                   f"{row['server_cpu_s']:.2f} |")
    out += targets_markdown(results["targets"], _value_text)
    return "\n".join(out) + "\n"


def update_docs(results: dict[str, Any], path: Path) -> bool:
    """Replace the generated block of docs/benchmarks.md with this run's tables; False if there is none."""
    return replace_block(path, DOCS_BEGIN, DOCS_END, markdown(results))


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(15, 5.8), gridspec_kw={"width_ratios": [1.25, 1]})
    rows = _rows(results)
    labels, values, notes, colours = [], [], [], []
    palette = {"API": "#1f77b4", "upload link": "#2ca02c", "download link": "#2ca02c", "SDK": "#9467bd",
               "no server": "#bcbcbc"}
    for label, how, row, kind in rows:
        labels.append(f"{label} · {how}")
        if kind == "requests":
            values.append(row["mb_per_s"])
            notes.append(f" {row['mb_per_s']:,.1f} MB/s · {row['files_per_s']:,.0f} files/s · "
                         f"p50 {row['p50_ms']:.2f} ms")
        else:
            values.append(row["mb_per_s_median"])
            notes.append(f" {row['mb_per_s_median']:,.0f} MB/s (median of {row['runs']})")
        colours.append(next((c for prefix, c in palette.items() if how.startswith(prefix)), "#7f7f7f"))
    y = list(range(len(rows)))
    bars = ax.barh(y, values, 0.65, color=colours)
    for bar, note in zip(bars, notes, strict=True):
        ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, note, va="center", fontsize=7)
    ax.set_xscale("log")
    ax.set_xlim(min(values) / 2, max(values) * 30)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=7.5)
    ax.invert_yaxis()
    goal = TARGETS["link_download_mb_per_s"]
    ax.axvline(goal, color="grey", linestyle=":", linewidth=1)
    ax.text(goal, len(rows) - 0.4, f" target for the 50 MB download link: {goal:.0f} MB/s", fontsize=7,
            color="grey", va="top")
    ax.set_xlabel("MB/s (log scale); 1 MB = 2^20 bytes")
    ax.set_title("Throughput through `agentmem serve` on loopback, one client thread")
    ax.grid(axis="x", which="both", alpha=0.2)

    # Each phase gets the same width (time runs linearly inside it), so the short link phases show as well as
    # the long runs of small files.
    phases = list(results["phases"].items())

    def x_of(t: float) -> float:
        for i, (_, row) in enumerate(phases):
            if t <= row["end_s"] or i == len(phases) - 1:
                span = max(float(row["end_s"]) - float(row["start_s"]), 1e-9)
                return i + min(1.0, max(0.0, (t - float(row["start_s"])) / span))
        return float(len(phases))

    samples = [s for s in results["rss_samples"] if phases[0][1]["start_s"] <= s[0] <= phases[-1][1]["end_s"]]
    bx.plot([x_of(s[0]) for s in samples], [s[1] for s in samples], color="#d62728", linewidth=1)
    shades = ["#f0f0f0", "#dcdcdc"]
    names = [name for name, _ in phases]
    biggest = results["phases"]["100 MB through links"]
    size_mb = results["links"]["100 MB"]["size_bytes"] / MB
    top = max(max(s[1] for s in samples), biggest["rss_before_mb"] + size_mb) * 1.2
    # the scale: what the server's memory would have grown by had it held the 100 MB file
    middle = names.index("100 MB through links") + 0.5
    bx.annotate("", xy=(middle, biggest["rss_before_mb"] + size_mb), xytext=(middle, biggest["rss_before_mb"]),
                arrowprops={"arrowstyle": "|-|", "color": "grey", "linewidth": 1, "shrinkA": 0, "shrinkB": 0})
    bx.text(middle, biggest["rss_before_mb"] + size_mb + 2, f"{size_mb:.0f} MB:\nthe file's size", fontsize=7,
            color="grey", va="bottom", ha="center")
    for i, (_, row) in enumerate(phases):
        bx.axvspan(i, i + 1, color=shades[i % 2], zorder=0)
        bx.text(i + 0.5, 2, f"{row['end_s'] - row['start_s']:.1f} s", ha="center", va="bottom", fontsize=6.5,
                color="grey")
    bx.set_xlim(0, len(phases))
    bx.set_xticks([i + 0.5 for i in range(len(phases))])
    bx.set_xticklabels([name.replace(" through ", "\nthrough ") for name in names], fontsize=6.5)
    bx.set_ylim(0, top)
    bx.set_xlabel("phases in order, each drawn the same width (its duration at the bottom)")
    bx.set_ylabel("server resident memory (VmRSS), MB")
    bx.set_title(f"The server's memory, sampled every {results['setup']['sample_every_ms']:.0f} ms")
    bx.grid(axis="y", alpha=0.2)
    info = results["machine"]
    fig.text(0.01, 0.01, f"{info['cpu_count']} CPUs {info['cpu_model']}, Python {info['python']}, "
             f"{info['tmp_filesystem']}, {info['date']}", fontsize=7, color="grey")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples and runs, no docs update (about 10 s)")
    parser.add_argument("--replot", type=Path, metavar="JSON",
                        help="print the table and redraw the plot of an earlier run's results, measuring nothing")
    parser.add_argument("--markdown", type=Path, metavar="JSON",
                        help="print an earlier run's figures as the Markdown tables docs/benchmarks.md shows")
    args = parser.parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(args.markdown.read_text())), end="")
        return 0
    out_dir = ROOT / "bench" / "results"
    if args.replot:
        saved = json.loads(args.replot.read_text())
        print_report(saved)
        png = out_dir / "workspaces-quick.png" if saved["quick"] else ROOT / "docs" / "img" / "workspaces.png"
        plot(saved, png)
        print(f"redrew {png.relative_to(ROOT)}")
        return 0
    results = run(QUICK if args.quick else FULL, args.quick)
    print_report(results)
    out_dir.mkdir(parents=True, exist_ok=True)
    if args.quick:
        json_path, png_path = out_dir / "workspaces-quick.json", out_dir / "workspaces-quick.png"
    else:
        json_path, png_path = out_dir / "workspaces.json", ROOT / "docs" / "img" / "workspaces.png"
    json_path.write_text(json.dumps(results, indent=2) + "\n")
    plot(results, png_path)
    print(f"wrote {json_path.relative_to(ROOT)} and {png_path.relative_to(ROOT)} in {results['seconds']} s")
    docs = ROOT / "docs" / "benchmarks.md"
    if not args.quick and update_docs(results, docs):
        print(f"updated the tables in {docs.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
