"""Blobs as files under the data dir: the embedded backend's S3.

Layout: ``<root>/objects/<seg>/<seg>/<last>~`` — each key segment percent-encoded (``~`` too), the last
one with a ``~`` suffix. A file's name ends in ``~`` and a directory's never does, so ``a`` and ``a/b``
can both be objects, as in S3.

Every write goes to a temporary file in ``<root>/tmp`` (same filesystem), is flushed to disk, then put
in place in one step: ``os.replace`` to overwrite, ``os.link`` for a create-only write — ``link`` fails
when the name exists, so of two racing creates exactly one lands, and a reader never sees half a file.
Several processes may share the directory. Every directory is 0700 and every file 0600, whatever the umask
(``private_files``): the files are the data dir owner's alone.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, Protocol
from urllib.parse import quote, unquote

from ...domain.clock import iso
from ...domain.errors import InvalidError
from ...ports.blobs import BlobExistsError, BlobInfo, BlobNotFoundError, BlobStore, check_key
from .links import LinkSigner
from .private_files import DIR_MODE, make_private_dirs, open_private_file, tighten


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


_FILE_MARK = "~"
_MAX_NAME_BYTES = 255
_STALE_TMP_S = 3600
_PLACE_ATTEMPTS = 5
_CHUNK = 1024 * 1024


def _private_file(path: Path) -> BinaryIO:
    """A new file to write, 0600 (it keeps its mode when it is put in place)."""
    return os.fdopen(open_private_file(path, os.O_WRONLY | os.O_EXCL), "wb")


def _encode(segment: str) -> str:
    return quote(segment, safe="").replace("~", "%7E")


class FileBlobStore(BlobStore):
    def __init__(self, root: Path, *, links: LinkSigner | None = None) -> None:
        self.root = root
        self.links = links  # signs expiring links (workspaces); None for a store that gives none
        self._objects = root / "objects"
        self._tmp = root / "tmp"
        for directory in (root, self._objects, self._tmp):
            make_private_dirs(directory)
            tighten(directory, DIR_MODE)
        self._clear_stale_tmp()

    # -- the port -----------------------------------------------------------------------------------
    def put(self, key: str, data: bytes, *, if_none_match: bool = False) -> None:
        path = self._path(key)
        tmp = self._tmp / uuid.uuid4().hex
        with _private_file(tmp) as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        self._land(tmp, path, create_only=if_none_match, key=key)

    def put_stream(self, key: str, source: Readable, size: int) -> None:
        """Store exactly ``size`` bytes read from ``source`` (an upload link's body), never all in memory.
        A body that ends early stores nothing (InvalidError)."""
        path = self._path(key)
        tmp = self._tmp / uuid.uuid4().hex
        try:
            with _private_file(tmp) as out:
                left = size
                while left:
                    chunk = source.read(min(_CHUNK, left))
                    if not chunk:
                        raise InvalidError(f"the body ended {left:,} bytes short of its {size:,}", field="body")
                    out.write(chunk)
                    left -= len(chunk)
                out.flush()
                os.fsync(out.fileno())
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        self._land(tmp, path, create_only=False, key=key)

    def object_path(self, key: str) -> Path:
        """Where the object's bytes are (to stream them); BlobNotFoundError when there is none."""
        path = self._path(key)
        if not path.is_file():
            raise BlobNotFoundError(f"no blob at {key!r}")
        return path

    def _land(self, tmp: Path, path: Path, *, create_only: bool, key: str) -> None:
        try:
            self._place(tmp, path, create_only=create_only, key=key)
        finally:
            tmp.unlink(missing_ok=True)
        self._sync_dir(path.parent)

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            raise BlobNotFoundError(f"no blob at {key!r}") from None

    def delete(self, key: str) -> None:
        path = self._path(key)
        path.unlink(missing_ok=True)
        self._prune(path.parent)

    def stat(self, key: str) -> BlobInfo:
        try:
            found = os.stat(self._path(key))
        except FileNotFoundError:
            raise BlobNotFoundError(f"no blob at {key!r}") from None
        return BlobInfo(key=key, size=found.st_size, last_modified=iso(datetime.fromtimestamp(found.st_mtime, UTC)))

    def fits(self, key: str) -> bool:
        try:
            self._path(key)
        except InvalidError:
            return False
        return True

    def signed_url(
        self, key: str, *, method: str, expires_in_s: int, size: int | None = None, filename: str | None = None,
        content_type: str | None = None,
    ) -> str:
        if self.links is None:
            raise RuntimeError("this blob store was built without a link signer")
        self._path(key)
        return self.links.sign(key, method=method, expires_in_s=expires_in_s, size=size, filename=filename)

    def list(self, prefix: str = "", *, start_after: str = "") -> Iterator[BlobInfo]:
        # Only the directory of the prefix's complete segments can hold matches.
        complete = prefix.split("/")[:-1]
        if any(segment in ("", ".", "..") for segment in complete):
            return iter(())
        base = self._objects.joinpath(*(_encode(s) for s in complete))
        found: list[BlobInfo] = []
        for directory, _, files in os.walk(base):
            relative = Path(directory).relative_to(self._objects).parts
            for name in files:
                if not name.endswith(_FILE_MARK):
                    continue
                key = "/".join(unquote(part) for part in (*relative, name[: -len(_FILE_MARK)]))
                if not key.startswith(prefix) or (start_after and key.encode() <= start_after.encode()):
                    continue
                try:
                    stat = os.stat(os.path.join(directory, name))
                except FileNotFoundError:  # deleted while we walked
                    continue
                modified = iso(datetime.fromtimestamp(stat.st_mtime, UTC))
                found.append(BlobInfo(key=key, size=stat.st_size, last_modified=modified))
        found.sort(key=lambda info: info.key.encode("utf-8"))
        return iter(found)

    # -- helpers --------------------------------------------------------------------------------------
    def _path(self, key: str) -> Path:
        segments = [_encode(s) for s in check_key(key).split("/")]
        segments[-1] += _FILE_MARK
        if any(len(s.encode()) > _MAX_NAME_BYTES for s in segments):
            raise InvalidError("a blob key segment is too long for the embedded store", field="key")
        return self._objects.joinpath(*segments)

    def _place(self, tmp: Path, path: Path, *, create_only: bool, key: str) -> None:
        for _ in range(_PLACE_ATTEMPTS):
            try:
                make_private_dirs(path.parent)
                if create_only:
                    os.link(tmp, path)
                else:
                    os.replace(tmp, path)
                return
            except FileExistsError:
                raise BlobExistsError(f"a blob already exists at {key!r}", key=key) from None
            except FileNotFoundError:
                continue  # a concurrent delete pruned the parent between mkdir and the link: make it again
        raise OSError(f"could not place blob {key!r}: its directory kept disappearing")

    def _prune(self, directory: Path) -> None:
        """Remove directories left empty by a delete, up to the objects root (racing writers re-create them)."""
        while directory != self._objects and self._objects in directory.parents:
            try:
                directory.rmdir()
            except OSError:
                return
            directory = directory.parent

    @staticmethod
    def _sync_dir(directory: Path) -> None:
        with contextlib.suppress(OSError):
            fd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def _clear_stale_tmp(self) -> None:
        """Temporary files a crashed writer left behind (old enough that no live write still owns them)."""
        cutoff = time.time() - _STALE_TMP_S
        for leftover in self._tmp.iterdir():
            with contextlib.suppress(OSError):
                if leftover.stat().st_mtime < cutoff:
                    leftover.unlink()
