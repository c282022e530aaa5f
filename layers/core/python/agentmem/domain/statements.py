"""How a conversation's messages read, sentence by sentence (SPEC §4.3, §4.5). Pure, deterministic, English.

``user_statements`` and ``assistant_statements`` turn one message into ``Statement``s, which the summary
(``domain.summary``), the flush (``domain.flush``) and the checkpoint's lines by hand
(``domain.checkpoint_edits``) all read:

* **remember** (user) — "remember …", "remember that …", "note that …", "don't forget …", "keep in mind …",
  "make a note of …", "…, remember that.", "my <…> code|pin|number|id is …": the item is the rest of the
  sentence, **whole** ("remember my new code 5521 and my email ana@example.com" keeps both), word for word;
  its key is its subject ("the door code is 4512#" → ``door-code``);
* **forget** (user) — "forget …", "you can forget my code", "never mind the …", "no need to remember …",
  "delete … from your memory"; "forget it" takes back the request just made;
* **facts** (``domain.summary_facts.read_fact``) — from the user, and from the assistant when it states them
  of the user ("Noted: your deadline is now Friday", "You're on the Team plan"): one key per fact;
* **decision** — from either side: "we decided / agreed / settled on …", "let's go with …", "we'll use …",
  "decision: …", "agreed: …", after a label too ("Topic 4: we decided to …"), and the assistant's
  confirmations of what it did ("Done: …", "I've booked …");
* **proposal** — "shall we …?", "how about …?", "I suggest …", "shall I …?": a decision once the other side
  agrees (``agrees``: "yes", "sounds good", "let's do that" …);
* **question** — from either side: a question (two content words at least; "can you …?" asks for work, not
  an answer; "anything else?" asks nothing). ``answers`` decides when a later message answered it;
* **withheld** — a credential, a password stated without asking to remember it, or text that tries to steer
  the model: kept nowhere (``domain.summary_secrets``); **topic** — anything else a user said.

Tool output is never read.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from functools import lru_cache

from .summary_facts import STATEMENT_MAX_CHARS, Statement, read_fact
from .summary_secrets import withheld
from .summary_words import SUBJECT, ascii_words, content_words, fact_key, hash_key, slug, subject_key

__all__ = [
    "QUESTION_CHARS",
    "Statement",
    "agrees",
    "answered_words",
    "answers",
    "assistant_statements",
    "forget_hits",
    "replies_to",
    "sentences",
    "truncate",
    "user_statements",
]

QUESTION_CHARS = 300

_SENTENCE_END = re.compile(r"[.!?]+[\"')\]]*(?=\s+\S)")
_ABBREVIATIONS = ("mr.", "mrs.", "ms.", "dr.", "st.", "e.g.", "i.e.", "etc.", "vs.", "no.", "approx.", "jr.", "sr.")
_CLAUSE = re.compile(
    r"\s*;\s+|\s*,?\s+(?=and\s+(?:i|my|i'm|i've|we|our|we've|we're|we'll)\s)", re.IGNORECASE
)
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})


def _trimmed(line: str, a: int, b: int) -> tuple[int, int] | None:
    while a < b and line[a].isspace():
        a += 1
    while b > a and line[b - 1].isspace():
        b -= 1
    return (a, b) if a < b else None


def sentences(line: str) -> list[tuple[int, int]]:
    """The spans of one line's sentences (abbreviations such as "e.g." do not end one)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SENTENCE_END.finditer(line):
        word = line[max(start, line.rfind(" ", start, m.end()) + 1) : m.end()].lower()
        if word in _ABBREVIATIONS:
            continue
        span = _trimmed(line, start, m.end())
        if span is not None:
            spans.append(span)
        start = m.end()
    span = _trimmed(line, start, len(line))
    if span is not None:
        spans.append(span)
    return spans


def _clauses(text: str) -> list[str]:
    """"my name is Ana and I work at Acme; I live in Porto": three statements."""
    out, a = [], 0
    for m in _CLAUSE.finditer(text):
        out.append(text[a : m.start()])
        a = m.end()
    out.append(text[a:])
    return [c.strip() for c in out if c.strip()]


