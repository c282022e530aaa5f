"""Workspaces (SPEC §8): the rules of a path, the limits, and where a workspace's files are stored.

A workspace is one agent × user × conversation. Its files live in a blob store under a prefix made of
hashes of those four names (so a link never shows who the user is, and any conversation key makes a
valid storage key): ``w/<account>/<agent>/<user>/<conversation>/``. Below it, a file whose key fits the
store is at ``f/<path>``; a path too long for the store's key (S3 keys are at most 1,024 bytes, and the
prefix takes some of them) is at ``h/<sha256 of the path>``, with the path itself in ``n/<same hash>``.
"""

from __future__ import annotations

import hashlib
import mimetypes
import re
from dataclasses import dataclass

from .errors import InvalidError, TooLargeError
from .screening_unicode import invisible_label, is_plain_ascii

MIB = 1024 * 1024
MAX_FILE_BYTES = 100 * MIB  # SPEC §8: a file is at most 100 MB
# The most a file written or read through the API may be. Lambda takes and gives at most 6 MB a call, and API
# Gateway hands it a file base64-encoded (4/3 the size) in a JSON event: 4 MiB fits with room for headers.
# Larger files go through links, straight to storage.
MAX_API_FILE_BYTES = 4 * MIB
MAX_PATH_BYTES = 1024
MAX_SEGMENT_BYTES = 255  # the agent sees the workspace as a folder: a file name is at most 255 bytes
DEFAULT_LINK_EXPIRES_S = 3600
MAX_LINK_EXPIRES_S = 86_400
LIST_LIMIT_DEFAULT = 100
LIST_LIMIT_MAX = 1000
LINK_METHODS = ("GET", "PUT")

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # C0, DEL and C1: Unicode's control characters (Cc)
_DIRECT, _HASHED, _NAMES = "f/", "h/", "n/"


def check_path(path: object, *, field: str = "path") -> str:
    """A workspace path: relative, ``/``-separated, 1–1,024 UTF-8 bytes, each segment 1–255 bytes and
    neither ``.`` nor ``..``; no control characters or backslashes. Raises InvalidError naming ``field``."""
    if not isinstance(path, str) or not path:
        raise InvalidError(f"{field} is required: a file's path in the workspace, like 'reports/q3.csv'", field=field)
    size = len(path.encode("utf-8", "surrogatepass"))
    if size > MAX_PATH_BYTES:
        raise InvalidError(f"{field} is {size:,} bytes; at most {MAX_PATH_BYTES:,} are allowed", field=field)
    if _CONTROL.search(path):
        raise InvalidError(f"{field} may not hold NUL or other control characters", field=field)
    if not is_plain_ascii(path) and invisible_label(path, typography=False) is not None:
        raise InvalidError(
            f"{field} holds an invisible character (a bidirectional override or mark such as U+202E, a zero-width "
            "or other formatting character): a file name must read as what it is", field=field,
        )
    if "\\" in path:
        raise InvalidError(f"{field} uses '/' to separate folders; backslashes are not allowed", field=field)
    if path.startswith("/"):
        raise InvalidError(f"{field} {path!r} is absolute; give it relative to the workspace, without a leading '/'",
                           field=field)
    for segment in path.split("/"):
        if segment == "":
            raise InvalidError(f"{field} {path!r} has an empty segment ('//' or a trailing '/')", field=field)
        if segment in (".", ".."):
            raise InvalidError(f"{field} {path!r} may not use '.' or '..' segments", field=field)
        if len(segment.encode("utf-8", "surrogatepass")) > MAX_SEGMENT_BYTES:
            raise InvalidError(f"{field}: a file or folder name is at most {MAX_SEGMENT_BYTES} bytes", field=field)
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidError(f"{field} is not valid Unicode text", field=field) from None
    return path


