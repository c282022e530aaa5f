"""The hot tail of the journals: message rows in a conversation's partition, read and removed.

Rows are never changed once written; a row leaves the table only when its message is sealed (or purged).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from ....domain.conversations import Message
from . import layout
from .conversation_rows import ConversationState, message_from_row
from .io_threads import IoThreads
from .models import BoundModels, MessageRow, TableRow

CHUNK_SEQS = 1000  # seqs read by one Query of a chunked read (about one segment)
DELETE_CHUNK = 500  # rows per deleting task (BatchWriteItem sends 25 a request)
BATCH_GET = 100  # keys per BatchGetItem


class HotTail:
    def __init__(self, models: BoundModels, threads: IoThreads) -> None:
        self.models = models
        self.threads = threads

    def rows(self, pk: str, first: int, last: int, *, descending: bool = False, limit: int | None = None,
             ) -> list[Message]:
        """The rows from seq ``first`` to ``last`` there are, in seq order (the newest ``limit`` when
        ``descending``); one consistent Query per MB."""
        if last < first:
            return []
        rows = self.models.message.query(
            pk, MessageRow.sk.between(layout.message_sk(first), layout.message_sk(last)), consistent_read=True,
            scan_index_forward=not descending, limit=limit, page_size=limit,
        )
        messages = [message_from_row(row) for row in rows]
        return messages[::-1] if descending else messages

    def chunks(self, pk: str, first: int, last: int) -> Iterator[list[Message]]:
        """The rows from ``first`` to ``last`` in order, ``CHUNK_SEQS`` a Query, a few Queries at once."""
        bounds = [(a, min(last, a + CHUNK_SEQS - 1)) for a in range(first, last + 1, CHUNK_SEQS)]
        for start in range(0, len(bounds), self.threads.threads):
            yield from self.threads.map(lambda b: self.rows(pk, b[0], b[1]), bounds[start:start + self.threads.threads])

    def at(self, pk: str, seqs: Sequence[int]) -> dict[int, Message]:
        """The rows there are at ``seqs``, by seq (consistent BatchGetItems)."""
        keys = [(pk, layout.message_sk(seq)) for seq in seqs]
        found: dict[int, Message] = {}
        for start in range(0, len(keys), BATCH_GET):
            for row in self.models.message.batch_get(keys[start:start + BATCH_GET], consistent_read=True):
                found[int(row.seq)] = message_from_row(row)
        return found

    def delete(self, pk: str, seqs: Iterable[int]) -> None:
        seqs = list(seqs)

        def delete(chunk: Sequence[int]) -> None:
            with self.models.message.batch_write() as batch:
                for seq in chunk:
                    batch.delete(self.models.message(pk, layout.message_sk(seq)))

        self.threads.map(delete, [seqs[i:i + DELETE_CHUNK] for i in range(0, len(seqs), DELETE_CHUNK)])

    def sealed_leftovers(self, state: ConversationState) -> list[int]:
        """Rows already sealed that a seal cut short did not delete (almost always none: one keys-only Query)."""
        if state.sealed_through <= 0:
            return []
        rows = self.models.row.query(
            state.pk, TableRow.sk.between(layout.message_sk(1), layout.message_sk(state.sealed_through)),
            consistent_read=True, attributes_to_get=["PK", "SK"],
        )
        return [layout.message_seq(row.sk) for row in rows]

    def point_to_tool_rows(self, pk: str, messages: Sequence[Message]) -> None:
        """Pointers that keep sealed tool rows in the by_tool_call index (written before the rows go)."""
        with self.models.tool_pointer.batch_write() as batch:
            for message in messages:
                if message.tool_call_id is None:
                    continue
                pointer = self.models.tool_pointer(pk, layout.tool_pointer_sk(message.tool_call_id, message.seq))
                pointer.seq = message.seq
                pointer.tc_sk = layout.tool_call_sk(message.tool_call_id, message.seq)
                batch.save(pointer)

    def tool_call_seqs(self, pk: str, tool_call_id: str) -> list[int]:
        """The seqs of the rows (hot, or sealed with a pointer) that carry ``tool_call_id``: one index Query."""
        keys = self.models.tool_pointer.by_tool_call.query(
            pk, self.models.tool_pointer.tc_sk.startswith(layout.tool_key(tool_call_id) + "#")
        )
        return sorted({layout.seq_of_tool_call_sk(key.tc_sk) for key in keys if key.tc_sk})

    def remove_partition(self, pk: str, keep: str) -> list[str]:
        """Delete every item of the partition but the one with sort key ``keep``; returns their sort keys."""
        items = [row for row in self.models.row.query(pk, consistent_read=True, attributes_to_get=["PK", "SK"])
                 if row.sk != keep]

        def delete(chunk: Sequence[TableRow]) -> None:
            with self.models.row.batch_write() as batch:
                for item in chunk:
                    batch.delete(item)

        self.threads.map(delete, [items[i:i + DELETE_CHUNK] for i in range(0, len(items), DELETE_CHUNK)])
        return [item.sk for item in items]
