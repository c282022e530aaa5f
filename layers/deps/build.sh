#!/usr/bin/env bash
# Builds the dependency layer with pip, for the Lambda platform, with no Docker:
#   layers/deps/build.sh [arm64|x86_64] [TARGET]      (default: arm64, layers/deps/python)
# What goes in: requirements.txt, requirements-nodeps.txt (without their declared dependencies),
# and of botocore's service models only those in botocore-services.txt.
# pip downloads the manylinux wheels of CPython 3.11 for the architecture (binary wheels only, so
# nothing is compiled here), installs them into TARGET, strips what Lambda never uses, compiles the
# bytecode with hash-checked .pyc files (the asset zip resets file times, so timestamp-checked .pyc
# files would be ignored and every cold start would compile again), and writes a marker saying what
# the folder was built for; `python app.py` checks it.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ARCH="${1:-${ARCH:-arm64}}"
TARGET="${2:-$HERE/python}"
PYTHON="${PYTHON:-python3}"
REQUIREMENTS="$HERE/requirements.txt"
NODEPS="$HERE/requirements-nodeps.txt"
SERVICES="$HERE/botocore-services.txt"

case "$ARCH" in
  arm64|aarch64) ARCH=arm64; PLATFORM=manylinux2014_aarch64 ;;
  x86_64|amd64)  ARCH=x86_64; PLATFORM=manylinux2014_x86_64 ;;
  *) echo "build.sh: architecture is arm64 or x86_64, not '$ARCH'" >&2; exit 2 ;;
esac

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  echo "build.sh: run with Python 3.11 (PYTHON=...): the .pyc files must match the Lambda runtime" >&2
  exit 2
fi

PIP=("$PYTHON" -m pip install --quiet --disable-pip-version-check --no-warn-conflicts --no-compile
     --platform "$PLATFORM" --implementation cp --python-version 3.11 --only-binary=:all: --target "$TARGET")

rm -rf "$TARGET"
mkdir -p "$TARGET"
"${PIP[@]}" --requirement "$REQUIREMENTS"
"${PIP[@]}" --no-deps --requirement "$NODEPS"

# botocore's models of every AWS service are ~28 MB; keep the services agentmem's clients use
KEEP=$(grep -v '^#' "$SERVICES" | sed '/^$/d')
for service in "$TARGET"/botocore/data/*/; do
  name=$(basename "$service")
  grep -qx "$name" <<<"$KEEP" || rm -rf "$service"
done

# Lambda never runs these: package metadata stays (importlib.metadata reads it), the rest goes.
find "$TARGET" -depth -type d \( -name __pycache__ -o -name tests -o -name test \) \
  -path "$TARGET/*" -exec rm -rf {} +
rm -rf "$TARGET/bin"
find "$TARGET" -name '*.pyi' -delete
find "$TARGET" -name 'py.typed' -delete

"$PYTHON" -m compileall -q -j 0 --invalidation-mode checked-hash "$TARGET" >/dev/null

# the same digest as infra.config.recipe_digest: synthesis refuses a layer built from other lists
"$PYTHON" - "$TARGET" "$ARCH" "$HERE" <<'PY'
import hashlib, json, pathlib, sys
target, arch, recipe = pathlib.Path(sys.argv[1]), sys.argv[2], pathlib.Path(sys.argv[3])
marker = {
    "architecture": arch,
    "python": "3.11",
    "requirements_sha256": hashlib.sha256(b"".join(p.read_bytes() for p in sorted(recipe.glob("*.txt")))).hexdigest(),
}
(target / ".agentmem-layer.json").write_text(json.dumps(marker, indent=2) + "\n")
PY

SIZE=$(du -sm "$TARGET" | cut -f1)
echo "dependency layer for $ARCH: $TARGET (${SIZE} MB unzipped)"
