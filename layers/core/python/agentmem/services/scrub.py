"""What a purge or an erasure leaves behind in the backend's files is scrubbed once it is done (docs/security.md).

Deleting rows is not enough for the embedded backend: its full-text indexes keep a deleted row's words until their
segments are merged, and the database's WAL keeps pages as they were before. ``Scrub.after`` wraps each operation
that removes someone's data for good (a conversation's purge, an agent's, the trash's, a user's erasure); one that
did remove something says so (``removed``), and the backend's steps run when the outermost ``after`` ends, so an
erasure that purges many conversations scrubs once, and a sweep that found nothing due scrubs nothing. On AWS there
are no steps (what the services delete there is deleted by DynamoDB, S3 and OpenSearch).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class Scrub:
    def __init__(self) -> None:
        self.steps: list[Callable[[], None]] = []
        self._local = threading.local()

    @contextmanager
    def after(self) -> Iterator[None]:
        """Run the steps when the outermost ``after`` of this thread ends without an error, if anything inside it
        called ``removed``."""
        depth: int = getattr(self._local, "depth", 0)
        if depth == 0:
            self._local.removed = False
        self._local.depth = depth + 1
        try:
            yield
        finally:
            self._local.depth = depth
        if depth == 0 and self._local.removed:
            self._local.removed = False
            for step in self.steps:
                step()

    def removed(self) -> None:
        """Something was removed for good inside the current ``after``."""
        self._local.removed = True
