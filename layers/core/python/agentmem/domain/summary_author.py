"""Which summariser wrote a checkpoint version: said in the entry's description, where its history keeps it
(SPEC §4.4: a checkpoint's ``passes`` name each pass's ``summariser``). Pure."""

from __future__ import annotations

DESCRIPTION_MAX = 200
_BY = ", written by "
_HEAD = "Summary of conversation "
_THROUGH = " through message "


def checkpoint_description(key: str, through: int, summariser: str) -> str:
    """``Summary of conversation <key> through message <n>, written by <summariser>``, at most 200
    characters: a long key is cut first, so the summariser's name stays readable."""
    tail = f"{_THROUGH}{through}{_BY}{summariser[:80]}"
    head = f"{_HEAD}{key}"
    return (head[: max(0, DESCRIPTION_MAX - len(tail))] + tail)[:DESCRIPTION_MAX]


def covered_through(description: str) -> int | None:
    """The seq a checkpoint version's description says it covers through (None: not a pass's description)."""
    said = _said(description)
    if said is None:
        return None
    _, _, through = said[0].rpartition(_THROUGH)
    return int(through) if through.isdigit() else None


def summariser_of(description: str) -> str | None:
    """The summariser a checkpoint version's description names (None: written before they were named)."""
    said = _said(description)
    return (said[1] or None) if said is not None else None


def _said(description: str) -> tuple[str, str] | None:
    """A pass's description cut at its summariser: (what comes before, the summariser); None for another."""
    if not description.startswith(_HEAD) or _BY not in description:
        return None
    head, _, summariser = description.rpartition(_BY)
    return head, summariser
