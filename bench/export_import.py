"""Export and import benchmark: 10,000 entries through `agentmem export` and `agentmem import` on the embedded backend.

    .venv/bin/python bench/export_import.py                 # 20 memories x 500 entries (about 3 minutes on 2 cores)
    .venv/bin/python bench/export_import.py --entries 2000  # a smaller run

Starts two `agentmem serve` processes (this venv's console script) on free ports, each with a fresh data dir in a
temporary directory. Fills the first with memories of 500 entries each (the most a layer holds), 300–1,500
characters of content each, through the SDK, then times, each as one run of the CLI:

* `agentmem export -o FILE` of the whole account from the first server;
* `agentmem import --dry-run FILE` into the second (every entry would be created);
* `agentmem import FILE` into the second (every entry created);
* `agentmem import FILE` again (every entry unchanged: the idempotent re-import).

Prints a table and writes ``bench/results/export_import.json``. Timings are never asserted.
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
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "layers" / "core" / "python"))

from agentmem.client import Client  # noqa: E402
from serving import AGENTMEM, served_as_make_run  # noqa: E402

PER_MEMORY = 500
WORDS = ("refund", "invoice", "shipping", "parcel", "carrier", "receipt", "customer", "order", "week", "support",
         "billing", "tone", "warm", "brief", "policy", "days", "ticket", "answer", "promise", "team")


@contextmanager
def server(workdir: Path) -> Iterator[dict[str, str]]:
    workdir.mkdir(parents=True, exist_ok=True)
    with served_as_make_run(workdir) as env:
        yield env


def fill(env: dict[str, str], entries: int) -> None:
    client = Client(env["AGENTMEM_URL"], env["AGENTMEM_API_KEY"])
    rng = random.Random(7)
    jobs = []
    for m in range((entries + PER_MEMORY - 1) // PER_MEMORY):
        memory = client.memories.create(f"bench-{m:02d}")
        for n in range(min(PER_MEMORY, entries - m * PER_MEMORY)):
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(50, 250)))
            jobs.append((memory, f"note-{n:03d}", words[:1500]))
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda job: job[0].save(job[1], job[2], description=f"About {job[1]}"), jobs))


def timed(env: dict[str, str], *args: str) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run([str(AGENTMEM), *args], env=env, cwd=env["WORKDIR"], capture_output=True, text=True,
                          timeout=3600, check=False)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"agentmem {' '.join(args)}: {done.stderr}")
    return took, done.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    args = parser.parse_args()
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        with server(base / "source") as source, server(base / "target") as target:
            start = time.perf_counter()
            fill(source, args.entries)
            filled = time.perf_counter() - start
            file = base / "all.jsonl"
            for label, env, command in (
                ("export", source, ["export", "-o", str(file)]),
                ("import --dry-run (all new)", target, ["import", "--dry-run", str(file)]),
                ("import (all created)", target, ["import", str(file)]),
                ("import again (all unchanged)", target, ["import", str(file)]),
            ):
                took, said = timed(env, *command)
                rows.append({"step": label, "seconds": round(took, 2),
                             "entries_per_s": round(args.entries / took), "said": said})
            size = file.stat().st_size
    print(f"{args.entries:,} entries ({size / 1e6:.1f} MB of JSON Lines); filling through the SDK took {filled:.1f} s")
    print(f"{'step':<32}{'seconds':>9}{'entries/s':>11}")
    for row in rows:
        print(f"{row['step']:<32}{row['seconds']:>9}{row['entries_per_s']:>11}   {row['said']}")
    results = ROOT / "bench" / "results" / "export_import.json"
    results.parent.mkdir(exist_ok=True)
    results.write_text(json.dumps({
        "entries": args.entries, "file_bytes": size, "fill_seconds": round(filled, 1), "steps": rows,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "system": platform.platform()},
    }, indent=2) + "\n")


if __name__ == "__main__":
    main()
