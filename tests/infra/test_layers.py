"""The dependency layer: what goes in it, and synthesis refusing a missing or stale one."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from infra.config import (
    DEPS_DIR,
    DEPS_MARKER,
    ROOT,
    DeploymentConfig,
    DepsLayerMissingError,
    InfraConfigError,
    recipe_digest,
    resolve_deps_layer_dir,
)

CLI_ONLY = {"click"}  # the CLI runs on a laptop, not in Lambda


def _names(lines: list[str]) -> set[str]:
    names = set()
    for line in lines:
        line = line.split("#")[0].strip()
        if line:
            names.add(re.split(r"[\[<>=!~; ]", line, maxsplit=1)[0].lower().replace("_", "-"))
    return names


def test_layer_requirements_cover_the_runtime_dependencies_of_pyproject() -> None:
    # Given pyproject's dependencies and its [aws] extra, Then each is in the layer's requirement lists
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    needed = _names(project["dependencies"] + project["optional-dependencies"]["aws"]) - CLI_ONLY
    layered = _names((DEPS_DIR / "requirements.txt").read_text().splitlines()) | _names(
        (DEPS_DIR / "requirements-nodeps.txt").read_text().splitlines()
    )
    assert needed <= layered, needed - layered


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


def _built(tmp_path: Path, architecture: str, digest: str) -> Path:
    built = tmp_path / "python"
    (built / "pydantic").mkdir(parents=True)
    (built / DEPS_MARKER).write_text(json.dumps({"architecture": architecture, "requirements_sha256": digest}))
    return built


def test_synthesis_takes_a_layer_built_for_this_architecture_from_these_lists(tmp_path: Path) -> None:
    built = _built(tmp_path, "arm64", recipe_digest(DEPS_DIR))
    assert resolve_deps_layer_dir(DeploymentConfig(), built_dir=built, recipe_dir=DEPS_DIR) == tmp_path


def test_synthesis_refuses_a_layer_of_the_other_architecture(tmp_path: Path) -> None:
    built = _built(tmp_path, "x86_64", recipe_digest(DEPS_DIR))
    with pytest.raises(DepsLayerMissingError, match="ARCH=arm64"):
        resolve_deps_layer_dir(DeploymentConfig(), built_dir=built, recipe_dir=DEPS_DIR)


def test_synthesis_refuses_a_layer_built_from_older_requirements(tmp_path: Path) -> None:
    built = _built(tmp_path, "arm64", "0" * 64)
    with pytest.raises(DepsLayerMissingError, match="changed since"):
        resolve_deps_layer_dir(DeploymentConfig(), built_dir=built, recipe_dir=DEPS_DIR)


def test_tests_point_synthesis_at_a_stand_in_folder(tmp_path: Path) -> None:
    config = DeploymentConfig(deps_layer_dir=str(tmp_path))
    assert resolve_deps_layer_dir(config, built_dir=tmp_path / "absent") == tmp_path
    with pytest.raises(DepsLayerMissingError, match="not a folder"):
        resolve_deps_layer_dir(DeploymentConfig(deps_layer_dir=str(tmp_path / "absent")))


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