_LEAD = re.compile(
    r"^(?:(?:[-*•>]|\d+[.)])\s+)?"
    r"(?:(?:ok(?:ay)?|so|and|also|oh|well|hi|hey|hello|btw|by\s+the\s+way|fyi|actually|anyway|plus|great|"
    r"thanks|thank\s+you|cool|alright|right|sure|yes|yeah|yep|hmm|perfect|noted|got\s+it|understood|"
    r"one\s+more\s+thing|no\s*,|now\s*,)"
    r"(?:[,!.:;—–-]+\s*|\s+))*",
    re.IGNORECASE,
)
# "Topic 4: we decided …", "Update — our budget is now 12k": a short label before what the sentence says
_LABEL = re.compile(r"^(?:[\w#'&/-]+\s+){0,3}[\w#'&/-]+\s*(?::|\s[—–-])\s+(?=\S)")


def _lead_end(norm: str) -> int:
    m = _LEAD.match(norm)
    return m.end() if m is not None else 0


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

_DECIDED = (
    r"(?:i|we)(?:'ve|\s+have)?\s+(?:just\s+|finally\s+|now\s+|all\s+)?"
    r"(?:decided|agreed|settled\s+on|chosen|chose|picked|opted\s+for|gone\s+with|went\s+with)|"
    r"(?:it's|it\s+is|that's|that\s+is)\s+(?:decided|agreed|settled)|"
    r"(?:the\s+|our\s+|final\s+)?decision(?:\s+is)?\s*[:—–]|decided\s*[:—–]|agreed\s*[:,—–]|"
    r"let's\s+(?:go\s+with|go\s+for|stick\s+with|stay\s+with|settle\s+on|use|pick|choose|opt\s+for)|"
    r"let\s+us\s+go\s+with|we(?:'ll|\s+will)\s+(?:go\s+with|use|stick\s+with|take)|"
    r"we(?:'re|\s+are)\s+(?:going\s+with|sticking\s+with)|i(?:'ll|\s+will)\s+go\s+with"
)
_DECISION = re.compile(
    r"^(?:(?:so|ok(?:ay)?|then|alright|right|fine|great|good)[,!]?\s+)*(?:" + _DECIDED + r")(?![\w'])",
    re.IGNORECASE,
)
_DECISION_USER_ONLY = re.compile(r"^go\s+with(?![\w'])", re.IGNORECASE)
# What an assistant says it has done: a settled outcome the summary keeps beside the decisions
_DONE = re.compile(
    r"^(?:(?:done|confirmed|all\s+set|booked|scheduled)\s*[:,—–-]\s*\S|"
    r"i(?:'ve|\s+have)\s+(?:now\s+|just\s+)?(?:booked|scheduled|cancell?ed|reserved|ordered|renewed|refunded|"
    r"switched|upgraded|downgraded|moved|rescheduled|set\s+up|signed\s+you\s+up|registered)\b)",
    re.IGNORECASE,
)
_PROPOSAL = re.compile(
    r"^(?:(?:shall|should)\s+(?:we|i)|how\s+about|what\s+about|why\s+don't\s+we|would\s+you\s+like\s+me\s+to|"
    r"do\s+you\s+want\s+me\s+to|want\s+me\s+to|i\s+(?:suggest|propose|recommend)(?:\s+that)?|"
    r"i'd\s+(?:suggest|propose|recommend)(?:\s+that)?|my\s+(?:suggestion|recommendation|proposal)\s+is(?:\s+to)?|"
    r"we\s+could|maybe\s+we\s+(?:could|should))\s+(?P<v>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
_AGREES = re.compile(
    r"^(?:yes|yeah|yep|yup|sure|ok(?:ay)?|agreed|deal|perfect|great|absolutely|definitely|of\s+course|"
    r"sounds\s+(?:good|great|fine|perfect)|that\s+(?:works|sounds\s+good)|works\s+for\s+me|fine\s+by\s+me|"
    r"go\s+ahead|do\s+it|please\s+do|let's\s+do\s+(?:it|that|this)|i\s+agree|good\s+idea|makes\s+sense|"
    r"that's\s+(?:fine|perfect|great|good))(?![\w'])",
    re.IGNORECASE,
)
_ACKNOWLEDGES = re.compile(  # a reply that only says yes or thanks: no topic of its own
    r"^(?:" + _AGREES.pattern.removeprefix("^(?:").removesuffix(")(?![\\w'])") + r"|thanks|thank\s+you|cool|"
    r"got\s+it|noted|fine|good|right|alright|great\s+thanks)(?:[\s,]+(?:thanks|thank\s+you|please))*[\s.!]*$",
    re.IGNORECASE,
)
_DISAGREES = re.compile(r"\b(?:no|not|don't|do\s+not|rather|instead|but|wait|hold\s+on)\b", re.IGNORECASE)
# "Can you fetch the report?" asks for something to be done, not for an answer: a topic, not a question.
_REQUEST = re.compile(r"^(?:please\s+)?(?:can|could|would|will)\s+you\b", re.IGNORECASE)
# What an assistant asks that leaves nothing open: "Anything else?", "How can I help?"
_ASKS_NOTHING = re.compile(
    r"\b(?:anything\s+else|something\s+else|how\s+can\s+i\s+help|what\s+can\s+i\s+do|can\s+i\s+help|"
    r"does\s+that\s+(?:help|make\s+sense|work)|is\s+that\s+(?:ok|okay|alright|clear)|sound\s+good|"
    r"(?:any|other)\s+questions)\b",
    re.IGNORECASE,
)
_ANSWER_WORDS = re.compile(
    r"^(?:yes|yeah|yep|no|nope|sure|ok(?:ay)?|either|both|neither|none|the\s+(?:first|second|third|last)|"
    r"let's|we'll|i'll|i'd|i\s+(?:think|want|need|prefer)|probably|definitely|maybe|around|about|\d)",
    re.IGNORECASE,
)
_DEFERS = re.compile(
    r"\b(?:i\s+(?:don't|do\s+not)\s+know|not\s+sure|not\s+certain|(?:i'll|i\s+will|let\s+me|i\s+need\s+to|"
    r"i\s+have\s+to|i'd\s+have\s+to|i\s+would\s+need\s+to)\s+(?:check|find\s+out|look|ask|get\s+back|confirm|"
    r"verify|double-check)|(?:can't|cannot|can\s+not|couldn't)\s+(?:answer|tell|say|find|confirm)|unable\s+to|"
    r"no\s+idea|(?:don't|do\s+not)\s+have\s+(?:that|this|the|any)\s+(?:information|info|details)|"
    r"get\s+back\s+to\s+you|find\s+out\s+and)\b",
    re.IGNORECASE,
)
# The assistant speaking of the user, read as the user would say it: "your plan is …" → "my plan is …"
_SECOND_PERSON = (
    (re.compile(r"^you(?:'re|\s+are)\b", re.IGNORECASE), "I'm"),
    (re.compile(r"^you(?:'ve|\s+have)\b", re.IGNORECASE), "I've"),
    (re.compile(r"^your\b", re.IGNORECASE), "my"),
    (re.compile(r"^you\b", re.IGNORECASE), "I"),
)
_HEDGED = re.compile(r"\b(?:if|maybe|might|perhaps|probably|possibly|seems?|guess|assume|unless)\b", re.IGNORECASE)


def _remember(item: str) -> Statement:
    return Statement("remember", item, subject_key(item))


def _forget(sentence: str, target: str) -> Statement:
    target = _FORGET_TAIL.sub("", _FORGET_HEAD.sub("", target.strip(), count=1)).strip(" \t.!?,;:\"'")
    if target.lower() in _REFERS_BACK or target.lower() in {"them", "those", "all that", "everything"}:
        return Statement("forget", sentence)
    words = content_words(target) - _FORGET_NOISE
    key = subject_key(target) if SUBJECT.match(target) else fact_key(target)
    return Statement("forget", sentence, key, words)


def _decision(text: str, rest: str) -> Statement:
    return Statement("decision", text, "decision-" + (slug(rest) or hash_key(text)))


def _decided(text: str, norm: str, *, user: bool, done: bool = False) -> Statement | None:
    """A decision ``text`` records (``norm``: it with lead words off), after a label too, or None; with
    ``done``, what an assistant says it has done ("Done: …", "I've booked …") instead."""
    if len(text) > STATEMENT_MAX_CHARS or text.rstrip().endswith("?"):
        return None
    for body in (norm, norm[_label_end(norm) :]):
        if done:
            if _DONE.match(body) is not None:
                return _decision(text, body)
            continue
        m = _DECISION.match(body) or (_DECISION_USER_ONLY.match(body) if user else None)
        if m is not None:
            return _decision(text, body[m.end() :])
    return None


def _label_end(norm: str) -> int:
    m = _LABEL.match(norm)
    return m.end() if m is not None else 0


def _question(text: str, norm: str, *, user: bool) -> bool:
    return text.endswith("?") and len(content_words(text)) >= 2 and not (user and _REQUEST.match(norm))


def _proposal(text: str, norm: str) -> Statement | None:
    m = _PROPOSAL.match(norm)
    if m is None or len(text) > STATEMENT_MAX_CHARS:
        return None
    what = m.group("v").strip().rstrip("?.!").strip()
    if len(content_words(what)) < 1:
        return None
    return Statement("proposal", what[:1].upper() + what[1:] + ".", "decision-" + (slug(what) or hash_key(what)))


# A summary pass reads each message it folds several times (the flush's facts, what it forgets, the summary): the
# statements of the most recent messages are kept, each message's text up to STATEMENTS_KEPT_CHARS
STATEMENTS_KEPT = 1024
STATEMENTS_KEPT_CHARS = 20_000


def user_statements(content: str) -> list[Statement]:
    """What a user message says, sentence by sentence, in order (see the module's rules)."""
    return list(_kept_user(content) if len(content) <= STATEMENTS_KEPT_CHARS else _user_statements(content))


def assistant_statements(content: str) -> list[Statement]:
    """What an assistant message records: decisions (and what it says it has done), facts it states of the
    user, proposals, and the questions it asks. Nothing else counts."""
    return list(_kept_assistant(content) if len(content) <= STATEMENTS_KEPT_CHARS
                else _assistant_statements(content))


def _user_statements(content: str) -> tuple[Statement, ...]:
    out: list[Statement] = []
    lines = content.splitlines()
    previous_sentence: str | None = None
    for li, line in enumerate(lines):
        spans = sentences(line)
        si = -1
        while si + 1 < len(spans):
            si += 1
            a, b = spans[si]
            sentence = line[a:b]
            norm = sentence.translate(_QUOTES)
            skip = _lead_end(norm)
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
                    return tuple(out)
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
            for clause in _clauses(sentence):
                stated = _user_clause(clause)
                if stated is None:
                    continue
                out.append(stated)
                previous_sentence = None if stated.kind in ("remember", "forget") else stated.text
    return tuple(out)


def _user_clause(clause: str) -> Statement | None:
    norm = clause.translate(_QUOTES)
    skip = _lead_end(norm)
    body_norm, body = norm[skip:], clause[skip:]
    text = body.strip()
    if not text or _ACKNOWLEDGES.match(body_norm.strip()) is not None:
        return None
    m = _FORGET.match(body_norm) or _FORGET_MEMORY.match(body_norm)
    if m is not None:
        return _forget(body, body[m.start("t") : m.end("t")])
    m = _MY_CODE.match(body_norm)
    if m is not None and not _NOT_REMEMBER_NOUN.intersection(ascii_words(m.group("k"), frozenset())):
        return _remember(text)
    if withheld(text):
        return Statement("withheld", text)
    stated = read_fact(text, body_norm.strip())
    if stated is None and _label_end(body_norm):
        stated = read_fact(text, body_norm[_label_end(body_norm) :].strip())
    if stated is not None:
        return stated
    decided = _decided(text, body_norm, user=True)
    if decided is not None:
        return decided
    if _question(text, body_norm, user=True):
        return _proposal(text, body_norm) or Statement("question", text[:QUESTION_CHARS])
    proposed = _proposal(text, body_norm)
    return proposed or Statement("topic", text)


def _assistant_statements(content: str) -> tuple[Statement, ...]:
    out: list[Statement] = []
    for line in content.splitlines():
        for a, b in sentences(line):
            for clause in _clauses(line[a:b]):
                stated = _assistant_clause(clause)
                if stated is not None:
                    out.append(stated)
    return tuple(out)


_kept_user = lru_cache(maxsize=STATEMENTS_KEPT)(_user_statements)
_kept_assistant = lru_cache(maxsize=STATEMENTS_KEPT)(_assistant_statements)


def _assistant_clause(clause: str) -> Statement | None:
    norm = clause.translate(_QUOTES)
    skip = _lead_end(norm)
    body_norm, text = norm[skip:], clause[skip:].strip()
    if not text or withheld(text):
        return None
    decided = _decided(text, body_norm, user=False)
    if decided is not None:
        return decided
    if text.endswith("?"):
        if _ASKS_NOTHING.search(text) is not None:
            return None
        if _question(text, body_norm, user=False):
            return _proposal(text, body_norm) or Statement("question", text[:QUESTION_CHARS])
        return None
    if _HEDGED.search(body_norm) is None:
        for body in (body_norm, body_norm[_label_end(body_norm) :]):
            for pattern, first in _SECOND_PERSON:
                m = pattern.match(body)
                if m is not None:
                    stated = read_fact(text, first + body[m.end() :])
                    if stated is not None and stated.kind in ("profile", "preference", "fact"):
                        return stated
                    break
    return _decided(text, body_norm, user=False, done=True)


def agrees(content: str) -> bool:
    """Whether a reply opens by agreeing to what the other side proposed ("Yes, let's do that.")."""
    spans = sentences(content.strip().split("\n", 1)[0]) if content.strip() else []
    if not spans:
        return False
    first = content.strip()[spans[0][0] : spans[0][1]].translate(_QUOTES)
    m = _AGREES.match(first.lstrip("-*• "))
    return m is not None and _DISAGREES.search(first[m.end() :]) is None


def answered_words(content: str) -> frozenset[str]:
    """The words of a message's sentences that answer rather than defer."""
    words: set[str] = set()
    for line in content.splitlines():
        for a, b in sentences(line):
            sentence = line[a:b].translate(_QUOTES)
            if _DEFERS.search(sentence) is None:
                words |= content_words(sentence)
    return frozenset(words)


def answers(question: str, answer_words: frozenset[str]) -> bool:
    """Whether a later message (``answer_words``: its ``answered_words``) answers ``question``: it shares at
    least half of the question's content words, two at least (or all of them)."""
    asked = content_words(question)
    if not asked:
        return False
    return len(asked & answer_words) >= max(2, math.ceil(len(asked) / 2)) or asked <= answer_words


def replies_to(question: str, reply: str) -> bool:
    """Whether a user's next message answers a question the assistant asked: it shares a word with it, opens
    like an answer ("yes", "the second one", "around 40"), or is short (six words at most) and asks nothing
    back."""
    text = reply.strip().translate(_QUOTES)
    if not text:
        return False
    if content_words(question) & content_words(text):
        return True
    if _ANSWER_WORDS.match(text) is not None or _ANSWER_WORDS.match(text[_lead_end(text) :]) is not None:
        return True
    return len(text.split()) <= 6 and "?" not in text


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


def truncate(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:") + "…"
