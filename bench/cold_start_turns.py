"""Cold start before and after a change, in turns: this tree's handlers against another tree's.

    git archive 6011625 | tar -x -C /tmp/before                        # the tree to compare with
    .venv/bin/python bench/cold_start_turns.py /tmp/before --runs 15

A shared machine's load moves every median of ``bench/cold_start.py`` from one run to the next, so a change is
measured here with both trees in the same run: one import of each measure in turn, ``--runs`` times, each in
a fresh interpreter exactly as ``bench/cold_start.py`` times it (``-S``, Lambda's environment, the package layer
staged and compiled as the CDK stages it, one build of the dependency layer for this machine). Each tree
imports its own ``functions`` and its own package; a tree that still has an MCP layer recipe
(``layers/mcp``, before ``/v1/mcp`` stopped importing the ``mcp`` SDK) gets that layer too, built by its own
``layers/deps/build.sh`` on top of the dependency layer, as its MCP function had it.

Prints wall time (median, fastest) and the CPU time of each import, with the load average before and after,
and writes ``bench/results/cold_start_turns.json``. Timings are never asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from cold_start import LAMBDA_ENV, importing_interpreter, layer_for, machine_architecture  # noqa: E402

from infra.layer_build import stage_package_layer  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "cold_start_turns.json"
MODULES = ("functions.mcp.handler", "functions.api.handler")


def mcp_layer(tree: Path, deps: Path, work: Path, python: str) -> Path | None:
    """The MCP layer of a tree that has its recipe, built by the tree's own build script on ``deps``."""
    recipe = tree / "layers" / "mcp"
    if not (recipe / "requirements.txt").is_file():
        return None
    into = work / f"mcp-{tree.name}"
    env = {**os.environ, "PYTHON": sys.executable, "LAYER_PYTHON": python, "BYTECODE": "1"}
    command = ["bash", str(tree / "layers" / "deps" / "build.sh"), machine_architecture(), str(into / "python"),
               str(recipe), str(deps / "python")]
    print(f"building {tree}'s MCP layer in {into} ...", flush=True)
    subprocess.run(command, env=env, check=True, capture_output=True)
    return into


def tree_env(tree: Path, core: Path, deps: Path, mcp: Path | None) -> dict[str, str]:
    folders = [tree, core / "python", deps / "python", *([mcp / "python"] if mcp else [])]
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "TMPDIR")}
    return {**keep, **LAMBDA_ENV, "PYTHONPATH": os.pathsep.join(map(str, folders)), "PYTHONDONTWRITEBYTECODE": "1"}


def timed(python: str, module: str, tree: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU milliseconds of ``import module`` in a fresh interpreter started in ``tree`` (so its
    ``functions`` is the one imported)."""
    code = (f"import time; t, c = time.perf_counter(), time.process_time(); import {module}; "
            "print(time.perf_counter() - t, time.process_time() - c)")
    done = subprocess.run([python, "-S", "-c", code], env=env, cwd=tree, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"import {module} failed in {tree}:\n{done.stderr[-3000:]}")
    wall, cpu = done.stdout.split()
    return float(wall) * 1000, float(cpu) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", type=Path, help="the other tree (a `git archive` of the commit to compare with)")
    parser.add_argument("--runs", type=int, default=15, help="imports of each measure (default 15)")
    args = parser.parse_args()
    interpreter = importing_interpreter()
    work = Path(tempfile.mkdtemp(prefix="agentmem-cold-start-turns-"))
    try:
        deps = layer_for(machine_architecture(), interpreter.version, work)
        version = tuple(int(part) for part in interpreter.version.split("."))
        measures: dict[str, tuple[str, Path, dict[str, str]]] = {}
        for label, tree in (("before", args.before.resolve()), ("after", ROOT)):
            core = work / f"core-{label}"
            stage_package_layer(tree / "layers" / "core", core, version)
            env = tree_env(tree, core, deps, mcp_layer(tree, deps, work, interpreter.version))
            for module in MODULES:
                measures[f"{module} {label}"] = (module, tree, env)
        for module, tree, env in measures.values():
            timed(interpreter.path, module, tree, env)  # warm the file cache
        load_before = os.getloadavg()
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in measures}
        for _ in range(args.runs):
            for name, (module, tree, env) in measures.items():
                samples[name].append(timed(interpreter.path, module, tree, env))
        load_after = os.getloadavg()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = {}
    for name, timed_runs in samples.items():
        wall, cpu = [w for w, _ in timed_runs], [c for _, c in timed_runs]
        rows[name] = {"wall_ms_median": round(statistics.median(wall), 1), "wall_ms_min": round(min(wall), 1),
                      "cpu_ms_median": round(statistics.median(cpu), 1), "cpu_ms_min": round(min(cpu), 1)}
    result = {"generated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "runs": args.runs,
              "python": interpreter.version, "before": str(args.before),
              "load_average_before": [round(x, 2) for x in load_before],
              "load_average_after": [round(x, 2) for x in load_after], "imports": rows}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nin turns, {args.runs} runs each, Python {interpreter.version}; load average "
          f"{' '.join(f'{x:.2f}' for x in load_before)} before, {' '.join(f'{x:.2f}' for x in load_after)} after")
    print(f"{'import':40} {'wall median':>12} {'fastest':>10} {'CPU median':>11} {'fastest':>9}")
    for name, row in rows.items():
        print(f"{name:40} {row['wall_ms_median']:>9.1f} ms {row['wall_ms_min']:>7.1f} ms "
              f"{row['cpu_ms_median']:>8.1f} ms {row['cpu_ms_min']:>6.1f} ms")
    print(f"\nwritten: {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
