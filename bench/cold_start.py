"""Cold start: how long the handlers take to import, and how big the Lambda layers are.

    .venv/bin/python bench/cold_start.py              # 7 fresh interpreters per handler
    .venv/bin/python bench/cold_start.py --runs 3     # quicker

What it measures, with the layers as Lambda would mount them:

* the package layer staged as the CDK stages it (``infra.layer_build``: no caches, hash-checked .pyc);
* the dependency layer every function has: ``layers/deps/python`` when it is built for the deployment
  architecture from the current lists (``make layers``), else built by ``layers/deps/build.sh`` into a
  temporary folder. Its unzipped and zipped sizes are the deployment's: the Lambda runtime's Python
  (``infra.config.LAMBDA_PYTHON``), arm64 by default. Imports run on this machine, so when its
  architecture differs from the deployment's, or it has no Python of the runtime's version
  (``infra.layer_build.runtime_python``: ``$RUNTIME_PYTHON`` or ``python3.X`` on the PATH), a second copy
  is built for this machine and the interpreter that imports: the runtime's Python when there is one, else
  this one (3.11), which the output then says. Without the runtime's Python the deployed copy cannot be
  compiled either: it is built without bytecode, and its size adds what the importable copy's bytecode
  weighs;
* ``import functions.api.handler``, the authorizer's handler and ``functions.mcp.handler`` (the MCP
  function's whole import) in fresh interpreters with ``PYTHONPATH`` = the repository (for
  ``functions``), the package layer, the dependency layer, and no site-packages (``-S``), so nothing from
  the development venv can stand in for a missing package: no function has the ``mcp`` SDK (``/v1/mcp``
  speaks MCP itself, ``agentmem.mcp_server.protocol``), and neither has this path. Then
  ``import agentmem.mcp_server.http`` after ``functions.api.handler`` (what MCP adds on top of the API
  handler). The environment says "Lambda" (``AWS_LAMBDA_FUNCTION_NAME``, ``LAMBDA_TASK_ROOT`` and
  friends) so the tracer (on, as on Lambda) and logger set up as they do there. Wall time is the median
  of ``--runs`` interpreters per measure, taken in turns across the measures (so a burst of load
  elsewhere hits them all alike), with the fastest run beside it; ``-X importtime`` of one more gives the
  per-module breakdown (its own overhead makes that total larger). The load average at the end is
  recorded: on a busy machine, quote the fastest runs.

Prints a table and writes ``bench/results/cold_start.json``. Timings are never asserted; the targets
(API handler import ≤ 300 ms, MCP function import ≤ 600 ms, dependency layer ≤ 60 MB unzipped) are printed
with a pass/miss mark; a function's layers together are shown against Lambda's 250 MB limit (function and
layers, unzipped).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import zipfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from infra.config import (  # noqa: E402
    DEPS_BUILT_DIR,
    DEPS_DIR,
    DEPS_MARKER,
    LAMBDA_PYTHON,
    stale_reason,
)
from infra.layer_build import runtime_python, stage_package_layer  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "cold_start.json"
BUILD_SCRIPT = ROOT / "layers" / "deps" / "build.sh"
TARGETS = {"api_import_ms": 300.0, "mcp_import_ms": 600.0, "deps_layer_unzipped_mb": 60.0}
LAMBDA_UNZIPPED_LIMIT_MB = 250.0  # a function's code and all its layers, unzipped (a Lambda quota)
HANDLERS = {"api": "functions.api.handler", "authorizer": "functions.authorizer.handler",
            "mcp": "functions.mcp.handler"}
MCP_SERVER = "agentmem.mcp_server.http"  # what /v1/mcp imports, measured on top of the API handler
TOP = 15
MB = 1024 * 1024

# what Lambda's environment tells the code at import time (values are placeholders)
LAMBDA_ENV = {
    "AWS_LAMBDA_FUNCTION_NAME": "agentmem-api",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
    "AWS_EXECUTION_ENV": f"AWS_Lambda_python{LAMBDA_PYTHON}",
    "LAMBDA_TASK_ROOT": "/var/task",  # the X-Ray SDK and Powertools' tracer take their Lambda paths (tracing on)
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "ASIABENCHMARK",  # never used: nothing is called at import
    "AWS_SECRET_ACCESS_KEY": "benchmark",
    "POWERTOOLS_SERVICE_NAME": "agentmem",
    "POWERTOOLS_METRICS_NAMESPACE": "agentmem",
    "PYDANTIC_DISABLE_PLUGINS": "__all__",  # as every function has it (infra.constructs.function.base_environment)
    "AGENTMEM_BACKEND": "aws",
    "AGENTMEM_TABLE": "agentmem-bench",
    "LANG": "C.UTF-8",
}


@dataclass(frozen=True)
class LayerDirs:
    core: Path  # holds python/agentmem, compiled for the importing interpreter
    deps_deployed: Path  # holds python/, for the deployment architecture and the Lambda runtime's Python
    deps_importable: Path  # holds python/, for this machine and the importing interpreter
    deployed_bytecode: bool  # False: no Python of the runtime's version here, the deployed copies are source only


@dataclass(frozen=True)
class Interpreter:
    """What imports the handlers: the runtime's Python when this machine has one, else this one (3.11)."""

    path: str
    version: str  # "3.13"
    is_runtime: bool


