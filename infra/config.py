"""What a deployment is configured by: CDK context values (``-c agentmem:KEY=VALUE`` or cdk.json).

Pure Python, no CDK import: the checks on the dependency layer are unit-tested without synthesising.
"""

from __future__ import annotations

import hashlib
import json
import re
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
# the Lambda runtime of every function, which the layers' wheels and bytecode are built for (the project
# itself runs on Python 3.11; layers/deps/build.sh and infra.layer_build read this one value)
LAMBDA_PYTHON = "3.13"

CONTEXT_PREFIX = "agentmem:"
Architecture = Literal["arm64", "x86_64"]


class InfraConfigError(Exception):
    """The app cannot be synthesised as configured; the message says what to do."""


class DepsLayerMissingError(InfraConfigError):
    pass


# Bedrock's rerank models (agentmem/adapters/aws/bedrock_reranker.py)
RERANK_MODELS = ("amazon.rerank-v1:0", "cohere.rerank-v3-5:0")


@dataclass(frozen=True)
class DeploymentConfig:
    """Every knob of the deployment, with the defaults a first deploy should use."""

    name: str = "agentmem"  # prefix of stack and collection names; lowercase, 3–24 chars
    architecture: Architecture = "arm64"
    deps_layer_dir: str | None = None  # tests: a stand-in folder; default layers/deps (built)
    stage_name: str = "prod"
    throttle_rate: int = 100  # requests per second, steady, across the API stage
    throttle_burst: int = 200
    # per account (the usage plan, by the key the authorizer names): one tenant cannot spend the stage's budget
    account_throttle_rate: int = 50
    account_throttle_burst: int = 100
    # an AWS WAF web ACL on the stage (infra/constructs/rate_limit_waf.py): each API key, and each source
    # address, limited before API Gateway counts them; false: no web ACL (and none of its monthly cost)
    rate_limit_waf: bool = True
    # requests per minute of one Authorization header; unset: twice what its account's plan serves in a minute
    waf_key_limit_per_minute: int | None = None
    # requests per 5 minutes from one address, whatever their key; unset: twice what an account's plan serves
    waf_source_limit_per_5_minutes: int | None = None
    authorizer_cache_seconds: int = 300  # 0 turns the authorizer cache off (max 3600)
    log_retention_days: int = 30
    search_standby_replicas: Literal["ENABLED", "DISABLED"] = "ENABLED"
    workspace_cors_origins: tuple[str, ...] = ("*",)
    embedding_model_id: str = "amazon.titan-embed-text-v2:0"
    embedding_dimension: int = 512  # Titan Text Embeddings V2: 256, 512 or 1024
    summary_model_id: str = "amazon.nova-micro-v1:0"
    # journal search's re-ranking stage (mode=deep) on Bedrock's rerank API in the API function: amazon.rerank-v1:0
    # or cohere.rerank-v3-5:0 (model access granted in the account, in a region that serves it); unset: off
    rerank_model_id: str | None = None
    api_memory_mb: int = 1024
    mcp_memory_mb: int = 1024  # the MCP function (POST /v1/mcp)
    # a rejected key is an "Unauthorized" exception, i.e. a Lambda error: alarm only on many of them
    authorizer_error_alarm_threshold: int = 25
    # the alarms' SNS topic: an address subscribed to it by email (it confirms by the link AWS sends); unset: none
    alarm_email: str | None = None
    # reserved concurrency per function (a share of the account's concurrency kept for it, and its ceiling);
    # unset: unreserved, the function draws on the account's unreserved pool
    api_reserved_concurrency: int | None = None
    mcp_reserved_concurrency: int | None = None
    authorizer_reserved_concurrency: int | None = None
    indexer_reserved_concurrency: int | None = None
    summarise_reserved_concurrency: int | None = None
    compaction_reserved_concurrency: int | None = None
    # the OpenSearch Serverless collection (semantic recall, journal search by meaning); false: recall answers
    # in keyword mode (``"fallback": "not_configured"``) and the collection's monthly floor is not paid
    search_collection: bool = True

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
        if self.rerank_model_id is not None and self.rerank_model_id not in RERANK_MODELS:
            raise InfraConfigError(f"agentmem:rerankModelId is one of {', '.join(RERANK_MODELS)}, "
                                   f"not {self.rerank_model_id!r}")
        if self.embedding_dimension not in (256, 512, 1024):
            raise InfraConfigError("agentmem:embeddingDimension is 256, 512 or 1024 (Titan Text Embeddings V2)")
        for name in ("throttle_rate", "throttle_burst", "account_throttle_rate", "account_throttle_burst"):
            if getattr(self, name) < 1:
                raise InfraConfigError(f"agentmem:{_camel(name)} is a number of requests, at least 1")
        for name in ("waf_key_limit_per_minute", "waf_source_limit_per_5_minutes"):
            value = getattr(self, name)
            if value is not None and not WAF_LIMIT_MIN <= value <= WAF_LIMIT_MAX:
                raise InfraConfigError(
                    f"agentmem:{_camel(name)} is a number of requests from {WAF_LIMIT_MIN:,} to {WAF_LIMIT_MAX:,} "
                    "(AWS WAF's bounds for a rate-based rule)"
                )
        if not 0 <= self.authorizer_cache_seconds <= 3600:
            raise InfraConfigError("agentmem:authorizerCacheSeconds is between 0 and 3600")
        for function in FUNCTIONS:
            reserved = self.reserved_concurrency(function)
            if reserved is not None and reserved < 1:
                raise InfraConfigError(
                    f"agentmem:{function}ReservedConcurrency is at least 1 (0 would stop the function); "
                    "leave it unset for unreserved"
                )
        if self.alarm_email is not None and not _EMAIL.fullmatch(self.alarm_email):
            raise InfraConfigError(f"agentmem:alarmEmail is an email address, not {self.alarm_email!r}")

    @property
    def waf_key_limit(self) -> int:
        """The web ACL's limit per API key, requests a minute: above what its account's plan ever serves."""
        return self.waf_key_limit_per_minute or 2 * 60 * self.account_throttle_rate

    @property
    def waf_source_limit(self) -> int:
        """The web ACL's limit per source address, requests in 5 minutes: above one account at its limit."""
        return self.waf_source_limit_per_5_minutes or 2 * 300 * self.account_throttle_rate

    def reserved_concurrency(self, function: str) -> int | None:
        """The reserved concurrency of the function ``functions/<function>/``, or None (unreserved)."""
        value: int | None = getattr(self, f"{function}_reserved_concurrency")
        return value


