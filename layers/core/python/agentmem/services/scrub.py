"""What a purge or an erasure leaves behind in the backend's files is scrubbed once it is done (docs/security.md).

Deleting rows is not enough for the embedded backend: its full-text indexes keep a deleted row's words until their
segments are merged, and the database's WAL keeps pages as they were before. ``Scrub.after`` wraps each operation
that removes someone's data for good (a conversation's purge, an agent's, the trash's, a user's erasure); one that
did remove something says what (``removed``: entries, messages), and the backend's steps run when the outermost
``after`` ends, once, for all it removed: an erasure that purges many conversations scrubs once, a conversation's
purge leaves the entries' index alone, and a sweep that found nothing due scrubs nothing. On AWS there are no steps
(what the services delete there is deleted by DynamoDB, S3 and OpenSearch).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Literal

Removed = Literal["entries", "messages"]


class Scrub:
    def __init__(self) -> None:
        self.steps: list[Callable[[frozenset[Removed]], None]] = []
        self._local = threading.local()

    @contextmanager
    def after(self) -> Iterator[None]:
        """Run the steps when the outermost ``after`` of this thread ends without an error, if anything inside it
        called ``removed``."""
        depth: int = getattr(self._local, "depth", 0)
        if depth == 0:
            self._local.removed = set()
        self._local.depth = depth + 1
        try:
            yield
        finally:
            self._local.depth = depth
        removed: set[Removed] = self._local.removed
        if depth == 0 and removed:
            self._local.removed = set()
            for step in self.steps:
                step(frozenset(removed))

    def removed(self, *what: Removed) -> None:
        """What was removed for good inside the current ``after``: entries (their history too), messages."""
        self._local.removed.update(what)
