"""Load: concurrent clients on the local server, on the embedded backend and in AWS mode on the emulators.

    .venv/bin/python bench/load.py                    # both backends, 1, 4, 16 and 64 clients, 15 s each
    .venv/bin/python bench/load.py --backends embedded --seconds 5

Starts ``agentmem serve`` (a data dir of its own) and ``agentmem serve-emulated`` (DynamoDB Local and moto's
S3) in subprocesses, then, for each number of clients, runs that many client threads for a fixed time, each
with its own HTTP connection, conversation and entry names, doing a mix of what an agent does on a turn:
building the context (30 %), appending two messages (30 %), saving an entry (25 %) and recalling (15 %).
Every answer that is not a 2xx counts as an error. After each run every acknowledged write is read back: every
appended message, once, in the order acknowledged, and every saved entry with the content of its last
acknowledged save. Prints a table, writes ``bench/results/load.json`` and the plot ``docs/img/load.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from serving import free_port, wait_healthy  # noqa: E402

AGENTMEM = Path(sys.executable).with_name("agentmem")
CLIENTS = (1, 4, 16, 64)
MIX = {"context": 30, "append": 30, "save": 25, "recall": 15}
NAMES_PER_CLIENT = 4  # entries each client overwrites (64 clients x 4 stay under a layer's 500)
WORDS = ("refund", "invoice", "plan", "team", "billing", "yearly", "seat", "upgrade", "support", "order")
RESULTS = ROOT / "bench" / "results" / "load.json"
PLOT = ROOT / "docs" / "img" / "load.png"


@dataclass
class Client:
    """One client's session, what it measured and what the server acknowledged."""

    number: int
    agent: str
    session: requests.Session
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: list[str] = field(default_factory=list)
    appended: list[str] = field(default_factory=list)  # client ids, in the order acknowledged
    saved: dict[str, str] = field(default_factory=dict)  # name -> content of the last acknowledged save

    @property
    def conversation(self) -> str:
        return f"load-{self.number}"


def run_client(base: str, client: Client, stop: float, rng: random.Random) -> None:
    ops, weights = zip(*MIX.items(), strict=True)
    agent = f"{base}/v1/agents/{client.agent}"
    n = 0
    while time.monotonic() < stop:
        n += 1
        op = rng.choices(ops, weights)[0]
        started = time.perf_counter()
        try:
            if op == "context":
                response = client.session.get(f"{agent}/conversations/{client.conversation}/context", timeout=30)
            elif op == "append":
                ids = [f"{client.number}-{n}-{i}" for i in range(2)]
                rows = [{"role": "user", "content": f"Can I get a {rng.choice(WORDS)} for order {n}?",
                         "client_id": ids[0]},
                        {"role": "assistant", "content": f"Yes: the {rng.choice(WORDS)} is on its way.",
                         "client_id": ids[1]}]
                response = client.session.post(f"{agent}/conversations/{client.conversation}/messages",
                                               json={"messages": rows}, timeout=30)
            elif op == "save":
                name = f"c{client.number}-note-{n % NAMES_PER_CLIENT}"
                content = f"Client {client.number} wrote {n}: the {rng.choice(WORDS)} {rng.choice(WORDS)}."
                response = client.session.put(f"{base}/v1/memories/agent:{client.agent}/entries/{name}",
                                              json={"content": content, "description": f"note {name}"}, timeout=30)
            else:
                response = client.session.get(f"{agent}/search", params={"q": " ".join(rng.sample(WORDS, 2))},
                                              timeout=30)
        except requests.RequestException as error:
            client.errors.append(f"{op}: {type(error).__name__}")
            continue
        elapsed = time.perf_counter() - started
        if response.status_code >= 300:
            client.errors.append(f"{op}: {response.status_code} {response.text[:120]}")
            continue
        client.latencies[op].append(elapsed)
        if op == "append":
            client.appended.extend(ids)
        elif op == "save":
            client.saved[name] = content


def lost_writes(base: str, client: Client) -> list[str]:
    """Every acknowledged write read back: the conversation's messages (each once, in order) and the entries."""
    lost: list[str] = []
    agent = f"{base}/v1/agents/{client.agent}"
    seen: list[str] = []
    after = 0
    while True:
        page = client.session.get(f"{agent}/conversations/{client.conversation}/messages",
                                  params={"after": after, "limit": 1000}, timeout=60)
        if page.status_code == 404 and not client.appended:
            break
        page.raise_for_status()
        body = page.json()
        seen += [m["client_id"] for m in body["items"]]
        if not body.get("next_cursor"):
            break
        after = int(body["next_cursor"])
    if seen != client.appended:
        lost.append(f"{client.conversation}: {len(client.appended)} messages acknowledged, {len(seen)} read back"
                    f"{'' if set(seen) >= set(client.appended) else ' (some missing)'}")
    for name, content in client.saved.items():
        read = client.session.get(f"{base}/v1/memories/agent:{client.agent}/entries/{name}", timeout=60)
        if read.status_code != 200 or read.json().get("content") != content:
            lost.append(f"{name}: not its last acknowledged content")
    return lost


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def run_level(base: str, key: str, clients: int, seconds: float, seed: int) -> dict[str, Any]:
    agent = f"load-{clients}-{uuid.uuid4().hex[:6]}"
    with requests.Session() as admin:
        admin.headers["Authorization"] = f"Bearer {key}"
        admin.put(f"{base}/v1/agents/{agent}", json={}, timeout=30).raise_for_status()
    sessions = []
    for number in range(clients):
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {key}"
        sessions.append(Client(number, agent, session))
    stop = time.monotonic() + seconds
    threads = [threading.Thread(target=run_client, args=(base, c, stop, random.Random(seed * 1000 + c.number)))
               for c in sessions]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - started
    lost = [problem for c in sessions for problem in lost_writes(base, c)]
    for c in sessions:
        c.session.close()
    by_op: dict[str, list[float]] = defaultdict(list)
    for c in sessions:
        for op, values in c.latencies.items():
            by_op[op] += values
    every = [v for values in by_op.values() for v in values]
    errors = [e for c in sessions for e in c.errors]
    return {
        "clients": clients, "seconds": round(wall, 1), "requests": len(every) + len(errors),
        "throughput_rps": round(len(every) / wall, 1),
        "p50_ms": round(percentile(every, 0.50) * 1000, 1), "p99_ms": round(percentile(every, 0.99) * 1000, 1),
        "errors": len(errors), "error_examples": sorted(set(errors))[:5],
        "acknowledged_messages": sum(len(c.appended) for c in sessions),
        "acknowledged_entries": sum(len(c.saved) for c in sessions), "lost_writes": len(lost), "lost": lost[:5],
        "by_operation": {op: {"requests": len(v), "p50_ms": round(percentile(v, 0.5) * 1000, 1),
                              "p99_ms": round(percentile(v, 0.99) * 1000, 1)} for op, v in sorted(by_op.items())},
    }


