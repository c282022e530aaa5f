"""Blob storage: journal segments and workspace files (S3 on AWS, a directory on the embedded backend)."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..domain.errors import ConflictError, InvalidError, NotFoundError

MAX_KEY_BYTES = 1024  # S3's limit, kept on every backend so a key that works locally works on AWS
_BAD_KEY_CHARS = re.compile(r"[\x00-\x1f\x7f\\]")


class BlobExistsError(ConflictError):
    """A create-only write (``if_none_match=True``) found an object already at the key. Nothing was written."""


class BlobNotFoundError(NotFoundError):
    """No object at the key."""


@dataclass(frozen=True)
class BlobInfo:
    key: str
    size: int
    last_modified: str  # UTC ISO-8601


def check_key(key: str) -> str:
    """A key every backend can store: 1–1024 UTF-8 bytes, ``/``-separated segments that are neither empty
    nor ``.``/``..``, no leading ``/``, no control characters or backslashes. Raises InvalidError."""
    if not key or len(key.encode("utf-8")) > MAX_KEY_BYTES:
        raise InvalidError("a blob key is 1 to 1024 bytes", field="key")
    if _BAD_KEY_CHARS.search(key):
        raise InvalidError("a blob key has no control characters or backslashes", field="key")
    if any(segment in ("", ".", "..") for segment in key.split("/")):
        raise InvalidError("a blob key's segments are not empty, '.' or '..'", field="key")
    return key


class BlobStore(ABC):
    """One bucket of objects addressed by ``/``-separated keys (see ``check_key``).

    Writes are atomic: a reader sees the old object or the new one, never a part. A create-only
    write (``if_none_match=True``, S3's ``If-None-Match: *``) lands only when no object is at the key,
    and when two race exactly one wins; the other gets ``BlobExistsError``. Journal segments are written
    that way so a retried or concurrent seal can never overwrite a sealed segment.

    Workspaces add expiring links (``signed_url``) that reach an object with no API key: S3 presigns
    them; the embedded store signs them with HMAC and ``agentmem serve`` serves them.
    """

    @abstractmethod
    def put(self, key: str, data: bytes, *, if_none_match: bool = False) -> None:
        """Store ``data`` at ``key``, replacing what is there unless ``if_none_match`` (then BlobExistsError)."""

    @abstractmethod
    def get(self, key: str) -> bytes:
        """The object's bytes; BlobNotFoundError when there is none."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove the object; deleting a missing key is not an error (S3's semantics)."""

    @abstractmethod
    def stat(self, key: str) -> BlobInfo:
        """The object's size and time; BlobNotFoundError when there is none."""

    @abstractmethod
    def list(self, prefix: str = "", *, start_after: str = "") -> Iterator[BlobInfo]:
        """Every object whose key starts with ``prefix`` (and sorts after ``start_after``), in key order
        (UTF-8 byte order, as S3). S3 fetches them page by page as the iterator is consumed."""

    @abstractmethod
    def signed_url(
        self, key: str, *, method: str, expires_in_s: int, size: int | None = None, filename: str | None = None,
        content_type: str | None = None,
    ) -> str:
        """A link that reaches the object with no API key until ``expires_in_s`` from now.

        ``GET`` downloads it (with ``filename`` in a ``Content-Disposition``, ``content_type`` as its type);
        ``PUT`` uploads exactly ``size`` bytes to it."""

    def fits(self, key: str) -> bool:
        """Whether ``key`` can be stored here as it is (S3: 1,024 bytes; a directory: also its name limits)."""
        try:
            check_key(key)
        except InvalidError:
            return False
        return True

    def delete_prefix(self, prefix: str) -> Sequence[str]:
        """Remove every object under ``prefix``; the keys that went."""
        removed = [info.key for info in self.list(prefix)]
        for key in removed:
            self.delete(key)
        return removed
