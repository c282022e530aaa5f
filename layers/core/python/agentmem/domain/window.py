"""The recent window of SPEC §4.2: the tail of the journal the model sees on every turn. Pure.

Rows are counted one each (a user message, each assistant message, each tool call, each tool
result). Of the last ``cap`` rows, the window is:

1. the longest suffix that starts at a user message, so no turn is half present;
2. when those rows hold no user message (one turn longer than the cap), the longest suffix that
   starts at a row from which no tool result is *dangling*.

A tool result is dangling when its tool call (the same ``tool_call_id``, earlier) is not in the
window: model APIs refuse a result without its call. In a journal whose results follow their calls
within the turn, rule 1 never leaves one dangling, and rule 2 is the spec's "starting at the first
row that is not a dangling tool result" (generalised: with parallel calls a dangling result can
come after the first kept row, and the window starts after it). A journal whose result arrives in a
later turn than its call would break that: rule 1 then takes the earliest user message that leaves
nothing dangling and, where there is none, rule 2 applies. The window is always a contiguous suffix
of the tail and never holds a dangling tool result; in the worst case it is empty.
"""

from __future__ import annotations

from collections.abc import Sequence

from .agents import WINDOW_MESSAGES_MAX
from .conversations import Message

WINDOW_DEFAULT = WINDOW_MESSAGES_MAX  # 20: the platform default and the most any setting allows


def effective_cap(agent_window: int | None, conversation_window: int | None) -> int:
    """The window's cap: the platform default (20), lowered by the agent's or the conversation's
    ``window_messages`` (None: not set). Either can only lower it; a value under 1 is an error."""
    cap = WINDOW_DEFAULT
    for value in (agent_window, conversation_window):
        if value is None:
            continue
        if value < 1:
            raise ValueError(f"window_messages must be at least 1, not {value}")
        cap = min(cap, value)
    return cap


def _clean_starts(rows: Sequence[Message]) -> list[bool]:
    """For each index i (and len(rows)): whether rows[i:] holds no dangling tool result."""
    n = len(rows)
    clean = [True] * (n + 1)
    for start in range(n):
        calls: set[str | None] = set()
        for row in rows[start:]:
            if row.role == "tool_call":
                calls.add(row.tool_call_id)
            elif row.role == "tool_result" and (row.tool_call_id is None or row.tool_call_id not in calls):
                clean[start] = False
                break
    return clean


def recent_window(tail: Sequence[Message], cap: int = WINDOW_DEFAULT) -> list[Message]:
    """The window of a journal whose last rows are ``tail`` (oldest first; any length)."""
    if cap < 1:
        raise ValueError(f"the window's cap must be at least 1, not {cap}")
    rows = list(tail[-cap:])
    clean = _clean_starts(rows)
    for index, row in enumerate(rows):
        if row.role == "user" and clean[index]:
            return rows[index:]
    first_clean = clean.index(True)
    return rows[first_clean:]
