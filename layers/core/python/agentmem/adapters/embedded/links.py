"""Expiring links to the embedded store's objects: HMAC-SHA256 over method, key, expiry, size and file
name, with a secret made once per data dir. ``agentmem serve`` serves them (``local/links.py``).

A link is ``{base}/v1/links/{key}?method=&expires=&size=&filename=&signature=``. Changing any part —
another key, a later expiry, another method or size — breaks the signature, so the link answers 403.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import re
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlencode

from ...domain.errors import ForbiddenError
from .private_files import FILE_MODE, make_private_dirs, open_private_file, tighten

LINK_ROOT = "/v1/links/"
_CANONICAL_NUMBER = re.compile(r"0|[1-9][0-9]{0,18}")  # (a link's expiry and size: fewer than 20 digits)
SECRET_FILE = "link-secret"


class LinkRefusedError(ForbiddenError):
    """403: the link is expired, altered, or used with another method."""


@dataclass(frozen=True)
class SignedLink:
    key: str
    method: str
    expires: int
    size: int | None
    filename: str | None


def load_secret(data_dir: Path) -> bytes:
    """The data dir's link secret, made on first use (create-only, so racing processes agree on one), 0600."""
    path = data_dir / SECRET_FILE
    if not path.exists():
        make_private_dirs(data_dir)
        with contextlib.suppress(FileExistsError):
            fd = open_private_file(path, os.O_WRONLY | os.O_EXCL)
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_hex(32) + "\n")
    tighten(path, FILE_MODE)
    for _ in range(50):  # another process may be between creating the file and writing it
        text = path.read_text().strip()
        if text:
            return bytes.fromhex(text)
        time.sleep(0.01)
    raise OSError(f"{path} is empty; remove it and start again")


def _signed_number(query: Mapping[str, str], name: str) -> int:
    """A number of the link as ``sign`` writes it, and only so: digits, no sign, no leading zero, no ``_``, no space
    (``int`` reads ``+N``, ``0N``, ``N_N`` and `` N `` as ``N``: each would verify as the link that was signed)."""
    text = query[name]
    if not _CANONICAL_NUMBER.fullmatch(text):
        raise LinkRefusedError(f"this link's {name} is not a number as it was signed (digits only)")
    return int(text)


class LinkSigner:
    def __init__(self, secret: bytes, *, base_url: str = "", clock: Callable[[], float] = time.time) -> None:
        self._secret = secret
        self.base_url = base_url.rstrip("/")  # the server sets it once it knows its address
        self.clock = clock

    def _signature(self, method: str, key: str, expires: int, size: int | None, filename: str | None) -> str:
        message = "\n".join((method, key, str(expires), "" if size is None else str(size), filename or ""))
        return hmac.new(self._secret, message.encode("utf-8"), hashlib.sha256).hexdigest()

    def sign(
        self, key: str, *, method: str, expires_in_s: int, size: int | None = None, filename: str | None = None
    ) -> str:
        expires = int(self.clock()) + expires_in_s
        query: dict[str, str] = {"method": method, "expires": str(expires)}
        if size is not None:
            query["size"] = str(size)
        if filename:
            query["filename"] = filename
        query["signature"] = self._signature(method, key, expires, size, filename)
        return f"{self.base_url}{LINK_ROOT}{quote(key, safe='/')}?{urlencode(query, quote_via=quote)}"

    def verify(self, method: str, key: str, query: Mapping[str, str]) -> SignedLink:
        """The link's terms when its signature holds, it has not expired and is used with its method."""
        try:
            signed_method = query["method"]
            expires = _signed_number(query, "expires")
            size = _signed_number(query, "size") if "size" in query else None
            signature = query["signature"]
        except KeyError:
            raise LinkRefusedError("this link is incomplete: it needs method, expires and signature") from None
        filename = query.get("filename") or None
        expected = self._signature(signed_method, key, expires, size, filename)
        # as bytes: compare_digest refuses text with non-ASCII characters, which a query can carry
        if not hmac.compare_digest(expected.encode(), signature.encode("utf-8", "surrogatepass")):
            raise LinkRefusedError("this link's signature does not match: it was altered or is for another file")
        if self.clock() >= expires:
            raise LinkRefusedError("this link has expired; ask for a new one")
        allowed = ("GET", "HEAD") if signed_method == "GET" else (signed_method,)
        if method not in allowed:
            raise LinkRefusedError(f"this link is for {signed_method}, not {method}")
        return SignedLink(key=key, method=signed_method, expires=expires, size=size, filename=filename)