def importing_interpreter() -> Interpreter:
    found = runtime_python()
    if found is not None:
        return Interpreter(found, LAMBDA_PYTHON, True)
    return Interpreter(sys.executable, f"{sys.version_info[0]}.{sys.version_info[1]}", False)


def machine_architecture() -> str:
    return "arm64" if platform.machine().lower() in ("aarch64", "arm64") else "x86_64"


def built_for(folder: Path) -> dict[str, Any] | None:
    marker = folder / "python" / DEPS_MARKER if (folder / "python").is_dir() else folder / DEPS_MARKER
    return json.loads(marker.read_text()) if marker.is_file() else None


def usable(folder: Path, architecture: str) -> bool:
    """Built (with a marker) for ``architecture`` from the current lists, as synthesis would accept it."""
    found = built_for(folder)
    return found is not None and stale_reason(found, architecture) is None


def build_layer(architecture: str, into: Path, *, python: str = LAMBDA_PYTHON, bytecode: bool = True) -> Path:
    """``layers/deps/build.sh`` for Python ``python`` into ``into/python``; returns ``into``."""
    print(f"building the dependency layer for Python {python} on {architecture} in {into} ...", flush=True)
    command = ["bash", str(BUILD_SCRIPT), architecture, str(into / "python"), str(DEPS_DIR)]
    env = {**os.environ, "PYTHON": sys.executable, "LAYER_PYTHON": python, "BYTECODE": "1" if bytecode else "0"}
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"layers/deps/build.sh failed:\n{done.stderr[-3000:]}")
    return into


def layer_for(architecture: str, python: str, work: Path, *, bytecode: bool = True) -> Path:
    """The dependency layer for ``architecture`` and Python ``python``: the one ``make layers`` built when
    synthesis would take it, else built in ``work``."""
    deps = DEPS_BUILT_DIR.parent
    if not (python == LAMBDA_PYTHON and bytecode and usable(deps, architecture)):
        deps = build_layer(architecture, work / f"deps-{architecture}-py{python}", python=python, bytecode=bytecode)
    return deps


def prepare_layers(work: Path, architecture: str, interpreter: Interpreter) -> LayerDirs:
    core = work / "core"
    stage_package_layer(ROOT / "layers" / "core", core, tuple(int(p) for p in interpreter.version.split(".")))
    # without a Python of the runtime's version the deployed copies cannot be compiled: their sizes are
    # measured without bytecode, and the report adds what the importable copy's bytecode weighs
    deps = layer_for(architecture, LAMBDA_PYTHON, work, bytecode=interpreter.is_runtime)
    here = machine_architecture()
    same = here == architecture and interpreter.is_runtime
    deps_here = deps if same else layer_for(here, interpreter.version, work)
    return LayerDirs(core=core, deps_deployed=deps, deps_importable=deps_here,
                     deployed_bytecode=interpreter.is_runtime)


# -- sizes -----------------------------------------------------------------------------------------------

def layer_size(folder: Path, work: Path) -> dict[str, float]:
    """Unzipped (the files' bytes) and zipped (deflate, as the asset is uploaded) size of ``folder``."""
    files = [p for p in sorted(folder.rglob("*")) if p.is_file()]
    unzipped = sum(p.stat().st_size for p in files)
    archive = work / f"{folder.name}-{os.getpid()}.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        for path in files:
            zipped.write(path, path.relative_to(folder))
    size = {"unzipped_mb": round(unzipped / MB, 2), "zipped_mb": round(archive.stat().st_size / MB, 2),
            "files": len(files),
            "bytecode_mb": round(sum(p.stat().st_size for p in files if p.suffix == ".pyc") / MB, 2)}
    archive.unlink()
    return size


