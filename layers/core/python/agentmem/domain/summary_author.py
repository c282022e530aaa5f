"""Which summariser wrote a checkpoint version: said in the entry's description, where its history keeps it
(SPEC §4.4: a checkpoint's ``passes`` name each pass's ``summariser``). Pure."""

from __future__ import annotations

DESCRIPTION_MAX = 200
_BY = ", written by "


def checkpoint_description(key: str, through: int, summariser: str) -> str:
    """``Summary of conversation <key> through message <n>, written by <summariser>``, at most 200
    characters: a long key is cut first, so the summariser's name stays readable."""
    tail = f" through message {through}{_BY}{summariser[:80]}"
    head = f"Summary of conversation {key}"
    return (head[: max(0, DESCRIPTION_MAX - len(tail))] + tail)[:DESCRIPTION_MAX]


def covered_through(description: str) -> int | None:
    """The seq a checkpoint version's description says it covers through (None: not a pass's description)."""
    if not description.startswith("Summary of conversation ") or _BY not in description:
        return None
    head = description.rsplit(_BY, 1)[0]
    _, _, through = head.rpartition(" through message ")
    return int(through) if through.isdigit() else None


def summariser_of(description: str) -> str | None:
    """The summariser a checkpoint version's description names (None: written before they were named)."""
    if not description.startswith("Summary of conversation ") or _BY not in description:
        return None
    return description.rsplit(_BY, 1)[1] or None
