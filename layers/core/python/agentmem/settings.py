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
