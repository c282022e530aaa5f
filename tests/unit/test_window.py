"""The recent window of SPEC §4.2 (agentmem.domain.window): examples for each rule, then properties
over random conversations."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from agentmem.domain.conversations import Message, Role
from agentmem.domain.window import WINDOW_DEFAULT, effective_cap, recent_window
from hypothesis import given, settings
from hypothesis import strategies as st


def journal(*rows: str) -> list[Message]:
    """Rows from a shorthand: ``u`` user, ``a`` assistant, ``c:ID`` tool call, ``r:ID`` tool result."""
    messages: list[Message] = []
    turn = 0
    for seq, spec in enumerate(rows, start=1):
        kind, _, call_id = spec.partition(":")
        role: Role = {"u": "user", "a": "assistant", "c": "tool_call", "r": "tool_result"}[kind]  # type: ignore[assignment]
        if role == "user":
            turn += 1
        messages.append(Message(
            seq=seq, turn=turn, role=role, content=f"{spec} #{seq}", created_at=f"2026-03-02T09:00:{seq % 60:02d}Z",
            tool_name="lookup" if role == "tool_call" else None, tool_call_id=call_id or None,
            arguments={"q": seq} if role == "tool_call" else None, result={"n": seq} if role == "tool_result" else None,
        ))
    return messages


def seqs(window: Sequence[Message]) -> list[int]:
    return [m.seq for m in window]


# --- the cap -----------------------------------------------------------------------------------

def test_the_platform_default_is_20_and_settings_only_lower_it() -> None:
    # Given / When / Then
    assert WINDOW_DEFAULT == 20
    assert effective_cap(None, None) == 20
    assert effective_cap(8, None) == 8
    assert effective_cap(None, 5) == 5
    assert effective_cap(8, 5) == 5
    assert effective_cap(5, 8) == 5
    assert effective_cap(20, 20) == 20
    assert effective_cap(1, None) == 1


def test_a_setting_above_the_default_does_not_raise_the_cap() -> None:
    # Given a value above 20 (refused when set, so never stored; still never raises the cap)
    # When / Then
    assert effective_cap(25, None) == 20


def test_a_cap_under_one_is_an_error() -> None:
    with pytest.raises(ValueError):
        effective_cap(0, None)
    with pytest.raises(ValueError):
        recent_window(journal("u"), 0)


def test_the_default_cap_is_20_rows() -> None:
    # Given 30 one-row turns
    tail = journal(*["u"] * 30)
    # When the window is read with its default cap
    window = recent_window(tail)
    # Then it holds the last 20
    assert seqs(window) == list(range(11, 31))


def test_every_role_counts_one_row() -> None:
    # Given turns of a user message, a tool call, its result and an answer (4 rows each)
    tail = journal(*["u", "c:x", "r:x", "a"] * 6)
    # When the cap is 8
    window = recent_window(tail, 8)
    # Then the window holds exactly the last two turns
    assert seqs(window) == list(range(17, 25))


# --- rule 1: back to a turn boundary -------------------------------------------------------------

def test_a_short_conversation_is_sent_whole() -> None:
    tail = journal("u", "a", "u", "c:1", "r:1", "a")
    assert recent_window(tail, 20) == tail


def test_a_turn_cut_by_the_cap_is_left_out_whole() -> None:
    # Given three turns of 3 rows; the last 5 rows start inside the second turn
    tail = journal("u", "a", "a", "u", "c:1", "r:1", "u", "a", "a")
    # When the cap is 5
    window = recent_window(tail, 5)
    # Then the window starts at the third turn's user message
    assert seqs(window) == [7, 8, 9]
    assert window[0].role == "user"


def test_a_cap_landing_on_a_user_message_keeps_the_turn() -> None:
    tail = journal("u", "a", "u", "a", "a")
    assert seqs(recent_window(tail, 3)) == [3, 4, 5]


def test_the_window_starts_at_the_earliest_user_message_in_reach() -> None:
    # Given several turns inside the last cap rows
    tail = journal("a", "a", "u", "a", "u", "a", "u")
    # When / Then the longest suffix starting at a user message is kept
    assert seqs(recent_window(tail, 6)) == [3, 4, 5, 6, 7]


def test_rows_before_the_first_user_message_are_not_a_turn_start() -> None:
    # Given an assistant greeting before the user's first message
    tail = journal("a", "u", "a")
    # When / Then the window starts at the user message
    assert seqs(recent_window(tail, 20)) == [2, 3]


def test_a_tool_call_without_its_result_stays() -> None:
    tail = journal("u", "c:1", "a", "u", "c:2")
    assert seqs(recent_window(tail, 20)) == [1, 2, 3, 4, 5]


def test_a_cap_of_one_keeps_a_last_user_message() -> None:
    assert seqs(recent_window(journal("u", "a", "u"), 1)) == [3]


# --- rule 2: one turn longer than the cap ---------------------------------------------------------

def test_a_single_long_turn_sends_its_last_cap_rows() -> None:
    # Given one turn of 1 user message and 24 assistant rows
    tail = journal("u", *["a"] * 24)
    # When the cap is 20
    window = recent_window(tail, 20)
    # Then the last 20 rows are sent, though none is a user message
    assert seqs(window) == list(range(6, 26))


def test_a_single_long_turn_drops_a_leading_dangling_tool_result() -> None:
    # Given one long turn of call/result pairs; the last 5 rows start at the result of a call cut off
    tail = journal("u", "c:1", "r:1", "c:2", "r:2", "c:3", "r:3", "a")
    # When the cap is 5 (rows 4..8 = c:2 r:2 c:3 r:3 a) and 4 (rows 5..8 = r:2 c:3 r:3 a)
    # Then a result is never sent without its call
    assert seqs(recent_window(tail, 5)) == [4, 5, 6, 7, 8]
    assert seqs(recent_window(tail, 4)) == [6, 7, 8]


def test_a_single_long_turn_drops_several_dangling_results() -> None:
    # Given parallel calls whose results come after both calls
    tail = journal("u", "c:a", "c:b", "r:a", "r:b", "a", "c:c", "r:c", "a")
    # When the cap cuts between the two calls: c:b r:a r:b a c:c r:c a
    window = recent_window(tail, 7)
    # Then r:a (its call cut off) dangles from every start up to itself, and r:b once c:b is left out:
    # the window starts after both
    assert seqs(window) == [6, 7, 8, 9]


def test_a_single_long_turn_keeps_a_result_whose_call_is_in_the_window() -> None:
    tail = journal("u", "a", "a", "c:a", "c:b", "r:b", "r:a")
    assert seqs(recent_window(tail, 4)) == [4, 5, 6, 7]


def test_a_window_of_only_a_dangling_result_is_empty() -> None:
    assert recent_window(journal("u", "c:1", "r:1"), 1) == []


def test_a_conversation_without_any_user_message() -> None:
    tail = journal("a", "c:1", "r:1", "a")
    assert seqs(recent_window(tail, 4)) == [1, 2, 3, 4]
    assert seqs(recent_window(tail, 3)) == [2, 3, 4]
    assert seqs(recent_window(tail, 2)) == [4]


# --- journals whose results come in a later turn -------------------------------------------------

def test_a_result_arriving_in_a_later_turn_never_dangles() -> None:
    # Given a call in turn 1 whose result was appended in turn 2
    tail = journal("u", "c:late", "a", "u", "r:late", "a", "u", "a")
    # When the cap (7) reaches turn 2's user message but not the call
    window = recent_window(tail, 7)
    # Then the window starts at the next user message that leaves nothing dangling
    assert seqs(window) == [7, 8]


def test_a_late_result_in_the_last_turn_falls_back_to_the_first_clean_row() -> None:
    tail = journal("u", "c:late", "u", "a", "r:late", "a")
    assert seqs(recent_window(tail, 4)) == [6]


# --- properties -----------------------------------------------------------------------------------

@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    """Turns of the four roles: each tool call is followed, later in its turn, by its result (with the
    same id) unless the result is missing; parallel calls interleave their results. Sometimes the
    conversation opens with rows before any user message."""
    specs: list[str] = []
    next_id = 0
    turns = draw(st.integers(min_value=0, max_value=8))
    preamble = draw(st.booleans())
    for turn in range(turns + (1 if preamble else 0)):
        if not (preamble and turn == 0):
            specs.append("u")
        for _ in range(draw(st.integers(min_value=0, max_value=6))):
            if draw(st.booleans()):
                specs.append("a")
                continue
            calls = [str(next_id + i) for i in range(draw(st.integers(min_value=1, max_value=3)))]
            next_id += len(calls)
            specs += [f"c:{c}" for c in calls]
            answered = [c for c in calls if draw(st.integers(min_value=0, max_value=4)) > 0]
            specs += [f"r:{c}" for c in draw(st.permutations(answered))]
    return journal(*specs)


@st.composite
def messy_journals(draw: st.DrawFn) -> list[Message]:
    """Any order at all: results before their calls, in later turns, orphans, reused ids."""
    kinds = draw(st.lists(st.sampled_from(["u", "a", "c", "r"]), max_size=40))
    return journal(*[k if k in "ua" else f"{k}:{draw(st.sampled_from('xyz'))}" for k in kinds])


caps = st.integers(min_value=1, max_value=20)


def dangling(window: Sequence[Message]) -> list[int]:
    """The seqs of tool results whose call is not earlier in the window."""
    calls: set[str | None] = set()
    found: list[int] = []
    for m in window:
        if m.role == "tool_call":
            calls.add(m.tool_call_id)
        elif m.role == "tool_result" and m.tool_call_id not in calls:
            found.append(m.seq)
    return found


def check_safety(tail: list[Message], cap: int, window: list[Message]) -> None:
    assert len(window) <= cap
    assert window == tail[len(tail) - len(window):]  # a contiguous suffix of the tail
    assert dangling(window) == []


@settings(max_examples=400)
@given(conversations(), caps)
def test_property_the_window_of_a_conversation(tail: list[Message], cap: int) -> None:
    # Given a random conversation and cap
    # When the window is read, from the whole tail or from only its last cap rows (as stores read it)
    window = recent_window(tail, cap)
    assert recent_window(tail[-cap:], cap) == window
    # Then it is never over the cap, is a contiguous suffix and holds no result without its call
    check_safety(tail, cap, window)
    last = tail[-cap:]
    users = [i for i, m in enumerate(last) if m.role == "user"]
    if users:
        # and it is the longest suffix starting at a user message within the last cap rows
        assert window == last[users[0]:]
        assert window[0].role == "user"
    else:
        # the single long turn: no user message at all in the last cap rows; the last cap rows from
        # the first row that leaves nothing dangling
        assert all(m.role != "user" for m in window)
        start = len(last) - len(window)
        assert all(dangling(last[earlier:]) for earlier in range(start))
        if window:
            assert window[0].role != "tool_result"


@settings(max_examples=400)
@given(messy_journals(), caps)
def test_property_a_messy_journal_still_gets_a_safe_window(tail: list[Message], cap: int) -> None:
    # Given a journal in any order; When the window is read
    window = recent_window(tail, cap)
    # Then it is still within the cap, a suffix, and never holds a dangling result
    check_safety(tail, cap, window)
    last = tail[-cap:]
    start = len(last) - len(window)
    clean_user_starts = [i for i, m in enumerate(last) if m.role == "user" and not dangling(last[i:])]
    if clean_user_starts:
        # and it starts at the earliest user message that leaves nothing dangling
        assert start == clean_user_starts[0]
    else:
        # or else at the earliest row that does
        assert all(dangling(last[earlier:]) for earlier in range(start))
