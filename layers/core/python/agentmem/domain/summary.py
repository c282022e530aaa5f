"""Rolling summaries (SPEC §4.3) and what every summary keeps or leaves out (SPEC §2.5, last point). Pure.

The summary is a Markdown document with fixed sections, most important first::

    # Conversation summary

    ## Remembered        what the user asked to remember, word for word, until asked to forget it
    ## Facts             "<key>: <statement>", one per key, the latest value: profile, then preferences, then the rest
    ## Decisions         what either side decided or both agreed ("we decided …", "let's go with …", "Agreed: …")
    ## Open questions    questions no later message answered (the assistant's: "Asked of the user: …", or
                         "…, awaiting a reply: …" when the user's next message is still to come)
    ## Recent topics     what the last few user messages were about (the first to go when space runs out)

``ExtractiveSummariser`` (the embedded backend's summariser: deterministic, offline, no model) rebuilds it
from the previous summary's sections plus the new messages, so passes are progressive: the previous text
is parsed back into its sections (an edited summary is the starting point, and any text in it that is not
one of those sections is kept as it is) and the messages are applied in order. A pass over A and then one
over B gives the same summary as one pass over A+B, as long as nothing had to be cut for length (and no
"forget it" at the start of B points back at a request at the end of A).

What each sentence says is read by ``domain.statements`` (both sides of the conversation; tool output never):

* **remembered** items are kept whole, word for word, keyed by their subject: remembering the same key again
  replaces it; "forget …" removes the items it names, and every other line quoting them;
* **facts** (the user's, and what the assistant states of the user) keep one line per key: a fact that
  changed keeps its latest value only, and recent topics quoting the old value go with it;
* **decisions** from either side, a proposal the other side agreed to ("Shall we …?" — "Yes"), and what the
  assistant says it has done ("Done: …", "I've booked …");
* **open questions**: the user's, until the assistant's reply shares a word with it, or a later assistant
  sentence at least half of its words (two at least), without deferring ("I'll check", "not sure" …); the
  assistant's, until the user replies to it;
* **secrets** — a credential (``domain.summary_secrets``, by ``screening.screen``'s rules) is left out of
  everything but the remembered items, which the user asked for; "my password is …" said without asking to
  remember it is left out too. A line that ``screen`` finds steering the model (SPEC §2.5) is never kept,
  even as a remembered item: the checkpoint write would refuse it.

**Size.** Facts, decisions, open questions and recent topics together stay within ``SUMMARY_MAX_TOKENS``
(2,000 tokens, counted as the context counts them; at most 60 facts, 60 decisions, 30 open questions and 8
recent topics whatever the budget): when a pass would go past it, recent topics go first, then the oldest
open questions, decisions and other facts (taken from whichever holds the most, down to the newest 8, 12 and
12), then the rest of those, and preferences and profile facts last. Remembered items
are never cut to fit that budget, only past ``HARD_MAX_TOKENS`` (4,500 tokens for the whole document, and
never more than ``HARD_MAX_CHARS``), oldest first, with a note saying how many went. A year-long conversation
therefore keeps a summary of the same bounded size, its most important lines first.

``leave_out_secrets`` is the same filter for any text (the Bedrock summariser runs the model's answer
through it), and ``track_remembered`` / ``keep_remembered`` make a model-written summary hold every
remembered item word for word and none that was forgotten.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from ..ports.summariser import Summariser
from .conversations import Message
from .statements import (
    Statement,
    agrees,
    answered_words,
    answers,
    assistant_statements,
    forget_hits,
    replies_to,
    truncate,
    user_statements,
)
from .summary_secrets import REDACTED, SECRET_KINDS, has_secret, leave_out_secrets, steers
from .summary_words import PROFILE_KEYS, content_words, slug, subject_key, value_part
from .tokens import count_tokens

__all__ = [
    "ASKED_OF_THE_USER",
    "DROPPED_NOTE",
    "FACT_LINE",
    "HARD_MAX_CHARS",
    "HARD_MAX_TOKENS",
    "HEADING",
    "NONE_LINE",
    "REDACTED",
    "SECRET_KINDS",
    "SECTION",
    "SECTION_TITLES",
    "SUMMARY_MAX_CHARS",
    "SUMMARY_MAX_TOKENS",
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
    "summary_tokens",
    "track_remembered",
    "user_statements",
]

SUMMARY_MAX_TOKENS = 2_000  # facts, decisions, open questions and recent topics together
HARD_MAX_TOKENS = 4_500  # the whole document: remembered items are cut past it, with a note
SUMMARY_MAX_CHARS = 4 * SUMMARY_MAX_TOKENS  # about the same budget in characters (what a model is told)
HARD_MAX_CHARS = 19_000  # and never more characters (an entry holds 20,000)
RECENT_TOPICS_MAX = 8
OPEN_QUESTIONS_MAX = 30  # at most, whatever the budget
DECISIONS_MAX = 60
FACTS_MAX = 60
QUESTIONS_FLOOR = 8  # the newest kept of each while older ones of the others can go
DECISIONS_FLOOR = 12
FACTS_FLOOR = 12
TOPIC_CHARS = 120

TITLE = "# Conversation summary"
SECTION_TITLES = ("Remembered", "Facts", "Decisions", "Open questions", "Recent topics")
NONE_LINE = "(none)"
ASKED_OF_THE_USER = "Asked of the user: "
AWAITING_REPLY = "Asked of the user, awaiting a reply: "  # the last thing the assistant said before the window
AGREED = "Agreed: "

_KNOWN_SECTIONS = {title.lower(): title for title in SECTION_TITLES}
HEADING = re.compile(r"^#{1,6}\s")
SECTION = re.compile(r"^##\s+(?P<t>.+?)\s*:?\s*$")
FACT_LINE = re.compile(r"^(?P<k>[a-z0-9][a-z0-9._-]{0,63}):\s+(?P<v>\S.*)$", re.DOTALL)
DROPPED_NOTE = re.compile(r"^\(left out for length: (?P<n>\d+) older remembered items?\)$")


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
    awaiting: set[str] = field(default_factory=set)  # the assistant's questions the user has not replied to yet
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
            m = SECTION.match(line)
            if m is not None and m.group("t").lower() in _KNOWN_SECTIONS:
                section, block, open_item = _KNOWN_SECTIONS[m.group("t").lower()], None, False
                continue
            if HEADING.match(line) is not None:
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
            m = DROPPED_NOTE.match(item)
            if m is not None:
                state.dropped_remembered += int(m.group("n"))
            elif item and not steers(item):
                key = subject_key(item)
                state.remembered.pop(key, None)
                state.remembered[key] = item
        for item in items["Facts"]:
            item = leave_out_secrets(item).strip()
            if not item:
                continue
            m = FACT_LINE.match(item)
            if m is not None:
                state.facts.pop(m.group("k"), None)
                state.facts[m.group("k")] = (m.group("v"), True)
            else:
                state.facts["~" + " ".join(item.lower().split())] = (item, False)
        for title, target in (("Decisions", state.decisions), ("Open questions", state.questions),
                              ("Recent topics", state.topics)):
            for item in items[title]:
                item = leave_out_secrets(item).strip()
                if item.startswith(AWAITING_REPLY):
                    item = ASKED_OF_THE_USER + item[len(AWAITING_REPLY) :]
                    state.awaiting.add(item)
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
        proposed: tuple[str, str] | None = None  # (who, what) the last message proposed
        # what the assistant asked since the user last spoke (the previous pass may have ended on it)
        asked: list[str] = [q for q in self.questions if q in self.awaiting]
        just_asked: list[str] = []  # what the user asked in the message the assistant is now answering
        for message in messages:
            if message.role == "user":
                if proposed is not None and proposed[0] == "assistant" and agrees(message.content):
                    self._add(self.decisions, AGREED + proposed[1], DECISIONS_MAX)
                proposed = None
                words = answered_words(message.content)
                self.questions = [
                    q for q in self.questions if not q.startswith(ASKED_OF_THE_USER)
                    or not (replies_to(q[len(ASKED_OF_THE_USER):], message.content) if q in asked else
                            answers(q[len(ASKED_OF_THE_USER):], words))
                ]
                asked = []
                open_before = set(self.questions)
                previous_keys, proposed = self._fold_user(message.content, previous_keys)
                just_asked = [q for q in self.questions if q not in open_before]
            elif message.role == "assistant":
                if proposed is not None and proposed[0] == "user" and agrees(message.content):
                    self._add(self.decisions, AGREED + proposed[1], DECISIONS_MAX)
                proposed = None
                words = answered_words(message.content)
                self.questions = [  # the reply to a question answers it with a word of it; a later message, with more
                    q for q in self.questions if q.startswith(ASKED_OF_THE_USER)
                    or not (content_words(q) & words if q in just_asked else answers(q, words))
                ]
                just_asked = []
                for st in assistant_statements(message.content):
                    if st.kind == "decision":
                        self._add(self.decisions, st.text, DECISIONS_MAX)
                    elif st.kind in ("profile", "preference", "fact"):
                        self._state_fact(st)
                    elif st.kind == "proposal":
                        proposed = ("assistant", st.text)
                    elif st.kind == "question":
                        self._add(self.questions, ASKED_OF_THE_USER + st.text, OPEN_QUESTIONS_MAX)
                        asked.append(ASKED_OF_THE_USER + st.text)
        self.awaiting = set(asked)
        while len(self.facts) > FACTS_MAX:  # the oldest of the least important kind goes
            rank = max(_fact_rank(key) for key in self.facts)
            del self.facts[next(key for key in self.facts if _fact_rank(key) == rank)]

    def _fold_user(self, content: str, previous_keys: list[str]) -> tuple[list[str], tuple[str, str] | None]:
        remembered_now: list[str] = []
        proposed: tuple[str, str] | None = None
        topic: str | None = None
        for st in user_statements(content):
            if st.kind == "remember":
                if steers(st.text):
                    continue
                self.remembered.pop(st.key, None)
                self.remembered[st.key] = st.text
                remembered_now.append(st.key)
            elif st.kind == "forget":
                self._forget(st, remembered_now or previous_keys)
            elif st.kind in ("profile", "preference", "fact"):
                self._state_fact(st)
            elif st.kind == "decision":
                self._add(self.decisions, st.text, DECISIONS_MAX)
            elif st.kind == "question":
                self._add(self.questions, st.text, OPEN_QUESTIONS_MAX)
            elif st.kind == "proposal":
                proposed = ("user", st.text)
            if topic is None and st.kind in ("topic", "question") and len(content_words(st.text)) >= 2:
                topic = truncate(st.text, TOPIC_CHARS)
        if topic is not None:
            self.topics.append(topic)
            del self.topics[:-RECENT_TOPICS_MAX]
        return remembered_now, proposed

    def _state_fact(self, st: Statement) -> None:
        """A fact's latest value replaces the one before; recent topics quoting only the old value go too."""
        old = self.facts.pop(st.key, None)
        self.facts[st.key] = (st.text, True)
        if old is None:
            return
        stale = _values(old[0]) - _values(st.text)
        if stale:
            self.topics = [t for t in self.topics if not stale & _values(t)]

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
            value = value_part(text)
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

    def render(self, max_tokens: int = SUMMARY_MAX_TOKENS) -> str:
        remembered = list(self.remembered.values())
        grouped = sorted(self.facts.items(), key=lambda kv: _fact_rank(kv[0]))
        facts = [(f"{k}: {text}" if labelled else text, _fact_rank(k)) for k, (text, labelled) in grouped]
        decisions, topics = list(self.decisions), list(self.topics)
        questions = [AWAITING_REPLY + q[len(ASKED_OF_THE_USER) :] if q in self.awaiting else q for q in self.questions]
        dropped = self.dropped_remembered

        def build() -> str:
            out = [TITLE, ""]
            for block in self.blocks:
                if block.heading is None:
                    out += [*block.lines, ""]
            notes = [f"(left out for length: {dropped} older remembered items)"] if dropped else []
            for title, entries in (("Remembered", notes + remembered), ("Facts", [f for f, _ in facts]),
                                   ("Decisions", decisions), ("Open questions", questions), ("Recent topics", topics)):
                out.append(f"## {title}")
                out += [_bullet(e) for e in entries] or [NONE_LINE]
                out.append("")
            for block in self.blocks:
                if block.heading is not None:
                    out += [block.heading, *block.lines, ""]
            return "\n".join(out).rstrip() + "\n"

        others = [f for f, r in facts if r == 2]
        preferences = [f for f, r in facts if r == 1]
        profile = [f for f, r in facts if r == 0]
        budget = sum(_tokens(e) for e in [*topics, *questions, *decisions, *others, *preferences, *profile])

        def cut(entries: list[str], keep: int = 0) -> None:
            nonlocal budget
            while budget > max_tokens and len(entries) > keep:
                budget -= _tokens(entries.pop(0))  # the oldest first

        # When the budget is spent: recent topics go first; then the oldest open questions, decisions and
        # other facts, the largest of them first, down to the newest few of each; then all of those, in that
        # order; preferences and profile facts last.
        cut(topics)
        floors = ((questions, QUESTIONS_FLOOR), (decisions, DECISIONS_FLOOR), (others, FACTS_FLOOR))
        while budget > max_tokens:
            above = [(sum(map(_tokens, entries[: len(entries) - keep])), entries) for entries, keep in floors
                     if len(entries) > keep]
            if not above:
                break
            budget -= _tokens(max(above, key=lambda item: item[0])[1].pop(0))
        for entries in (questions, decisions, others, preferences, profile):
            cut(entries)
        kept = {*profile, *preferences, *others}
        facts = [(f, r) for f, r in facts if f in kept]
        text = build()
        while (len(text) > HARD_MAX_CHARS or summary_tokens(text) > HARD_MAX_TOKENS) and remembered:
            remembered.pop(0)  # never silently: the note says how many went
            dropped += 1
            text = build()
        if len(text) > HARD_MAX_CHARS:
            text = text[: text.rfind("\n", 0, HARD_MAX_CHARS) + 1]
        return text


