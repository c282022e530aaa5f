"""Crash consistency of the embedded backend, with as many SIGKILLs as asked.

    .venv/bin/python bench/crash.py --kills 500

The writer and the check are those of ``tests/functional/test_crash_consistency.py`` (tests/support/crash_writer.py):
a process saving, deleting, appending (summary passes writing checkpoints behind), writing workspace files and
editing checkpoints, killed with SIGKILL at random moments; then the data dir is opened again and every
acknowledged write must be there, whole, with SQLite's, FTS5's and the vector index's checks clean. Prints a
table and writes ``bench/results/crash.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

import crash_writer  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "crash.json")
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir, journal = Path(tmp) / "data", Path(tmp) / "journal.jsonl"
        with (Path(tmp) / "writer.log").open("w") as log:
            proc = subprocess.Popen([sys.executable, crash_writer.__file__, str(data_dir), str(journal)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)
            assert proc.stdout is not None and proc.stdin is not None
            if proc.stdout.readline().strip() != "setup 0":
                raise SystemExit("the writer could not set up its data dir")
            killed = sum(crash_writer.kill_rounds(proc, args.kills, random.Random(args.seed)))
            proc.stdin.close()
            proc.wait(timeout=60)
        report = crash_writer.check(data_dir, journal)
    elapsed = time.monotonic() - started
    result = {"kills": killed, "rounds": args.kills, "seconds": round(elapsed, 1), "problems": report.problems,
              "counts": dict(report.counts), "machine": platform.platform(), "python": platform.python_version()}
    print(f"{'rounds':<40}{args.kills:>10}")
    print(f"{'killed mid-way (SIGKILL)':<40}{killed:>10}")
    for name, value in sorted(report.counts.items()):
        print(f"{name:<40}{value:>10}")
    print(f"{'problems':<40}{len(report.problems):>10}")
    for problem in report.problems:
        print("  " + problem)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 1 if report.problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
