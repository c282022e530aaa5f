"""The summariser of a conversation's rolling summary (SPEC §4.3): Bedrock's Converse API on AWS, a
deterministic extractive summariser on the embedded backend."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from ..domain.conversations import Message


class Summariser(ABC):
    """Writes the next summary of a conversation from the previous one and the messages folded since.

    Contract:

    * **progressive** — ``summarise`` is given the previous summary (None on the first pass) and only the
      messages that left the window since that summary was written, never the whole history; the previous
      text may have been edited by hand, and is then the starting point (an edit wins, SPEC §4.4);
    * the result is Markdown with the sections ``## Remembered``, ``## Facts``, ``## Decisions``,
      ``## Open questions`` and ``## Recent topics``;
    * what the conversation asked to remember is kept **word for word** until a later message asks to
      forget it; a fact that changed keeps only its latest value; decisions and open questions are kept;
    * **no other secret** (key, token, password …) is kept (SPEC §2.5, last point);
    * errors propagate: the caller (the summary state machine, or the embedded job runner) retries.
    """

    @property
    @abstractmethod
    def name(self) -> str:
        """What logs call this summariser (e.g. ``extractive``, ``bedrock:<model id>``)."""

    @abstractmethod
    def summarise(self, previous: str | None, messages: Sequence[Message]) -> str:
        """The new summary: ``previous`` (None: none yet) plus ``messages``, in journal order."""

    def summarise_named(self, previous: str | None, messages: Sequence[Message]) -> tuple[str, str]:
        """The new summary and the name of what wrote it (this summariser; another, for one that falls
        back). The pass records the name with the checkpoint."""
        return self.summarise(previous, messages), self.name
