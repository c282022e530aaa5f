from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..domain.models import Entry, EntryDraft, HistoryItem, Layer, Page


class EntryStore(ABC):
    """Entries of memory layers, with optimistic versions enforced by the store itself.

    ``expected_version``: None = last writer wins; 0 = must not exist; N = must be at N.
    A mismatch raises ``VersionConflictError`` carrying the current version, and
    changes nothing. Every change appends a history row in the same transaction.

    Versions of a name never repeat within a layer: a delete is a version of its own, and an entry created
    after a delete, or after its predecessor expired (removed or not), continues after that one's last
    version. Only ``purge_layer`` (or the purge of the memory) forgets a name's versions.
    """

    # True when ``search_candidates`` returns every live, non-checkpoint entry of each layer, whatever the
    # words (a store without a word index): a search then knows a layer's names without asking again
    candidates_are_whole_layers: bool = False

    @abstractmethod
    def save(
        self,
        layer: Layer,
        draft: EntryDraft,
        *,
        expected_version: int | None,
        now: str,
        keep_history_until: str,
        layer_limit: int,
    ) -> tuple[Entry, bool]:
        """Create or replace; returns the stored entry (without content) and whether it was created.

        Raises VersionConflictError, LayerFullError (a new name in a full layer; checkpoints
        don't count) and InvalidError (a new entry without a description).
        """

    @abstractmethod
    def purge_layer(self, layer: Layer) -> int:
        """Erase one layer of one memory for good (a user's erasure, SPEC §4.6 ``DELETE /v1/users/{user}``,
        removes that user's layer in every memory); returns how many entries it removed.

        Removed: every entry of the layer, checkpoints included, live or expired but not yet swept (each
        counts in the answer); every history row of the layer, kept or not; the layer's counter; and the
        layer's search rows (the embedded store's FTS rows). Left untouched: every other layer, the
        account layer of the same memory, other users' layers, and the same user's layers in other memories.

        Afterwards the layer is as new: a save creates version 1 (the names' last versions are forgotten
        too), the layer limit counts from 0, and the
        memory's ``entry_count`` no longer counts the removed entries. A memory in the trash is purged the
        same way (it is restored without the layer). A layer that is empty, or that never existed (an
        unknown user or memory), gives 0. Purging is idempotent, and needs no version: it is not one of the
        changes history records.
        """

    @abstractmethod
    def get(self, layer: Layer, name: str, now: str) -> Entry | None:
        """The live entry with content; expired entries are absent."""

    def get_many(self, keys: Sequence[tuple[Layer, str]], now: str) -> dict[tuple[Layer, str], Entry]:
        """The live entries (with content) of these (layer, name) pairs that exist: recall's re-check of its
        semantic candidates. A store that can read many at once (DynamoDB's BatchGetItem) overrides this."""
        found = {}
        for layer, name in keys:
            entry = self.get(layer, name, now)
            if entry is not None:
                found[(layer, name)] = entry
        return found

    @abstractmethod
    def delete(
        self, layer: Layer, name: str, *, expected_version: int | None, now: str, keep_history_until: str,
        updated_by: str, memory_live: bool = False,
    ) -> Entry:
        """Remove; raises NotFoundError when absent and VersionConflictError on a mismatch. ``memory_live``:
        also NotFoundError when the layer's memory is gone or in the trash, checked in the delete's own write
        (a caller's view of the memory may be seconds old); purges of a trashed memory leave it False."""

    @abstractmethod
    def forget_history(self, layer: Layer, name: str) -> int:
        """Remove every history row of one name in one layer, kept or not (a conversation's purge takes its
        checkpoint's versions with it); returns how many. The entry itself, if there is one, is untouched."""

    @abstractmethod
    def list_layer(self, layer: Layer, now: str, *, limit: int, cursor: str | None) -> Page:
        """One layer's live entries without content, newest ``updated_at`` first."""

    @abstractmethod
    def layers(self, account_id: str, memory: str) -> list[tuple[str | None, int]]:
        """The memory's layers that hold entries: ``(user_id or None for the account layer, entries held)``, the
        account layer first, then by user id. The count is what the layer's counter holds (checkpoints left out,
        expired entries not yet removed counted in); a layer whose entries are all gone is left out."""

    @abstractmethod
    def history(self, layer: Layer, name: str, now: str, *, limit: int | None = None) -> list[HistoryItem]:
        """The entry's kept history (``keep_until`` after ``now``), newest first, expired or not:
        the service decides what an expiry hides. With ``limit``, only the newest ``limit`` (and no more read
        than a page of them)."""

    @abstractmethod
    def existing_names(self, layer: Layer, names: Sequence[str], now: str) -> set[str]:
        """Which of ``names`` have a live entry in the layer."""

    @abstractmethod
    def search_candidates(
        self, layers: Sequence[Layer], words: Sequence[str], whole: str, now: str, *, limit: int | None = None
    ) -> list[Entry]:
        """Live, non-checkpoint entries (with content) that may match: every entry holding a word
        starting with one of ``words`` (or one of its stems) or holding ``whole`` in its name or description.
        With ``limit``, a store that can rank by relevance (BM25, name and description above content) may keep
        only the best ``limit`` of those holding words (never fewer); entries holding ``whole`` always come.
        The domain ranking decides."""

    # --- what the context for a turn reads (SPEC §5): only what it shows ---------------------------
    # Each store reads for these only what the index and the pinned block show, whatever the layer's size.

    @abstractmethod
    def index_page(
        self, layer: Layer, now: str, *, limit: int, cursor: str | None, shadowed_by: Layer | None = None
    ) -> Page:
        """The memory index's entries of one layer, without content, newest ``updated_at`` first: live and
        not checkpoints, and with ``shadowed_by`` (the user's layer of the same memory) none whose name has a
        live entry there. ``cursor``: the one the previous page gave."""

    @abstractmethod
    def index_count(self, layer: Layer, now: str, *, shadowed_by: Layer | None = None) -> int:
        """How many entries ``index_page`` gives over all its pages."""

    @abstractmethod
    def pinning_candidates(self, layer: Layer, now: str, *, limit: int) -> list[Entry]:
        """The layer's best ``limit`` live entries (checkpoints left out) that qualify for the pinned block
        (``domain.context.qualifies_for_pinning``), in ``domain.context.best_for_pinning``'s order. With their
        content when the store has it at hand; the caller reads the content of those it keeps (``get_many``)."""

    def prefetch(self, layers: Sequence[Layer], now: str, *, entries: Sequence[tuple[Layer, str]] = ()) -> None:
        """Inside ``context_reads``: what the build will read, known before it reads it (the listings of
        ``layers``, the entries ``entries`` names), so a store whose reads wait on the network can send them at
        once and answer the calls that follow from them. The default reads nothing ahead: each call reads when
        it comes (the embedded store's reads take microseconds)."""
        return None

    @contextmanager
    def context_reads(self) -> Iterator[None]:
        """One context build's reads: what a store reads inside (``context_memo``) is shared by the build's calls,
        and forgotten when it ends (a later build reads again, and sees every write made since)."""
        previous = getattr(_LISTINGS, "memo", None)
        _LISTINGS.memo = {}
        try:
            yield
        finally:
            _LISTINGS.memo = previous


_LISTINGS = threading.local()  # per thread, the reads of the context build under way (context_reads)


def context_memo() -> dict[Any, Any] | None:
    """The calling thread's reads of the context build under way (``context_reads``); None outside one. A store
    keys what it keeps there by its own ``id`` (what ``prefetch`` started, what the build's calls read)."""
    memo: dict[Any, Any] | None = getattr(_LISTINGS, "memo", None)
    return memo