_VALUE = re.compile(r"[^\W_]*(?:[A-Z0-9@][^\W_]*)+(?:[.@/:-][^\W_]+)*")


def _values(text: str) -> set[str]:
    """The words of ``text`` that look like values: names, numbers, addresses ("Porto", "12k", "ana@x.io")."""
    return {m.group(0).lower() for m in _VALUE.finditer(text) if any(c.isdigit() or c.isupper() for c in m.group(0))
            and m.group(0) not in ("I", "I'm")}


def _fact_rank(key: str) -> int:
    """Profile facts first, preferences next, the rest after them (and cut before them)."""
    if key in PROFILE_KEYS:
        return 0
    return 1 if key.startswith("preference-") else 2


@lru_cache(maxsize=16_384)
def _tokens(item: str) -> int:
    return count_tokens(_bullet(item)) + 1


def summary_tokens(text: str) -> int:
    """A summary's size in tokens, line by line (what the budgets count)."""
    return sum(_line_tokens(line) for line in text.split("\n"))


@lru_cache(maxsize=16_384)
def _line_tokens(line: str) -> int:
    return count_tokens(line) + 1


def _bullet(item: str) -> str:
    return "- " + item.replace("\n", "\n  ")


def track_remembered(previous: str | None, messages: Sequence[Message]) -> tuple[list[str], list[str]]:
    """What a summary of ``previous`` + ``messages`` must hold word for word, and what it must no longer
    hold: (remembered items, items forgotten by these messages), by this module's rules."""
    state = _Summary.parse(previous)
    state.fold(messages)
    remembered = list(state.remembered.values())
    return remembered, [t for t in state.forgotten if t not in remembered]


