"""A question that asks for a sequence across the conversation (journal search, ``hybrid`` and ``deep``).

"Walk me through everything that happened with my flight to Lisbon", "in what order did we go through the parts
of the migration?", "can you list the order in which I brought up the aspects of my budget app? Mention only
three items": such a question asks for several messages, one for each step of a thread that runs through the
conversation, and most of its words only ask for the sequence. Searched as they are, "walk", "order", "list",
"items", "steps", "mention", "throughout our conversations" are matched like the thread's own words: in a
conversation about an online shop, "order" and "items" are in half the messages. Two fixed rules, nothing
trained:

- **The frame is left out** (``timeline_topic``): both sides search the question without the words that only
  ask for a sequence (``_FRAME``), so what is left names the thread ("my flight to Lisbon"). The things a
  question lists ("in what order did the exams, the results and the gap year go?") are still each searched on
  their own (``domain/recall.py`` ``aspects``, read from the question as asked). ``deep``'s model reads the
  question without the frame too.
- **What I did is what I said** (``toward_own``): a question asked in the first person ("my flight", "what I
  brought up", "what we tried") asks for the steps of the asker's own thread, and the asker tells each one as it
  comes ("easyJet just cancelled my flight", "we moved it to Baserow last week"): of the fused top
  ``TIMELINE_AMONG``, each of the user's own messages counts ``OWN_FACTOR`` times its score. Tool results and
  the assistant's answers around a step say more words about it and outrank the message that brought it up; a
  weak message of the user's ("ok", "thanks", lifted only by its neighbours) stays weak. The first person is read
  anywhere in the question, its frame too ("take me through the winter market business": the asker is one of
  the conversation, and its thread theirs); read only in what is left once the frame is out, timeline questions
  scored 0.521, not 0.538. A question wholly about others ("trace their mum's operation") is not leaned: in a
  chat between two people, either may tell it.

Chosen on the development half of ``bench/recall_eval``, whose 30 timeline questions (of 268) ask for 3 to 6
messages each in three sessions or more, written by hand in the three styles: hybrid R@10 of those questions
0.467 -> 0.538 within conversations (the frame left out alone: 0.480), 0.402 -> 0.473 across the journal,
0.395 -> 0.426 in one long thread; no other kind moved. The lean's size hardly matters: counting the asker's
messages 2 times, or adding 0.15 to 1.0 to their score, gave 0.538; 1.5 times 0.529; adding 0.1, 0.521.
Tried and not kept: spreading the first page across the conversation (a hit near one already above it in the
conversation losing a share of its score, as a diversity re-ranking does): 0.431-0.473 within conversations,
0.389-0.434 in one thread. The steps a question misses are not crowded out by neighbours of the ones it finds;
they are not found.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from .text import query_words

K = TypeVar("K", bound=Hashable)

TIMELINE_AMONG = 50  # the fused top in which the asker's own messages count ...
OWN_FACTOR = 2.0  # ... this many times their score

# the words of a question that ask for a sequence across the conversation
_ASKS_TIMELINE = re.compile(
    r"\b(?:in (?:what|which) order|the order (?:in which|that|of)|in (?:chronological )?order\b(?! to\b)"
    r"|step by step|one (?:thing|step) after (?:the )?another|start to finish"
    r"|from (?:the (?:moment|day|first|start|beginning)|(?:my|our|his|her|their) first|when)\b"
    r"|(?:walk|take|run|talk) me through|(?<!stack )(?<!a )trace\s+(?:the|my|our|his|her|their|its|how|what|back)\b"
    r"|the (?:stages|steps) (?:of|in)\b|over time|over the (?:months|years|weeks)"
    r"|the (?:whole )?(?:story|saga|history|timeline) of|twists and turns"
    r"|(?:evolved|unfold(?:ed)?|progressed|changed over)\b|everything (?:that )?(?:happened|went on)"
    r"|(?:each|every) change)",
    re.IGNORECASE)
_COUNT = r"(?:two|three|four|five|six|seven|eight|nine|ten|\d+)"
# ... and the words that only ask for it (left out of the search)
_FRAME = re.compile(
    r"\b(?:(?:can|could|would|will) you|please|for me|remind me(?: of)?|tell me|give me|show me"
    r"|(?:walk|take|run|talk) me through|go through|list(?:ing)?|put|(?:in|into) (?:chronological |the right )?order"
    r"|in (?:what|which) order(?: (?:did|do|does|were|was|have|has|had))?|the order (?:in which|that)|(?:the )?order of"
    r"|step by step|one (?:thing|step) after (?:the )?another"
    r"|from (?:the )?(?:start|beginning) to (?:the )?(?:finish|end)|start to finish"
    r"|mention(?:ing)? only(?: and only)?(?: " + _COUNT + r")?(?: items?| things?| steps?| points?)?"
    r"|" + _COUNT + r" (?:items|things|steps|points|of them)|(?:throughout|across|over|in) (?:all )?(?:of )?our"
    r" (?:conversations?|sessions?|chats?|talks?)|over time|over the (?:months|years|weeks)"
    r"|everything (?:that )?(?:happened|went on)|what(?:'s| has)? (?:been )?(?:happened|going on|went on)"
    r"|the (?:whole )?(?:story|saga|history|timeline) of|what were the (?:stages|steps) (?:of|in)"
    r"|(?:the )?(?:different|various) (?:aspects|parts|things|topics) of|(?:i|we) (?:brought|bring) up"
    r"|brought up|is enough|in order)\b",
    re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|me|my|mine|we|we're|we've|us|our)\b", re.IGNORECASE)


def asks_for_timeline(query: str) -> bool:
    """Whether ``query`` asks for the steps of something across the conversation, in order."""
    return _ASKS_TIMELINE.search(query) is not None


def timeline_topic(query: str) -> str:
    """``query`` without the words that only ask for a sequence (``_FRAME``); itself when no word to search would
    be left."""
    left = " ".join(_FRAME.sub(" ", query).split())
    return left if query_words(left) else query


def asks_in_first_person(query: str) -> bool:
    """Whether ``query`` asks about the asker's own doings ("my", "I", "we", "our")."""
    return _FIRST_PERSON.search(query) is not None


def toward_own(ranked: Sequence[tuple[K, float]], own: Callable[[K], bool], *, among: int = TIMELINE_AMONG,
               factor: float = OWN_FACTOR) -> list[tuple[K, float]]:
    """``ranked`` (best first) with each of its first ``among`` that ``own`` holds counted ``factor`` times its
    score, ordered again (ties keep their order); the rest follow as they were. Scores are made no higher than
    the one's before, so the answer stays best first and within the scores' range."""
    head = sorted(((score * (factor if own(key) else 1.0), n, key) for n, (key, score) in enumerate(ranked[:among])),
                  key=lambda item: (-item[0], item[1]))
    out: list[tuple[K, float]] = []
    for _, n, key in head:
        score = ranked[n][1]
        out.append((key, min(score, out[-1][1]) if out else score))
    return out + list(ranked[among:])