@contextmanager
def server(backend: str, workdir: Path) -> Iterator[tuple[str, str]]:
    """``agentmem serve`` (embedded) or ``agentmem serve-emulated`` (AWS mode) on a free port: (URL, key)."""
    with started(backend, workdir) as (url, key, _):
        yield url, key


@contextmanager
def started(backend: str, workdir: Path, extra_args: Sequence[str] = (),
            settings: Mapping[str, str] | None = None,
            command: Sequence[str] = ()) -> Iterator[tuple[str, str, subprocess.Popen[bytes]]]:
    """The same, with more arguments for the command and ``AGENTMEM_*`` settings for its environment:
    (URL, key, the server's process). ``command``: what runs in place of the ``agentmem`` executable (the
    same arguments follow it)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    env.update(settings or {})
    if backend == "embedded":
        args, key_file = ["serve", "--data-dir", str(workdir / "data")], workdir / "data" / "dev-key"
    else:
        env = {k: v for k, v in env.items() if not k.startswith("AWS_")}
        args, key_file = ["serve-emulated", "--data-dir", str(workdir / "aws")], workdir / "aws" / "dev-key"
    log = workdir / f"{backend}.log"
    with log.open("wb") as out:
        process = subprocess.Popen([*(command or [str(AGENTMEM)]), *args, "--port", str(port), *extra_args],
                                   cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(process, url, log.read_text, timeout=180)
        yield url, key_file.read_text().strip(), process
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


def plot(results: dict[str, list[dict[str, Any]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for backend, levels in results.items():
        clients = [level["clients"] for level in levels]
        left.plot(clients, [level["throughput_rps"] for level in levels], marker="o", label=backend)
        right.plot(clients, [level["p50_ms"] for level in levels], marker="o", label=f"{backend} p50")
        right.plot(clients, [level["p99_ms"] for level in levels], marker="s", linestyle="--", label=f"{backend} p99")
    for axis, title, unit in ((left, "Throughput", "requests/s"), (right, "Latency", "ms")):
        axis.set_xscale("log", base=2)
        axis.set_xticks(list(CLIENTS), [str(c) for c in CLIENTS])
        axis.set_xlabel("concurrent clients")
        axis.set_ylabel(unit)
        axis.set_title(title)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    right.set_yscale("log")
    figure.suptitle("agentmem serve under load (context, append, save, recall; a shared 2-core machine)", fontsize=10)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=["embedded", "aws"], choices=["embedded", "aws"])
    parser.add_argument("--clients", nargs="+", type=int, default=list(CLIENTS))
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds of load before measuring")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--plot", type=Path, default=PLOT)
    args = parser.parse_args()
    results: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.backends:
            workdir = Path(tmp) / backend
            workdir.mkdir()
            with server(backend, workdir) as (url, key):
                run_level(url, key, 4, args.warmup, args.seed)  # not kept: models and caches load on first use
                results[backend] = [run_level(url, key, n, args.seconds, args.seed) for n in args.clients]
    print(f"{'backend':<10}{'clients':>8}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}{'acked':>8}{'lost':>6}")
    for backend, levels in results.items():
        for level in levels:
            acked = level["acknowledged_messages"] + level["acknowledged_entries"]
            print(f"{backend:<10}{level['clients']:>8}{level['throughput_rps']:>9}{level['p50_ms']:>9}"
                  f"{level['p99_ms']:>9}{level['errors']:>8}{acked:>8}{level['lost_writes']:>6}")
            for example in level["error_examples"] + level["lost"]:
                print("    " + example)
    load = os.getloadavg()
    document = {"seconds_per_level": args.seconds, "mix_percent": MIX, "results": results,
                "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                            "python": platform.python_version(),
                            "load_average_after": [round(x, 2) for x in load],
                            "note": "a 2-core machine shared with other work while measured"}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n")
    plot(results, args.plot)
    bad = any(level["errors"] or level["lost_writes"] for levels in results.values() for level in levels)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
