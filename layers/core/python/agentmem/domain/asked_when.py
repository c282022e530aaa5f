"""A question that asks when is answered by a message that says a time (journal search, ``hybrid`` and ``deep``).

"On what date was Jurek buried?" is answered by "The funeral is Thursday, 3 July, at Rakowicki", and "How long
did the parcel take?" by "it arrived on Tuesday, 3 months in the post": the question's words name the event, and
among the messages about it the one that says a date, a day, an hour or a length of time is the answer. This is
the answer type of question answering's retrieval (a *when* question wants a time), read from the text with
fixed patterns and nothing trained: of the fused top ``WHEN_AMONG`` of a question that asks when
(``asks_when``), each message that says a time (``says_a_time``) gains ``WHEN_SHARE``. A month, a weekday,
"yesterday", "last week", an ordinal day, a clock time, an ISO or slashed date, a number of days, weeks, months,
years, hours or minutes count; "may", "sun" or "am" as words do not. It adds no candidate, and a message may pass
the cut-off by it, as by its neighbours' evidence.

Chosen on the development half of ``bench/recall_eval``, where 64 of its 238 questions ask when (36 of the 39
temporal ones): hybrid R@10 0.762 -> 0.781 within conversations (temporal 0.876 -> 0.940, multi hop 0.782 ->
0.811, updated fact 0.582 -> 0.609, decision 0.702 -> 0.728; fact 0.853 -> 0.829, a question), 0.718 -> 0.724
across the journal, 0.673 -> 0.678 in one thread; ``deep`` 0.823 -> 0.826. Only a "when" that asks counts, not
the "when" of a clause ("the code easyJet gave me when they cancelled"): counting any, 0.784 (a decision question
more), and a fact question of the held-out set lost its gold message. Shares of 0.07 and 0.15 gave 0.784 and
0.780, a looser pattern for a time (any month's abbreviation, "may", "am", "week", "night") 0.783, each with any
"when" counting.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

WHEN_SHARE = 0.1  # what a message that says a time gains, among the fused top of a question that asks when
WHEN_AMONG = 50  # ... that top
WHEN_CHARS = 2000  # of a long message, what is read

# "when" that asks (followed by a verb that asks, "when's", "…and when?"), not the "when" of a clause ("the code
# easyJet gave me when they cancelled"); "what date", "how long", "how many days" and the like
_ASKS_WHEN = re.compile(
    r"\bwhen(?:'s|\s+(?:did|does|do|is|am|are|was|were|will|would|has|have|had|can|could|should|might|must"
    r"|exactly|roughly|about))\b|\bwhen\s*\?|\b(?:since|until|till) when\b|\bwhat (?:date|day|time|month|year|week)\b"
    r"|\bhow long\b|\bhow many (?:days|weeks|months|years|hours|minutes)\b|\bhow soon\b", re.IGNORECASE)
# a time said in words: a month (not "may": a verb as often), a weekday, a day said as near; matched as whole words
_TIME_WORDS = frozenset((
    "january", "february", "march", "april", "june", "july", "august", "september", "october", "november",
    "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "today", "tomorrow", "yesterday", "tonight",
))
_WORD = re.compile(r"\w+")
_NEAR = frozenset(("last", "next", "this"))
_RELATIVE = re.compile(r"\b(?:last|next|this) (?:week|month|year|weekend|night|morning|evening|spring|summer|autumn"
                       r"|fall|winter)\b")
# ... and in figures: an ordinal day, a clock time, a date, a number of days, weeks, months, years, hours or
# minutes, an hour with am or pm, a day of May; tried where a run of digits starts a word (one pattern searched
# over the whole text took about 25 µs a message, most of the rule's time)
_DIGITS = re.compile(r"\d+")
_IN_FIGURES = re.compile(
    r"(?:\d{1,2}(?:st|nd|rd|th)|\d{1,2}:\d{2}|\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?"
    r"|\d+\s*(?:days?|weeks?|months?|years?|hours?|minutes?|mins?|hrs?)|\d{1,2}\s*(?:am|pm)|\d{1,2} may)\b")
_MAY_DAY = re.compile(r"\bmay \d{1,2}\b")


def asks_when(question: str) -> bool:
    """Whether ``question`` asks when something happened, for how long, or what date, day or time."""
    return _ASKS_WHEN.search(question) is not None


def says_a_time(text: str) -> bool:
    """Whether ``text`` (its first ``WHEN_CHARS`` characters) says a date, a day, an hour or a length of time."""
    read = text[:WHEN_CHARS].lower()
    words = set(_WORD.findall(read))
    if words & _TIME_WORDS or "o'clock" in read:
        return True
    if words & _NEAR and _RELATIVE.search(read):
        return True
    for run in _DIGITS.finditer(read):
        at = run.start()
        if (at == 0 or not (read[at - 1].isalnum() or read[at - 1] == "_")) and _IN_FIGURES.match(read, at):
            return True
    return "may " in read and _MAY_DAY.search(read) is not None


def toward_times(ranked: Sequence[tuple[K, float]], text_of: Callable[[K], str], *, share: float = WHEN_SHARE,
                 among: int = WHEN_AMONG, said: dict[K, bool] | None = None) -> list[tuple[K, float]]:
    """``ranked`` (best first) with each of its first ``among`` that says a time raised by ``share``, ordered
    again (ties keep their order); the rest follow as they were. Scores may pass 1 here: the cut-off and the score
    shown are the caller's (``lend_ranked``). ``said``: whether each candidate read so far says a time, kept (a
    question and the things it names rank the same candidates)."""
    read = {} if said is None else said

    def says(key: K) -> bool:
        if key not in read:
            read[key] = says_a_time(text_of(key))
        return read[key]

    place = {key: at for at, (key, _) in enumerate(ranked)}
    raised = [(key, score + share if at < among and says(key) else score) for at, (key, score) in enumerate(ranked)]
    raised.sort(key=lambda pair: (-round(pair[1], 6), place[pair[0]]))
    return raised