def biggest_packages(folder: Path, count: int = 8) -> list[tuple[str, float]]:
    sizes: dict[str, int] = defaultdict(int)
    python = folder / "python"
    for path in python.rglob("*"):
        if path.is_file():
            top = path.relative_to(python).parts[0]
            sizes[top.split("-")[0] if top.endswith(".dist-info") else top] += path.stat().st_size
    ranked = sorted(sizes.items(), key=lambda item: -item[1])[:count]
    return [(name, round(size / MB, 2)) for name, size in ranked]


# -- import time -----------------------------------------------------------------------------------------

def interpreter_env(layers: LayerDirs) -> dict[str, str]:
    """What a function's interpreter sees: its code and the two layers every function has."""
    folders = [ROOT, layers.core / "python", layers.deps_importable / "python"]
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "TMPDIR")}
    path = os.pathsep.join(str(folder) for folder in folders)
    return {**keep, **LAMBDA_ENV, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1"}


def timed_import(
    module: str, env: dict[str, str], after: str | None = None, python: str = sys.executable
) -> tuple[float, float]:
    """Milliseconds of ``import module`` in a fresh interpreter (once ``after`` is imported, untimed): wall
    time, and the CPU time the process spent in it (which load elsewhere on the machine inflates far less)."""
    first = f"import {after}; " if after else ""
    code = (f"import time; {first}t, c = time.perf_counter(), time.process_time(); import {module}; "
            "print(time.perf_counter() - t, time.process_time() - c)")
    done = subprocess.run([python, "-S", "-c", code], env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"import {module} failed in a fresh interpreter:\n{done.stderr[-3000:]}")
    wall, cpu = done.stdout.strip().splitlines()[-1].split()
    return float(wall) * 1000, float(cpu) * 1000


def import_profile(
    module: str, env: dict[str, str], after: str | None = None, python: str = sys.executable
) -> list[tuple[int, int, int, str]]:
    """``-X importtime`` rows: (self µs, cumulative µs, depth, module); with ``after``, only the rows
    ``import module`` adds once ``after`` is imported (a module is listed once, when first imported)."""
    code = (f"import {after}; " if after else "") + f"import {module}"
    done = subprocess.run(
        [python, "-S", "-X", "importtime", "-c", code], env=env, cwd=ROOT,
        capture_output=True, text=True, check=True,
    )
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative_us, name = line.removeprefix("import time:").split("|", 2)
        depth = (len(name) - len(name.lstrip(" "))) // 2
        rows.append((int(self_us), int(cumulative_us), depth, name.strip()))
    if after:
        # the rows of `after` end with its own row at depth 0; what follows is `module`'s addition
        ends = [i for i, row in enumerate(rows) if row[2] == 0 and row[3] == after]
        rows = rows[ends[-1] + 1:] if ends else rows
    return rows


def by_package(rows: list[tuple[int, int, int, str]]) -> list[tuple[str, float]]:
    """Self time summed per top-level package: which libraries the import time goes to."""
    totals: dict[str, int] = defaultdict(int)
    for self_us, _, _, name in rows:
        totals[name.split(".")[0]] += self_us
    ranked = sorted(totals.items(), key=lambda item: -item[1])[:TOP]
    return [(name, round(us / 1000, 1)) for name, us in ranked]


@dataclass(frozen=True)
class Measure:
    module: str
    env: dict[str, str]
    after: str | None = None  # imported first, untimed
    python: str = sys.executable  # the interpreter that imports it


def measure_all(measures: dict[str, Measure], runs: int) -> dict[str, dict[str, Any]]:
    """Each measure's samples, taken in turns (one of each, ``runs`` times) so that a burst of load from
    elsewhere on the machine spreads over all of them instead of landing on one."""
    for m in measures.values():
        # warm the file cache, as a second cold start on the same host would be
        timed_import(m.module, m.env, m.after, m.python)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in measures}
    for _ in range(runs):
        for name, m in measures.items():
            samples[name].append(timed_import(m.module, m.env, m.after, m.python))
    return {name: summarise(m, samples[name]) for name, m in measures.items()}


