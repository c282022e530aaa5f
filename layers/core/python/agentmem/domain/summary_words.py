"""The words of a conversation as the summary reads them: content words, slugs and the keys of facts. Pure.

``content_words`` is what every overlap of the summary rules counts (a question answered, a forget that
names an item, the flush's ``same_fact``); ``fact_key`` / ``subject_key`` name what a statement is about
("the door code is 4512#" → ``door-code``; "my e-mail address is …" → ``email``), so a later statement of
the same thing replaces it.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from functools import lru_cache

__all__ = [
    "KEY_STOPWORDS",
    "PROFILE_KEYS",
    "STOPWORDS",
    "SUBJECT",
    "ascii_words",
    "content_words",
    "fact_key",
    "hash_key",
    "slug",
    "subject_key",
    "value_part",
    "wordset",
]


def wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


STOPWORDS = wordset(
    """a an the and or but if then so of to in on at for from by with about as into onto over under is are was
    were be been being am do does did done have has had having i me my mine myself we us our ours you your
    yours he him his she her hers it its they them their theirs this that these those what which who whom
    whose when where why how can could would should will shall may might must please just also too very
    really not no yes any some all there here now up out s t d m ll ve re don doesn didn isn aren wasn won
    can't cannot let let's ok okay hi hello hey thanks thank well oh get got"""
)
# Words a key never holds: "the current door code is …" and "the door code is …" name the same thing.
KEY_STOPWORDS = STOPWORDS | {"current", "new", "old", "actual", "now"}
_WORD = re.compile(r"[^\W_]+")
_ASCII_WORD = re.compile(r"[a-z0-9]+")


@lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if len(word) - len(suffix) >= 4 and word.endswith(suffix):
            word = word[: -len(suffix)]
            break
    return word[:6]


@lru_cache(maxsize=4_096)
def content_words(text: str) -> frozenset[str]:
    """The text's content words: lower-cased, stop words out, crudely stemmed (``refunds`` and
    ``refundable`` → ``refund``). What every overlap in this module (and the flush's ``same_fact``) counts."""
    return frozenset(_stem(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS)


def ascii_words(text: str, stop: frozenset[str]) -> list[str]:
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    return [w for w in _ASCII_WORD.findall(plain) if w not in stop]


def slug(text: str, *, max_words: int = 6, max_len: int = 48) -> str:
    """``[a-z0-9-]`` words of ``text`` (stop words out) joined by ``-``; "" when none."""
    words = ascii_words(text, KEY_STOPWORDS)[:max_words]
    out = ""
    for w in words:
        candidate = f"{out}-{w}" if out else w
        if len(candidate) > max_len:
            break
        out = candidate
    return out


def hash_key(text: str) -> str:
    return "item-" + hashlib.sha256(" ".join(text.lower().split()).encode("utf-8")).hexdigest()[:10]


# Synonyms of fact keys, so "my email address is …" and "my e-mail is …" update the same fact.
KEY_SYNONYMS = {
    "email-address": "email", "e-mail": "email", "e-mail-address": "email", "mail": "email",
    "phone-number": "phone", "mobile": "phone", "mobile-number": "phone", "cell": "phone",
    "cell-number": "phone", "cell-phone": "phone", "telephone": "phone", "telephone-number": "phone",
    "time-zone": "timezone", "tz": "timezone", "first-name": "name", "full-name": "name",
    "company": "employer", "workplace": "employer", "city": "location", "home-town": "location",
    "hometown": "location", "subscription": "plan", "tier": "plan", "pricing-plan": "plan",
    "subscription-plan": "plan", "job-title": "job", "role": "job", "title": "job", "position": "job",
    "occupation": "job", "home-address": "address", "postal-address": "address", "date-birth": "birthday",
    "birth-date": "birthday", "preferred-language": "language",
}
PROFILE_KEYS = frozenset(
    {"name", "email", "phone", "timezone", "employer", "location", "job", "address", "birthday", "pronouns",
     "language"}
)


def fact_key(subject: str) -> str:
    key = slug(subject.replace("'s ", " ").replace("’s ", " "), max_words=4)
    return KEY_SYNONYMS.get(key, key)


# "the door code is 4512#", "door code: 4512#", "the new parking spot, it's CO-3837"
SUBJECT = re.compile(r"^(?P<s>.{1,80}?)(?:\s+(?:is|are|was|were)\b|\s*[:=]|\s*[,—–-]+\s*(?:it's|it\s+is)\b)",
                     re.IGNORECASE | re.DOTALL)


def subject_key(text: str) -> str:
    """The key of a remembered item: its subject ("the door code is 4512#" → ``door-code``)."""
    m = SUBJECT.match(text)
    if m is not None:
        key = fact_key(m.group("s"))
        if key:
            return key
    return slug(text) or hash_key(text)


def value_part(text: str) -> str:
    """What an item says its subject is ("the door code is 4512#." → ``4512#``), or ""."""
    m = SUBJECT.match(text)
    if m is None:
        return ""
    return text[m.end() :].strip().rstrip(".!").strip()
