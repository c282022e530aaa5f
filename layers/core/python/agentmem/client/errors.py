"""The SDK's typed errors, rebuilt from the API's ``{"error": {"code", "message", ...}}`` body.

Every error the service answers becomes one of these classes, chosen by the error
``code`` first and the HTTP status second, so a caller can ``except Conflict`` whatever
the transport (501 ``not_implemented`` is ``Unsupported``, not a retryable ``ServerError``).
Two errors never come from the server: ``ConfigurationError`` (no API key) and
``Unreachable`` (nothing answered at the URL).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


class AgentmemError(Exception):
    """Base of every error the SDK raises.

    ``status`` is the HTTP status (0 when no response was received), ``code`` the
    error code of the API (e.g. ``conflict``), ``details`` the error's other fields.
    """

    def __init__(
        self,
        message: str,
        status: int = 0,
        code: str = "error",
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.details: dict[str, Any] = dict(details or {})

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status}, code={self.code!r}, message={self.message!r})"


class ConfigurationError(AgentmemError):
    """The client is missing something it needs before it can send a request (e.g. an API key)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 0, "configuration")


class Unreachable(AgentmemError):
    """Nothing answered at the service URL (connection refused, DNS failure, or a timeout)."""

    def __init__(self, url: str, reason: str, *, timed_out: bool = False) -> None:
        what = "did not answer in time" if timed_out else "cannot be reached"
        super().__init__(f"agentmem at {url} {what}: {reason}", 0, "unreachable")
        self.url = url
        self.reason = reason
        self.timed_out = timed_out


class Invalid(AgentmemError):
    """400: the request breaks a field rule; ``field`` names the culprit when the server says."""

    @property
    def field(self) -> str | None:
        value = self.details.get("field")
        return str(value) if value is not None else None


class TooLarge(Invalid):
    """413: the request body is larger than the service accepts."""


class Unauthorized(AgentmemError):
    """401: the API key is missing, unknown or revoked."""


class Forbidden(AgentmemError):
    """403: the key may not do this (scope, surface, or a user key on the account layer)."""


class NotFound(AgentmemError):
    """404: no such memory, entry, key or version (other accounts' resources also answer 404)."""


class Conflict(AgentmemError):
    """409 / 412: the stored state is not what the request expected.

    For a version mismatch (409 ``conflict`` from a body ``version``, or 412
    ``precondition_failed`` from an ``If-Match`` / ``If-None-Match`` header)
    ``current_version`` is the stored version (0 = the entry does not exist). It is
    ``None`` for a 409 that is not about versions. ``LayerFull`` and ``Attached`` are
    conflicts too.
    """

    @property
    def current_version(self) -> int | None:
        value = self.details.get("current_version")
        if isinstance(value, bool) or value is None:
            return None
        try:
            return int(value)
        except (TypeError, ValueError):
            return None


class LayerFull(Conflict):
    """409 ``layer_full``: the layer already holds its 500 entries."""


class Attached(Conflict):
    """409 ``attached``: the memory cannot go to the trash while agents attach it."""

    @property
    def attached_to(self) -> list[str]:
        value = self.details.get("attached_to") or []
        return [str(name) for name in value] if isinstance(value, list) else []


class Rejected(AgentmemError):
    """422: the content was screened and refused.

    ``code`` says why: ``rejected_injection``, ``sensitive_without_user`` or
    ``no_user_context``.
    """


class RateLimited(AgentmemError):
    """429: too many requests; ``retry_after`` is the server's hint in seconds, if any."""

    @property
    def retry_after(self) -> float | None:
        value = self.details.get("retry_after")
        try:
            return float(value) if value is not None else None
        except (TypeError, ValueError):
            return None


class ServerError(AgentmemError):
    """5xx: the service failed; the request may be retried."""


class Unsupported(AgentmemError):
    """501 ``not_implemented``: this deployment does not do that, e.g. a journal tool where no journal is
    kept, or a summary pass where none is configured. Retrying does not help."""


_BY_CODE: dict[str, type[AgentmemError]] = {
    "invalid": Invalid,
    "too_large": TooLarge,
    "unauthorized": Unauthorized,
    "forbidden": Forbidden,
    "not_found": NotFound,
    "conflict": Conflict,
    "precondition_failed": Conflict,
    "layer_full": LayerFull,
    "attached": Attached,
    "rejected_injection": Rejected,
    "sensitive_without_user": Rejected,
    "no_user_context": Rejected,
    "rate_limited": RateLimited,
    "not_implemented": Unsupported,
}

_BY_STATUS: dict[int, type[AgentmemError]] = {
    400: Invalid,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    412: Conflict,
    413: TooLarge,
    422: Rejected,
    429: RateLimited,
}

_DEFAULT_CODES: dict[int, str] = {
    400: "invalid",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    409: "conflict",
    412: "precondition_failed",
    413: "too_large",
    422: "rejected",
    429: "rate_limited",
    501: "not_implemented",
}


def _error_class(status: int, code: str) -> type[AgentmemError]:
    if status == 501 or code == "not_implemented":
        return Unsupported
    if status >= 500:
        return ServerError
    by_code = _BY_CODE.get(code)
    if by_code is not None:
        return by_code
    return _BY_STATUS.get(status, AgentmemError)


def _parse_error_body(body: bytes) -> dict[str, Any] | None:
    try:
        payload = json.loads(body.decode("utf-8")) if body else None
    except (UnicodeDecodeError, ValueError):
        return None
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        return dict(payload["error"])
    return None


def error_from_response(status: int, headers: Mapping[str, str], body: bytes) -> AgentmemError:
    """The typed error for a failed response (status >= 400)."""
    error = _parse_error_body(body)
    if error is None:
        text = body.decode("utf-8", errors="replace").strip()[:200]
        message = text or f"HTTP {status}"
        code = _DEFAULT_CODES.get(status) or ("server_error" if status >= 500 else "error")
        details: dict[str, Any] = {}
    else:
        code = str(error.pop("code", "") or _DEFAULT_CODES.get(status, "error"))
        message = str(error.pop("message", "") or f"HTTP {status}")
        details = error
    retry_after = headers.get("retry-after")
    if retry_after is not None and "retry_after" not in details:
        details["retry_after"] = retry_after
    return _error_class(status, code)(message, status, code, details)