def summarise(m: Measure, timed: list[tuple[float, float]]) -> dict[str, Any]:
    samples, cpu = [wall for wall, _ in timed], [used for _, used in timed]
    rows = import_profile(m.module, m.env, m.after, m.python)
    top = sorted(rows, key=lambda row: -row[1])[:TOP]
    return {
        "module": m.module,
        **({"on_top_of": m.after} if m.after else {}),
        "import_ms_median": round(statistics.median(samples), 1),
        "import_ms_min": round(min(samples), 1),  # load elsewhere only ever adds time
        "import_ms_samples": [round(s, 1) for s in samples],
        "import_cpu_ms_median": round(statistics.median(cpu), 1),
        "import_cpu_ms_min": round(min(cpu), 1),
        "importtime_total_ms": round(sum(row[0] for row in rows) / 1000, 1),
        "modules_imported": len(rows),
        "top_cumulative": [
            {"module": name, "cumulative_ms": round(cum / 1000, 1), "self_ms": round(own / 1000, 1), "depth": depth}
            for own, cum, depth, name in top
        ],
        "self_ms_by_package": [{"package": name, "self_ms": ms} for name, ms in by_package(rows)],
    }


# -- report ----------------------------------------------------------------------------------------------

def mark(value: float, target: float) -> str:
    return "pass" if value <= target else "MISS"


W = 56  # width of the measure column


