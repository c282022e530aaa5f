"""A model summariser with the extractive one behind it (SPEC §4.3): when the model fails — refused,
unreachable, timed out past its retries, or answering something that is not a summary — the pass writes
the extractive summary instead of failing, and says so: ``summarise_named`` names
``extractive (fallback: <model> failed)``, which the checkpoint's ``passes`` show. Used for local
endpoints (``summariser=openai``), where a model that is down or busy should not stop summaries; Bedrock on
AWS fails the step instead, which the state machine retries."""

from __future__ import annotations

from collections.abc import Sequence

from ..domain.conversations import Message
from ..observability import logger
from ..ports.summariser import Summariser


class FallbackSummariser(Summariser):
    def __init__(self, primary: Summariser, fallback: Summariser) -> None:
        self.primary = primary
        self.fallback = fallback

    @property
    def name(self) -> str:
        return self.primary.name

    def fallback_name(self) -> str:
        return f"{self.fallback.name} (fallback: {self.primary.name} failed)"

    def summarise(self, previous: str | None, messages: Sequence[Message]) -> str:
        return self.summarise_named(previous, messages)[0]

    def summarise_named(self, previous: str | None, messages: Sequence[Message]) -> tuple[str, str]:
        try:
            return self.primary.summarise_named(previous, messages)
        except Exception as error:
            logger.warning("the summariser failed; the extractive summary is written instead",
                           extra={"summariser": self.primary.name, "error": type(error).__name__,
                                  "reason": str(error)[:300]})
        return self.fallback.summarise(previous, messages), self.fallback_name()