def _remembered_section(lines: Sequence[str]) -> str:
    """The text under ``## Remembered`` ("" when there is none)."""
    for i, line in enumerate(lines):
        m = SECTION.match(line)
        if m is not None and m.group("t").lower() == "remembered":
            end = i + 1
            while end < len(lines) and HEADING.match(lines[end]) is None:
                end += 1
            return "\n".join(lines[i + 1 : end])
    return ""


def keep_remembered(text: str, *, remembered: Sequence[str], forgotten: Sequence[str] = ()) -> str:
    """A summary written by someone else (a model) made to keep the remembered-items rule: every line that
    quotes a forgotten item (or its value) goes, and every remembered item missing word for word from the
    ``## Remembered`` section (quoted elsewhere or not at all) is added under it (the section is added when
    missing)."""
    purge: list[str] = []
    for item in forgotten:
        purge += [ln.strip() for ln in item.splitlines() if len(ln.strip()) >= 4]
        value = value_part(item)
        if (len(value) >= 4 and any(c.isdigit() for c in value)) or len(value) >= 8:
            purge.append(value)
    keep_lines = {ln.strip() for item in remembered for ln in item.splitlines() if ln.strip()}
    lines = [
        ln for ln in text.splitlines()
        if not any(p in ln for p in purge) or any(k in ln for k in keep_lines if len(k) >= 4)
    ]
    body = "\n".join(lines)
    kept = _remembered_section(lines)  # an item quoted elsewhere (a recent topic) is not kept by that
    missing = [item for item in remembered if not all(ln.strip() in kept for ln in item.splitlines())]
    if not missing:
        return body.rstrip() + "\n"
    added = [_bullet(item) for item in missing]
    for i, line in enumerate(lines):
        m = SECTION.match(line)
        if m is not None and m.group("t").lower() == "remembered":
            end = i + 1
            while end < len(lines) and HEADING.match(lines[end]) is None:
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
    writes the document again, its facts, decisions, open questions and recent topics within ``max_tokens``:
    recent topics go first (oldest first), then open questions, decisions and facts; remembered items are
    never cut to fit, only past ``HARD_MAX_TOKENS``, and then with a note saying how many went.
    """

    def __init__(self, *, max_tokens: int = SUMMARY_MAX_TOKENS) -> None:
        self.max_tokens = max_tokens

    @property
    def name(self) -> str:
        return "extractive"

    def summarise(self, previous: str | None, messages: Sequence[Message]) -> str:
        state = _Summary.parse(previous)
        state.fold(messages)
        return state.render(self.max_tokens)
