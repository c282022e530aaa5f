"""Rolling summaries (SPEC §4.3) and what every summary keeps or leaves out (SPEC §2.5, last point). Pure.

The summary is a Markdown document with fixed sections::

    # Conversation summary

    ## Remembered        what the user asked to remember, word for word, until asked to forget it
    ## Facts             "<key>: <statement>", one per key: a fact that changed keeps its latest value
    ## Decisions         "we decided …", "let's go with …", "agreed: …"
    ## Open questions    the user's questions no later assistant message answered
    ## Recent topics     what the last few user messages were about (the first to go when space runs out)

``ExtractiveSummariser`` (the embedded backend's summariser: deterministic, offline, no model) rebuilds it
from the previous summary's sections plus the new messages, so passes are progressive: the previous text
is parsed back into its sections (an edited summary is the starting point, and any text in it that is not
one of those sections is kept as it is) and the messages are applied in order. A pass over A and then one
over B gives the same summary as one pass over A+B, as long as nothing had to be cut for length (and no
"forget it" at the start of B points back at a request at the end of A).

Rules, all word-based and deterministic (English phrasings):

* **remembered** — a user sentence that asks to remember ("remember …", "remember that …", "note that …",
  "don't forget …", "keep in mind …", "make a note of …", "…, remember that.", "my <…> code|pin|number|id
  is …") keeps its item word for word (the text after the request). Its *key* is the subject before
  "is"/":"/"=" ("the door code is 4512#" → ``door-code``): remembering the same key again replaces it. A
  later "forget …" / "you can forget my code" / "never mind the …" / "no need to remember …" removes the
  items it names (same key, or every item whose words hold all the words named; "forget it" in the same
  user message as a request, or the next one, takes that request back), and every other line quoting them;
* **facts** — "my <x> is …", "my name is …", "call me …", "I work at …", "I live in …", "I moved to the
  Enterprise plan" (key: ``plan``), preferences ("I prefer …", "please always …", "from now on …",
  key ``preference-<topic>``): one line per key, the latest wins;
* **decisions** and **open questions** as above; a question is answered when a later assistant sentence
  that does not defer ("I'll check", "not sure" …) shares at least half of its words (two at least);
* **secrets** — a credential (an AWS access key, a private key, an API or bearer token, a ``password: …``
  pair, a JWT: what ``screening.screen`` calls ``aws_access_key``, ``private_key``, ``api_token``,
  ``password`` and ``jwt``) is left out of everything but the remembered items, which the user asked for;
  tool output is never read at all. "my password is …" said without asking to remember it is left out too.
  A line that ``screen`` finds steering the model (SPEC §2.5) is never kept, even as a remembered item: the
  checkpoint write would refuse it.

``leave_out_secrets`` is the same filter for any text (the Bedrock summariser runs the model's answer
through it), and ``track_remembered`` / ``keep_remembered`` make a model-written summary hold every
remembered item word for word and none that was forgotten.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from ..ports.summariser import Summariser
from .conversations import Message
from .screening import screen

__all__ = [
    "HARD_MAX_CHARS",
    "REDACTED",
    "SECRET_KINDS",
    "SECTION_TITLES",
    "SUMMARY_MAX_CHARS",
    "TITLE",
    "ExtractiveSummariser",
    "Statement",
    "assistant_statements",
    "content_words",
    "forget_hits",
    "has_secret",
    "keep_remembered",
    "leave_out_secrets",
    "slug",
    "track_remembered",
    "user_statements",
]

SUMMARY_MAX_CHARS = 8_000  # a summary's length, remembered items aside
HARD_MAX_CHARS = 19_000  # never more (an entry holds 20,000); remembered items are cut past it, with a note
RECENT_TOPICS_MAX = 8
OPEN_QUESTIONS_MAX = 12
DECISIONS_MAX = 20
FACTS_MAX = 40
TOPIC_CHARS = 120
QUESTION_CHARS = 300
STATEMENT_MAX_CHARS = 1_000  # a longer "sentence" is not a fact, a decision or a question

TITLE = "# Conversation summary"
SECTION_TITLES = ("Remembered", "Facts", "Decisions", "Open questions", "Recent topics")
NONE_LINE = "(none)"
REDACTED = "{secret left out}"  # "{" so screening does not take it for the value of a "password: …" pair

# The credential kinds of screening.screen: what a summary leaves out. Personal data (emails, phones …) is a
# fact about the user, kept in the user's layer; a conversation with the account itself drops it when the
# checkpoint is written (services.summary_pass.safe_summary).
SECRET_KINDS = frozenset({"aws_access_key", "private_key", "api_token", "password", "jwt"})

StatementKind = Literal[
    "remember", "forget", "profile", "preference", "fact", "decision", "question", "topic", "withheld"
]


# ====================================================================================================
# Words
# ====================================================================================================


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


_STOPWORDS = _wordset(
    """a an the and or but if then so of to in on at for from by with about as into onto over under is are was
    were be been being am do does did done have has had having i me my mine myself we us our ours you your
    yours he him his she her hers it its they them their theirs this that these those what which who whom
    whose when where why how can could would should will shall may might must please just also too very
    really not no yes any some all there here now up out s t d m ll ve re don doesn didn isn aren wasn won
    can't cannot let let's ok okay hi hello hey thanks thank well oh get got"""
)
# Words a key never holds: "the current door code is …" and "the door code is …" name the same thing.
_KEY_STOPWORDS = _STOPWORDS | {"current", "new", "old", "actual", "now"}
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
    return frozenset(_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOPWORDS)


def _ascii_words(text: str, stop: frozenset[str]) -> list[str]:
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    return [w for w in _ASCII_WORD.findall(plain) if w not in stop]


def slug(text: str, *, max_words: int = 6, max_len: int = 48) -> str:
    """``[a-z0-9-]`` words of ``text`` (stop words out) joined by ``-``; "" when none."""
    words = _ascii_words(text, _KEY_STOPWORDS)[:max_words]
    out = ""
    for w in words:
        candidate = f"{out}-{w}" if out else w
        if len(candidate) > max_len:
            break
        out = candidate
    return out


def _hash_key(text: str) -> str:
    return "item-" + hashlib.sha256(" ".join(text.lower().split()).encode("utf-8")).hexdigest()[:10]


# Synonyms of fact keys, so "my email address is …" and "my e-mail is …" update the same fact.
_KEY_SYNONYMS = {
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


def _fact_key(subject: str) -> str:
    key = slug(subject.replace("'s ", " ").replace("’s ", " "), max_words=4)
    return _KEY_SYNONYMS.get(key, key)


_SUBJECT = re.compile(r"^(?P<s>.{1,80}?)(?:\s+(?:is|are|was|were)\b|\s*[:=])", re.IGNORECASE | re.DOTALL)


def _subject_key(text: str) -> str:
    """The key of a remembered item: its subject ("the door code is 4512#" → ``door-code``)."""
    m = _SUBJECT.match(text)
    if m is not None:
        key = _fact_key(m.group("s"))
        if key:
            return key
    return slug(text) or _hash_key(text)


def _value_part(text: str) -> str:
    """What an item says its subject is ("the door code is 4512#." → ``4512#``), or ""."""
    m = _SUBJECT.match(text)
    if m is None:
        return ""
    return text[m.end() :].strip().rstrip(".!").strip()


# ====================================================================================================
# Secrets
# ====================================================================================================

_KEY_BLOCK_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_SPACES = re.compile(r"(\s+)")
_KEY_VALUE_TOKEN = re.compile(r"^([^:=\s]+[:=]+[\"']?)(.+)$")


def _secret_kinds(text: str) -> set[str]:
    return set(screen(text).sensitive) & SECRET_KINDS


def has_secret(text: str) -> bool:
    """Whether ``text`` holds a credential (``SECRET_KINDS`` of ``screening.screen``)."""
    return bool(_secret_kinds(text))


def _mask(line: str, kept: Sequence[str]) -> str:
    for item in kept:
        line = line.replace(item, " ")
    return line


def _redact_token(token: str) -> str:
    m = _KEY_VALUE_TOKEN.match(token)
    if m is not None and not has_secret(m.group(1)):
        return m.group(1) + REDACTED
    return REDACTED


def _redact_line(line: str, kept: Sequence[str]) -> str | None:
    """The line with each credential replaced by ``REDACTED``, or None when one can't be isolated."""
    protected: list[tuple[int, int]] = []
    for item in kept:
        start = line.find(item)
        while start != -1:
            protected.append((start, start + len(item)))
            start = line.find(item, start + 1)
    parts = _SPACES.split(line)
    words: list[int] = []
    spans: list[tuple[int, int]] = []
    offset = 0
    for part in parts:
        spans.append((offset, offset + len(part)))
        offset += len(part)
    words = [i for i, part in enumerate(parts) if part and not part.isspace()]

    def free(i: int) -> bool:
        a, b = spans[i]
        return not any(a < pb and pa < b for pa, pb in protected)

    for i in words:
        if free(i) and has_secret(parts[i]):
            parts[i] = _redact_token(parts[i])
    previous: int | None = None
    for i in words:  # a credential made of two words: "Bearer <token>", "password: <value>"
        if previous is not None and free(i) and REDACTED not in parts[i] \
                and has_secret(parts[previous] + " " + parts[i]):
            parts[i] = REDACTED
        previous = i
    candidate = "".join(parts)
    return None if has_secret(_mask(candidate, kept)) else candidate


def leave_out_secrets(text: str, *, keep: Iterable[str] = ()) -> str:
    """``text`` without its credentials and without any line that tries to steer the model.

    Line by line: a line ``screen`` finds an injection in is dropped; a credential is replaced by
    ``{secret left out}`` where it can be told apart (a token, ``key=value``, ``Bearer <token>``,
    ``password: <value>``), else its whole line is dropped; a private key block goes whole. Text that is
    part of a ``keep`` item (a remembered item: the user asked for it word for word) is left as it is.
    """
    kept = sorted({ln.strip() for item in keep for ln in item.splitlines() if ln.strip()}, key=len, reverse=True)
    out: list[str] = []
    in_key_block = False
    for line in text.split("\n"):
        if in_key_block:
            if _KEY_BLOCK_END.search(line) is not None:
                in_key_block = False
            continue
        found = screen(line)
        if found.injection is not None:
            continue
        if not SECRET_KINDS.intersection(found.sensitive):
            out.append(line)
            continue
        masked = _mask(line, kept)
        if not has_secret(masked):
            out.append(line)
            continue
        if "private_key" in _secret_kinds(masked):
            in_key_block = _KEY_BLOCK_END.search(line) is None
            continue
        redacted = _redact_line(line, kept)
        if redacted is not None:
            out.append(redacted)
    return "\n".join(out)


def _withheld(text: str) -> bool:
    """A credential, or text that tries to steer the model: never kept outside the remembered items."""
    found = screen(text)
    return found.injection is not None or bool(SECRET_KINDS.intersection(found.sensitive))


def _steers(text: str) -> bool:
    return screen(text).injection is not None


# ====================================================================================================
# Sentences and what they say
# ====================================================================================================

_SENTENCE_END = re.compile(r"[.!?]+[\"')\]]*(?=\s+\S)")
_ABBREVIATIONS = ("mr.", "mrs.", "ms.", "dr.", "st.", "e.g.", "i.e.", "etc.", "vs.", "no.", "approx.", "jr.", "sr.")
_CLAUSE = re.compile(
    r"\s*;\s+|\s*,?\s+(?=and\s+(?:i|my|i'm|i've|we|our|we've|we're|we'll)\s)", re.IGNORECASE
)
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})