def report(result: dict[str, Any]) -> None:
    api, on_top = result["handlers"]["api"], result["mcp_on_top_of_api"]
    layers = result["layers"]
    deps, core = layers["deps"], layers["core"]
    print()
    print(f"cold start — imports on Python {result['python']} on {result['machine']}; deployment: Python "
          f"{result['lambda_python']} on {result['architecture']}")
    if not result["imports_on_the_runtime_python"]:
        print(f"(no Python {result['lambda_python']} here: the layers were built for {result['python']} to import; "
              f"the deployed layers' sizes add the bytecode of that copy)")
    print(f"load average after the run (1, 5, 15 min): {', '.join(map(str, result['load_average_after']))}")
    print(f"{'measure':{W}} {'value':>12} {'target':>10}  ")
    print("-" * (W + 28))
    for name, handler in result["handlers"].items():
        target = {"api": TARGETS["api_import_ms"], "mcp": TARGETS["mcp_import_ms"]}.get(name)
        value = handler["import_ms_median"]
        shown = f"{f'≤ {target:.0f} ms':>10}  {mark(value, target)}" if target else ""
        print(f"{'import ' + handler['module'] + ' (median)':{W}} {value:>9.1f} ms {shown}")
        print(f"{'  fastest of the runs':{W}} {handler['import_ms_min']:>9.1f} ms")
        print(f"{'  CPU time of the import (median, fastest)':{W}} {handler['import_cpu_ms_median']:>9.1f} ms "
              f"{handler['import_cpu_ms_min']:>7.1f} ms")
        print(f"{'  same, under -X importtime (sum of self)':{W}} {handler['importtime_total_ms']:>9.1f} ms")
    print(f"{'import ' + on_top['module'] + ' after the API handler':{W}} {on_top['import_ms_median']:>9.1f} ms")
    print(f"{'  fastest of the runs':{W}} {on_top['import_ms_min']:>9.1f} ms")
    print(f"{'  CPU time of the import (median, fastest)':{W}} {on_top['import_cpu_ms_median']:>9.1f} ms "
          f"{on_top['import_cpu_ms_min']:>7.1f} ms")
    print(f"{'  same, under -X importtime (sum of self)':{W}} {on_top['importtime_total_ms']:>9.1f} ms")
    print(f"{'dependency layer (every function), unzipped':{W}} {deps['unzipped_mb']:>9.1f} MB {'≤ 60 MB':>10}  "
          f"{mark(deps['unzipped_mb'], TARGETS['deps_layer_unzipped_mb'])}")
    print(f"{'dependency layer, zipped':{W}} {deps['zipped_mb']:>9.1f} MB")
    print(f"{'package layer (agentmem + .pyc), unzipped':{W}} {core['unzipped_mb']:>9.1f} MB")
    print(f"{'package layer, zipped':{W}} {core['zipped_mb']:>9.1f} MB")
    total = layers["function_unzipped_mb"]
    print(f"{'a function (MCP too): its two layers together, unzipped':{W}} {total:>9.1f} MB "
          f"{f'≤ {LAMBDA_UNZIPPED_LIMIT_MB:.0f} MB':>10}  {mark(total, LAMBDA_UNZIPPED_LIMIT_MB)} (Lambda's limit)")
    print()
    print(f"top {TOP} imports of the API handler by cumulative time (one -X importtime run):")
    for row in api["top_cumulative"]:
        print(f"  {row['cumulative_ms']:>8.1f} ms  (self {row['self_ms']:>6.1f})  {'  ' * row['depth']}{row['module']}")
    print()
    print("API handler import, self time by top-level package:")
    for row in api["self_ms_by_package"]:
        print(f"  {row['self_ms']:>8.1f} ms  {row['package']}")
    print()
    print(f"{on_top['module']} on top of the API handler, self time by top-level package:")
    for row in on_top["self_ms_by_package"]:
        print(f"  {row['self_ms']:>8.1f} ms  {row['package']}")
    print()
    print("largest packages of the dependency layer (MB): "
          + ", ".join(f"{name} {size}" for name, size in layers["deps_biggest"]))
    print(f"\nwritten: {RESULTS.relative_to(ROOT)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="fresh interpreters per handler (default 7)")
    parser.add_argument("--architecture", default="arm64", choices=["arm64", "x86_64"],
                        help="the deployment's architecture, for the layer sizes (default arm64)")
    args = parser.parse_args()
    interpreter = importing_interpreter()
    if not interpreter.is_runtime:
        print(f"no Python {LAMBDA_PYTHON} (the Lambda runtime's) here: the imports are measured on Python "
              f"{interpreter.version} with a {interpreter.version} build of the same layers, and the deployed layers' "
              f"sizes are of a {LAMBDA_PYTHON} build without bytecode, plus the {interpreter.version} copy's bytecode",
              flush=True)

    work = Path(tempfile.mkdtemp(prefix="agentmem-cold-start-"))
    try:
        layers = prepare_layers(work, args.architecture, interpreter)
        env = interpreter_env(layers)
        python = interpreter.path
        measured = measure_all({
            **{name: Measure(module, env, python=python) for name, module in HANDLERS.items()},
            "mcp_on_top_of_api": Measure(MCP_SERVER, env, after=HANDLERS["api"], python=python),
        }, args.runs)
        on_top = measured.pop("mcp_on_top_of_api")
        handlers = measured
        load = os.getloadavg()
        sizes = {
            "deps": layer_size(layers.deps_deployed / "python", work),
            "core": layer_size(layers.core / "python", work),
        }
        if not layers.deployed_bytecode:
            # what the bytecode weighs, from the importable copy of the same lists (another Python's .pyc files
            # are much the same size); the deployed layer holds it, so its size counts it
            pyc = layer_size(layers.deps_importable / "python", work)["bytecode_mb"]
            deps = sizes["deps"]
            sizes["deps"] = {**deps, "bytecode_mb_estimate": pyc, "unzipped_mb_without_bytecode": deps["unzipped_mb"],
                             "unzipped_mb": round(deps["unzipped_mb"] + pyc, 2)}
        result = {
            "generated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "lambda_python": LAMBDA_PYTHON,
            "python": platform.python_version() if not interpreter.is_runtime else interpreter.version,
            "imports_on_the_runtime_python": interpreter.is_runtime,
            "deployed_layers_compiled": layers.deployed_bytecode,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "load_average_after": [round(x, 2) for x in load],  # 1, 5, 15 minutes: was the machine quiet?
            "architecture": args.architecture,
            "runs": args.runs,
            "targets": TARGETS,
            "handlers": handlers,
            "mcp_on_top_of_api": on_top,
            "layers": {
                **sizes,
                "function_unzipped_mb": round(sum(size["unzipped_mb"] for size in sizes.values()), 2),
                "deps_biggest": biggest_packages(layers.deps_deployed),
            },
        }
        result["verdict"] = {
            "api_import": mark(handlers["api"]["import_ms_median"], TARGETS["api_import_ms"]),
            "mcp_import": mark(handlers["mcp"]["import_ms_median"], TARGETS["mcp_import_ms"]),
            "deps_layer": mark(result["layers"]["deps"]["unzipped_mb"], TARGETS["deps_layer_unzipped_mb"]),
        }
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(result, indent=2) + "\n")
        report(result)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
