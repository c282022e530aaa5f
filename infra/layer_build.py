"""How the package layer's content is staged: the package without caches, compiled for Lambda.

Pure Python (no CDK import): the CDK's local bundling and bench/cold_start.py stage it the same way.
Lambda's ``/opt`` is read-only, so a layer without bytecode compiles every module again on each
cold start; and the asset zip resets file times, so only hash-checked .pyc files stay valid there.

Bytecode is only valid for one minor version of Python, the Lambda runtime's (``infra.config.LAMBDA_PYTHON``),
which need not be the Python running this code (the project runs on 3.11): an interpreter of that version
compiles it (``runtime_python``, which ``layers/deps/build.sh`` asks too: ``$RUNTIME_PYTHON``, this
interpreter, ``python3.X`` on the PATH, or one that pyenv installed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from .config import LAMBDA_PYTHON

RUNTIME_VERSION = tuple(int(part) for part in LAMBDA_PYTHON.split("."))
SKIP = ("__pycache__", "*.pyc", "*.pyo", "*.egg-info", ".pytest_cache", ".mypy_cache")


def runtime_python(version: tuple[int, ...] = RUNTIME_VERSION) -> str | None:
    """An interpreter of Python ``version`` on this machine, or None: ``$RUNTIME_PYTHON`` when set (and of that
    version), else this interpreter when it is that version, else ``python3.X`` on the PATH, else pyenv's
    (``$PYENV_ROOT/versions/3.X.*``, the newest first)."""
    wanted = f"{version[0]}.{version[1]}"
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    installed = sorted(pyenv.glob(f"{wanted}.*/bin/python{wanted}"), key=lambda p: _patch_level(p.parent.parent.name))
    candidates = [os.environ.get("RUNTIME_PYTHON") or "", sys.executable, shutil.which(f"python{wanted}") or "",
                  *(str(path) for path in reversed(installed))]
    for candidate in filter(None, candidates):
        if candidate == sys.executable:
            if sys.version_info[:2] == version[:2]:
                return candidate
            continue
        probe = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True, check=False)
        if probe.returncode == 0 and probe.stdout.strip() == wanted:
            return candidate
    return None


def _patch_level(version: str) -> int:
    last = version.rsplit(".", 1)[-1]
    return int(last) if last.isdigit() else -1


def stage_package_layer(source: Path, output_dir: Path, version: tuple[int, ...] = RUNTIME_VERSION) -> bool:
    """Copy ``source/python`` to ``output_dir/python`` and compile it for Python ``version`` (default: the
    Lambda runtime's); False when no interpreter of that version is here, and the layer holds source only
    (each cold start then compiles the modules it imports)."""
    target = output_dir / "python"
    shutil.copytree(source / "python", target, ignore=shutil.ignore_patterns(*SKIP), dirs_exist_ok=True)
    python = runtime_python(version)
    if python is None:
        return False
    done = subprocess.run(
        [python, "-m", "compileall", "-q", "--invalidation-mode", "checked-hash", str(target)],
        capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        output = (done.stdout + done.stderr)[-3000:]
        raise RuntimeError(f"compiling the package layer with {python} failed:\n{output}")
    return True
