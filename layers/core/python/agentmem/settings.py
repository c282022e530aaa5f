"""Settings: the one place that reads the environment.

Everything else receives a ``Settings`` (or values taken from it) through the
composition root, ``agentmem.bootstrap``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Validated service settings, read from ``AGENTMEM_*`` variables."""

    model_config = SettingsConfigDict(env_prefix="AGENTMEM_", extra="ignore")

    backend: Literal["embedded", "aws"] = "embedded"
    data_dir: Path = Field(default=Path(".agentmem"))
    api_key: str | None = None  # `serve`: becomes the default account's key when set
    # AWS backend names (the AWS issue fills these in)
    table: str = "agentmem"
    journal_bucket: str = "agentmem-journal"
    workspace_bucket: str = "agentmem-workspace"
    state_machine_arn: str | None = None
    opensearch_endpoint: str | None = None
    # the summariser of conversation summaries (SPEC §4.3): the offline extractive one, or Bedrock's Converse
    summariser: Literal["extractive", "bedrock"] = "extractive"
    bedrock_model_id: str = "anthropic.claude-3-5-haiku-20241022-v1:0"
    # recall (SPEC §6.2): the embedder behind the semantic index. "wordllama" ships its model in its wheel (the
    # offline default); "bedrock" is Titan Text Embeddings V2; "openai" any OpenAI-compatible /v1/embeddings
    # endpoint (Ollama, vLLM, LM Studio, a hosted provider); "hashing" a model-free stand-in; "none" turns the
    # semantic side off (recall answers in keyword mode, saying "not_configured")
    embedder: Literal["wordllama", "hashing", "bedrock", "openai", "none"] = "wordllama"
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
    # the embedded backend's sweep (expiry, trash, conversations left over threshold), every this many seconds
    sweep_every_s: float = Field(default=60.0, gt=0)
    # embedded backend: the address workspace links start with (default: the address `serve` listens on)
    public_url: str | None = None
    # limits that are settings rather than contract
    max_body_bytes: int = 1_000_000


def load_settings(**overrides: object) -> Settings:
    """Settings from the environment, with explicit overrides (CLI flags) winning."""
    clean = {k: v for k, v in overrides.items() if v is not None}
    return Settings(**clean)  # type: ignore[arg-type]
