"""The dependency layer (every function's, and the only one besides the package's): what goes in it, and
synthesis refusing a missing or stale one."""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

import pytest

from infra.config import (
    DEPS_DIR,
    DEPS_MARKER,
    LAMBDA_PYTHON,
    ROOT,
    DeploymentConfig,
    DepsLayerMissingError,
    InfraConfigError,
    recipe_digest,
    resolve_deps_layer_dir,
)
from infra.layer_build import runtime_python, stage_package_layer

# the CLI, and the stdio MCP server (`agentmem mcp`, the mcp SDK), run on a laptop, not in Lambda
LOCAL_ONLY = {"click", "mcp", "httpx"}  # the CLI, the stdio MCP server, the async client: none in a function
BASE_RECIPE = ("requirements.txt", "requirements-nodeps.txt")


def _names(lines: list[str]) -> set[str]:
    names = set()
    for line in lines:
        line = line.split("#")[0].strip()
        if line:
            names.add(re.split(r"[\[<>=!~; ]", line, maxsplit=1)[0].lower().replace("_", "-"))
    return names


def _recipe(folder: Path, *files: str) -> set[str]:
    return set().union(*(_names((folder / name).read_text().splitlines()) for name in files))


def test_layer_requirements_cover_the_runtime_dependencies_of_pyproject() -> None:
    # Given pyproject's dependencies and its [aws] extra, Then each that a function may import is in the layer's
    # requirement lists
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    needed = _names(project["dependencies"] + project["optional-dependencies"]["aws"]) - LOCAL_ONLY
    layered = _recipe(DEPS_DIR, *BASE_RECIPE)
    assert needed <= layered, needed - layered


def test_the_mcp_sdk_is_in_no_layer_and_jsonschema_is_in_the_dependency_layer() -> None:
    # no function imports mcp (/v1/mcp speaks MCP itself: tests/unit/test_cold_start_imports.py), and the
    # tools route (and the MCP route's tools) validate arguments with jsonschema
    base = _recipe(DEPS_DIR, *BASE_RECIPE)
    assert "mcp" not in base and "mcp-types" not in base
    assert "jsonschema" in base
    assert not (ROOT / "layers" / "mcp").exists()


def test_the_layer_keeps_the_botocore_model_of_every_client_the_package_creates() -> None:
    kept = _names((DEPS_DIR / "botocore-services.txt").read_text().splitlines())
    created = set()
    for source in (ROOT / "layers" / "core" / "python" / "agentmem").rglob("*.py"):
        created |= set(re.findall(r"""\.(?:client|resource)\(\s*["']([a-z0-9-]+)["']""", source.read_text()))
    assert {"dynamodb", "s3", "stepfunctions", "xray", "sts"} <= kept
    assert created <= kept, created - kept


def test_synthesis_refuses_when_the_layer_is_not_built(tmp_path: Path) -> None:
    # Given no built layer, When the app resolves it, Then it says which make target to run
    with pytest.raises(DepsLayerMissingError, match="make layers"):
        resolve_deps_layer_dir(DeploymentConfig(), built_dir=tmp_path / "python", recipe_dir=DEPS_DIR)


def _built(
    tmp_path: Path, architecture: str, digest: str, *, python: str | None = LAMBDA_PYTHON, bytecode: bool = True,
) -> Path:
    built = tmp_path / "python"
    (built / "pydantic").mkdir(parents=True)
    marker = {"architecture": architecture, "python": python, "bytecode": bytecode, "requirements_sha256": digest}
    (built / DEPS_MARKER).write_text(json.dumps(marker))
    return built


def test_synthesis_takes_a_layer_built_for_this_architecture_from_these_lists(tmp_path: Path) -> None:
    built = _built(tmp_path, "arm64", recipe_digest(DEPS_DIR))
    assert resolve_deps_layer_dir(DeploymentConfig(), built_dir=built, recipe_dir=DEPS_DIR) == tmp_path


def test_synthesis_refuses_a_layer_of_the_other_architecture(tmp_path: Path) -> None:
    built = _built(tmp_path, "x86_64", recipe_digest(DEPS_DIR))
    with pytest.raises(DepsLayerMissingError, match="ARCH=arm64"):
        resolve_deps_layer_dir(DeploymentConfig(), built_dir=built, recipe_dir=DEPS_DIR)


@pytest.mark.parametrize("python", ["3.11", None])  # None: a marker from before the marker said
def test_synthesis_refuses_a_layer_built_for_another_python(tmp_path: Path, python: str | None) -> None:
    # wheels with compiled parts and the bytecode are for one Python version: the runtime's
    built = _built(tmp_path, "arm64", recipe_digest(DEPS_DIR), python=python)
    refused = rf"built for Python {python}, but the functions run {LAMBDA_PYTHON}"
    with pytest.raises(DepsLayerMissingError, match=refused):
        resolve_deps_layer_dir(DeploymentConfig(), built_dir=built, recipe_dir=DEPS_DIR)


