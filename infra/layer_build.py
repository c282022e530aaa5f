"""How the package layer's content is staged: the package without caches, compiled for Lambda.

Pure Python (no CDK import): the CDK's local bundling and bench/cold_start.py stage it the same way.
Lambda's ``/opt`` is read-only, so a layer without bytecode compiles every module again on each
cold start; and the asset zip resets file times, so only hash-checked .pyc files stay valid there.
"""

from __future__ import annotations

import compileall
import py_compile
import shutil
import sys
from pathlib import Path

RUNTIME_VERSION = (3, 11)
SKIP = ("__pycache__", "*.pyc", "*.pyo", "*.egg-info", ".pytest_cache", ".mypy_cache")


def stage_package_layer(source: Path, output_dir: Path) -> bool:
    """Copy ``source/python`` to ``output_dir/python`` and compile it; False when not compiled.

    Bytecode is only valid for the interpreter's minor version: with another Python than the Lambda
    runtime's the layer ships as source (and compiles at each cold start).
    """
    target = output_dir / "python"
    shutil.copytree(source / "python", target, ignore=shutil.ignore_patterns(*SKIP), dirs_exist_ok=True)
    if sys.version_info[:2] != RUNTIME_VERSION:
        return False
    return bool(
        compileall.compile_dir(
            str(target), quiet=1, workers=1, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH
        )
    )
