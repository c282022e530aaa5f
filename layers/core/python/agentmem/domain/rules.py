"""The field rules and limits of SPEC §2.1 and §2.4, checked in one place.

Every check raises ``InvalidError`` with ``field`` naming the culprit, so the API
can answer 400 with a message a person can act on.
"""

from __future__ import annotations

import re
from datetime import datetime

from .clock import TimeOutOfRangeError, iso, parse_iso
from .errors import InvalidError

NAME_MAX = 64
DESCRIPTION_MAX = 200
CONTENT_MAX = 20_000
CATEGORY_PATTERN = re.compile(r"[a-z0-9_]{1,32}")
NAME_PATTERN = re.compile(r"[a-z0-9._-]{1,64}")
USER_ID_PATTERN = re.compile(r"[A-Za-z0-9._:@-]{1,128}")
CHECKPOINT_PREFIX = "context."
LAYER_LIMIT = 500
SEARCH_LIMIT_DEFAULT = 10
SEARCH_LIMIT_MAX = 100
LIST_LIMIT_DEFAULT = 50
LIST_LIMIT_MAX = 100
HISTORY_DAYS = 30
TRASH_DAYS = 30
DEFAULT_CATEGORY = "note"
DEFAULT_IMPORTANCE = 0.5


def check_name(name: str, *, field: str = "name", allow_checkpoint: bool = False) -> str:
    """An entry or memory name: 1–64 of ``[a-z0-9._-]``, not made only of dots (``.`` and ``..`` name no
    entry: in a URL path they mean this folder and its parent); ``context.`` is reserved."""
    if not isinstance(name, str) or not name:
        raise InvalidError(f"{field} must be 1–{NAME_MAX} characters", field=field)
    if len(name) > NAME_MAX:
        raise InvalidError(f"{field} is {len(name)} characters; at most {NAME_MAX} are allowed", field=field)
    if not NAME_PATTERN.fullmatch(name):
        raise InvalidError(
            f"{field} {name!r} may only hold lowercase letters, digits and . _ -", field=field
        )
    if not name.strip("."):
        raise InvalidError(f"{field} {name!r} is made only of dots; a name needs a letter, a digit, _ or -",
                           field=field)
    if not allow_checkpoint and name.startswith(CHECKPOINT_PREFIX):
        raise InvalidError(
            f"{field} {name!r}: names starting 'context.' are reserved for conversation checkpoints",
            field=field,
        )
    return name


def check_memory_name(name: str) -> str:
    """A memory name follows the entry rules; ``agent:{name}`` names an agent's own memory."""
    if isinstance(name, str) and name.startswith("agent:"):
        check_name(name[len("agent:") :], field="memory")
        return name
    return check_name(name, field="memory")


def check_user_id(user_id: str, *, field: str = "user") -> str:
    """A user id or conversation key: 1–128 of ``[A-Za-z0-9._:@-]``, but not ``.`` or ``..`` (they name
    no segment in the object keys these become part of)."""
    if not isinstance(user_id, str) or not USER_ID_PATTERN.fullmatch(user_id):
        raise InvalidError(
            f"{field} must be 1–128 characters of letters, digits and . _ : @ -", field=field
        )
    if user_id in (".", ".."):
        raise InvalidError(f"{field} {user_id!r} is reserved: '.' and '..' cannot be used", field=field)
    return user_id


def _check_text(text: str, field: str) -> None:
    """JSON may carry lone surrogates (``"\\ud800"``), which no store can hold, and NUL or other control
    characters, which are no part of text (tab, line feed, carriage return, vertical tab and form feed are)."""
    if not isinstance(text, str):
        raise InvalidError(f"{field} must be text", field=field)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidError(f"{field} holds an unpaired surrogate; it is not valid Unicode text", field=field) from None
    m = _CONTROL.search(text)
    if m is not None:
        raise InvalidError(
            f"{field} holds the control character U+{ord(m.group()):04X} at position {m.start()}; "
            "text may not hold NUL or other control characters", field=field,
        )


_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")  # Cc but \t \n \v \f \r


def check_description(description: str) -> str:
    _check_text(description, "description")
    if "\n" in description or "\r" in description:
        raise InvalidError("description must be one line", field="description")
    if not description.strip():
        raise InvalidError("description must not be empty", field="description")
    if len(description) > DESCRIPTION_MAX:
        raise InvalidError(
            f"description is {len(description)} characters; at most {DESCRIPTION_MAX} are allowed",
            field="description",
        )
    return description


def check_content(content: str) -> str:
    if not content:
        raise InvalidError("content must hold 1–20,000 characters", field="content")
    _check_text(content, "content")
    if len(content) > CONTENT_MAX:
        raise InvalidError(
            f"content is {len(content):,} characters; at most {CONTENT_MAX:,} are allowed", field="content"
        )
    return content


def check_category(category: str) -> str:
    if not isinstance(category, str) or not CATEGORY_PATTERN.fullmatch(category):
        raise InvalidError("category must be 1–32 characters of [a-z0-9_]", field="category")
    return category


def check_importance(importance: float) -> float:
    if isinstance(importance, bool) or not isinstance(importance, int | float):
        raise InvalidError("importance must be a number from 0.0 to 1.0", field="importance")
    if not 0.0 <= float(importance) <= 1.0:
        raise InvalidError(f"importance {importance} is outside 0.0–1.0", field="importance")
    return float(importance)


def check_expires_at(expires_at: str, now: datetime) -> str:
    """An ISO-8601 time in the future, normalised to UTC."""
    try:
        moment = parse_iso(expires_at)
    except TimeOutOfRangeError as error:
        raise InvalidError(f"expires_at {error}", field="expires_at") from None
    except (ValueError, TypeError, AttributeError):
        raise InvalidError(
            f"expires_at {expires_at!r} is not an ISO-8601 time", field="expires_at"
        ) from None
    if moment <= now:
        raise InvalidError("expires_at must be in the future", field="expires_at")
    return iso(moment)


def check_limit(limit: int | None, *, default: int, maximum: int) -> int:
    if limit is None:
        return default
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1 or limit > maximum:
        raise InvalidError(f"limit must be from 1 to {maximum}", field="limit")
    return limit


def check_version(version: int) -> int:
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise InvalidError("version must be a whole number ≥ 0 (0 = must not exist yet)", field="version")
    return version