def check_prefix(prefix: str | None) -> str:
    """A listing's ``prefix``: any start of a valid path ('' lists everything)."""
    if not prefix:
        return ""
    check_path(prefix.rstrip("/") or "x", field="prefix")
    if prefix.startswith("/"):
        raise InvalidError("prefix is relative to the workspace, without a leading '/'", field="prefix")
    return prefix


def check_expires_in(value: object) -> int:
    if value is None:
        return DEFAULT_LINK_EXPIRES_S
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LINK_EXPIRES_S:
        raise InvalidError(
            f"expires_in_s is a whole number of seconds from 1 to {MAX_LINK_EXPIRES_S:,} (one day); got {value!r}",
            field="expires_in_s", limit=MAX_LINK_EXPIRES_S,
        )
    return value


def check_upload_size(size: object) -> int:
    if size is None:
        raise InvalidError("size_bytes is required for an upload link: the exact size of the file to upload",
                           field="size_bytes")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise InvalidError("size_bytes is a whole number of bytes, 0 or more", field="size_bytes")
    if size > MAX_FILE_BYTES:
        raise TooLargeError(f"size_bytes is {size:,}; a workspace file is at most {MAX_FILE_BYTES:,} bytes (100 MB)",
                            limit=MAX_FILE_BYTES, field="size_bytes")
    return size


def check_api_write(size: int) -> None:
    if size > MAX_API_FILE_BYTES:
        raise TooLargeError(
            f"the file is {size:,} bytes; a write through the API takes at most {MAX_API_FILE_BYTES:,}. "
            f"Upload larger files (up to {MAX_FILE_BYTES:,} bytes) through an upload link: "
            "POST .../workspace/links with {\"path\": ..., \"method\": \"PUT\", \"size_bytes\": ...}",
            limit=MAX_API_FILE_BYTES,
        )


def content_type(path: str) -> str:
    guessed, encoding = mimetypes.guess_type(path, strict=False)
    if guessed is None or encoding is not None:  # report.csv.gz is gzip bytes, not CSV
        return "application/octet-stream"
    if guessed.startswith("text/") or guessed in ("application/json", "application/xml", "image/svg+xml"):
        return f"{guessed}; charset=utf-8"
    return guessed


def file_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _h(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class WorkspaceRef:
    """One workspace: an agent's conversation with a user (``user_id``) or with the account (None)."""

    account_id: str
    agent: str
    user_id: str | None
    conversation: str

    @property
    def agent_prefix(self) -> str:
        return f"w/{_h(self.account_id)}/{_h(self.agent)}/"

    @property
    def user_prefix(self) -> str:
        return f"{self.agent_prefix}{_h('u:' + self.user_id if self.user_id else 'account')}/"

    @property
    def prefix(self) -> str:
        return f"{self.user_prefix}{_h(self.conversation)}/"

    def direct_key(self, path: str) -> str:
        return f"{self.prefix}{_DIRECT}{path}"

    def hashed_key(self, path: str) -> str:
        return f"{self.prefix}{_HASHED}{hashlib.sha256(path.encode('utf-8')).hexdigest()}"

    def name_key(self, hashed_key: str) -> str:
        return f"{self.prefix}{_NAMES}{hashed_key.rsplit('/', 1)[-1]}"

    def path_of(self, key: str) -> str | None:
        """The path of a direct key (None for a hashed or name key: its path is in the name object)."""
        rest = key[len(self.prefix):]
        return rest[len(_DIRECT):] if rest.startswith(_DIRECT) else None

    def is_hashed(self, key: str) -> bool:
        return key[len(self.prefix):].startswith(_HASHED)


def agent_prefix(account_id: str, agent: str) -> str:
    return WorkspaceRef(account_id, agent, None, "").agent_prefix


def user_prefix(account_id: str, agent: str, user_id: str) -> str:
    return WorkspaceRef(account_id, agent, user_id, "").user_prefix


def content_disposition(filename: str) -> str:
    """``attachment`` with the file's name: plain ASCII for old clients, RFC 6266 ``filename*`` for the rest."""
    from urllib.parse import quote

    fallback = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "_" for c in filename)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe='')}"