def test_synthesis_refuses_a_layer_built_without_bytecode(tmp_path: Path) -> None:
    # /opt is read-only: a layer without .pyc files compiles every module it imports on each cold start
    built = _built(tmp_path, "arm64", recipe_digest(DEPS_DIR), bytecode=False)
    with pytest.raises(DepsLayerMissingError, match=rf"without bytecode.*install Python {LAMBDA_PYTHON}"):
        resolve_deps_layer_dir(DeploymentConfig(), built_dir=built, recipe_dir=DEPS_DIR)


def _package(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    (source / "python" / "pkg" / "__pycache__").mkdir(parents=True)
    (source / "python" / "pkg" / "__init__.py").write_text("VALUE = 1\n")
    (source / "python" / "pkg" / "__pycache__" / "stale.cpython-39.pyc").write_bytes(b"old")
    return source


def test_the_package_layer_is_compiled_by_an_interpreter_of_the_version_asked_for(tmp_path: Path) -> None:
    # Given this interpreter's version, Then the staged package holds hash-checked bytecode of that version only
    this = sys.version_info[:2]
    assert stage_package_layer(_package(tmp_path), tmp_path / "out", this) is True
    compiled = list((tmp_path / "out" / "python" / "pkg" / "__pycache__").iterdir())
    assert [path.name for path in compiled] == [f"__init__.cpython-{this[0]}{this[1]}.pyc"]
    flags = int.from_bytes(compiled[0].read_bytes()[4:8], "little")
    assert flags & 0b11 == 0b11  # hash-based and checked: valid after the asset zip resets file times


def test_the_package_layer_is_source_only_without_an_interpreter_of_that_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a version no interpreter here has (RUNTIME_PYTHON naming one of another version counts for nothing)
    monkeypatch.setenv("RUNTIME_PYTHON", sys.executable)
    assert runtime_python((3, 99)) is None
    assert stage_package_layer(_package(tmp_path), tmp_path / "out", (3, 99)) is False
    staged = sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert staged == ["python/pkg/__init__.py"]  # no bytecode, and no stale cache copied


def test_runtime_python_takes_the_interpreter_runtime_python_names_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    named = tmp_path / "python-of-the-runtime"
    named.symlink_to(sys.executable)
    monkeypatch.setenv("RUNTIME_PYTHON", str(named))
    assert runtime_python(sys.version_info[:2]) == str(named)


def test_synthesis_refuses_a_layer_built_from_older_requirements(tmp_path: Path) -> None:
    built = _built(tmp_path, "arm64", "0" * 64)
    with pytest.raises(DepsLayerMissingError, match="changed since"):
        resolve_deps_layer_dir(DeploymentConfig(), built_dir=built, recipe_dir=DEPS_DIR)


def test_tests_point_synthesis_at_a_stand_in_folder(tmp_path: Path) -> None:
    config = DeploymentConfig(deps_layer_dir=str(tmp_path))
    assert resolve_deps_layer_dir(config, built_dir=tmp_path / "absent") == tmp_path
    with pytest.raises(DepsLayerMissingError, match="not a folder"):
        resolve_deps_layer_dir(DeploymentConfig(deps_layer_dir=str(tmp_path / "absent")))


def test_layers_built_by_build_sh_are_accepted_by_synthesis() -> None:
    # Given the folder `make layers` built from today's lists, Then synthesis takes it: build.sh writes
    # the marker (digests, architecture) the way infra.config reads it
    marker = DEPS_DIR / "python" / DEPS_MARKER
    if not marker.is_file():
        pytest.skip(f"{DEPS_DIR}/python is not built (make layers)")
    built_for = json.loads(marker.read_text())
    if built_for.get("requirements_sha256") != recipe_digest(DEPS_DIR):
        pytest.skip(f"{DEPS_DIR}/python was built from older lists (make layers)")
    assert resolve_deps_layer_dir(DeploymentConfig(architecture=built_for["architecture"])) == DEPS_DIR


def test_context_values_from_the_command_line_are_converted_and_checked() -> None:
    context = {"agentmem:architecture": "x86_64", "agentmem:throttleRate": "50",
               "agentmem:workspaceCorsOrigins": "https://a.example, https://b.example"}
    config = DeploymentConfig.from_context(context.get)
    assert config.architecture == "x86_64"
    assert config.throttle_rate == 50
    assert config.workspace_cors_origins == ("https://a.example", "https://b.example")
    with pytest.raises(InfraConfigError, match="arm64 or x86_64"):
        DeploymentConfig.from_context({"agentmem:architecture": "sparc"}.get)
    with pytest.raises(InfraConfigError, match="agentmem:name"):
        DeploymentConfig.from_context({"agentmem:name": "Agent_Mem"}.get)