def _sentence_spans(line: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SENTENCE_END.finditer(line):
        word = line[max(start, line.rfind(" ", start, m.end()) + 1) : m.end()].lower()
        if word in _ABBREVIATIONS:
            continue
        spans.append((start, m.end()))
        start = m.end()
        while start < len(line) and line[start].isspace():
            start += 1
    if start < len(line) and line[start:].strip():
        spans.append((start, len(line)))
    clauses: list[tuple[int, int]] = []
    for a, b in spans:  # "my name is Ana and I work at Acme": two statements
        for m in _CLAUSE.finditer(line, a, b):
            clauses.append((a, m.start()))
            a = m.end()
        clauses.append((a, b))
    out = []
    for a, b in clauses:
        while a < b and line[a].isspace():
            a += 1
        while b > a and line[b - 1].isspace():
            b -= 1
        if a < b:
            out.append((a, b))
    return out


_I = r"(?:i|we)"
_LEAD = re.compile(
    r"^(?:(?:[-*•>]|\d+[.)])\s+)?"
    r"(?:(?:ok(?:ay)?|so|and|also|oh|well|hi|hey|hello|btw|by\s+the\s+way|fyi|actually|anyway|plus|great|"
    r"thanks|thank\s+you|cool|alright|right|sure|yes|yeah|hmm|one\s+more\s+thing|no\s*,|now\s*,)"
    r"(?:[,!.:;]+\s*|\s+))*",
    re.IGNORECASE,
)
_POLITE = (
    r"(?:(?:please|pls|kindly|just|also)\s+)*"
    r"(?P<you>(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:also\s+)?|"
    r"i\s+(?:need|want|would\s+like)\s+you\s+to\s+|i'd\s+like\s+you\s+to\s+|"
    r"make\s+sure\s+(?:you\s+|to\s+)?|be\s+sure\s+to\s+)?"
    r"(?:(?:please|pls|kindly|just|also|always)\s+)*"
)
_REMEMBER = re.compile(
    r"^" + _POLITE + r"(?P<trigger>remember|memori[sz]e|don't\s+forget|do\s+not\s+forget|never\s+forget|"
    r"keep\s+in\s+mind|note\s+(?:that|down|this)\b|note\s*:|make\s+a\s+note(?:\s+of|\s+that)?|"
    r"take\s+(?:a\s+)?note(?:\s+of|\s+that)?|(?:save|store|write\s+down|jot\s+down)\s+(?:this|that)\s*:)"
    r"(?![\w'])(?P<sep>\s*[:\-–—]+)?\s*"
    r"(?:(?:that|this|the\s+following)(?:\s*[:\-–—]+|\s+|$)|of\s+)?"
    r"(?P<v>.*)$",
    re.IGNORECASE | re.DOTALL,
)
_REMEMBER_SUFFIX = re.compile(
    r"^(?P<v>.+?)\s*[,;:—–-]+\s*(?:please\s+)?(?:remember|don't\s+forget|do\s+not\s+forget|keep\s+in\s+mind|"
    r"note)\s+(?:that|it|this)\s*[.!]*$",
    re.IGNORECASE | re.DOTALL,
)
_REFERS_BACK = frozenset({"", "that", "it", "this", "that one", "this one"})
_REMEMBER_NOUNS = r"(?:code|pin|pin\s+code|passcode|combination|number|reference|ref|id|pin\s+number)"
_MY_CODE = re.compile(
    r"^(?:my|our)\s+(?P<k>(?:[\w'-]+\s+){0,3}?" + _REMEMBER_NOUNS + r")\s*(?:\bis\b|[:=])\s*(?P<v>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
_NOT_REMEMBER_NOUN = frozenset({"phone", "mobile", "cell", "telephone", "fax", "contact"})
_FORGET = re.compile(
    r"^(?:(?:please|pls|just|ok(?:ay)?|actually|and|so|oh)[,!]?\s+)*"
    r"(?:you\s+(?:can|may|could)\s+(?:now\s+|just\s+|also\s+)?|(?:can|could|would)\s+you\s+(?:please\s+)?|"
    r"feel\s+free\s+to\s+|go\s+ahead\s+and\s+)?(?:(?:please|just|now|also)\s+)*"
    r"(?:forget(?:\s+about)?|stop\s+remembering|no\s+need\s+to\s+remember|"
    r"(?:you\s+)?(?:don't|do\s+not)\s+(?:need|have)\s+to\s+remember|never\s*mind(?:\s+about)?|disregard)"
    r"(?![\w'])(?P<t>.*)$",
    re.IGNORECASE | re.DOTALL,
)
_FORGET_MEMORY = re.compile(
    r"^(?:please\s+)?(?:(?:can|could)\s+you\s+)?(?:delete|remove|erase|drop|clear)\s+(?P<t>.+?)\s+"
    r"from\s+(?:your\s+)?memory\b",
    re.IGNORECASE | re.DOTALL,
)
_FORGET_HEAD = re.compile(
    r"^\s*(?:about\s+|what\s+i\s+(?:said|told\s+you)\s+about\s+|the\s+fact\s+that\s+|that\s+(?=\w+\s))?",
    re.IGNORECASE,
)
_FORGET_TAIL = re.compile(
    r"(?:[\s,]+(?:now|please|anymore|any\s+more|for\s+now|then|too|as\s+well|thanks|thank\s+you|ok|okay|"
    r"i\s+(?:gave|told)\s+you|i\s+mentioned))+\s*[.!?]*\s*$",
    re.IGNORECASE,
)
_FORGET_NOISE = frozenset(content_words("remember memory question detail details info information thing stuff"))

_NAME = re.compile(
    r"^(?:my\s+name\s+is|my\s+name's|(?:please\s+)?(?:you\s+can\s+)?call\s+me|i'm\s+called|i\s+am\s+called|i\s+go\s+by)\s+"
    r"(?P<v>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
_JOB = re.compile(
    r"^i\s+(?:now\s+|currently\s+)?work\s+as|^i(?:'m|\s+am)\s+(?:now\s+|currently\s+)?working\s+as",
    re.IGNORECASE,
)
_EMPLOYER = re.compile(
    r"^(?:i\s+(?:now\s+|currently\s+|still\s+)?work\s+(?:at|for)|"
    r"i(?:'m|\s+am)\s+(?:now\s+|currently\s+)?(?:working|employed)\s+(?:at|for|by)|"
    r"i(?:'ve|\s+have)?\s+(?:just\s+)?started\s+working\s+(?:at|for))\s+\S",
    re.IGNORECASE,
)
_LOCATION = re.compile(
    r"^(?:i\s+(?:now\s+|currently\s+|still\s+)?live\s+in|"
    r"i(?:'m|\s+am)\s+(?:now\s+|currently\s+)?(?:based|living|located)\s+in)\s+\S",
    re.IGNORECASE,
)
_TIMEZONE = re.compile(r"^i(?:'m|\s+am)\s+(?:in|on)\s+(?:the\s+)?\S+(?:\s+\S+)?\s+time(?:\s*zone)?\b", re.IGNORECASE)
_CHANGE = re.compile(
    r"^" + _I + r"(?:'ve|\s+have)?\s+(?:just\s+|now\s+|recently\s+|finally\s+)?"
    r"(?P<verb>moved|switched|changed|upgraded|downgraded|migrated|relocated|transferred)\s+(?:over\s+)?"
    r"(?:(?:my|our)\s+(?P<k>[\w-]+(?:\s+[\w-]+)?)\s+)?(?:from\s+.+?\s+)?to\s+"
    r"(?:the\s+|a\s+|an\s+|our\s+|my\s+)?(?P<v>.+?)\s*[.!]*$",
    re.IGNORECASE | re.DOTALL,
)
_MY_IS = re.compile(
    r"^(?:my|our)\s+(?P<k>[\w'-]+(?:\s+[\w'-]+){0,3}?)\s+"
    r"(?:is|are|has\s+changed\s+to|have\s+changed\s+to|changed\s+to)\s+(?P<v>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
_PHRASE_ENDS = _wordset(
    """last yesterday today tonight this next on in at since because as for from when after before and but so
    with by via"""
)
_NOT_FACT_SUBJECTS = _wordset(
    """question problem issue point guess concern idea thought understanding bad pleasure apologies apology
    fault hope worry mistake answer reply response feeling impression bet turn opinion take suggestion request
    ask favourite favorite only main first last other"""
)
_SECRET_SUBJECTS = frozenset(
    {"password", "passwd", "passphrase", "pwd", "secret", "token", "apikey", "credential", "credentials", "key"}
)
_IMPERATIVES = _wordset(
    """reply answer respond write use call email text send include add show give ask tell start end sign format
    keep mention put speak talk address cc copy schedule book check confirm refer spell quote cite round list
    explain summarise summarize translate greet"""
)
_PREFERENCE = re.compile(
    r"^(?:(?P<prefer>i(?:'d|\s+would)?\s+(?:much\s+|really\s+)?prefer|i(?:'d|\s+would)\s+rather|"
    r"i\s+(?:really\s+)?(?:like|love|hate|dislike|don't\s+like|do\s+not\s+like)\s+it\s+when|"
    r"i\s+(?:want|need)\s+you\s+to\s+(?:always|never)|please\s+(?:always|never|don't\s+ever|do\s+not\s+ever)|"
    r"from\s+now\s+on,?|going\s+forward,?|in\s+(?:the\s+)?future,?)|(?P<bare>always|never))\s+(?P<v>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
_LANGUAGES = (
    "english|spanish|french|german|italian|portuguese|dutch|japanese|chinese|mandarin|cantonese|korean|"
    "russian|arabic|hindi|polish|swedish|norwegian|danish|finnish|greek|turkish|hebrew|czech|hungarian|"
    "romanian|ukrainian|vietnamese|thai|indonesian|catalan|basque|galician|irish|welsh"
)
_LANGUAGE_REQUEST = re.compile(
    r"^(?:please\s+)?(?:(?:can|could)\s+you\s+)?(?:reply|answer|respond|write|talk|speak)\s+(?:to\s+me\s+)?"
    r"(?:only\s+)?in\s+(?:" + _LANGUAGES + r")\b",
    re.IGNORECASE,
)
_PREFERENCE_TOPICS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("reply-language", re.compile(r"\b(?:in|to)\s+(?:" + _LANGUAGES + r")\b|\blanguage\b", re.IGNORECASE)),
    ("reply-length", re.compile(
        r"\b(?:short|shorter|brief|briefer|concise|terse|succinct|long|longer|detailed|thorough|verbose|"
        r"one-line|one\s+line)\b", re.IGNORECASE)),
    ("reply-format", re.compile(
        r"\b(?:bullets?|bullet\s+points|markdown|tables?|plain\s+text|numbered\s+lists?|code\s+blocks?|"
        r"headings?)\b", re.IGNORECASE)),
    ("reply-tone", re.compile(r"\b(?:formal|informal|casual|friendly|polite|emojis?|jargon|tone)\b", re.IGNORECASE)),
    ("units", re.compile(
        r"\b(?:metric|imperial|celsius|fahrenheit|kilomet(?:er|re)s?|miles|kg|kilograms?|pounds)\b", re.IGNORECASE)),
    ("theme", re.compile(r"\b(?:dark|light)\s+(?:mode|theme)\b", re.IGNORECASE)),
    ("contact-channel", re.compile(
        r"\b(?:e-?mails?|phone\s+calls?|calls?|texts?|sms|whatsapp|slack|telegram|signal)\b", re.IGNORECASE)),
    ("schedule", re.compile(r"\b(?:mornings?|afternoons?|evenings?|weekends?|weekdays?)\b", re.IGNORECASE)),
)
_DECISION_USER = re.compile(
    r"^(?:(?:so|ok(?:ay)?|then|alright|right|fine|great|good)[,!]?\s+)*"
    r"(?:" + _I + r"(?:'ve|\s+have)?\s+(?:just\s+|finally\s+)?(?:decided|agreed)|(?:it's|it\s+is)\s+(?:decided|agreed)|"
    r"(?:the\s+)?decision(?:\s+is)?\s*:|decided\s*:|agreed\s*[:,]|let's\s+go\s+with|let\s+us\s+go\s+with|"
    r"we(?:'ll|\s+will)\s+go\s+with|we(?:'re|\s+are)\s+going\s+with|i(?:'ll|\s+will)\s+go\s+with|go\s+with)"
    r"(?![\w'])",
    re.IGNORECASE,
)
_DECISION_ASSISTANT = re.compile(
    r"^(?:we(?:'ve|\s+have)?\s+(?:decided|agreed)|(?:the\s+)?decision(?:\s+is)?\s*:|decided\s*:|agreed\s*:)"
    r"(?![\w'])",
    re.IGNORECASE,
)
# "Can you fetch the report?" asks for something to be done, not for an answer: a topic, not a question.
_REQUEST = re.compile(r"^(?:please\s+)?(?:can|could|would|will)\s+you\b", re.IGNORECASE)
_DEFERS = re.compile(
    r"\b(?:i\s+(?:don't|do\s+not)\s+know|not\s+sure|(?:i'll|i\s+will|let\s+me|i\s+need\s+to|i\s+have\s+to)\s+"
    r"(?:check|find\s+out|look|ask|get\s+back|confirm|verify)|(?:can't|cannot|can\s+not|couldn't)\s+"
    r"(?:answer|tell|say|find|confirm)|unable\s+to|no\s+idea|(?:don't|do\s+not)\s+have\s+(?:that|this|the|any)\s+"
    r"(?:information|info|details))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Statement:
    """What one sentence says, as the summary and the flush read it.

    ``kind``: ``remember`` (``text`` is the item, word for word), ``forget`` (``key``/``target`` name what),
    ``profile`` / ``preference`` / ``fact`` (``key`` is the fact's stable key, ``text`` the sentence),
    ``decision``, ``question``, ``topic`` (anything else), or ``withheld`` (a secret or an attempt to steer
    the model: kept nowhere).
    """

    kind: StatementKind
    text: str
    key: str = ""
    target: frozenset[str] = field(default_factory=frozenset)


def _remember(item: str) -> Statement:
    return Statement("remember", item, _subject_key(item))


def _forget(sentence: str, target: str) -> Statement:
    target = _FORGET_TAIL.sub("", _FORGET_HEAD.sub("", target.strip(), count=1)).strip(" \t.!?,;:\"'")
    if target.lower() in _REFERS_BACK or target.lower() in {"them", "those", "all that", "everything"}:
        return Statement("forget", sentence)
    words = content_words(target) - _FORGET_NOISE
    key = _subject_key(target) if _SUBJECT.match(target) else _fact_key(target)
    return Statement("forget", sentence, key, words)


def _preference_topic(value: str) -> str:
    for topic, pattern in _PREFERENCE_TOPICS:
        if pattern.search(value) is not None:
            return topic
    return slug(value, max_words=3)


def _fact(sentence: str, body: str) -> Statement | None:
    """A profile fact, a preference or another fact the user states about themselves, or None."""
    if body.rstrip().endswith("?") or len(body) > STATEMENT_MAX_CHARS:
        return None
    m = _NAME.match(body)
    if m is not None:
        return Statement("profile", sentence, "name")
    if _JOB.match(body) is not None:
        return Statement("profile", sentence, "job")
    if _EMPLOYER.match(body) is not None:
        return Statement("profile", sentence, "employer")
    if _LOCATION.match(body) is not None:
        return Statement("profile", sentence, "location")
    if _TIMEZONE.match(body) is not None:
        return Statement("profile", sentence, "timezone")
    m = _CHANGE.match(body)
    if m is not None:
        if m.group("k"):
            key = _fact_key(m.group("k"))
        else:
            words = m.group("v").split()
            for i, word in enumerate(words[1:], 1):
                if word.lower() in _PHRASE_ENDS:
                    words = words[:i]
                    break
            last = words[-1].strip(".,!;:") if words else ""
            if last.isalpha() and last.islower() and last not in _STOPWORDS:
                key = _fact_key(last)
            elif m.group("verb").lower() in ("moved", "relocated") and last[:1].isupper():
                key = "location"
            else:
                key = ""
        if key:
            return Statement("profile" if key in PROFILE_KEYS else "fact", sentence, key)
    m = _MY_IS.match(body)
    if m is not None:
        subject = m.group("k")
        words = _ascii_words(subject, frozenset())
        if words and words[0] not in _NOT_FACT_SUBJECTS:
            if _SECRET_SUBJECTS.intersection(words) or has_secret(f"{subject}: {m.group('v')}"):
                return Statement("withheld", sentence)
            key = _fact_key(subject)
            if key:
                return Statement("profile" if key in PROFILE_KEYS else "fact", sentence, key)
    if _LANGUAGE_REQUEST.match(body) is not None:
        return Statement("preference", sentence, "preference-reply-language")
    m = _PREFERENCE.match(body)
    if m is not None:
        value = m.group("v")
        first = _ascii_words(value, frozenset())[:1]
        if m.group("bare") and (not first or first[0] not in _IMPERATIVES):
            return None
        topic = _preference_topic(value)
        if topic:
            return Statement("preference", sentence, "preference-" + topic)
    return None


def _decision_key(body: str, m: re.Match[str]) -> str:
    return slug(body[m.end() :]) or _hash_key(body)


def user_statements(content: str) -> list[Statement]:
    """What a user message says, sentence by sentence, in order (see the module's rules)."""
    out: list[Statement] = []
    lines = content.splitlines()
    previous_sentence: str | None = None
    for li, line in enumerate(lines):
        spans = _sentence_spans(line)
        si = -1
        while si + 1 < len(spans):
            si += 1
            a, b = spans[si]
            sentence = line[a:b]
            norm = sentence.translate(_QUOTES)
            lead = _LEAD.match(norm)
            skip = lead.end() if lead is not None else 0
            body_norm, body = norm[skip:], sentence[skip:]
            if not body.strip():
                continue
            m = _REMEMBER.match(body_norm)
            if m is not None:
                head = body_norm[: m.start("v")]
                value = body[m.start("v") :]
                colon = m.group("sep") is not None or head.rstrip().endswith((":", "-", "–", "—"))
                if colon:  # "remember: A. B." takes the sentences after it, up to a question or a "thanks"
                    end = b
                    while si + 1 < len(spans):
                        nxt = line[spans[si + 1][0] : spans[si + 1][1]]
                        if nxt.rstrip().endswith("?") or len(content_words(nxt)) < 2:
                            break
                        si += 1
                        end = spans[si][1]
                    value = line[a + skip + m.start("v") : end]
                value = value.strip()
                if not value and colon and not line[a + skip + m.start("v") :].strip() and li + 1 < len(lines):
                    block = "\n".join(ln.rstrip() for ln in lines[li + 1 :]).strip()
                    if block.strip():
                        out.append(_remember(block))
                    return out
                if value.lower().rstrip(".!") in _REFERS_BACK:
                    if previous_sentence is not None and out and out[-1].kind not in ("remember", "forget"):
                        out[-1] = _remember(previous_sentence)
                    continue
                if m.group("you") and value.endswith("?"):
                    value = value[:-1].rstrip()
                out.append(_remember(value))
                previous_sentence = None
                continue
            m = _REMEMBER_SUFFIX.match(body_norm)
            if m is not None:
                out.append(_remember(body[: m.end("v")].strip()))
                previous_sentence = None
                continue
            m = _FORGET.match(body_norm) or _FORGET_MEMORY.match(body_norm)
            if m is not None:
                out.append(_forget(body, body[m.start("t") : m.end("t")]))
                previous_sentence = None
                continue
            m = _MY_CODE.match(body_norm)
            if m is not None and not _NOT_REMEMBER_NOUN.intersection(_ascii_words(m.group("k"), frozenset())):
                out.append(_remember(body.strip()))
                previous_sentence = None
                continue
            text = body.strip()
            previous_sentence = text
            if _withheld(text):
                out.append(Statement("withheld", text))
                continue
            stated = _fact(text, body_norm.strip())
            if stated is not None:
                out.append(stated)
                continue
            m = _DECISION_USER.match(body_norm)
            if m is not None and len(text) <= STATEMENT_MAX_CHARS:
                out.append(Statement("decision", text, "decision-" + _decision_key(body_norm, m)))
                continue
            if text.endswith("?") and len(content_words(text)) >= 2 and _REQUEST.match(body_norm) is None:
                out.append(Statement("question", text[:QUESTION_CHARS]))
                continue
            out.append(Statement("topic", text))
    return out


def assistant_statements(content: str) -> list[Statement]:
    """The decisions an assistant message records ("we decided …", "agreed: …"); nothing else counts."""
    out: list[Statement] = []
    for line in content.splitlines():
        for a, b in _sentence_spans(line):
            sentence = line[a:b]
            norm = sentence.translate(_QUOTES)
            lead = _LEAD.match(norm)
            skip = lead.end() if lead is not None else 0
            m = _DECISION_ASSISTANT.match(norm[skip:])
            text = sentence[skip:].strip()
            if m is not None and len(text) <= STATEMENT_MAX_CHARS and not _withheld(text):
                out.append(Statement("decision", text, "decision-" + _decision_key(norm[skip:], m)))
    return out


def _answered_words(content: str) -> frozenset[str]:
    """The words of an assistant message's sentences that answer rather than defer."""
    words: set[str] = set()
    for line in content.splitlines():
        for a, b in _sentence_spans(line):
            sentence = line[a:b].translate(_QUOTES)
            if _DEFERS.search(sentence) is None:
                words |= content_words(sentence)
    return frozenset(words)


def _answers(question: str, answer_words: frozenset[str]) -> bool:
    asked = content_words(question)
    if not asked:
        return False
    return len(asked & answer_words) >= max(2, math.ceil(len(asked) / 2)) or asked <= answer_words


def forget_hits(statement: Statement, items: Mapping[str, str], *, match_text: bool) -> list[str]:
    """The keys of ``items`` (key → text) a forget statement names: the same key, else every item whose key
    words (and text words with ``match_text``) hold all the words it names. None for "forget it"."""
    if statement.key and statement.key in items:
        return [statement.key]
    if not statement.target:
        return []
    hits = []
    for key, text in items.items():
        words = content_words(key.replace("-", " "))
        if match_text or key.startswith("~"):
            words |= content_words(text)
        if statement.target <= words:
            hits.append(key)
    return hits


def _truncate(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:") + "…"


# ====================================================================================================
# The summary document
# ====================================================================================================

_KNOWN_SECTIONS = {title.lower(): title for title in SECTION_TITLES}
_HEADING = re.compile(r"^#{1,6}\s")
_SECTION = re.compile(r"^##\s+(?P<t>.+?)\s*:?\s*$")
_FACT_LINE = re.compile(r"^(?P<k>[a-z0-9][a-z0-9._-]{0,63}):\s+(?P<v>\S.*)$", re.DOTALL)
_DROPPED_NOTE = re.compile(r"^\(left out for length: (?P<n>\d+) older remembered items?\)$")


@dataclass
class _Block:
    """Text of the summary that is none of its sections (an edit): kept as it is."""

    heading: str | None
    lines: list[str] = field(default_factory=list)


@dataclass
class _Summary:
    remembered: dict[str, str] = field(default_factory=dict)
    dropped_remembered: int = 0
    facts: dict[str, tuple[str, bool]] = field(default_factory=dict)  # key → (text, labelled)
    decisions: list[str] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)
    blocks: list[_Block] = field(default_factory=list)
    forgotten: list[str] = field(default_factory=list)

    # --- reading a previous summary ----------------------------------------------------------

    @classmethod
    def parse(cls, text: str | None) -> _Summary:
        state = cls()
        if not text or not text.strip():
            return state
        items: dict[str, list[str]] = {title: [] for title in SECTION_TITLES}
        section: str | None = None
        block: _Block | None = None
        open_item = False
        for raw in text.splitlines():
            line = raw.rstrip()
            if line.strip() == TITLE.strip():
                continue
            m = _SECTION.match(line)
            if m is not None and m.group("t").lower() in _KNOWN_SECTIONS:
                section, block, open_item = _KNOWN_SECTIONS[m.group("t").lower()], None, False
                continue
            if _HEADING.match(line) is not None:
                section, block, open_item = None, _Block(line), False
                state.blocks.append(block)
                continue
            if section is None:
                if block is None:
                    block = _Block(None)
                    state.blocks.append(block)
                block.lines.append(line)
                continue
            bucket = items[section]
            if raw.startswith("  ") and open_item:
                bucket[-1] += "\n" + raw[2:].rstrip()
            elif not line.strip() or line.strip() == NONE_LINE:
                open_item = False
            elif line.lstrip().startswith(("- ", "* ")):
                bucket.append(line.lstrip()[2:].strip())
                open_item = True
            else:
                bucket.append(line.strip())
                open_item = True
        for item in items["Remembered"]:
            m = _DROPPED_NOTE.match(item)
            if m is not None:
                state.dropped_remembered += int(m.group("n"))
            elif item and not _steers(item):
                key = _subject_key(item)
                state.remembered.pop(key, None)
                state.remembered[key] = item
        for item in items["Facts"]:
            item = leave_out_secrets(item).strip()
            if not item:
                continue
            m = _FACT_LINE.match(item)
            if m is not None:
                state.facts.pop(m.group("k"), None)
                state.facts[m.group("k")] = (m.group("v"), True)
            else:
                state.facts["~" + " ".join(item.lower().split())] = (item, False)
        for title, target in (("Decisions", state.decisions), ("Open questions", state.questions),
                              ("Recent topics", state.topics)):
            for item in items[title]:
                item = leave_out_secrets(item).strip()
                if item:
                    target.append(item)
        for b in state.blocks:
            b.lines = leave_out_secrets("\n".join(b.lines)).split("\n") if b.lines else []
            while b.lines and not b.lines[-1].strip():
                b.lines.pop()
            while b.lines and not b.lines[0].strip():
                b.lines.pop(0)
        state.blocks = [b for b in state.blocks if b.heading is not None or b.lines]
        return state

    # --- folding messages in -----------------------------------------------------------------

    def fold(self, messages: Sequence[Message]) -> None:
        previous_keys: list[str] = []  # remembered by the user message before: what "forget it" can take back
        for message in messages:
            if message.role == "user":
                remembered_now: list[str] = []
                topic: str | None = None
                for st in user_statements(message.content):
                    if st.kind == "remember":
                        if _steers(st.text):
                            continue
                        self.remembered.pop(st.key, None)
                        self.remembered[st.key] = st.text
                        remembered_now.append(st.key)
                    elif st.kind == "forget":
                        self._forget(st, remembered_now or previous_keys)
                    elif st.kind in ("profile", "preference", "fact"):
                        self.facts.pop(st.key, None)
                        self.facts[st.key] = (st.text, True)
                    elif st.kind == "decision":
                        self._add(self.decisions, st.text, DECISIONS_MAX)
                    elif st.kind == "question":
                        self._add(self.questions, st.text, OPEN_QUESTIONS_MAX)
                    if topic is None and st.kind in ("topic", "question") and len(content_words(st.text)) >= 2:
                        topic = _truncate(st.text, TOPIC_CHARS)
                if topic is not None:
                    self.topics.append(topic)
                    del self.topics[:-RECENT_TOPICS_MAX]
                previous_keys = remembered_now
            elif message.role == "assistant":
                words = _answered_words(message.content)
                self.questions = [q for q in self.questions if not _answers(q, words)]
                for st in assistant_statements(message.content):
                    self._add(self.decisions, st.text, DECISIONS_MAX)
        while len(self.facts) > FACTS_MAX:
            del self.facts[next(iter(self.facts))]

    @staticmethod
    def _add(items: list[str], text: str, limit: int) -> None:
        norm = " ".join(text.lower().split())
        items[:] = [i for i in items if " ".join(i.lower().split()) != norm]
        items.append(text)
        del items[:-limit]

    def _forget(self, st: Statement, fallback: list[str]) -> None:
        if st.key or st.target:
            keys = forget_hits(st, self.remembered, match_text=True)
        else:
            keys = [k for k in dict.fromkeys(fallback) if k in self.remembered]
        purge: list[str] = []
        for key in keys:
            text = self.remembered.pop(key)
            self.forgotten.append(text)
            purge.append(text)
            value = _value_part(text)
            if (len(value) >= 4 and any(c.isdigit() for c in value)) or len(value) >= 8:
                purge.append(value)
        if st.key or st.target:
            facts = {k: v[0] for k, v in self.facts.items()}
            for key in forget_hits(st, facts, match_text=False):
                del self.facts[key]
            if st.target:
                self.questions = [q for q in self.questions if not st.target <= content_words(q)]
        if not purge:
            return

        def keeps(text: str) -> bool:
            return not any(p in text for p in purge)

        self.facts = {k: v for k, v in self.facts.items() if keeps(v[0])}
        self.decisions = [d for d in self.decisions if keeps(d)]
        self.questions = [q for q in self.questions if keeps(q)]
        self.topics = [t for t in self.topics if keeps(t)]
        for block in self.blocks:
            block.lines = [ln for ln in block.lines if keeps(ln)]

    # --- writing it --------------------------------------------------------------------------

    def render(self, max_chars: int = SUMMARY_MAX_CHARS) -> str:
        remembered = list(self.remembered.values())
        facts = [f"{k}: {text}" if labelled else text for k, (text, labelled) in self.facts.items()]
        decisions, questions, topics = list(self.decisions), list(self.questions), list(self.topics)
        dropped = self.dropped_remembered

        def build() -> str:
            out = [TITLE, ""]
            for block in self.blocks:
                if block.heading is None:
                    out += [*block.lines, ""]
            notes = [f"(left out for length: {dropped} older remembered items)"] if dropped else []
            for title, entries in (("Remembered", notes + remembered), ("Facts", facts), ("Decisions", decisions),
                                   ("Open questions", questions), ("Recent topics", topics)):
                out.append(f"## {title}")
                out += [_bullet(e) for e in entries] or [NONE_LINE]
                out.append("")
            for block in self.blocks:
                if block.heading is not None:
                    out += [block.heading, *block.lines, ""]
            return "\n".join(out).rstrip() + "\n"

        text = build()
        for entries in (topics, questions, decisions, facts):  # oldest first, recent topics first of all
            while len(text) > max_chars and entries:
                entries.pop(0)
                text = build()
        while len(text) > HARD_MAX_CHARS and remembered:  # never silently: the note says how many went
            remembered.pop(0)
            dropped += 1
            text = build()
        if len(text) > HARD_MAX_CHARS:
            text = text[: text.rfind("\n", 0, HARD_MAX_CHARS) + 1]
        return text


def _bullet(item: str) -> str:
    return "- " + item.replace("\n", "\n  ")


def track_remembered(previous: str | None, messages: Sequence[Message]) -> tuple[list[str], list[str]]:
    """What a summary of ``previous`` + ``messages`` must hold word for word, and what it must no longer
    hold: (remembered items, items forgotten by these messages), by this module's rules."""
    state = _Summary.parse(previous)
    state.fold(messages)
    remembered = list(state.remembered.values())
    return remembered, [t for t in state.forgotten if t not in remembered]


def keep_remembered(text: str, *, remembered: Sequence[str], forgotten: Sequence[str] = ()) -> str:
    """A summary written by someone else (a model) made to keep the remembered-items rule: every line that
    quotes a forgotten item (or its value) goes, and every remembered item missing word for word is added
    under ``## Remembered`` (the section is added when missing)."""
    purge: list[str] = []
    for item in forgotten:
        purge += [ln.strip() for ln in item.splitlines() if len(ln.strip()) >= 4]
        value = _value_part(item)
        if (len(value) >= 4 and any(c.isdigit() for c in value)) or len(value) >= 8:
            purge.append(value)
    keep_lines = {ln.strip() for item in remembered for ln in item.splitlines() if ln.strip()}
    lines = [
        ln for ln in text.splitlines()
        if not any(p in ln for p in purge) or any(k in ln for k in keep_lines if len(k) >= 4)
    ]
    body = "\n".join(lines)
    missing = [item for item in remembered if not all(ln.strip() in body for ln in item.splitlines())]
    if not missing:
        return body.rstrip() + "\n"
    added = [_bullet(item) for item in missing]
    for i, line in enumerate(lines):
        m = _SECTION.match(line)
        if m is not None and m.group("t").lower() == "remembered":
            end = i + 1
            while end < len(lines) and _HEADING.match(lines[end]) is None:
                end += 1
            while end > i + 1 and not lines[end - 1].strip():
                end -= 1
            if end == i + 2 and lines[i + 1].strip() == NONE_LINE:
                lines[i + 1 : end] = added
            else:
                lines[end:end] = added
            return "\n".join(lines).rstrip() + "\n"
    at = 1 if lines and lines[0].startswith("# ") else 0
    section = ["## Remembered", *added, ""]
    if at:
        section = ["", *section]
    lines[at:at] = section
    return "\n".join(lines).rstrip() + "\n"


class ExtractiveSummariser(Summariser):
    """The embedded backend's summariser: deterministic, offline, no model (SPEC §4.3).

    Each pass parses the previous summary back into its sections, applies the new messages in order, and
    writes the document again, at most ``max_chars`` long: recent topics go first (oldest first), then
    open questions, decisions and facts; remembered items are never cut to fit, only past
    ``HARD_MAX_CHARS``, and then with a note saying how many went.
    """

    def __init__(self, *, max_chars: int = SUMMARY_MAX_CHARS) -> None:
        self.max_chars = max_chars

    @property
    def name(self) -> str:
        return "extractive"

    def summarise(self, previous: str | None, messages: Sequence[Message]) -> str:
        state = _Summary.parse(previous)
        state.fold(messages)
        return state.render(self.max_chars)
