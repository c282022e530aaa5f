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

from .text import STOP_WORDS, WORD

# words said right before a name when calling someone by it ("hey Rosa", "goodnight carla", "thanks, Marek")
GREETINGS = frozenset({
    "hey", "hi", "hello", "hiya", "heya", "yo", "oh", "ah", "aw", "aww", "ok", "okay", "thanks", "thank", "thx",
    "ty", "cheers", "morning", "evening", "afternoon", "night", "goodnight", "congrats", "congratulations", "sorry",
    "dear", "bye", "goodbye", "welcome", "wow", "omg", "love", "miss", "happy", "birthday", "haha", "lol",
})
CALLED_LEAST = 2  # a name is called in at least this many messages ...
CALLED_SHARE = 0.5  # ... and in at least this share of those that hold it
CONVERSATION_ROLES = frozenset({"user", "assistant"})  # who speaks (tool calls and results call nobody)

_CAPITALISED = re.compile(r"(?<![^\W_])[^\W\d_][^\W_]*")
# after a name that opens a sentence: a mark, the end, or the one it calls being spoken to ("Rosa are you sure?")
_CALL_AFTER = re.compile(r"\s*(?:[,!?;:…]|\.(?![\w.])|$|(?:you|your|u|ur|are)\b)", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?…\n][^\w]*$")
_LAST_WORD = re.compile(r"([^\W_]+)[\s,]*$")
_ONLY_MARKS = re.compile(r"[^\w]*$")
_CLOSING = re.compile(r"\s*[.!?…]+(?:\s|$)")  # a sentence's end (not a dot in "AR.start")


def capitalised(query: str) -> list[str]:
    """The distinct words ``query`` writes with a capital (names, places, titles), lower-cased, stop words
    left out."""
    found = (m.group() for m in _CAPITALISED.finditer(query) if m.group()[0].isupper())
    return [w for w in dict.fromkeys(w.lower() for w in found) if w not in STOP_WORDS]


def calls(text: str, word: str) -> bool:
    """Whether ``text`` calls someone by ``word`` (lower-cased): a greeting right before it ("hey Rosa",
    "goodnight carla"); opening the text or a sentence with a mark, the end or "you" after it ("Marek. Jurek
    died", "Randi!!!", "Rosa are you sure?"); or closing the text or a sentence after a comma ("see you
    soon, Lena."). A name followed by 's is spoken of, not to."""
    for match in re.finditer(r"(?<![^\W_])" + re.escape(word) + r"(?![^\W_])", text, re.IGNORECASE):
        before, after = text[: match.start()], text[match.end():]
        if after[:1] in ("'", "’") and after[1:2].lower() == "s":
            continue
        last = _LAST_WORD.search(before)
        if last is not None and last.group(1).lower() in GREETINGS:
            return True
        opens = not WORD.search(before) or _SENTENCE_END.search(before) is not None
        if opens and _CALL_AFTER.match(after):
            return True
        closes = _ONLY_MARKS.match(after) is not None or _CLOSING.match(after) is not None
        if closes and before.rstrip().endswith(","):
            return True
    return False


def called_names(candidates: Iterable[str], messages: Iterable[tuple[str, str]]) -> set[str]:
    """Of ``candidates`` (lower-cased words), those that the ``messages`` (role, text) holding them mostly use
    to call someone (``calls``): in at least ``CALLED_LEAST`` of the people's messages (user or assistant) that
    hold the word, and in at least ``CALLED_SHARE`` of them."""
    wanted = list(dict.fromkeys(candidates))
    if not wanted:
        return set()
    holding = dict.fromkeys(wanted, 0)
    calling = dict.fromkeys(wanted, 0)
    patterns = {w: re.compile(r"(?<![^\W_])" + re.escape(w) + r"(?![^\W_])", re.IGNORECASE) for w in wanted}
    for role, text in messages:
        if role not in CONVERSATION_ROLES or not text:
            continue
        lowered = text.lower()
        for word in wanted:
            if word in lowered and patterns[word].search(text):
                holding[word] += 1
                calling[word] += calls(text, word)
    return {w for w in wanted if calling[w] >= CALLED_LEAST and calling[w] >= CALLED_SHARE * holding[w]}
