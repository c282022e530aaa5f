"""Cold start: how long the API handler takes to import, and how big the two Lambda layers are.

    .venv/bin/python bench/cold_start.py              # 7 fresh interpreters per handler
    .venv/bin/python bench/cold_start.py --runs 3     # quicker

What it measures, with the layers as Lambda would mount them:

* the package layer staged as the CDK stages it (``infra.layer_build``: no caches, hash-checked .pyc);
* the dependency layer: ``layers/deps/python`` when it is built for the deployment architecture
  (``make layers``), else built by ``layers/deps/build.sh`` into a temporary folder. Its unzipped and
  zipped size is the deployment's. Imports run on this machine, so when this machine's architecture
  differs from the deployment's (arm64 by default) a second copy is built for this machine to import;
* ``import functions.api.handler`` (and the authorizer's handler) in fresh interpreters with
  ``PYTHONPATH`` = the repository (for ``functions``), the package layer, the dependency layer, and no
  site-packages (``-S``), so nothing from the development venv can stand in for a missing package. The
  environment says "Lambda" (``AWS_LAMBDA_FUNCTION_NAME`` and friends) so the tracer and logger set up
  as they do there. Wall time is the median of ``--runs`` interpreters; ``-X importtime`` of one more
  gives the per-module breakdown (its own overhead makes that total larger).

Prints a table and writes ``bench/results/cold_start.json``. Timings are never asserted; the targets
(handler import ≤ 450 ms, dependency layer ≤ 60 MB unzipped) are printed with a pass/miss mark.
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

from infra.config import DEPS_BUILT_DIR, DEPS_MARKER, recipe_digest  # noqa: E402
from infra.layer_build import stage_package_layer  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "cold_start.json"
BUILD_SCRIPT = ROOT / "layers" / "deps" / "build.sh"
TARGETS = {"api_import_ms": 450.0, "deps_layer_unzipped_mb": 60.0}
HANDLERS = {"api": "functions.api.handler", "authorizer": "functions.authorizer.handler"}
TOP = 15
MB = 1024 * 1024

# what Lambda's environment tells the code at import time (values are placeholders)
LAMBDA_ENV = {
    "AWS_LAMBDA_FUNCTION_NAME": "agentmem-api",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
    "AWS_EXECUTION_ENV": "AWS_Lambda_python3.11",
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "ASIABENCHMARK",  # never used: nothing is called at import
    "AWS_SECRET_ACCESS_KEY": "benchmark",
    "POWERTOOLS_SERVICE_NAME": "agentmem",
    "POWERTOOLS_METRICS_NAMESPACE": "agentmem",
    "AGENTMEM_BACKEND": "aws",
    "AGENTMEM_TABLE": "agentmem-bench",
    "LANG": "C.UTF-8",
}


@dataclass(frozen=True)
class LayerDirs:
    core: Path  # holds python/agentmem
    deps_deployed: Path  # holds python/, for the deployment architecture
    deps_importable: Path  # holds python/, for this machine


def machine_architecture() -> str:
    return "arm64" if platform.machine().lower() in ("aarch64", "arm64") else "x86_64"


def built_for(folder: Path) -> dict[str, Any] | None:
    marker = folder / "python" / DEPS_MARKER if (folder / "python").is_dir() else folder / DEPS_MARKER
    return json.loads(marker.read_text()) if marker.is_file() else None


def usable(folder: Path, architecture: str) -> bool:
    found = built_for(folder) or {}
    return found.get("architecture") == architecture and found.get("requirements_sha256") == recipe_digest()


def build_deps(architecture: str, into: Path) -> Path:
    """``layers/deps/build.sh`` into ``into/python``; returns ``into``."""
    print(f"building the dependency layer for {architecture} in {into} ...", flush=True)
    done = subprocess.run(
        ["bash", str(BUILD_SCRIPT), architecture, str(into / "python")],
        env={**os.environ, "PYTHON": sys.executable}, capture_output=True, text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"layers/deps/build.sh failed:\n{done.stderr[-3000:]}")
    return into


def prepare_layers(work: Path, architecture: str) -> LayerDirs:
    core = work / "core"
    stage_package_layer(ROOT / "layers" / "core", core)
    deployed = DEPS_BUILT_DIR.parent
    if not usable(deployed, architecture):
        deployed = build_deps(architecture, work / f"deps-{architecture}")
    here = machine_architecture()
    importable = deployed
    if here != architecture:
        local = DEPS_BUILT_DIR.parent
        importable = local if usable(local, here) else build_deps(here, work / f"deps-{here}")
    return LayerDirs(core=core, deps_deployed=deployed, deps_importable=importable)


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
            "files": len(files)}
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
    path = os.pathsep.join([str(ROOT), str(layers.core / "python"), str(layers.deps_importable / "python")])
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "TMPDIR")}
    return {**keep, **LAMBDA_ENV, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1"}


def timed_import(module: str, env: dict[str, str]) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    done = subprocess.run([sys.executable, "-S", "-c", code], env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"import {module} failed in a fresh interpreter:\n{done.stderr[-3000:]}")
    return float(done.stdout.strip().splitlines()[-1]) * 1000


def import_profile(module: str, env: dict[str, str]) -> list[tuple[int, int, int, str]]:
    """``-X importtime`` rows: (self µs, cumulative µs, depth, module)."""
    done = subprocess.run(
        [sys.executable, "-S", "-X", "importtime", "-c", f"import {module}"], env=env, cwd=ROOT,
        capture_output=True, text=True, check=True,
    )
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative_us, name = line.removeprefix("import time:").split("|", 2)
        depth = (len(name) - len(name.lstrip(" "))) // 2
        rows.append((int(self_us), int(cumulative_us), depth, name.strip()))
    return rows


def by_package(rows: list[tuple[int, int, int, str]]) -> list[tuple[str, float]]:
    """Self time summed per top-level package: which libraries the import time goes to."""
    totals: dict[str, int] = defaultdict(int)
    for self_us, _, _, name in rows:
        totals[name.split(".")[0]] += self_us
    ranked = sorted(totals.items(), key=lambda item: -item[1])[:TOP]
    return [(name, round(us / 1000, 1)) for name, us in ranked]


def measure_handler(module: str, env: dict[str, str], runs: int) -> dict[str, Any]:
    timed_import(module, env)  # warm the file cache, as a second cold start on the same host would be
    samples = [timed_import(module, env) for _ in range(runs)]
    rows = import_profile(module, env)
    top = sorted(rows, key=lambda row: -row[1])[:TOP]
    return {
        "module": module,
        "import_ms_median": round(statistics.median(samples), 1),
        "import_ms_samples": [round(s, 1) for s in samples],
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


def report(result: dict[str, Any]) -> None:
    api = result["handlers"]["api"]
    deps, core = result["layers"]["deps"], result["layers"]["core"]
    print()
    print(f"cold start — Python {result['python']} on {result['machine']}, deployment {result['architecture']}")
    print(f"{'measure':44} {'value':>12} {'target':>10}  ")
    print("-" * 72)
    for name, handler in result["handlers"].items():
        target = TARGETS["api_import_ms"] if name == "api" else None
        value = handler["import_ms_median"]
        shown = f"{f'≤ {target:.0f} ms':>10}  {mark(value, target)}" if target else ""
        print(f"{'import ' + handler['module'] + ' (median)':44} {value:>9.1f} ms {shown}")
        print(f"{'  same, under -X importtime (sum of self)':44} {handler['importtime_total_ms']:>9.1f} ms")
    print(f"{'dependency layer, unzipped':44} {deps['unzipped_mb']:>9.1f} MB {'≤ 60 MB':>10}  "
          f"{mark(deps['unzipped_mb'], TARGETS['deps_layer_unzipped_mb'])}")
    print(f"{'dependency layer, zipped':44} {deps['zipped_mb']:>9.1f} MB")
    print(f"{'package layer (agentmem + .pyc), unzipped':44} {core['unzipped_mb']:>9.1f} MB")
    print(f"{'package layer, zipped':44} {core['zipped_mb']:>9.1f} MB")
    print()
    print(f"top {TOP} imports of the API handler by cumulative time (one -X importtime run):")
    for row in api["top_cumulative"]:
        print(f"  {row['cumulative_ms']:>8.1f} ms  (self {row['self_ms']:>6.1f})  {'  ' * row['depth']}{row['module']}")
    print()
    print("API handler import, self time by top-level package:")
    for row in api["self_ms_by_package"]:
        print(f"  {row['self_ms']:>8.1f} ms  {row['package']}")
    print()
    print("largest packages of the dependency layer (MB): "
          + ", ".join(f"{name} {size}" for name, size in result["layers"]["deps_biggest"]))
    print(f"\nwritten: {RESULTS.relative_to(ROOT)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="fresh interpreters per handler (default 7)")
    parser.add_argument("--architecture", default="arm64", choices=["arm64", "x86_64"],
                        help="the deployment's architecture, for the layer sizes (default arm64)")
    args = parser.parse_args()
    if sys.version_info[:2] != (3, 11):
        print("run with Python 3.11, the Lambda runtime's version (e.g. .venv/bin/python)", file=sys.stderr)
        return 2

    work = Path(tempfile.mkdtemp(prefix="agentmem-cold-start-"))
    try:
        layers = prepare_layers(work, args.architecture)
        env = interpreter_env(layers)
        handlers = {name: measure_handler(module, env, args.runs) for name, module in HANDLERS.items()}
        result = {
            "generated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "python": platform.python_version(),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "architecture": args.architecture,
            "runs": args.runs,
            "targets": TARGETS,
            "handlers": handlers,
            "layers": {
                "deps": layer_size(layers.deps_deployed / "python", work),
                "core": layer_size(layers.core / "python", work),
                "deps_biggest": biggest_packages(layers.deps_deployed),
            },
        }
        result["verdict"] = {
            "api_import": mark(handlers["api"]["import_ms_median"], TARGETS["api_import_ms"]),
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