# what AWS WAF accepts as a rate-based rule's limit
WAF_LIMIT_MIN, WAF_LIMIT_MAX = 10, 2_000_000_000
# the functions under functions/, each with its agentmem:<name>ReservedConcurrency
FUNCTIONS = ("api", "mcp", "authorizer", "indexer", "summarise", "compaction")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _convert(raw: Any, annotation: Any, field_name: str) -> Any:
    kind = str(annotation)
    if kind.startswith("bool"):
        if isinstance(raw, bool):
            return raw
        if str(raw).strip().lower() in ("true", "false"):
            return str(raw).strip().lower() == "true"
        raise InfraConfigError(f"agentmem:{_camel(field_name)} is true or false, not {raw!r}")
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


# -- the dependency layers --------------------------------------------------------------------------

MAKE_HINT = "run `make layers` (it runs layers/deps/build.sh: pip for the Lambda platform, no Docker)"


def recipe_digest(recipe_dir: Path = DEPS_DIR) -> str:
    """What a layer is built from: its requirement and service lists (``<recipe>/*.txt``)."""
    return hashlib.sha256(b"".join(path.read_bytes() for path in sorted(recipe_dir.glob("*.txt")))).hexdigest()


def stale_reason(built_for: dict[str, Any], architecture: str, recipe_dir: Path = DEPS_DIR) -> str | None:
    """Why a layer with this marker cannot be deployed as ``architecture``, or None when it can."""
    if built_for.get("architecture") != architecture:
        return (
            f"it was built for {built_for.get('architecture')}, but this deployment is {architecture}: "
            f"run `make layers ARCH={architecture}`"
        )
    if built_for.get("python") != LAMBDA_PYTHON:
        return f"it was built for Python {built_for.get('python')}, but the functions run {LAMBDA_PYTHON}: {MAKE_HINT}"
    if built_for.get("bytecode") is False:
        return (
            f"it was built without bytecode (no Python {LAMBDA_PYTHON} compiled it), so every cold start would "
            f"compile its modules: install Python {LAMBDA_PYTHON} (or point RUNTIME_PYTHON at one) and {MAKE_HINT}"
        )
    if built_for.get("requirements_sha256") != recipe_digest(recipe_dir):
        return f"the requirements in {recipe_dir} changed since it was built: {MAKE_HINT}"
    return None


def _resolve_layer_dir(
    stand_in: str | None, context_key: str, what: str, architecture: str, built_dir: Path, recipe_dir: Path,
) -> Path:
    if stand_in:
        folder = Path(stand_in)
        if not folder.is_dir():
            raise DepsLayerMissingError(f"{context_key} points at {folder}, which is not a folder")
        return folder
    if not built_dir.is_dir() or not any(built_dir.iterdir()):
        raise DepsLayerMissingError(
            f"{what} is not built: {built_dir} is missing or empty. "
            f"To synthesise or deploy, {MAKE_HINT}; for x86_64 run `make layers ARCH=x86_64` "
            "and pass `-c agentmem:architecture=x86_64`."
        )
    marker = built_dir / DEPS_MARKER
    if marker.is_file():
        reason = stale_reason(json.loads(marker.read_text()), architecture, recipe_dir)
        if reason is not None:
            raise DepsLayerMissingError(f"{what} in {built_dir} cannot be used: {reason}")
    return built_dir.parent


def resolve_deps_layer_dir(
    config: DeploymentConfig, *, built_dir: Path = DEPS_BUILT_DIR, recipe_dir: Path = DEPS_DIR
) -> Path:
    """The folder whose content becomes the dependency layer every function has (it holds ``python/``).

    With ``agentmem:depsLayerDir`` (tests) that folder is used as it is. Otherwise the layer must have
    been built for this architecture from the current requirements, or synthesis stops with what to run.
    """
    return _resolve_layer_dir(
        config.deps_layer_dir, "agentmem:depsLayerDir", "the dependency layer", config.architecture,
        built_dir, recipe_dir,
    )
