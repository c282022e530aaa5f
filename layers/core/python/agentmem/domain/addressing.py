"""The names a conversation calls its people by. Pure.

People who chat call each other by name: "hey Rosa!", "goodnight carla", "Marek. Jurek died this morning",
"Rosa are you sure?". A question about one of them names them ("What did Rosa decide about the hens' water?"),
while what Rosa said holds "I", never "Rosa". The messages that do hold the name are then mostly greetings and
calls, short, and in an embedding of the question the name pulls it towards them and away from what was said.

``called_names`` finds, among the words a question writes with a capital, those the messages holding them
mostly use to call someone; journal search leaves them out of what the semantic side embeds (the words' side
keeps them: a message that names a person still matches by the name).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from .text import STOP_WORDS, WORD

# words said right before a name when calling someone by it ("hey Rosa", "goodnight carla", "thanks, Marek")
GREETINGS = frozenset({
    "hey", "hi", "hello", "hiya", "heya", "yo", "oh", "ah", "aw", "aww", "ok", "okay", "thanks", "thank", "thx",
    "ty", "cheers", "morning", "evening", "afternoon", "night", "goodnight", "congrats", "congratulations", "sorry",
    "dear", "bye", "goodbye", "welcome", "wow", "omg", "love", "miss", "happy", "birthday", "haha", "lol",
})
CAPITALISED_MOST = 8  # the words written with a capital a question is read for, at most
CALLED_LEAST = 2  # a name is called in at least this many messages ...
CALLED_SHARE = 0.5  # ... and in at least this share of those that hold it
CALLED_SAMPLE = 40  # ... read in this many of them at most
EDGE = 200  # the characters at each end of a long message where ``calls`` looks for a name
BEFORE_REACH = 64  # how far before a name ``calls`` reads (a greeting, a sentence's end, a comma)
CONVERSATION_ROLES = frozenset({"user", "assistant"})  # who speaks (tool calls and results call nobody)

_CAPITALISED = re.compile(r"(?<![^\W_])[^\W\d_][^\W_]*")
# after a name that opens a sentence: a mark, the end, or the one it calls being spoken to ("Rosa are you sure?")
_CALL_AFTER = re.compile(r"\s*(?:[,!?;:…]|\.(?![\w.])|$|(?:you|your|u|ur|are)\b)", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?…\n][^\w]*$")
_SENTENCE_START = re.compile(r"(?:^|[.!?…\n])[^\w]*$")  # nothing but marks since the start or a sentence's end
_LAST_WORD = re.compile(r"([^\W_]+)[\s,]*$")
_ONLY_MARKS = re.compile(r"[^\w]*$")
_CLOSING = re.compile(r"\s*[.!?…]+(?:\s|$)")  # a sentence's end (not a dot in "AR.start")


def capitalised(query: str, most: int = CAPITALISED_MOST) -> list[str]:
    """The first ``most`` distinct words ``query`` writes with a capital (names, places, titles), lower-cased,
    stop words left out (a question names a few people; a query of capitalised words is read no further). A
    word that opens the query or a sentence of it is not read: its capital says nothing ("Budget for the
    trip?")."""
    found = (m.group() for m in _CAPITALISED.finditer(query)
             if m.group()[0].isupper() and _SENTENCE_START.search(query, max(0, m.start() - 16), m.start()) is None)
    return [w for w in dict.fromkeys(w.lower() for w in found) if w not in STOP_WORDS][:most]


def calls(text: str, word: str) -> bool:
    """Whether ``text`` calls someone by ``word`` (lower-cased): a greeting right before it ("hey Rosa",
    "goodnight carla"); opening the text or a sentence with a mark, the end or "you" after it ("Marek. Jurek
    died", "Randi!!!", "Rosa are you sure?"); or closing the text or a sentence after a comma ("see you
    soon, Lena."). A name followed by 's is spoken of, not to."""
    return _calls(text.lower(), _name(word.lower()))


@lru_cache(maxsize=256)
def _name(word: str) -> re.Pattern[str]:
    return re.compile(r"(?<![^\W_])" + re.escape(word) + r"(?![^\W_])")


def _calls(text: str, name: re.Pattern[str]) -> bool:
    """``calls`` over a lower-cased text."""
    # people call each other at a message's edges ("hey Rosa! …", "… see you soon, Lena."): a long message is
    # read there only
    edges = [(0, len(text))] if len(text) <= 2 * EDGE else [(0, EDGE), (len(text) - EDGE, len(text))]
    for match in (m for lo, hi in edges for m in name.finditer(text, lo, hi)):
        start, end = match.span()
        if WORD.match(text, end) or (text[end:end + 1] in ("'", "’") and text[end + 1:end + 2] == "s"):
            continue  # a longer word cut at an edge; or 's: spoken of
        # what comes before is read within a short reach: a long message holds the name many times
        reach = max(0, start - BEFORE_REACH)
        last = _LAST_WORD.search(text, reach, start)
        if last is not None and last.group(1) in GREETINGS:
            return True
        opens = (reach == 0 and not WORD.search(text, 0, start)) or \
            _SENTENCE_END.search(text, reach, start) is not None
        if opens and _CALL_AFTER.match(text, end):
            return True
        closes = _ONLY_MARKS.match(text, end) is not None or _CLOSING.match(text, end) is not None
        if closes and text[reach:start].rstrip().endswith(","):
            return True
    return False


def called_names(candidates: Iterable[str], messages: Iterable[tuple[str, str]]) -> set[str]:
    """Of ``candidates`` (lower-cased words), those that the ``messages`` (role, text) holding them mostly use
    to call someone (``calls``): in at least ``CALLED_LEAST`` of the people's messages (user or assistant) that
    hold the word, and in at least ``CALLED_SHARE`` of them, read in the first ``CALLED_SAMPLE`` that do (the
    candidates come best first)."""
    wanted = list(dict.fromkeys(candidates))
    names = {word: _name(word) for word in wanted}
    holding = dict.fromkeys(wanted, 0)
    calling = dict.fromkeys(wanted, 0)
    for role, text in messages:
        if not wanted:
            break
        if role not in CONVERSATION_ROLES or not text:
            continue
        lowered = text.lower()
        for word in wanted:
            if word in lowered and names[word].search(lowered):
                holding[word] += 1
                calling[word] += _calls(lowered, names[word])
        wanted = [w for w in wanted if holding[w] < CALLED_SAMPLE]
    return {w for w in holding if calling[w] >= CALLED_LEAST and calling[w] >= CALLED_SHARE * holding[w]}
