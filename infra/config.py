"""What a deployment is configured by: CDK context values (``-c agentmem:KEY=VALUE`` or cdk.json).

Pure Python, no CDK import: the checks on the dependency layer are unit-tested without synthesising.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS_DIR = ROOT / "functions"
CORE_LAYER_DIR = ROOT / "layers" / "core"
DEPS_DIR = ROOT / "layers" / "deps"
DEPS_BUILT_DIR = DEPS_DIR / "python"
# written by layers/deps/build.sh beside the packages: what the folder was built for
DEPS_MARKER = ".agentmem-layer.json"

CONTEXT_PREFIX = "agentmem:"
Architecture = Literal["arm64", "x86_64"]


class InfraConfigError(Exception):
    """The app cannot be synthesised as configured; the message says what to do."""


class DepsLayerMissingError(InfraConfigError):
    pass


@dataclass(frozen=True)
class DeploymentConfig:
    """Every knob of the deployment, with the defaults a first deploy should use."""

    name: str = "agentmem"  # prefix of stack and collection names; lowercase, 3–24 chars
    architecture: Architecture = "arm64"
    deps_layer_dir: str | None = None  # tests: a stand-in folder; default layers/deps (built)
    stage_name: str = "prod"
    throttle_rate: int = 100  # requests per second, steady, across the API stage
    throttle_burst: int = 200
    authorizer_cache_seconds: int = 300  # 0 turns the authorizer cache off (max 3600)
    log_retention_days: int = 30
    search_standby_replicas: Literal["ENABLED", "DISABLED"] = "ENABLED"
    workspace_cors_origins: tuple[str, ...] = ("*",)
    embedding_model_id: str = "amazon.titan-embed-text-v2:0"
    summary_model_id: str = "amazon.nova-micro-v1:0"
    api_memory_mb: int = 1024
    # a rejected key is an "Unauthorized" exception, i.e. a Lambda error: alarm only on many of them
    authorizer_error_alarm_threshold: int = 25

    @classmethod
    def from_context(cls, get: Callable[[str], Any]) -> DeploymentConfig:
        """Reads ``agentmem:<camelCaseName>`` context values (strings from ``-c`` are converted)."""
        values: dict[str, Any] = {}
        for field_name, field in cls.__dataclass_fields__.items():
            raw = get(CONTEXT_PREFIX + _camel(field_name))
            if raw is None:
                continue
            values[field_name] = _convert(raw, field.type, field_name)
        config = cls(**values)
        config.validate()
        return config

    def validate(self) -> None:
        if self.architecture not in ("arm64", "x86_64"):
            raise InfraConfigError(f"agentmem:architecture is arm64 or x86_64, not {self.architecture!r}")
        if not (3 <= len(self.name) <= 24) or not self.name[0].isalpha() or not all(
            c.islower() or c.isdigit() or c == "-" for c in self.name
        ):
            raise InfraConfigError(
                f"agentmem:name must be 3–24 chars of [a-z0-9-] starting with a letter: {self.name!r}"
            )
        if self.search_standby_replicas not in ("ENABLED", "DISABLED"):
            raise InfraConfigError("agentmem:searchStandbyReplicas is ENABLED or DISABLED")
        if not 0 <= self.authorizer_cache_seconds <= 3600:
            raise InfraConfigError("agentmem:authorizerCacheSeconds is between 0 and 3600")


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _convert(raw: Any, annotation: Any, field_name: str) -> Any:
    kind = str(annotation)
    try:
        if kind.startswith("int"):
            return int(raw)
        if kind.startswith("tuple"):
            if isinstance(raw, str):
                raw = json.loads(raw) if raw.strip().startswith("[") else [p.strip() for p in raw.split(",")]
            return tuple(str(item) for item in raw)
    except (TypeError, ValueError) as error:
        raise InfraConfigError(f"agentmem:{_camel(field_name)}: {raw!r} is not valid ({error})") from error
    return str(raw)


# -- the dependency layer ---------------------------------------------------------------------------

MAKE_HINT = "run `make layers` (it runs layers/deps/build.sh: pip for the Lambda platform, no Docker)"


def recipe_digest(recipe_dir: Path = DEPS_DIR) -> str:
    """What the layer is built from: the requirement and service lists (layers/deps/*.txt)."""
    return hashlib.sha256(b"".join(path.read_bytes() for path in sorted(recipe_dir.glob("*.txt")))).hexdigest()


def resolve_deps_layer_dir(
    config: DeploymentConfig, *, built_dir: Path = DEPS_BUILT_DIR, recipe_dir: Path = DEPS_DIR
) -> Path:
    """The folder whose content becomes the dependency layer (it holds ``python/``).

    With ``agentmem:depsLayerDir`` (tests) that folder is used as it is. Otherwise the layer must have
    been built for this architecture from the current requirements, or synthesis stops with what to run.
    """
    if config.deps_layer_dir:
        stand_in = Path(config.deps_layer_dir)
        if not stand_in.is_dir():
            raise DepsLayerMissingError(f"agentmem:depsLayerDir points at {stand_in}, which is not a folder")
        return stand_in
    if not built_dir.is_dir() or not any(built_dir.iterdir()):
        raise DepsLayerMissingError(
            f"the dependency layer is not built: {built_dir} is missing or empty. "
            f"To synthesise or deploy, {MAKE_HINT}; for x86_64 run `make layers ARCH=x86_64` "
            "and pass `-c agentmem:architecture=x86_64`."
        )
    marker = built_dir / DEPS_MARKER
    if marker.is_file():
        built_for = json.loads(marker.read_text())
        if built_for.get("architecture") != config.architecture:
            raise DepsLayerMissingError(
                f"the dependency layer in {built_dir} was built for {built_for.get('architecture')}, "
                f"but this deployment is {config.architecture}: run `make layers ARCH={config.architecture}`"
            )
        if built_for.get("requirements_sha256") != recipe_digest(recipe_dir):
            raise DepsLayerMissingError(
                f"the requirements in {recipe_dir} changed since the dependency layer was built: {MAKE_HINT}"
            )
    return built_dir.parent
