"""Request bodies. Unknown fields and wrong types are refused (400) before any service runs."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class StrictBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class SaveEntryBody(StrictBody):
    """Save an entry (SPEC §2.1). The layer comes from `user=`; `visibility` must agree with it."""

    content: str = Field(description="Markdown, 1–20,000 characters")
    description: str | None = Field(
        default=None, description="One line, at most 200 characters; required when the entry is new"
    )
    category: str | None = Field(default=None, description="[a-z0-9_]{1,32}; default `note`")
    importance: float | None = Field(default=None, description="0.0–1.0; default 0.5")
    visibility: Literal["private", "shared", "read_only"] | None = None
    expires_at: str | None = Field(
        default=None,
        description="ISO-8601 time after which the entry is gone; left out keeps the current one, null removes it",
    )
    version: int | None = Field(
        default=None, description="Land only if the stored version is this (0 = must not exist)"
    )


class CreateKeyBody(StrictBody):
    user: str | None = Field(default=None, description="A user id for a user key; absent for an account key")


class EmptyBody(StrictBody):
    """No fields are accepted."""
