"""Domain errors. Each carries the §10 error code and the HTTP status it maps to.

The API turns any ``AgentmemError`` into ``{"error": {"code", "message", ...details}}``;
the SDK turns that shape back into the same classes.
"""

from __future__ import annotations

from typing import Any


class AgentmemError(Exception):
    """Base of every error the service reports to a caller."""

    code = "error"
    status = 500

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.details}


class InvalidError(AgentmemError):
    """400: the request is malformed or breaks a field rule. ``field`` names the culprit."""

    code = "invalid"
    status = 400


class UnauthorizedError(AgentmemError):
    code = "unauthorized"
    status = 401


class ForbiddenError(AgentmemError):
    code = "forbidden"
    status = 403


class NotFoundError(AgentmemError):
    code = "not_found"
    status = 404


class MethodNotAllowedError(AgentmemError):
    code = "method_not_allowed"
    status = 405


class VersionConflictError(AgentmemError):
    """409: a body ``version`` did not match the stored one. Carries ``current_version`` (0 = absent)."""

    code = "conflict"
    status = 409

    def __init__(self, message: str, *, current_version: int, **details: Any) -> None:
        super().__init__(message, current_version=current_version, **details)
        self.current_version = current_version


class PreconditionFailedError(VersionConflictError):
    """412: an ``If-Match`` / ``If-None-Match`` header did not hold. Same payload as a conflict."""

    code = "precondition_failed"
    status = 412


class ConflictError(AgentmemError):
    """409 that is not about versions (a name already used, a memory in the trash)."""

    code = "conflict"
    status = 409


class LayerFullError(AgentmemError):
    code = "layer_full"
    status = 409


class AttachedError(AgentmemError):
    """409: the memory is attached to agents; ``attached_to`` lists them."""

    code = "attached"
    status = 409


class TooLargeError(AgentmemError):
    code = "too_large"
    status = 413


class RejectedError(AgentmemError):
    """422 base: the content was screened and refused."""

    code = "rejected"
    status = 422


class RejectedInjectionError(RejectedError):
    code = "rejected_injection"


class SensitiveWithoutUserError(RejectedError):
    code = "sensitive_without_user"


class NoUserContextError(RejectedError):
    code = "no_user_context"


class RateLimitedError(AgentmemError):
    code = "rate_limited"
    status = 429


class NotImplementedYetError(AgentmemError):
    """501: the operation is part of the API but not served here (e.g. summary passes on a deployment
    without a state machine)."""

    code = "not_implemented"
    status = 501


class UnavailableError(AgentmemError):
    """503: the service cannot do this now, through no fault of the request; it may be retried."""

    code = "unavailable"
    status = 503
