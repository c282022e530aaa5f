"""What one sentence says, and the facts a person states about themselves, as the summary reads them. Pure.

``Statement`` is one sentence's meaning (``domain.statements`` reads whole messages into them);
``read_fact`` decides whether a sentence states a fact, and under which **key**, so that a later statement of
the same thing replaces it (a fact that changed keeps only its latest value):

* **profile** — name ("my name is …", "call me …"), job ("I work as …", "I'm a nurse at …"), employer ("I
  work at …"), location ("I live in …", "I'm based in …", "I moved to Lisbon"), time zone, allergies;
* **preference** — "I prefer …", "please always …", "from now on …", "reply in Spanish", a diet ("I'm
  vegetarian", "I don't eat meat", "I eat no fish"), "contact me by e-mail", "I like / love / hate …",
  "my favourite … is …", keyed
  ``preference-<topic>`` (reply language, length, format, tone, units, contact channel, diet …);
* **fact** — "my <x> is …", "our <x> is now …", "I'm on the Team plan", "the <x> is now … / has changed
  to … / moved to …", "I switched to the Pro tier" (key ``plan``), "we changed the deadline from May 3 to May 10" (key
  ``deadline``, kept as "… to May 10": the old value is not the fact any more).

"my password is …" and the like are ``withheld``: a secret is never a fact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from .summary_secrets import has_secret
from .summary_words import PROFILE_KEYS, STOPWORDS, ascii_words, fact_key, slug, wordset

__all__ = ["STATEMENT_MAX_CHARS", "Statement", "StatementKind", "read_fact"]

STATEMENT_MAX_CHARS = 1_000  # a longer "sentence" is not a fact, a decision or a question

StatementKind = Literal[
    "remember", "forget", "profile", "preference", "fact", "decision", "question", "proposal", "topic", "withheld"
]


@dataclass(frozen=True)
class Statement:
    """What one sentence says, as the summary and the flush read it.

    ``kind``: ``remember`` (``text`` is the item, word for word), ``forget`` (``key``/``target`` name what),
    ``profile`` / ``preference`` / ``fact`` (``key`` is the fact's stable key, ``text`` the sentence, as the
    summary keeps it), ``decision``, ``question``, ``proposal`` (a suggestion that becomes a decision when the
    other side agrees; ``text`` is what was proposed), ``topic`` (anything else), or ``withheld`` (a secret
    or an attempt to steer the model: kept nowhere).
    """

    kind: StatementKind
    text: str
    key: str = ""
    target: frozenset[str] = field(default_factory=frozenset)


_NAME = re.compile(
    r"^(?:my\s+name\s+is|my\s+name's|(?:please\s+)?(?:you\s+can\s+)?call\s+me|i'm\s+called|i\s+am\s+called|"
    r"i\s+go\s+by)\s+(?P<v>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
# "I'm Ana", "Hi, I'm Ana Lima." (a whole clause of one or two capitalised words, not "I'm Fine")
_INTRODUCES = re.compile(r"^(?i:i'm|i\s+am)\s+(?P<v>[A-Z][a-z'-]+(?:\s+[A-Z][a-z'-]+)?)\s*[.!]*$")
_NOT_NAMES = wordset(
    """fine good great ok okay sorry sure back here there new ready happy glad tired busy done excited confused
    interested afraid lost late early"""
)
_JOB = re.compile(
    r"^i\s+(?:now\s+|currently\s+)?work\s+as|^i(?:'m|\s+am)\s+(?:now\s+|currently\s+)?working\s+as|"
    r"^i(?:'m|\s+am)\s+(?:now\s+|currently\s+)?(?:a|an|the)\s+(?:[\w-]+\s+){0,3}?[\w-]+\s+(?:at|for|with)\s+[A-Z0-9]",
    re.IGNORECASE,
)
_EMPLOYER = re.compile(
    r"^(?:i\s+(?:now\s+|currently\s+|still\s+)?work\s+(?:at|for)|"
    r"i(?:'m|\s+am)\s+(?:now\s+|currently\s+)?(?:working|employed)\s+(?:at|for|by)|"
    r"i(?:'ve|\s+have)?\s+(?:just\s+)?(?:started\s+working\s+(?:at|for)|joined))\s+\S",
    re.IGNORECASE,
)
_LOCATION = re.compile(
    r"^(?i:i\s+(?:now\s+|currently\s+|still\s+)?live\s+in|"
    r"i(?:'m|\s+am)\s+(?:now\s+|currently\s+)?(?:based|living|located)\s+in)\s+\S|"
    r"^(?i:i(?:'m|\s+am)\s+now\s+in|home\s+is\s+now)\s+[A-Z]",  # a place, not "I'm now in a meeting"
)
_TIMEZONE = re.compile(r"^i(?:'m|\s+am)\s+(?:in|on)\s+(?:the\s+)?\S+(?:\s+\S+)?\s+time(?:\s*zone)?\b", re.IGNORECASE)
# "I'm on the Team plan", "we're now on the enterprise tier"
_ON_PLAN = re.compile(
    r"^(?:i|we)(?:'m|'re|\s+am|\s+are)\s+(?:now\s+|currently\s+|still\s+)?on\s+(?:the\s+|a\s+|an\s+)?"
    r"(?:[\w-]+\s+){1,3}?(?P<k>plan|tier|subscription|package|contract)\b",
    re.IGNORECASE,
)
_ALLERGY = re.compile(r"^i(?:'m|\s+am)\s+(?:\w+\s+)?(?:allergic\s+to|intolerant\s+to|\w+[\s-]intolerant)\b",
                      re.IGNORECASE)
_DIET = re.compile(
    r"^(?:i(?:'m|\s+am)\s+(?:now\s+|strictly\s+|fully\s+|a\s+)*(?:vegetarian|vegan|pescatarian|pescetarian|"
    r"gluten[\s-]free|kosher|halal|teetotal|teetotaller)|i\s+(?:don't|do\s+not|can't|cannot|never)\s+eat|"
    r"i\s+(?:only\s+)?eat\s+(?:only\s+)?(?:vegetarian|vegan|plant[\s-]based|halal|kosher)|"
    r"i\s+(?:eat|have)\s+no\s+(?:meat|fish|pork|beef|dairy|seafood|animal\s+products))\b",
    re.IGNORECASE,
)
_CHANGE = re.compile(
    r"^(?:i|we)(?:'ve|\s+have)?\s+(?:just\s+|now\s+|recently\s+|finally\s+)?"
    r"(?P<verb>moved|switched|changed|upgraded|downgraded|migrated|relocated|transferred|pushed|postponed|"
    r"rescheduled|raised|lowered|increased|reduced|cut|bumped)\s+(?:over\s+)?"
    r"(?:(?:my|our|the)\s+(?P<k>[\w-]+(?:\s+[\w-]+)?)\s+)?(?P<from>from\s+.+?\s+)?to\s+"
    r"(?:the\s+|a\s+|an\s+|our\s+|my\s+)?(?P<v>.+?)\s*[.!]*$",
    re.IGNORECASE | re.DOTALL,
)
_MY_IS = re.compile(
    r"^(?:my|our)\s+(?P<k>[\w'-]+(?:\s+[\w'-]+){0,3}?)\s+"
    r"(?:is|are|has\s+changed\s+to|have\s+changed\s+to|changed\s+to)\s+(?P<v>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
# "the deadline is now Friday", "the budget has changed to 12k", "the launch moved to May 4": only with a
# word that says it changed — "the weather is nice" states no fact worth keeping.
_THE_CHANGED = re.compile(
    r"^(?:the|our|my)\s+(?P<k>[\w'-]+(?:\s+[\w'-]+){0,3}?)\s+"
    r"(?:(?:is|are)\s+now|(?:has|have)\s+(?:now\s+)?(?:been\s+)?(?:changed|moved|pushed|postponed|raised|lowered|"
    r"increased|reduced|cut|bumped|updated)\s+to|(?:was|were)\s+(?:changed|moved|pushed|postponed|raised|lowered|"
    r"increased|reduced|cut|bumped|updated)\s+to|(?:changed|moved|went\s+up|went\s+down|dropped|rose)\s+to)\s+"
    r"(?P<v>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
_FROM_VALUE = re.compile(r"\s+from\s+.+?(?=\s+to\s+)", re.IGNORECASE | re.DOTALL)
_PHRASE_ENDS = wordset(
    """last yesterday today tonight this next on in at since because as for from when after before and but so
    with by via"""
)
_NOT_FACT_SUBJECTS = wordset(
    """question problem issue point guess concern idea thought understanding bad pleasure apologies apology
    fault hope worry mistake answer reply response feeling impression bet turn opinion take suggestion request
    ask favourite favorite only main first last other"""
)
_SECRET_SUBJECTS = frozenset(
    {"password", "passwd", "passphrase", "pwd", "secret", "token", "apikey", "credential", "credentials", "key"}
)
_IMPERATIVES = wordset(
    """reply answer respond write use call email text send include add show give ask tell start end sign format
    keep mention put speak talk address cc copy schedule book check confirm refer spell quote cite round list
    explain summarise summarize translate greet"""
)
_PREFERENCE = re.compile(
    r"^(?:(?P<prefer>i(?:'d|\s+would)?\s+(?:much\s+|really\s+|generally\s+|usually\s+)?prefer|"
    r"i(?:'d|\s+would)\s+rather|my\s+preference\s+is(?:\s+for)?|(?:please\s+)?(?:only\s+)?(?:contact|reach)\s+me|"
    r"i\s+(?:really\s+)?(?:like|love|hate|dislike|don't\s+like|do\s+not\s+like)\s+it\s+when|"
    r"i\s+(?:want|need)\s+you\s+to\s+(?:always|never)|please\s+(?:always|never|don't\s+ever|do\s+not\s+ever)|"
    r"from\s+now\s+on,?|going\s+forward,?|in\s+(?:the\s+)?future,?)|(?P<bare>always|never))\s+(?P<v>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
_LIKES = re.compile(
    r"^i\s+(?:really\s+|absolutely\s+|quite\s+|just\s+)?(?P<verb>like|love|enjoy|adore|hate|dislike|"
    r"can't\s+stand|don't\s+like|do\s+not\s+like|don't\s+enjoy)\s+(?P<v>\S.*)$|"
    r"^i(?:'m|\s+am)\s+(?:a\s+)?(?:big\s+|huge\s+)?(?:fan\s+of|not\s+a\s+fan\s+of|into)\s+(?P<v2>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
_NOT_LIKED = re.compile(r"^(?:it|that|this|those|these|them|you|your|the\s+idea|to\s+know|how\s+you)\b",
                        re.IGNORECASE)
_FAVOURITE = re.compile(r"^my\s+(?:favou?rite|preferred)\s+(?P<k>[\w'-]+(?:\s+[\w'-]+)?)\s+(?:is|are)\s+\S",
                        re.IGNORECASE)
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
    ("diet", re.compile(r"\b(?:meat|fish|pork|beef|dairy|vegetarian|vegan|gluten|seafood)\b", re.IGNORECASE)),
    ("seating", re.compile(r"\b(?:aisle|window)\s+seats?\b", re.IGNORECASE)),
)


def _preference_topic(value: str) -> str:
    for topic, pattern in _PREFERENCE_TOPICS:
        if pattern.search(value) is not None:
            return topic
    return slug(value, max_words=3)


def _kind(key: str) -> StatementKind:
    return "profile" if key in PROFILE_KEYS else "fact"


def _changed_key(m: re.Match[str]) -> str:
    """The key of "I moved to Berlin" / "we switched to the Pro tier" / "we changed the deadline to …"."""
    if m.group("k"):
        return fact_key(m.group("k"))
    words = m.group("v").split()
    for i, word in enumerate(words[1:], 1):
        if word.lower() in _PHRASE_ENDS:
            words = words[:i]
            break
    last = words[-1].strip(".,!;:") if words else ""
    if last.isalpha() and last.islower() and last not in STOPWORDS:
        return fact_key(last)
    if m.group("verb").lower() in ("moved", "relocated") and last[:1].isupper():
        return "location"
    return ""


def _latest(sentence: str) -> str:
    """A change said with its old value ("… from Porto to Lisbon") as the summary keeps it: "… to Lisbon"."""
    return _FROM_VALUE.sub("", sentence, count=1)


def read_fact(sentence: str, body: str) -> Statement | None:
    """The profile fact, preference or other fact ``sentence`` states (``body`` is it with its lead words
    off, quotes straightened), or None."""
    if len(body) > STATEMENT_MAX_CHARS:
        return None
    if _LANGUAGE_REQUEST.match(body) is not None:  # "Could you answer in French?" asks for it
        return Statement("preference", sentence, "preference-reply-language")
    if body.rstrip().endswith("?"):
        return None
    if _NAME.match(body) is not None:
        return Statement("profile", sentence, "name")
    m = _INTRODUCES.match(body)
    if m is not None and m.group("v").split()[0].lower() not in _NOT_NAMES:
        return Statement("profile", sentence, "name")
    if _JOB.match(body) is not None:
        return Statement("profile", sentence, "job")
    if _EMPLOYER.match(body) is not None:
        return Statement("profile", sentence, "employer")
    if _LOCATION.match(body) is not None:
        return Statement("profile", sentence, "location")
    if _TIMEZONE.match(body) is not None:
        return Statement("profile", sentence, "timezone")
    if _ALLERGY.match(body) is not None:
        return Statement("profile", sentence, "allergies")
    if _DIET.match(body) is not None:
        return Statement("preference", sentence, "preference-diet")
    m = _ON_PLAN.match(body)
    if m is not None:
        return Statement("fact", sentence, fact_key(m.group("k")))
    m = _CHANGE.match(body)
    if m is not None:
        key = _changed_key(m)
        if key:
            return Statement(_kind(key), _latest(sentence) if m.group("from") else sentence, key)
    m = _FAVOURITE.match(body)
    if m is not None:
        return Statement("preference", sentence, "preference-favourite-" + (slug(m.group("k"), max_words=2) or "thing"))
    for pattern in (_MY_IS, _THE_CHANGED):
        m = pattern.match(body)
        if m is None:
            continue
        subject = m.group("k")
        words = ascii_words(subject, frozenset())
        if not words or words[0] in _NOT_FACT_SUBJECTS:
            continue
        if _SECRET_SUBJECTS.intersection(words) or has_secret(f"{subject}: {m.group('v')}"):
            return Statement("withheld", sentence)
        key = fact_key(subject)
        if key:
            return Statement(_kind(key), _latest(sentence), key)
    m = _PREFERENCE.match(body)
    if m is not None:
        value = m.group("v")
        first = ascii_words(value, frozenset())[:1]
        if m.group("bare") and (not first or first[0] not in _IMPERATIVES):
            return None
        topic = _preference_topic(value)
        if topic:
            return Statement("preference", sentence, "preference-" + topic)
    m = _LIKES.match(body)
    if m is not None:
        value = m.group("v") or m.group("v2") or ""
        if _NOT_LIKED.match(value) is None:
            topic = _preference_topic(value)
            if topic:
                return Statement("preference", sentence, "preference-" + topic)
    return None
