"""The pre-compaction flush's fact extraction (SPEC §4.5). Pure.

Before a summary pass folds messages, ``extract_facts`` reads the durable facts out of them, to be saved as
entries of the agent's own memory (each save screened as every write, SPEC §2.5):

* only what the **user** stated counts — never an assistant's guess, never tool output — and what both sides
  agreed: a proposal or decision of one side that the other's next message agrees to ("Shall we ship on
  Monday?" — "Yes, let's do that") is a decision, ``Agreed: …``;
* the sentences are read by the summary's rules (``domain.summary.user_statements``), so the flush and the
  checkpoint agree on what was remembered, forgotten, stated and decided;
* each fact has a **stable name** (``[a-z0-9._-]{1,64}``) for what it is about, not for its value, so a later
  value saves over the same entry: ``profile-name``, ``profile-email``, ``preference-reply-language``,
  ``fact-plan``, ``remembered-door-code`` (also for "remember my code 5521": ``remembered-code``, so a new
  code saves over the old), ``decision-<its first words>``; family ("my daughter is called Maria", "I have
  two kids") is part of the profile (``profile-daughter``, ``profile-children``); within one batch the latest
  statement of a name wins, and an item remembered then forgotten in the batch is not extracted at all;
* secrets are left out (``withheld`` statements), except an item the user asked to remember, which is
  kept word for word: its save is screened like any other (forced into the user's layer, or refused where
  there is none);
* ``user_profile`` facts have importance 0.8, so the context's pinned block picks them up (SPEC §5:
  ``user_profile`` with importance ≥ 0.7).

``forgotten_names`` finds the entries an earlier flush saved that these messages ask to forget (the
checkpoint drops them; the entries should go too).

``same_fact`` decides whether an existing entry already says the same thing "by meaning", so the flush
updates it instead of adding a duplicate: the Jaccard overlap of the two texts' content words
(``domain.summary.content_words``: lower-cased, stop words out, crudely stemmed) is at least
``SAME_FACT_THRESHOLD`` (0.6). Deterministic and conservative: "My email is ana@old.example" and "My email
is ana@new.example" are the same fact (3 of 5 words), "my door code is 4512" and "my locker code is 4512"
are not (2 of 4); texts of fewer than two content words are the same only when those words are equal.

With an embedder, meaning goes further (``meaning_candidates``, ``closest``): an entry of the same category
whose embedding's cosine with the fact's is at least the embedder's threshold (``meaning_threshold``: 0.8
for the offline WordLlama model, where "I'm vegetarian" ~ "The user is vegetarian" is 0.85 and "I'm
vegetarian" ~ "I'm allergic to peanuts" 0.18; 0.85 for Titan and OpenAI-compatible models; none for the
hashing stand-in, whose vectors share letters rather than meaning) is the same fact. Never for remembered
items (a door code and a locker code embed alike), and never against an entry the flush named for another
subject of its kind (``profile-location`` "I live in Lisbon" and ``profile-job`` "I work in Lisbon" embed
alike too): those match by name only. Decisions match any decision, whoever named it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from .conversations import Message
from .screening import screen
from .statements import agrees, assistant_statements
from .summary import AGREED, Statement, content_words, forget_hits, user_statements
from .summary_words import fact_key, slug, wordset

__all__ = [
    "CONTENT_MAX",
    "DESCRIPTION_MAX",
    "NAME_MAX",
    "SAME_FACT_THRESHOLD",
    "FactCategory",
    "FactDraft",
    "closest",
    "extract_facts",
    "forgotten_names",
    "meaning_candidates",
    "meaning_threshold",
    "same_fact",
    "similarity",
]

FactCategory = Literal["preference", "user_profile", "fact", "decision"]

NAME_MAX = 64
DESCRIPTION_MAX = 200
CONTENT_MAX = 20_000
SAME_FACT_THRESHOLD = 0.6
IMPORTANCE_PROFILE = 0.8
IMPORTANCE_REMEMBERED = 0.8
IMPORTANCE_PREFERENCE = 0.6
IMPORTANCE_DECISION = 0.6
IMPORTANCE_FACT = 0.5


@dataclass(frozen=True)
class FactDraft:
    """One durable fact to save as an entry: ``name`` [a-z0-9._-]{1,64}, a one-line ``description`` of at
    most 200 characters, the ``content`` (the user's words), a ``category`` and an ``importance``."""

    name: str
    description: str
    content: str
    category: FactCategory
    importance: float


def _name(prefix: str, key: str) -> str:
    name = key if key.startswith(prefix + "-") else f"{prefix}-{key}"
    return name[:NAME_MAX].rstrip("-._")


def _about(key: str, prefix: str) -> str:
    """What a key says in words: ``preference-reply-language`` → "reply language"."""
    if key.startswith(prefix + "-"):
        key = key[len(prefix) + 1 :]
    return key.replace("-", " ")


def _one_line(text: str, limit: int = DESCRIPTION_MAX) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# "my code 5521", "my new locker number B-12": an item without "is", named for its subject, not its value
_MY_ITEM = re.compile(r"^(?:my|our|the)\s+(?:new\s+)?(?P<s>[a-z][a-z -]{0,40}?)\s+(?P<v>\S*\d\S*)\.?$",
                      re.IGNORECASE)
FAMILY = wordset(
    "wife husband partner spouse daughter son kids children child mother father mum mom dad brother sister "
    "girlfriend boyfriend fiance fiancee grandmother grandfather baby"
)
_HAS_FAMILY = re.compile(
    r"^i\s+(?:have|have\s+got|'ve\s+got)\s+(?:a|an|one|two|three|four|five|six|\d+)\s+"
    r"(?:kids?|children|child|sons?|daughters?|brothers?|sisters?|grandchildren|grandkids)\b",
    re.IGNORECASE,
)


def _remembered_key(st: Statement) -> str:
    m = _MY_ITEM.match(st.text.strip())
    if m is not None and st.key.endswith(slug(m.group("v"))):
        return fact_key(m.group("s")) or st.key
    return st.key


def _family(st: Statement) -> bool:
    return st.kind == "fact" and st.key in FAMILY


def _draft(st: Statement) -> FactDraft | None:
    if not st.text.strip() or len(st.text) > CONTENT_MAX:
        return None
    if st.kind == "remember":
        if screen(st.text).injection is not None:
            return None
        key = _remembered_key(st)
        what = "" if key.startswith("item-") else f": {_about(key, '')}"
        return FactDraft(_name("remembered", key), _one_line(f"Remembered word for word{what}"), st.text,
                         "fact", IMPORTANCE_REMEMBERED)
    if st.kind == "profile" or _family(st):
        return FactDraft(_name("profile", st.key), _one_line(f"The user's {_about(st.key, 'profile')}"), st.text,
                         "user_profile", IMPORTANCE_PROFILE)
    if st.kind == "preference":
        return FactDraft(_name("preference", st.key), _one_line(f"User preference: {_about(st.key, 'preference')}"),
                         st.text, "preference", IMPORTANCE_PREFERENCE)
    if st.kind == "fact":
        return FactDraft(_name("fact", st.key), _one_line(f"About the user: {_about(st.key, 'fact')}"), st.text,
                         "fact", IMPORTANCE_FACT)
    if st.kind == "decision":
        return FactDraft(_name("decision", st.key), _one_line(f"Decision: {st.text}"), st.text, "decision",
                         IMPORTANCE_DECISION)
    return None


def _statements(content: str) -> list[Statement]:
    """A user message's statements, with "I have two kids" read as a profile fact."""
    found = user_statements(content)
    text = content.strip().rstrip(".!")
    if _HAS_FAMILY.match(text) is not None and "\n" not in text:
        found = [st for st in found if st.kind != "fact"] + [Statement("profile", content.strip(), "children")]
    return found


def _agreed(proposal: Statement) -> FactDraft:
    text = AGREED + proposal.text
    return FactDraft(_name("decision", proposal.key.removeprefix("decision-")), _one_line(f"Decision: {text}"),
                     text, "decision", IMPORTANCE_DECISION)


def extract_facts(messages: Sequence[Message]) -> list[FactDraft]:
    """The durable facts the user stated in ``messages`` (in journal order), one per name, latest value
    last-stated wins, and the decisions both sides agreed to; ordered by when each was last stated."""
    drafts: dict[str, FactDraft] = {}
    remembered: dict[str, str] = {}  # key → item, for "forget …"
    facts: dict[str, tuple[str, str]] = {}  # key → (text, draft name)
    previous_keys: list[str] = []
    proposed: tuple[str, Statement] | None = None  # (who, what) the last message proposed or decided
    for message in messages:
        if message.role == "assistant":
            if proposed is not None and proposed[0] == "user" and agrees(message.content):
                agreed = _agreed(proposed[1])
                drafts.pop(agreed.name, None)
                drafts[agreed.name] = agreed
            proposed = next((("assistant", st) for st in reversed(assistant_statements(message.content))
                             if st.kind in ("proposal", "decision")), None)
            continue
        if message.role != "user":
            continue
        if proposed is not None and proposed[0] == "assistant" and agrees(message.content):
            agreed = _agreed(proposed[1])
            drafts.pop(agreed.name, None)
            drafts[agreed.name] = agreed
        statements = _statements(message.content)
        proposed = next((("user", st) for st in reversed(statements) if st.kind == "proposal"), None)
        remembered_now: list[str] = []
        for st in statements:
            if st.kind == "forget":
                if st.key or st.target:
                    keys = forget_hits(st, remembered, match_text=True)
                    for key in forget_hits(st, {k: v[0] for k, v in facts.items()}, match_text=False):
                        drafts.pop(facts.pop(key)[1], None)
                else:
                    keys = [k for k in dict.fromkeys(remembered_now or previous_keys) if k in remembered]
                for key in keys:
                    del remembered[key]
                    drafts.pop(_name("remembered", key), None)
                continue
            draft = _draft(st)
            if draft is None:
                continue
            if st.kind == "remember":
                remembered[_remembered_key(st)] = st.text
                remembered_now.append(_remembered_key(st))
            elif st.kind != "decision":
                facts[st.key] = (st.text, draft.name)
            drafts.pop(draft.name, None)
            drafts[draft.name] = draft
        previous_keys = remembered_now
    return list(drafts.values())


_FORGETTABLE = ("remembered-", "profile-", "fact-", "preference-")


def forgotten_names(messages: Sequence[Message], existing: Iterable[str]) -> list[str]:
    """The names among ``existing`` (entries an earlier flush saved) that a user message in ``messages`` asks
    to forget ("forget the door code", "you can forget my email"), so the flush can delete them as the
    checkpoint drops them. Only ``remembered-``, ``profile-``, ``fact-`` and ``preference-`` names are
    candidates, matched by their key as the summary matches its items; "forget it" names no earlier entry;
    a name the same messages state again (``extract_facts``) is not forgotten."""
    candidates = {n: n.split("-", 1)[1] for n in existing if n.startswith(_FORGETTABLE) and "-" in n}
    if not candidates:  # nothing an earlier flush saved can be forgotten: the messages need not be read
        return []
    by_key: dict[str, list[str]] = {}
    for name, key in candidates.items():
        by_key.setdefault(key, []).append(name)
    found: dict[str, None] = {}
    for message in messages:
        if message.role != "user":
            continue
        for st in user_statements(message.content):
            if st.kind != "forget" or not (st.key or st.target):
                continue
            remembered = {k: "" for k in by_key if any(n.startswith("remembered-") for n in by_key[k])}
            others = {k: "" for k in by_key if any(not n.startswith("remembered-") for n in by_key[k])}
            for key in forget_hits(st, remembered, match_text=False):
                found.update((n, None) for n in by_key[key] if n.startswith("remembered-"))
            for key in forget_hits(st, others, match_text=False):
                found.update((n, None) for n in by_key[key] if not n.startswith("remembered-"))
    if not found:
        return []
    alive = {d.name for d in extract_facts(messages)}
    return [n for n in found if n not in alive]


def similarity(a_text: str, b_text: str) -> float:
    """Jaccard overlap (0.0–1.0) of the two texts' content words; see the module's notes."""
    a, b = content_words(a_text), content_words(b_text)
    if len(a) < 2 or len(b) < 2:
        return 1.0 if a and a == b else 0.0
    return len(a & b) / len(a | b)


def same_fact(a_text: str, b_text: str) -> bool:
    """Whether two texts state the same fact, by meaning: ``similarity`` ≥ ``SAME_FACT_THRESHOLD``."""
    return similarity(a_text, b_text) >= SAME_FACT_THRESHOLD


# the cosine at which an embedder's vectors say the same fact, by the embedder's family (its name's first part)
SAME_MEANING = {"wordllama": 0.8, "bedrock": 0.85, "openai": 0.85}


def meaning_threshold(embedder_name: str) -> float | None:
    """The cosine of ``SAME_MEANING`` for an embedder (``wordllama/l2_supercat:256`` → 0.8); None: compare by
    words only."""
    return SAME_MEANING.get(embedder_name.split("/", 1)[0])


_FLUSH_PREFIXES = {"preference": "preference-", "user_profile": "profile-", "fact": "fact-"}


def meaning_candidates(name: str, category: str, entries: Mapping[str, tuple[str, str]]) -> list[str]:
    """The names among ``entries`` (name → (category, content)) that the fact ``name`` of ``category`` may be
    by meaning (see the module's notes): same category, not a remembered item, not another subject the flush
    named."""
    if name.startswith("remembered-"):
        return []
    prefix = _FLUSH_PREFIXES.get(category)
    return [other for other, (kind, content) in entries.items()
            if kind == category and content.strip() and not other.startswith("remembered-")
            and not (prefix is not None and other.startswith(prefix))]


def closest(vector: Sequence[float], vectors: Mapping[str, Sequence[float]], threshold: float) -> str | None:
    """The name whose vector has the highest cosine with ``vector``, if it is at least ``threshold``."""
    def cosine(a: Sequence[float], b: Sequence[float]) -> float:
        norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
        return sum(x * y for x, y in zip(a, b, strict=False)) / norm if norm else 0.0

    scored = sorted(((cosine(vector, v), name) for name, v in vectors.items()), reverse=True)
    return scored[0][1] if scored and scored[0][0] >= threshold else None
