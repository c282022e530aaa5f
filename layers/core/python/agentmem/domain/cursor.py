"""Opaque page cursors: a JSON value, base64url-encoded. Clients must not build them."""

from __future__ import annotations

import base64
import json
from typing import Any

from .errors import InvalidError


def encode_cursor(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> Any:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        return json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, TypeError):
        raise InvalidError("cursor is not one this service gave out", field="cursor") from None
