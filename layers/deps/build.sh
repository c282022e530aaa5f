#!/usr/bin/env bash
# Builds a dependency layer with pip, for the Lambda platform, with no Docker:
#   layers/deps/build.sh [arm64|x86_64] [TARGET] [RECIPE]
#     ARCH    arm64 (default) or x86_64
#     TARGET  the folder to fill (default: RECIPE/python)
#     RECIPE  the recipe folder (default: layers/deps, the layer every function has)
# `make layers` runs `layers/deps/build.sh arm64 layers/deps/python` (the layer of every function).
# What goes in: RECIPE/requirements.txt, RECIPE/requirements-nodeps.txt if present (without their
# declared dependencies), and, if RECIPE/botocore-services.txt is present, only those of botocore's
# service models.
# pip downloads the manylinux wheels of CPython LAYER_PYTHON for the architecture (binary wheels only,
# so nothing is compiled here), installs them into TARGET, strips what Lambda never uses, compiles the
# bytecode with hash-checked .pyc files (the asset zip resets file times, so timestamp-checked .pyc
# files would be ignored and every cold start would compile again), and writes a marker saying what
# the folder was built for; `python app.py` checks it (infra.config).
# Environment:
#   PYTHON          runs pip (any Python 3.11 or newer; default python3)
#   LAYER_PYTHON    the Python version the layer is for (default: the Lambda runtime's, infra.config.LAMBDA_PYTHON);
#                   bench/cold_start.py builds a 3.11 copy to import on a machine without the runtime's Python
#   RUNTIME_PYTHON  the interpreter that compiles the bytecode: it must be Python LAYER_PYTHON (default: PYTHON
#                   when it is that version, else pythonLAYER_PYTHON on the PATH, else one pyenv installed:
#                   infra.layer_build.runtime_python)
#   BYTECODE=0      build without bytecode when no such interpreter is here (only to measure sizes: synthesis
#                   refuses such a layer, since every cold start would compile its modules)
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
ARCH="${1:-${ARCH:-arm64}}"
RECIPE="${3:-$HERE}"
TARGET="${2:-$RECIPE/python}"
PYTHON="${PYTHON:-python3}"
REQUIREMENTS="$RECIPE/requirements.txt"
NODEPS="$RECIPE/requirements-nodeps.txt"
SERVICES="$RECIPE/botocore-services.txt"
MARKER=".agentmem-layer.json"  # infra.config.DEPS_MARKER

case "$ARCH" in
  arm64|aarch64) ARCH=arm64; PLATFORM=manylinux2014_aarch64 ;;
  x86_64|amd64)  ARCH=x86_64; PLATFORM=manylinux2014_x86_64 ;;
  *) echo "build.sh: architecture is arm64 or x86_64, not '$ARCH'" >&2; exit 2 ;;
esac

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] < (3, 11))'; then
  echo "build.sh: PYTHON (it runs pip) must be Python 3.11 or newer" >&2
  exit 2
fi
LAYER_PYTHON="${LAYER_PYTHON:-$("$PYTHON" -c 'import sys; sys.path.insert(0, sys.argv[1]); from infra.config import LAMBDA_PYTHON; print(LAMBDA_PYTHON)' "$ROOT")}"
BYTECODE="${BYTECODE:-1}"
COMPILER="$("$PYTHON" -c 'import sys; sys.path.insert(0, sys.argv[1]); from infra.layer_build import runtime_python
print(runtime_python(tuple(int(p) for p in sys.argv[2].split("."))) or "")' "$ROOT" "$LAYER_PYTHON")"
if [[ -z "$COMPILER" && "$BYTECODE" != 0 ]]; then
  echo "build.sh: no Python $LAYER_PYTHON here to compile the layer's bytecode with (the .pyc files must match" \
       "the Lambda runtime's version): install python$LAYER_PYTHON or point RUNTIME_PYTHON at one" >&2
  exit 2
fi
if [[ ! -f "$REQUIREMENTS" ]]; then
  echo "build.sh: no recipe in $RECIPE (it needs a requirements.txt)" >&2
  exit 2
fi

PIP=("$PYTHON" -m pip install --quiet --disable-pip-version-check --no-warn-conflicts --no-compile
     --platform "$PLATFORM" --implementation cp --python-version "$LAYER_PYTHON" --only-binary=:all: --target "$TARGET")

rm -rf "$TARGET"
mkdir -p "$TARGET"
"${PIP[@]}" --requirement "$REQUIREMENTS"
if [[ -f "$NODEPS" ]]; then
  "${PIP[@]}" --no-deps --requirement "$NODEPS"
fi

if [[ -f "$SERVICES" && -d "$TARGET/botocore/data" ]]; then
  # botocore's models of every AWS service are ~28 MB; keep the services agentmem's clients use
  KEEP=$(grep -v '^#' "$SERVICES" | sed '/^$/d')
  for service in "$TARGET"/botocore/data/*/; do
    name=$(basename "$service")
    grep -qx "$name" <<<"$KEEP" || rm -rf "$service"
  done
fi

# Lambda never runs these: package metadata stays (importlib.metadata reads it), the rest goes.
find "$TARGET" -depth -type d \( -name __pycache__ -o -name tests -o -name test \) \
  -path "$TARGET/*" -exec rm -rf {} +
rm -rf "$TARGET/bin"
find "$TARGET" -name '*.pyi' -delete
find "$TARGET" -name 'py.typed' -delete

if [[ -n "$COMPILER" ]]; then
  "$COMPILER" -m compileall -q -j 0 --invalidation-mode checked-hash "$TARGET" >/dev/null
else
  echo "build.sh: BYTECODE=0 and no Python $LAYER_PYTHON: $TARGET holds source only (synthesis refuses it)" >&2
fi

# the same digest as infra.config.recipe_digest: synthesis refuses a layer built from other lists
"$PYTHON" - "$TARGET" "$ARCH" "$RECIPE" "$MARKER" "$LAYER_PYTHON" "$COMPILER" <<'PY'
import hashlib, json, pathlib, sys
target, arch, recipe, marker_name = pathlib.Path(sys.argv[1]), sys.argv[2], pathlib.Path(sys.argv[3]), sys.argv[4]
marker = {
    "architecture": arch,
    "python": sys.argv[5],
    "bytecode": bool(sys.argv[6]),
    "requirements_sha256": hashlib.sha256(b"".join(p.read_bytes() for p in sorted(recipe.glob("*.txt")))).hexdigest(),
}
(target / marker_name).write_text(json.dumps(marker, indent=2) + "\n")
PY

SIZE=$(du -sm "$TARGET" | cut -f1)
echo "dependency layer ($(basename "$RECIPE")) for Python $LAYER_PYTHON on $ARCH: $TARGET (${SIZE} MB unzipped)"
