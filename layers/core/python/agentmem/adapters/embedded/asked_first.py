"""The conversations searched while their messages still wait to be embedded: the indexer embeds those first.

A large import queues thousands of messages, and the indexer embeds them in the order they came. A search of
one conversation answers meanwhile over what is indexed, its messages still in the queue found by their words
only (``index_lag`` says how many). When such a search says it is behind, the conversation is noted here, and
the indexer's next batches are that conversation's queued messages, before the rest of the import: the
conversation an agent is working in is searched by meaning within moments, not after everything queued before
it (``vector_index.py``, ``SqliteVectorIndex._apply_batch``).

The note is a hint, kept in a small file beside the database (``<db>.asked``: conversations' row ids and when
each was asked, nothing else), so that it reaches the indexer in whichever process of ``agentmem serve`` runs it.
A note lost to two processes writing at once, or left stale, costs only order: the queue is still drained whole,
each change read as it is then. A note is dropped once its conversation has nothing queued, or ASKED_KEPT_S
after it was last asked; at most ASKED_MOST are kept, the latest asked first. A file that cannot be read or
written (a full disk, a data dir made read-only) is no note, never an error: searches and the indexer go on.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path

from ...observability import logger
from .private_files import open_private_file

ASKED_KEPT_S = 30.0  # a conversation is embedded first for this long after the last search that found it behind
ASKED_MOST = 16  # ... at most this many at once, the latest asked first


class AskedFirst:
    """The notes of ``<db>.asked`` (see the module): conversation row id -> when it was last asked (Unix time)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._mark: tuple[int, int, int] | None = None  # the file as last read: inode, mtime, size
        self._held: dict[int, float] = {}
        self._warned = False  # (a file that cannot be written is said once a process)

    def ask(self, conversation: int) -> None:
        """Note that a search of ``conversation`` found some of its messages still queued."""
        with self._lock:
            held = self._read()
            held[conversation] = time.time()
            self._write(held)

    def wanted(self) -> list[int]:
        """The conversations to embed first, the latest asked first; the notes past ASKED_KEPT_S are dropped."""
        now = time.time()
        with self._lock:
            held = self._read()
            fresh = {key: at for key, at in held.items() if now - at <= ASKED_KEPT_S}
            if len(fresh) < len(held):
                self._write(fresh)
        return sorted(fresh, key=lambda key: -fresh[key])

    def done(self, conversation: int) -> None:
        """``conversation`` has nothing queued: no longer first."""
        with self._lock:
            held = self._read()
            if held.pop(conversation, None) is not None:
                self._write(held)

    def _read(self) -> dict[int, float]:
        try:
            found = self.path.stat()
        except OSError:  # (none yet; or not to be read: no note)
            self._mark, self._held = None, {}
            return {}
        mark = (found.st_ino, found.st_mtime_ns, found.st_size)
        if mark != self._mark:
            try:
                raw = json.loads(self.path.read_text(encoding="utf-8"))
                self._held = {int(key): float(at) for key, at in raw.items()} if isinstance(raw, dict) else {}
            except (OSError, ValueError, TypeError):  # a note unreadable is a note lost: only order
                self._held = {}
            self._mark = mark
        return dict(self._held)

    def _write(self, held: dict[int, float]) -> None:
        kept = dict(sorted(held.items(), key=lambda item: -item[1])[:ASKED_MOST])
        self._mark, self._held = None, kept  # (read again next time: another process may write after this one)
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.{threading.get_ident()}")
        try:
            if not kept:
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()
                return
            with os.fdopen(open_private_file(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w") as out:
                json.dump({str(key): at for key, at in kept.items()}, out)
            os.replace(temporary, self.path)  # (whole, for a reader in another process)
        except OSError:
            with contextlib.suppress(OSError):
                temporary.unlink()
            if not self._warned:
                self._warned = True
                logger.warning("the conversations to index first could not be noted; the index catches up in "
                               "the order written", extra={"path": str(self.path)}, exc_info=True)
