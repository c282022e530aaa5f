"""The names a conversation calls its people by. Pure.

People who chat call each other by name: "hey Rosa!", "goodnight carla", "Marek. Jurek died this morning",
"Rosa are you sure?". A question about one of them names them ("What did Rosa decide about the hens' water?"),
while what Rosa said holds "I", never "Rosa". The messages that do hold the name are then mostly greetings and
calls, short, and in an embedding of the question the name pulls it towards them and away from what was said.

``called_names`` finds, among the words a question writes with a capital, those the messages holding them
mostly use to call someone; journal search leaves them out of what the semantic side embeds (the words' side
keeps them: a message that names a person still matches by the name).

How many calls ``calls`` sees decides whether a name is found at all. Reading "that's great Rosa!", "oh no
Rosa.", "Rosa did you see the fence??" and "Rosa 🥹 you don't have to" as calls too took a conversation in
which 3 of the 8 messages naming Rosa had been read as calls to 7 of 8, and its questions about Rosa from
her greetings to what she said: on the development half of ``bench/recall_eval`` hybrid R@10 0.781 -> 0.794
within conversations (four questions up, none down), 0.724 -> 0.731 across the journal, 0.678 -> 0.686 in one
thread. An exclamation mark counts only after a word that is not a stop word: "that's Norway!!" had made a
country a called name. Leaving a called name's match out of the words' side too, for the messages that call
it, was tried and not kept: 0.798 within conversations, 0.729 and 0.684 the other ways. Nor was a name that
ends a message after a word that is not a stop word ("that's massive carla"): no question moved.
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
    # (not "great" or "nice", which name places and books: "Great Yarmouth", "The Great Gatsby")
    "no", "yes", "yeah", "yay", "sure", "done",  # "oh no Rosa.", "well done Marek"
})
CAPITALISED_MOST = 8  # the words written with a capital a question is read for, at most
CALLED_LEAST = 2  # a name is called in at least this many messages ...
CALLED_SHARE = 0.5  # ... and in at least this share of those that hold it
CALLED_SAMPLE = 40  # ... read in this many of them at most
EDGE = 200  # the characters at each end of a long message where ``calls`` looks for a name
BEFORE_REACH = 64  # how far before a name ``calls`` reads (a greeting, a sentence's end, a comma)
CONVERSATION_ROLES = frozenset({"user", "assistant"})  # who speaks (tool calls and results call nobody)

_CAPITALISED = re.compile(r"(?<![^\W_])[^\W\d_][^\W_]*")
# after a name that opens a sentence: a mark, the end, the one it calls being spoken to ("Rosa are you sure?",
# "Rosa did you see the fence??"), or an emoji ("Rosa 🥹 you don't have to"; not a dash or a quote)
_CALL_AFTER = re.compile(
    r"\s*(?:[,!?;:…]|\.(?![\w.])|$|(?:you|your|u|ur|are)\b"
    r"|(?:did|do|have|can|could|will|would|were|should)\s+(?:you|u)\b|[^\x00-\x7f\w\s’‘“”«»–—])", re.IGNORECASE)
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
    """Whether ``text`` calls someone by ``word`` (lower-cased): a greeting or an interjection right before it
    ("hey Rosa", "goodnight carla", "oh no Rosa."); an exclamation mark right after it, after a word that is not a
    stop word ("that's great Rosa!", not "that's Norway!" or "a friend for Mochi!");
    opening the text or a sentence with a mark, the end, "you" or an emoji after it ("Marek. Jurek died",
    "Randi!!!", "Rosa are you sure?", "Rosa did you see the fence??", "Rosa 🥹"); or closing the text or a
    sentence after a comma ("see you soon, Lena."). A name followed by 's is spoken of, not to. A use that
    reads either way ("I told Lena! she laughed") is settled by ``called_names``, which counts a name called
    only when most of the messages holding it call it."""
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
        if text.startswith("!", end) and last is not None and last.group(1) not in STOP_WORDS:
            return True  # after a word that is not a stop word: "that's great Rosa!", not "that's Norway!!"
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
