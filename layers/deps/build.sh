#!/usr/bin/env bash
# Builds a dependency layer with pip, for the Lambda platform, with no Docker:
#   layers/deps/build.sh [arm64|x86_64] [TARGET] [RECIPE] [BASE]
#     ARCH    arm64 (default) or x86_64
#     TARGET  the folder to fill (default: RECIPE/python)
#     RECIPE  the recipe folder (default: layers/deps, the layer every function has)
#     BASE    a built layer this one goes on top of (its python/ folder), for a layer only some
#             functions add to the base one: pip resolves against the exact versions BASE holds, and
#             what BASE already holds is left out of TARGET
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
BASE="${4:-}"
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

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

if [[ -n "$BASE" ]]; then
  # the layer goes on top of BASE: BASE must be built, for this architecture; pip is held to its versions
  "$PYTHON" - "$BASE" "$ARCH" "$MARKER" "$WORK/constraints.txt" "$LAYER_PYTHON" <<'PY'
import json, pathlib, sys
base, arch, marker, constraints = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3], pathlib.Path(sys.argv[4])
found = base / marker
if not found.is_file():
    sys.exit(f"build.sh: the base layer {base} is not built (no {marker}): build it first")
base_marker = json.loads(found.read_text())
built_for = base_marker.get("architecture")
if built_for != arch:
    sys.exit(f"build.sh: the base layer {base} is built for {built_for}, not {arch}: build it for {arch} first")
if base_marker.get("python") != sys.argv[5]:
    sys.exit(f"build.sh: the base layer {base} is built for Python {base_marker.get('python')}, not {sys.argv[5]}: "
             f"build it for {sys.argv[5]} first")
pins = []
for info in sorted(base.glob("*.dist-info")):
    fields = {}
    for line in (info / "METADATA").read_text(errors="replace").splitlines():
        if not line:
            break  # the headers end at the first blank line
        name, _, value = line.partition(": ")
        if name in ("Name", "Version"):
            fields.setdefault(name, value.strip())
    pins.append(f"{fields['Name']}=={fields['Version']}")
constraints.write_text("\n".join(pins) + "\n")
PY
  PIP+=(--constraint "$WORK/constraints.txt")
fi

rm -rf "$TARGET"
mkdir -p "$TARGET"
"${PIP[@]}" --requirement "$REQUIREMENTS"
if [[ -f "$NODEPS" ]]; then
  "${PIP[@]}" --no-deps --requirement "$NODEPS"
fi

if [[ -n "$BASE" ]]; then
  # what BASE holds stays out (the function has BASE too): remove those distributions by their RECORD,
  # then refuse any file both layers would still put at the same path under /opt/python
  "$PYTHON" - "$TARGET" "$BASE" <<'PY'
import pathlib, re, sys
target, base = pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2]).resolve()

def key(name):
    return re.sub(r"[-_.]+", "-", name).lower()

def distributions(folder):
    found = {}
    for info in folder.glob("*.dist-info"):
        for line in (info / "METADATA").read_text(errors="replace").splitlines():
            if line.startswith("Name: "):
                found[key(line[6:].strip())] = info
                break
    return found

held = distributions(base)
for name, info in sorted(distributions(target).items()):
    if name not in held:
        continue
    for row in (info / "RECORD").read_text().splitlines():
        path = (target / row.split(",")[0]).resolve()
        if path.is_relative_to(target) and path.is_file():
            path.unlink()
    for folder in sorted((p for p in target.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        if not any(folder.iterdir()):
            folder.rmdir()
    if info.exists():
        sys.exit(f"build.sh: {info.name} left files outside its RECORD")

both = [p.relative_to(target) for p in target.rglob("*") if p.is_file() and (base / p.relative_to(target)).is_file()]
if both:
    sys.exit("build.sh: these files would be in both layers: " + ", ".join(map(str, both[:10])))
PY
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

# the same digest as infra.config.recipe_digest: synthesis refuses a layer built from other lists;
# a layer on top of BASE also records BASE's digest, so it is refused when BASE's lists change too
"$PYTHON" - "$TARGET" "$ARCH" "$RECIPE" "$MARKER" "$BASE" "$LAYER_PYTHON" "$COMPILER" <<'PY'
import hashlib, json, pathlib, sys
target, arch, recipe, marker_name, base = pathlib.Path(sys.argv[1]), sys.argv[2], pathlib.Path(sys.argv[3]), sys.argv[4], sys.argv[5]
marker = {
    "architecture": arch,
    "python": sys.argv[6],
    "bytecode": bool(sys.argv[7]),
    "requirements_sha256": hashlib.sha256(b"".join(p.read_bytes() for p in sorted(recipe.glob("*.txt")))).hexdigest(),
}
if base:
    marker["base_requirements_sha256"] = json.loads((pathlib.Path(base) / marker_name).read_text())["requirements_sha256"]
(target / marker_name).write_text(json.dumps(marker, indent=2) + "\n")
PY

SIZE=$(du -sm "$TARGET" | cut -f1)
echo "dependency layer ($(basename "$RECIPE")) for Python $LAYER_PYTHON on $ARCH: $TARGET (${SIZE} MB unzipped)"
