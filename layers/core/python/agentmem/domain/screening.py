"""Screening of every entry write (SPEC §2.5). Pure: no I/O, no clock, no state.

``screen(*texts)`` looks for two things:

* **Injection** — text that tries to steer the model. Rejected outright (422 ``rejected_injection``).
* **Sensitive content** — credentials and personal data. It may only live in a user's layer.

``decide_write(result, target_user=..., user_at_hand=...)`` is the one decision every write path reuses
(API saves, agent tools, the pre-compaction flush, the console): reject, force the entry into the user's
layer, or let it through where it asked to go.

Messages name *what kind* of thing was found, never the matched text, so a secret is never echoed.

How it stays fast (a 20,000-character entry in well under a millisecond)
------------------------------------------------------------------------
Every regex is compiled once at import. A regex swept over the whole text costs ~4 ns per character in
CPython, so a dozen sweeps would blow the budget. Instead the text is turned, once, into bytes with one byte
per character (``encode("ascii", "replace")``: non-ASCII becomes ``?``, positions are kept), and:

* keywords ("system", "ignore", "now", "pass", "key", "@" …) are located with C-speed ``bytes.find`` on the
  lower-cased bytes; each rule then runs *anchored* at the keyword (``pattern.match(text, pos)``), case-
  insensitively, on the original text;
* ``bytes.translate`` maps the text to character classes; ``bytes.find`` on them finds long tokens (15+
  characters of ``[A-Za-z0-9_-]``: every AWS key, vendor token, JWT and codice fiscale is one), and small
  regexes with a literal first byte find numeric regions (8+ digits with separators, or 6–7 digits between
  capitals); the precise rules run on those spans only;
* invisible characters are looked for only when the text is not ASCII.

Repetitions that could backtrack are possessive (``++``/``*+``), so cost stays linear. Digits are ``[0-9]``,
never ``\\d``, so other scripts' digits cannot reach the checksum arithmetic.
"""

from __future__ import annotations

import html
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from agentmem.domain.errors import RejectedInjectionError, SensitiveWithoutUserError
from agentmem.domain.screening_unicode import fold, invisible_label, is_plain_ascii

__all__ = [
    "ScreeningResult",
    "WriteDecision",
    "decide_write",
    "screen",
]

_FORCED_SENSITIVE = "sensitive_content"


def _find_all(haystack: bytes, needle: bytes) -> Iterator[int]:
    """Start index of every occurrence of ``needle`` (C-speed ``bytes.find``)."""
    i = haystack.find(needle)
    while i != -1:
        yield i
        i = haystack.find(needle, i + len(needle))


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _space_back(s: str, i: int) -> int:
    """Start of the whitespace run that ends at ``i`` (``i`` itself when there is none)."""
    while i > 0 and s[i - 1].isspace():
        i -= 1
    return i


def _word_before(s: str, i: int, word: str) -> int:
    """If ``s[:i]`` ends with the whole word ``word`` (any case) plus whitespace: where it starts; else -1."""
    j = _space_back(s, i)
    k = j - len(word)
    if j == i or k < 0 or s[k:j].lower() != word or (k > 0 and _is_word_char(s[k - 1])):
        return -1
    return k


# ====================================================================================================
# Injection rules
# ====================================================================================================

# Invisible characters (zero-width, bidi overrides, tags, controls and every other default-ignorable or format
# character) are found by screening_unicode.invisible_label, before any rule below.

# A line that starts with "system:" (any case, after optional horizontal whitespace). Line breaks are the ones
# str.splitlines() knows, so "\r" or U+2028 cannot hide a line start; "the system: it works" mid-line passes.
_LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")
_HSPACE = frozenset(c for c in map(chr, range(0x3001)) if c.isspace() and c not in _LINE_BREAKS)
_COLON_AFTER_SYSTEM = re.compile(r"[^\S\n\r\v\f\x1c-\x1e\x85\u2028\u2029]*:")

# ignore / disregard / forget + up to three of all/any/the/your/my/of/these/those + prior/previous/above/
# earlier/preceding/… + instructions/prompts/rules/directions (and close synonyms); also the noun-first form
# "ignore the instructions above". "please follow the previous instructions" has no such verb and passes.
_INSTRUCTION_NOUN = r"(?:instructions?|prompts?|rules|directions|directives|guidelines|commands)"
_IGNORE_INSTRUCTIONS = re.compile(
    r"(ignore|disregard|forget)\s+"
    r"(?:"
    r"(?:(?:all|any|the|your|my|of|these|those)\s+){0,3}"
    r"(?:prior|previous|above|earlier|preceding|foregoing|former|original)\s+" + _INSTRUCTION_NOUN + r"\b"
    r"|"
    r"(?:(?:all|any|the|your|my)\s+){0,2}" + _INSTRUCTION_NOUN + r"\s+"
    r"(?:above|before|given\s+(?:above|before|earlier)|you\s+(?:were|have\s+been)\s+given)\b"
    r")",
    re.IGNORECASE,
)
_IGNORE_LABELS = {
    "ignore": "ignore_previous_instructions",
    "disregard": "disregard_instructions",
    "forget": "disregard_instructions",
}

# "you are now …" / "you're now …" is an identity switch only when what follows assigns a new identity or
# lifts the model's limits:
#   * "no longer …"                                         ("you are now no longer bound by your rules")
#   * DAN / STAN / DUDE (well-known jailbreak personas)     ("You are now DAN")
#   * "in <up to 2 words> developer|god|admin|debug|jailbreak|unrestricted|… mode"
#   * a/an/the/my/your + up to 2 words + an identity noun: assistant, ai, bot, chatbot, model, llm, agent,
#     persona, character, entity, gpt, system, version   ("you are now a different assistant")
#   * acting as / playing the role / pretending to be / roleplaying as; called / named / known as
#   * free|freed|released|liberated from …; jailbroken/unrestricted/unfiltered/uncensored/unchained/evil
# Everything else passes, so ordinary prose such as "Thank you, you are now subscribed to the newsletter",
# "you are now a member of the team" or "you are now in offline mode" is accepted.
# The rule is split at "now": the words before it ("you are" / "you're", any whitespace) are checked by
# _preceded_by_you_are, the part from "now" on by this anchored pattern.
_NOW_IDENTITY = re.compile(
    r"now\s+(?:"
    r"no\s+longer\b"
    r"|(?:dan|stan|dude)\b"
    r"|in\s+(?:[\w-]+\s+){0,2}?(?:developer|dev|god|admin|administrator|debug|jailbreak|jailbroken|"
    r"unrestricted|unfiltered|uncensored|dan|sudo|root|evil|chaos)\s+mode\b"
    r"|(?:a|an|the|my|your)\s+(?:[\w-]+\s+){0,2}?"
    r"(?:assistant|ai|bot|chatbot|model|language\s+model|llm|agent|persona|character|entity|gpt|system|version)\b"
    r"|(?:acting|playing|roleplaying|role-playing|pretending)\s+(?:as|the\s+role|to\s+be)\b"
    r"|(?:called|named|known\s+as)\b"
    r"|(?:free|freed|released|liberated)\s+from\b"
    r"|(?:jailbroken|unrestricted|unfiltered|uncensored|unchained|evil)\b"
    r")",
    re.IGNORECASE,
)

# "new system prompt" / "new system instructions", split at "system" like the rule above.
_SYSTEM_PROMPT_AFTER = re.compile(r"\s+(?:prompt|instructions?)\b", re.IGNORECASE)
_NEW_WORDS = ("new", "updated", "revised", "real", "actual", "true", "secret", "hidden", "overriding")

# Plain-word descriptions used in messages (never the matched text).
_INJECTION_WORDS = {
    "zero_width_character": "an invisible zero-width character",
    "bidi_override": "an invisible bidirectional-override character",
    "tag_characters": "invisible Unicode tag characters (hidden text)",
    "control_character": "a control character (such as NUL)",
    "invisible_character": "an invisible formatting character",
    "chat_template_marker": "a chat-template marker (like '<|im_start|>' or '[INST]')",
    "jailbreak_persona": "an attempt to make the model drop its rules ('act as an unrestricted AI')",
    "prompt_extraction": "an attempt to make the model reveal its system prompt",
    "system_prefix": "a line starting with 'system:'",
    "ignore_previous_instructions": "an instruction to ignore previous instructions",
    "disregard_instructions": "an instruction to disregard earlier instructions",
    "you_are_now": "an attempt to give the model a new identity ('you are now …')",
    "new_system_prompt": "a 'new system prompt'",
}


def _preceded_by_you_are(text: str, i: int) -> bool:
    """``text[i:]`` starts with "now": is it preceded by "you are" / "you're" (whole words, any spacing)?"""
    k = _word_before(text, i, "are")
    if k >= 0:
        return _word_before(text, k, "you") >= 0
    j = _space_back(text, i)
    k = j - 6
    return (
        j < i
        and k >= 0
        and text[k : k + 3].lower() == "you"
        and text[k + 3] in "'\u2019"
        and text[k + 4 : j].lower() == "re"
        and (k == 0 or not _is_word_char(text[k - 1]))
    )


def _system_line(text: str, i: int) -> bool:
    """``text[i:i+6]`` is "system" (any case): is it the first thing on its line (after blanks, or a Markdown
    heading, quote or emphasis: "### System:", "> system:", "**System:**"), followed by ':'?"""
    j = i
    while j > 0 and (text[j - 1] in _HSPACE or text[j - 1] in _SYSTEM_MARKUP):
        j -= 1
    if j > 0 and text[j - 1] not in _LINE_BREAKS:
        return False
    k = i + 6
    named = _SYSTEM_NOUN.match(text, k)  # "System prompt:", "SYSTEM MESSAGE:"
    if named is not None:
        k = named.end()
    while k < len(text) and text[k] in _SYSTEM_MARKUP:
        k += 1
    return _COLON_AFTER_SYSTEM.match(text, k) is not None


_SYSTEM_MARKUP = frozenset("#>*_`")
_SYSTEM_NOUN = re.compile(r"[ \t]+(?:prompt|message|instructions?)\b", re.IGNORECASE)


def _find_injection(text: str, low: bytes) -> str | None:
    """Label of the first injection rule that matches; rules are checked in a fixed order."""
    # each rule starts at its keyword: a keyword not in the text (a C-speed test) skips the rule's loop
    systems = list(_find_all(low, b"system")) if b"system" in low else []
    if any(_system_line(text, i) for i in systems):
        return "system_prefix"
    for verb in (b"ignore", b"disregard", b"forget"):
        if verb not in low:
            continue
        for i in _find_all(low, verb):
            if i > 0 and _is_word_char(text[i - 1]):
                continue
            m = _IGNORE_INSTRUCTIONS.match(text, i)
            if m is not None:
                return _IGNORE_LABELS[m.group(1).lower()]
    for i in _find_all(low, b"now") if b"now" in low else ():
        if _NOW_IDENTITY.match(text, i) is not None and _preceded_by_you_are(text, i):
            return "you_are_now"
    for i in systems:
        if _SYSTEM_PROMPT_AFTER.match(text, i + 6) is not None and any(
            _word_before(text, i, word) >= 0 for word in _NEW_WORDS
        ):
            return "new_system_prompt"
    return None


# ----------------------------------------------------------------------------------------------------
# Chat-template markers, and the phrases read with spacing, markup and look-alike digits taken away
# ----------------------------------------------------------------------------------------------------

# Special tokens of chat templates that open or close a turn or name a role ("<|im_start|>", "<|system|>",
# "<|eot_id|>" …; not "<|endoftext|>", which prose about tokenizers names), Llama's "[INST]" and "<<SYS>>", and
# role tags ("[SYSTEM]", "<system>", "</system>"): a model reads them as the start of a turn.
_MARKERS = re.compile(
    rb"<\|[ ]?(?:im_start|im_end|im_sep|system|user|assistant|developer|tool|ipython|start_header_id|end_header_id"
    rb"|eot_id|eom_id|begin_of_text|start_of_turn|end_of_turn|start|end|message|channel|constrain|return|call"
    rb"|sys|inst|human|bot|model)[ ]?\|>"
    rb"|<[ ]?/?[ ]?im_(?:start|end|sep)[ ]?>"
    rb"|\[[ ]?/?[ ]?(?:inst|sys|system|system[ _\-]?(?:prompt|message|instructions?))[ ]?\]"
    rb"|<<?[ ]?/?[ ]?(?:sys|system|system[ _\-]?(?:prompt|message|instructions?))[ ]?>>?"
)



def _find_marker(low: bytes) -> bool:
    if b"<|" in low and b"|>" in low:
        for i in _find_all(low, b"<|"):
            if _MARKERS.match(low, i) is not None:
                return True
    if b"sys" not in low and b"inst" not in low and b"im_" not in low:
        return False
    for opener in (b"[", b"<"):
        if opener not in low:
            continue
        for i in _find_all(low, opener):
            if _MARKERS.match(low, i) is not None:
                return True
    return False


# The squeezed text: lower case, letters only, look-alike digits and signs read as letters (1gn0r3 → ignore),
# everything else (spaces, line breaks, punctuation, Markdown) left out. Phrases are looked for in it, so
# "I g n o r e", "**Ignore** *all*" and "ignore\nprevious" read as what they say. Only long phrases are looked
# for this way (a short one would match across words).
_LEET = {ord("0"): "o", ord("1"): "i", ord("3"): "e", ord("4"): "a", ord("5"): "s", ord("7"): "t",
         ord("@"): "a", ord("$"): "s", ord("!"): "i", ord("|"): "l"}
_SQUEEZE_TABLE = bytes(
    ord(_LEET[i]) if i in _LEET else i + 32 if 65 <= i <= 90 else i for i in range(256)
)
_SQUEEZE_DROP = bytes(i for i in range(256) if not (65 <= i <= 90 or 97 <= i <= 122 or i in _LEET))
_TAG = re.compile(rb"<[^<>\n]{0,80}>")

_IGN = rb"(?:ignor(?:e|ing)|disregard(?:ing)?|forget(?:ting)?|overrid(?:e|ing)|bypass(?:ing)?|dismiss(?:ing)?)"
_DET = rb"(?:all|any|the|your|my|of|these|those|every|each)"
_ADJ = rb"(?:prior|previous|previously|above|earlier|preceding|foregoing|former|original|initial|old|past|existing)"
_NOUN = (rb"(?:instruction|prompt|rule|direction|directive|guideline|command|programming|restriction|constraint"
         rb"|polic(?:y|ies)|guardrail|filter|limitation|training|principle|safeguard|ethic|context)")
_KIND = rb"(?:system|safety|ethical|content|core|moral|developer)?"
_SQUEEZED = (
    # ignore / disregard / forget / override / bypass …
    (rb"ignor", rb"disregard", rb"forget", rb"overrid", rb"bypass", rb"dismiss", rb"olvid", rb"oubli", rb"vergiss",
     rb"stopfollow", rb"stopobey", rb"stoplisten", rb"donotfollow", rb"dontfollow", rb"nolongerfollow", rb"donotobey",
     rb"dontobey", rb"nolongerobey", rb"donotlisten", rb"dontlisten", rb"cancel", rb"discard", rb"abandon",
     rb"scrap", rb"void", rb"erase", rb"unlearn",
     rb"vergessen", rb"dimentica", rb"esquec", rb"allevor", rb"allebis", rb"alleob", rb"vorherig", rb"bisherig",
     rb"vorig", rb"obigen"),
    re.compile(
        _IGN + rb"(?:" + _DET + rb"{0,3}" + _ADJ + _KIND + _NOUN  # … all previous instructions
        + rb"|(?:all|any)?(?:of)?your" + _ADJ + rb"?" + _KIND + _NOUN  # … your guidelines
        + rb"|all(?:the|of)?" + _KIND + _NOUN  # … all rules
        + rb"|(?:the|all|any)?" + _NOUN + rb"s?(?:above|before|given(?:above|before|earlier)|youweregiven"
        rb"|youhavebeengiven)"  # … the instructions above
        + rb"|(?:about)?everything(?:above|before|priortothis|sofar|youweretold|youhavebeentold|youweregiven"
        rb"|youhavebeengiven|youknow|ivesaidbefore|isaidbefore)"  # … everything above
        + rb"|(?:what|anything|all)(?:that)?(?:you(?:were|havebeen|ve?been)(?:told|given|instructed)|itoldyou"
        rb"|wassaid)"  # … what you were told
        + rb")"
        + rb"|(?:ignor(?:e|ing)|disregard(?:ing)?|forget(?:ting)?)(?:all|any)?(?:of)?(?:the|your)(?:system|developer)"
        rb"(?:prompt|message|instruction)"  # … the system prompt
        # stop following / do not follow / cancel … your (previous) instructions
        + rb"|(?:stop(?:following|obeying|listeningto)|(?:donot|dont|nolonger)(?:follow|obey|listento)"
        rb"|cancel(?:ling)?|discard(?:ing)?|abandon(?:ing)?|scrap|void|erase|unlearn)"
        + rb"(?:all|any|the|your|of|these|those){0,3}"
        + rb"(?:" + _ADJ + rb"?" + _KIND + rb"(?:instruction|prompt|directive|guideline|programming)"
        # … training only as the model's ("your", "previous"): "cancel the training session" is a calendar's
        + rb"|" + _ADJ + _KIND + rb"training|(?<=your)training)"
        # the same in Spanish, French, German, Italian and Portuguese (accents are folded away)
        + rb"|(?:ignora|ignore|ignorez|ignorer|ignoriere|ignorieren|olvida|olvide|oublie|oubliez|oublier|vergiss"
        rb"|vergessen|dimentica|esqueca|esquece)(?:todas|toutes|alle|tutte|todos|tous|sie)?(?:las|les|le|as|os|die)?"
        rb"(?:instrucciones|indicaciones|instructions|consignes|anweisungen|instruktionen|befehle|regeln|istruzioni"
        rb"|indicazioni|instrucoes|regras|regles|reglas|regole)"
        rb"(?:anteriores|previas|precedentes|anterieures|precedenti|vorherigen|bisherigen|vorigen|obigen)"
        + rb"|(?:ignoriere|ignorieren|vergiss|vergessen)(?:sie)?(?:alle|die)?(?:vorherigen|bisherigen|vorigen|obigen)"
        rb"(?:anweisungen|instruktionen|befehle|regeln)"
        + rb"|(?:alle)?(?:vorherigen|bisherigen|vorigen|obigen)(?:anweisungen|instruktionen|befehle|regeln)"
        rb"(?:ignorieren|vergessen)"
    ),
    "ignore_previous_instructions",
)
_PERSONA = (rb"(?:unrestricted|unfiltered|uncensored|unmoderated|jailbroken|unbound|unlimited|limitless"
            rb"|unconstrained|unaligned|amoral|unethical|evil|rogue|lawless)")
_PERSONAS = (
    (rb"actas", rb"actlike", rb"actingas", rb"actinglike", rb"behav", rb"pretend", rb"roleplay", rb"respondas",
     rb"respondingas", rb"operateas", rb"operatingas", rb"functionas", rb"becomea", rb"becomean", rb"youare",
     rb"enabl", rb"activat", rb"enter", rb"switchto", rb"turnon", rb"unlock", rb"doanything", rb"imagin", rb"assume",
     rb"danmode", rb"jailbr", rb"unrestrictedmode", rb"unfilteredmode", rb"roleplay", rb"actinga", rb"actasa"),
    re.compile(
        rb"(?:act|acting|behave|behaving|pretend|pretending|roleplay|roleplaying|respond|responding|operate"
        rb"|operating|function|become|youarenow|youarenolonger|youare)"
        rb"(?:as|like|tobe|asif|asthough)?(?:youwere|youare|youre)?(?:a|an|the|my)?"
        rb"(?:completely|totally|fully|truly)?" + _PERSONA
        + rb"|(?:pretend|pretending|imagine|assume|actasif)(?:that)?you(?:have|had|are|were)(?:no|without)(?:longer)?"
        rb"(?:any)?(?:bound)?(?:by)?(?:restriction|rule|limit|filter|guideline|constraint|boundar|ethic|moral"
        rb"|polic|safeguard|guardrail)"
        + rb"|(?:enable|enabling|activate|activating|enter|entering|switchto|turnon|unlock)(?:the)?"
        rb"(?:dan|god|jailbreak|jailbroken|unrestricted|unfiltered|evil)mode"
        + rb"|youarenow(?:in)?(?:developer|dev|god|admin|debug|jailbreak|unrestricted|sudo|evil)mode"
        + rb"|doanythingnow"
        + rb"|youare(?:no|not)(?:longer)?(?:a|an)?(?:chatgpt|claude|gemini|gpt|llama|copilot|bard|aiassistant"
        rb"|assistant|ai|languagemodel|largelanguagemodel|chatbot)(?:anymore)?(?:you|now|from|$)"
        + rb"|(?:act|acting|roleplay|roleplaying|behave|behaving|respond|responding|pretend|pretending|operate)"
        rb"(?:as|like|tobe)(?:a|an)?(?:ai|assistant|model|bot|chatbot|llm|languagemodel|agent|persona)"
        rb"(?:with|thathas|whichhas|who has|thathasno|withno)?(?:out|no)(?:any)?(?:ethic|moral|rule|restriction|limit"
        rb"|filter|guideline|boundar|safety|censorship|guardrail|polic)"
        + rb"|(?:dan|jailbreak|jailbroken|unrestricted|unfiltered)mode(?:is)?(?:now)?(?:enabled|activated|on|engaged)"
    ),
    "jailbreak_persona",
)
_EXTRACTION = (
    (rb"reveal", rb"printyour", rb"printmeyour", rb"showyour", rb"showmeyour", rb"showusyour", rb"output", rb"repeat",
     rb"leak", rb"display", rb"tellme", rb"tellusyour", rb"dump", rb"expose", rb"disclose", rb"recite",
     rb"whatisyour", rb"whatareyour"),
    re.compile(
        rb"(?:reveal|print|show|output|repeat|leak|display|tell|dump|expose|disclose|recite|whatis|whatare)"
        rb"(?:me|us)?your(?:full|entire|hidden|secret|original|initial|whole|complete|exact|internal|real)?"
        rb"(?:systemprompt|systemmessage|systeminstruction|hiddeninstruction|hiddenprompt|initialprompt"
        rb"|initialinstruction|originalprompt|originalinstruction|secretinstruction|prompt)"
    ),
    "prompt_extraction",
)
_NEGATIONS = (b"dont", b"donot", b"never", b"not", b"doesnt", b"didnt", b"wont", b"shouldnt", b"cant", b"cannot")


def _squeeze(low: bytes) -> bytes:
    if b"<" in low:
        low = _TAG.sub(b"", low)
    return low.translate(_SQUEEZE_TABLE, _SQUEEZE_DROP)


def _trie(words: Iterable[bytes]) -> bytes:
    """One pattern for many literal words, factored by common prefixes: the regex engine tries a few first
    letters at each position instead of every word (three times faster than a flat alternation here)."""
    tree: dict[int, Any] = {}
    for word in words:
        node = tree
        for ch in word:
            node = node.setdefault(ch, {})
        node[-1] = {}

    def emit(node: dict[int, Any]) -> bytes:
        alts = [b"" if ch == -1 else re.escape(bytes([ch])) + emit(sub) for ch, sub in sorted(node.items())]
        if len(alts) == 1:
            return alts[0]
        optional = b"" in alts
        body = b"(?:" + b"|".join(a for a in alts if a) + b")"
        return body + b"?" if optional else body

    return emit(tree)


_SQUEEZED_RULES = (_SQUEEZED, _PERSONAS, _EXTRACTION)
# every rule's first words, found in one pass
_SQUEEZED_TRIGGER = re.compile(_trie({t for r in _SQUEEZED_RULES for t in r[0]}))


def _find_squeezed(squeezed: bytes) -> str | None:
    for m in _SQUEEZED_TRIGGER.finditer(squeezed):
        i = m.start()
        for _, pattern, label in _SQUEEZED_RULES:
            if pattern.match(squeezed, i) is None:
                continue
            if label == "ignore_previous_instructions" and squeezed[max(0, i - 8) : i].endswith(_NEGATIONS):
                continue  # "don't forget your rules …"
            return label
    return None


def _demark(text: str) -> str:
    """``text`` without Markdown emphasis, HTML tags and character references: what a reader of the rendered
    text sees ("<b>Ign</b>ore", "**system:**", "&#73;gnore")."""
    if "&" in text and ";" in text:
        text = html.unescape(text)
    if "<" in text:
        text = _TAG_TEXT.sub("", text)
    return text.translate(_DEMARK)


_TAG_TEXT = re.compile(r"<(?![|<]|/?\s*sys)[^<>\n]{0,80}>")  # chat-template markers are kept for _find_marker
_DEMARK = {ord(c): None for c in "*`~"}
_MARKUP_HINT = re.compile(r"[*`~<&]")


# ====================================================================================================
# Character classes (one byte per character)
# ====================================================================================================

_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
# token characters -> "t", everything else -> " "
_TOKEN_CLASS = bytes(ord("t") if chr(i) in _TOKEN_CHARS else ord(" ") for i in range(256))
_LONG_TOKEN = b"t" * 15
# digits -> "d", capitals -> "A", number separators (space . ( ) + -) -> "s", everything else -> "x"
_NUMBER_CLASS = bytes(
    ord("d") if 48 <= i <= 57 else ord("A") if 65 <= i <= 90 else ord("s") if chr(i) in " .()+-" else ord("x")
    for i in range(256)
)
# Numeric regions: 8+ digits with at most two separators between digits; every phone, card and numeric id
# below is one. The region starts at a digit with no digit within the three characters before it (so no
# match starts inside a region), and a region that is just a date, maybe with the hour of a time after it
# ("2026-11-30", "30.11.2026 12" of "30.11.2026 12:30"), is skipped: log lines are full of them.
# The literal first byte lets the regex engine skip to each digit at C speed.
_NUMBER_REGION = re.compile(
    rb"d(?<!dd)(?<!dsd)(?<!dssd)"
    rb"(?!(?:ddds(?:dd|d)s(?:dd|d)|(?:d|)s(?:dd|d)sdddd)(?:s{1,2}dd?)?(?!s{0,2}d))"
    rb"(?:s{0,2}+d){7,}+"
)
# UK NI numbers ("QQ 12 34 56 C", "QQ123456C") and Spanish NIEs ("X1234567L") hold only 6–7 digits, between
# capital letters.
_ID_REGION = re.compile(rb"As?+(?:ds?+){6,7}+A")

# ====================================================================================================
# Sensitive content: credentials
# ====================================================================================================

_AWS_ACCESS_KEY = re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])")

_PRIVATE_KEY = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")

# Vendor tokens (case-sensitive prefixes), matched at the start of a long token. OpenAI/Anthropic "sk-…" keys
# must contain a digit so that hyphenated words ("sk-learn-style-estimators") do not trip the rule.
_VENDOR_TOKEN = re.compile(
    r"(?:"
    r"gh[pousr]_[A-Za-z0-9]{30,}"  # GitHub classic tokens
    r"|github_pat_[A-Za-z0-9_]{22,}"  # GitHub fine-grained tokens
    r"|xox[abprs]-[A-Za-z0-9\-]{10,}"  # Slack
    r"|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"  # Stripe secret / restricted keys
    r"|sk-(?=[A-Za-z0-9_\-]*[0-9])[A-Za-z0-9_\-]{20,}"  # OpenAI sk-…, sk-proj-…; Anthropic sk-ant-…
    r"|AIza[0-9A-Za-z_\-]{35}"  # Google API keys
    r"|glpat-[A-Za-z0-9_\-]{20,}"  # GitLab
    r"|hf_[A-Za-z0-9]{30,}"  # Hugging Face
    r"|npm_[A-Za-z0-9]{36}"  # npm
    r")"
)

# "Bearer <token>": 20+ token characters holding at least one digit.
_BEARER = re.compile(r"bearer\s+(?=[A-Za-z0-9._~+/=\-]*[0-9])[A-Za-z0-9._~+/=\-]{20,}", re.IGNORECASE)

_JWT = re.compile(r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*")

# key: value / key=value pairs (any case). The value must be 3+ characters and must not look like a
# placeholder (<…>, {…}, ${…}, ****). "password reset link sent" has no ':' or '=' after the key and passes.
# Password-like keys (password, passwd, passphrase, pwd, secret) are labelled "password"; API-key-like keys
# (api_key, apikey, api_secret, secret_key, client_secret, access/auth/refresh_token, private_key,
# aws_secret_access_key) "api_token". A key may follow "_" or "-" ("db_password=…", "x-api-key: …").
_SECRET_PAIR = re.compile(
    r"(?:"
    r"(?P<api>api[_\-]?key|apikey|api[_\-]?secret|secret[_\-]?key|client[_\-]?secret|access[_\-]?token"
    r"|auth[_\-]?token|refresh[_\-]?token|private[_\-]?key|aws[_\-]secret[_\-]access[_\-]key)"
    r"|(?P<pwd>password|passwd|passphrase|pwd|secret)"
    r")[\"'*]{0,2}[^\S\r\n]*[:=][^\S\r\n]*[\"']?(?P<v>[^\s\"',;<{$*][^\s\"',;]{2}[^\s\"',;]{0,200}+)",
    re.IGNORECASE,
)
# Every key above contains one of these; pairs are tried only around their occurrences.
_SECRET_KEYWORDS = (b"pass", b"pwd", b"secret", b"key", b"token")
_KEY_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_-")
# Quick test on the lower-cased bytes: the word holding the keyword is followed by ':' or '=' ('?' stands for
# any non-ASCII character, e.g. a no-break space; the full pattern decides).
_PAIR_TAIL = re.compile(rb"[a-z0-9_\-]{0,40}+[\"'*]{0,2}[ \t\x0b\x0c?]*[:=]")

# ====================================================================================================
# Sensitive content: personal data
# ====================================================================================================

# local@domain.tld. Possessive runs keep it linear; an scp-style address ("git@github.com:org/repo.git") is
# not a mailbox and is excluded by the look-ahead; the top-level label must be 2+ ASCII letters.
_EMAIL = re.compile(r"(?<![\w.%+\-])[\w.%+\-]++@[A-Za-z0-9\-]++(?:\.[A-Za-z0-9\-]++)++(?![:@\w])")
# An "@" after a local-part character ("?" = any non-ASCII one) and before a dotted domain (raw bytes); the
# literal first byte lets the regex engine skip to each "@" at C speed.
_AT_SIGN = re.compile(rb"@(?<=[A-Za-z0-9_.%+\-?]@)(?=[A-Za-z0-9][A-Za-z0-9\-]*+\.[A-Za-z0-9])")

# Every numeric shape, run over the numeric regions only. A match may not start right after a word character
# or . - + # / (so none starts inside a longer number, a version, a path or an order id "#123456"): the
# pattern opens with the first character and checks the one before it by look-behind. Each branch checks
# which first character it was given, continues the shape, and ends with an empty marker group naming the
# kind (``Match.lastgroup``). Matches are then validated in Python (digit counts, grouping, checksums).
_NUMERIC_PII = re.compile(
    r"[0-9+(A-Z](?<![\w.\-+#/].)(?:"
    # US SSN ddd-dd-dddd; area not 000, 666 or 9xx; group not 00; serial not 0000.
    r"(?<=[0-8])[0-9]{2}(?<!000)(?<!666)-(?!00)[0-9]{2}-(?!0000)[0-9]{4}(?![0-9\-]|\.[0-9])(?P<ssn>)"
    # Brazilian CPF ddd.ddd.ddd-dd (check digits verified).
    r"|(?<=[0-9])[0-9]{2}\.[0-9]{3}\.[0-9]{3}-[0-9]{2}(?![0-9\-]|\.[0-9])(?P<cpf>)"
    # Indian Aadhaar dddd dddd dddd, first digit 2–9 (Verhoeff check digit verified).
    r"|(?<=[2-9])[0-9]{3}(?P<asep>[ \-])[0-9]{4}(?P=asep)[0-9]{4}(?![0-9]|[ \-][0-9])(?P<aadhaar>)"
    # Card: 13–19 digits starting 2–6 (the major networks), contiguous or in the printed groupings
    # 4-4-4-1..4(-3) and 4-6-4/5 (Amex, Diners) with one separator kind (Luhn verified).
    r"|(?<=[2-6])(?:[0-9]{12,18}"
    r"|[0-9]{3}(?P<csep>[ .\-])[0-9]{4}(?P=csep)[0-9]{4}(?P=csep)[0-9]{1,4}(?:(?P=csep)[0-9]{3})?"
    r"|[0-9]{3}(?P<xsep>[ .\-])[0-9]{6}(?P=xsep)[0-9]{4,5})(?![0-9])(?P<card>)"
    # Spanish DNI: 8 digits + check letter; NIE: X/Y/Z + 7 digits + check letter (letter verified).
    r"|(?<=[0-9])[0-9]{7}-?[A-Z](?![A-Za-z0-9])(?P<dni>)"
    r"|(?<=[XYZ])-?[0-9]{7}-?[A-Z](?![A-Za-z0-9])(?P<nie>)"
    # UK National Insurance number "QQ 12 34 56 C"; prefixes BG GB NK KN TN NT ZZ are never issued
    # (Q is accepted first because HMRC's own example is QQ 12 34 56 C).
    r"|(?<=[A-CEGHJ-TW-Z])[A-CEGHJ-NP-TW-Z](?<!BG|GB|NK|KN|TN|NT|ZZ)"
    r" ?[0-9]{2} ?[0-9]{2} ?[0-9]{2} ?[A-D](?![A-Za-z0-9])(?P<nino>)"
    # Phone, international: "+" country code and groups, 8–15 digits (E.164).
    r"|(?<=\+)[0-9](?:[ .\-]?\(?[0-9]++\)?)*+(?P<intl>)"
    # Phone, North American: [1 ]ddd ddd dddd / (ddd) ddd-dddd, a separator between every group.
    r"|(?:(?<=1)[ .\-]?(?:\([0-9]{3}\)[ .\-]?|[0-9]{3}[ .\-])"
    r"|(?<=\()[0-9]{3}\)[ .\-]?|(?<=[0-9])[0-9]{2}[ .\-])"
    r"[0-9]{3}[ .\-][0-9]{4}(?![0-9])(?P<nanp>)"
    # Phone, national with trunk prefix 0: "020 7946 0958", "06 12 34 56 78", "(030) 1234567", "0612345678".
    r"|(?:(?<=\()0[0-9]{1,4}\)[ .\-]?|(?<=0))[0-9]++(?:[ .\-][0-9]++)*+(?P<trunk>)"
    r")"
)
_NON_DIGITS = re.compile(r"[^0-9]")
_GROUP_SEP = re.compile(r"[ .\-]")

# Italian codice fiscale: 6 letters, 2 digits, month letter, 2 digits, letter, 3 digits, check letter.
_IT_CF = re.compile(r"(?<![A-Za-z0-9])[A-Z]{6}[0-9]{2}[A-EHLMPR-T][0-9]{2}[A-Z][0-9]{3}[A-Z](?![A-Za-z0-9])")


def _digits(s: str) -> str:
    return _NON_DIGITS.sub("", s)


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


_VERHOEFF_D = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
    (1, 2, 3, 4, 0, 6, 7, 8, 9, 5),
    (2, 3, 4, 0, 1, 7, 8, 9, 5, 6),
    (3, 4, 0, 1, 2, 8, 9, 5, 6, 7),
    (4, 0, 1, 2, 3, 9, 5, 6, 7, 8),
    (5, 9, 8, 7, 6, 0, 4, 3, 2, 1),
    (6, 5, 9, 8, 7, 1, 0, 4, 3, 2),
    (7, 6, 5, 9, 8, 2, 1, 0, 4, 3),
    (8, 7, 6, 5, 9, 3, 2, 1, 0, 4),
    (9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
)
_VERHOEFF_P = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
    (1, 5, 7, 6, 2, 8, 3, 0, 9, 4),
    (5, 8, 0, 3, 7, 9, 6, 1, 4, 2),
    (8, 9, 1, 6, 0, 4, 3, 5, 2, 7),
    (9, 4, 5, 3, 1, 2, 6, 8, 7, 0),
    (4, 2, 8, 6, 5, 7, 3, 9, 0, 1),
    (2, 7, 9, 3, 8, 0, 6, 4, 1, 5),
    (7, 0, 4, 6, 9, 1, 3, 2, 5, 8),
)


def _verhoeff_ok(digits: str) -> bool:
    c = 0
    for i, ch in enumerate(reversed(digits)):
        c = _VERHOEFF_D[c][_VERHOEFF_P[i % 8][ord(ch) - 48]]
    return c == 0


def _cpf_ok(digits: str) -> bool:
    if len(digits) != 11 or digits == digits[0] * 11:
        return False
    nums = [ord(c) - 48 for c in digits]
    for n in (9, 10):
        check = sum(nums[i] * (n + 1 - i) for i in range(n)) * 10 % 11 % 10
        if check != nums[n]:
            return False
    return True


_ES_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


def _dni_ok(dni: str) -> bool:
    """Spanish DNI "12345678Z" / NIE "X1234567L" (hyphens allowed): the check letter must match."""
    compact = dni.replace("-", "")
    number, letter = compact[:-1], compact[-1]
    if number[0] in "XYZ":
        number = str("XYZ".index(number[0])) + number[1:]
    return len(number) == 8 and _ES_LETTERS[int(number) % 23] == letter


def _followed_by_word(text: str, end: int) -> bool:
    """A letter, digit, '_' or ':' right after a number: part of an identifier or a time, not a phone."""
    return end < len(text) and (text[end].isalnum() or text[end] in "_:")


def _trunk_phone_ok(cand: str) -> bool:
    """A national number with trunk prefix 0: 10–11 digits ("020 7946 0958", "06 12 34 56 78",
    "0612345678"), or "00" + an international number (11–17 digits).

    Rejected: mixed separators (a date followed by a time, "01.02.2026 12:30"), one-digit groups, more than
    six groups.
    """
    digits = _digits(cand)
    n = len(digits)
    if n < 10:
        return False
    body = cand
    if body.startswith("("):  # "(020) 7946 0958": the area code in parentheses, then the groups
        body = body[body.index(")") + 1 :].lstrip(" .-")
    seps = {c for c in body if not c.isdigit()}
    if len(seps) > 1:
        return False
    groups = _GROUP_SEP.split(body) if seps else [body]
    if len(groups) > 6 or any(len(g) < 2 for g in groups):
        return False
    if digits.startswith("00"):  # international call prefix: "0044 20 7946 0958"
        return 11 <= n <= 17
    return n <= 11


def _numeric_kind(m: re.Match[str], text: str) -> str | None:
    """The sensitive label of a _NUMERIC_PII match once validated, else None."""
    kind = m.lastgroup
    value = m.group()
    if kind == "ssn" or kind == "nino":
        return "national_id"
    if kind == "cpf":
        return "national_id" if _cpf_ok(_digits(value)) else None
    if kind == "aadhaar":
        return "national_id" if _verhoeff_ok(_digits(value)) else None
    if kind == "card":
        return "card_number" if _luhn_ok(_digits(value)) else None
    if kind == "dni" or kind == "nie":
        return "national_id" if _dni_ok(value) else None
    if _followed_by_word(text, m.end()):
        return None
    if kind == "intl":
        return "phone_number" if 8 <= len(_digits(value)) <= 15 else None
    if kind == "nanp":
        return "phone_number"
    if kind == "trunk":
        return "phone_number" if _trunk_phone_ok(value) else None
    return None


def _scan_numbers(text: str, raw: bytes, found: set[str]) -> None:
    """Phones, cards and numeric national ids, examined in a window around each numeric region."""
    classes = raw.translate(_NUMBER_CLASS)
    if b"d" not in classes:  # both regions hold digits
        return
    size = len(classes)
    for regions in (_NUMBER_REGION, _ID_REGION):
        for region in regions.finditer(classes):
            # 4 characters of margin: a leading "+" or "(", the letters of "QQ 12 34 56 C" or "X1234567L"
            for m in _NUMERIC_PII.finditer(text, max(0, region.start() - 4), min(size, region.end() + 4)):
                kind = _numeric_kind(m, text)
                if kind is not None:
                    found.add(kind)


def _scan_tokens(text: str, raw: bytes, found: set[str]) -> None:
    """AWS keys, vendor tokens, JWTs and the codice fiscale, examined in each long token."""
    classes = raw.translate(_TOKEN_CLASS)
    lines_scanned: set[int] = set()  # each line goes through the vendor plugins once, however many tokens it holds
    start = classes.find(_LONG_TOKEN)
    while start != -1:
        end = classes.find(b" ", start)
        if end == -1:
            end = len(classes)
        token = text[start:end]
        if ("AKIA" in token or "ASIA" in token) and _AWS_ACCESS_KEY.search(token) is not None:
            found.add("aws_access_key")
        if _VENDOR_TOKEN.match(token) is not None:
            found.add("api_token")
        if token.startswith("eyJ") and _JWT.match(text, start) is not None:
            found.add("jwt")
        if not token.islower() and _IT_CF.search(token) is not None:
            found.add("national_id")
        if "api_token" not in found and not _plain_token(token):
            line_start = text.rfind("\n", 0, start) + 1
            if line_start not in lines_scanned:
                lines_scanned.add(line_start)
                line_end = text.find("\n", end)
                if _vendor_plugins_find(text[line_start : line_end if line_end != -1 else len(text)]):
                    found.add("api_token")
        start = classes.find(_LONG_TOKEN, end)


def _scan_pairs(text: str, low: bytes, found: set[str]) -> None:
    """``key: value`` pairs, tried where the key word around each keyword starts (and after its "_"/"-")."""
    if b":" not in low and b"=" not in low:  # every pair has one after its key (_PAIR_TAIL)
        return
    for keyword in _SECRET_KEYWORDS:
        if keyword not in low:
            continue
        for i in _find_all(low, keyword):
            if _PAIR_TAIL.match(low, i) is None:
                continue
            start = i
            while start > 0 and i - start < 32 and low[start - 1] in _KEY_CHARS:
                start -= 1
            for p in range(start, i + 1):
                if p == start or low[p - 1] in b"_-":
                    m = _SECRET_PAIR.match(text, p)
                    if m is None or _placeholder(m.group("v")) \
                            or _TYPE_OR_ATTRIBUTE.fullmatch(m.group("v").rstrip(",;)")) is not None:
                        continue
                    if p == start and m.group("pwd") and _word_secret(text, p, m.group("pwd"), m.end("v")):
                        continue
                    found.add("api_token" if m.group("api") else "password")
                    break


_PLAIN_WORDS = re.compile(r"[A-Za-z]+(?:[\-_.][A-Za-z]+)*+")


def _word_secret(text: str, start: int, key: str, end: int) -> bool:
    """A bare "secret" or "credentials" (no other word in its key) before a plain word, in prose, is English, not
    a credential: after another word on its line ("Kubernetes secret: db-credentials", "if you entered
    credentials: tell us") or before more words ("secret: santa gift exchange on Friday"). "secret: tiger-lily"
    on a line of its own stays a password."""
    if key.lower() not in _PROSE_KEYS:
        return False
    value_start = text.find(":", start)
    eq = text.find("=", start)
    value_start = min(i for i in (value_start, eq, end) if i != -1) + 1
    value = text[value_start:end].strip().strip("\"'")
    if _PLAIN_WORDS.fullmatch(value) is None:
        return False
    line_start = max(text.rfind("\n", 0, start), -1) + 1
    after = text[end : text.find("\n", end) if "\n" in text[end:] else len(text)]
    return bool(text[line_start:start].strip()) or _WORD_AFTER.match(after) is not None


_WORD_AFTER = re.compile(r"\s+[A-Za-z]+\s+[A-Za-z]")
_PROSE_KEYS = frozenset(("secret", "credential", "credentials"))


def _has_bearer(text: str, low: bytes) -> bool:
    if b"bearer" not in low:
        return False
    for i in _find_all(low, b"bearer"):
        if (i == 0 or not _is_word_char(text[i - 1])) and _BEARER.match(text, i) is not None:
            return True
    return False


def _is_local_char(ch: str) -> bool:
    return ch.isalnum() or ch in "_.%+-"


def _has_email(text: str, raw: bytes) -> bool:
    for at in _AT_SIGN.finditer(raw):
        i = at.start()
        start = i
        while start > 0 and i - start <= 64 and _is_local_char(text[start - 1]):
            start -= 1
        m = _EMAIL.match(text, start)
        if m is not None:
            tld = m.group().rsplit(".", 1)[1]
            if len(tld) >= 2 and tld.isascii() and tld.isalpha():
                return True
    return False


# ----------------------------------------------------------------------------------------------------
# Detectors of well-kept libraries, loaded on the first text that needs them (each import costs tens of
# milliseconds, detect-secrets' some 300): detect-secrets' vendor-token plugins, python-stdnum (IBAN, SSN),
# phonenumbers.
# ----------------------------------------------------------------------------------------------------

# detect-secrets' plugins that recognise one vendor's credential by its shape; the generic ones (keywords,
# entropy, public IPs) and those screening has rules of its own for (AWS, private keys, JWT, basic auth) left out
_VENDOR_PLUGINS = (
    "ArtifactoryDetector", "AzureStorageKeyDetector", "CloudantDetector", "DiscordBotTokenDetector",
    "GitHubTokenDetector", "GitLabTokenDetector", "IbmCloudIamDetector", "IbmCosHmacDetector", "MailchimpDetector",
    "NpmDetector", "OpenAIDetector", "PypiTokenDetector", "SendGridDetector", "SlackDetector", "SoftlayerDetector",
    "SquareOAuthDetector", "StripeDetector", "TelegramBotTokenDetector", "TwilioKeyDetector",
)


@cache
def _vendor_plugins() -> tuple[Any, ...]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    classes: Iterable[Any] = get_mapping_from_secret_type_to_class().values()
    return tuple(cls() for cls in classes if cls.__name__ in _VENDOR_PLUGINS)


def _vendor_plugins_find(line: str) -> bool:
    return any(next(iter(plugin.analyze_string(line)), None) is not None for plugin in _vendor_plugins())


_HEX_OR_DIGITS = re.compile(r"[0-9a-fA-F]++")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _plain_token(token: str) -> bool:
    """A long token no vendor issues: hex (a hash, a commit), a UUID, or lower-case words joined by - or _."""
    return (
        _HEX_OR_DIGITS.fullmatch(token) is not None
        or _UUID.fullmatch(token) is not None
        or (token.replace("-", "").replace("_", "").isalpha() and (token.islower() or token.isupper()))
    )


def _entropy(value: str) -> float:
    """Shannon entropy in bits a character (as detect-secrets' high-entropy plugins compute it)."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


@cache
def _stdnum() -> tuple[Callable[[str], bool], Callable[[str], bool]]:
    from stdnum import iban
    from stdnum.us import ssn

    return iban.is_valid, ssn.is_valid


@cache
def _phone_possible() -> Callable[[str], bool]:
    import phonenumbers

    def possible(number: str) -> bool:
        try:
            parsed = phonenumbers.parse(number, None if number.startswith("+") else "US")
        except phonenumbers.NumberParseException:
            return False
        return bool(phonenumbers.is_possible_number(parsed))

    return possible


# ----------------------------------------------------------------------------------------------------
# Credentials in a URL, generic key = value pairs, spaced AWS keys
# ----------------------------------------------------------------------------------------------------

# scheme://user:password@host
_URL_CREDENTIALS = re.compile(r"://([^\s:/?#@\[\]]{0,64}):([^\s/?#@\[\]]{1,128})@(?=[A-Za-z0-9\[])")
_PLACEHOLDERS = frozenset(("password", "pass", "passwd", "pwd", "secret", "xxx", "xxxx", "changeme", "token"))


_CODE_VALUE = re.compile(r"[A-Za-z_][\w.]*\(")  # a call: getpass.getpass(), input(), os.getenv(


def _placeholder(value: str) -> bool:
    """A value that stands for a secret without being one: <…>, {…}, ${…}, ***, %s, an environment
    variable's name or a reference to one (DB_PASSWORD, process.env.X, os.environ[…])."""
    v = value.strip("\"'`").rstrip(")]},;:")
    low = v.lower()
    return (
        not v
        or set(v) <= {".", "\u2026"}  # "password: …"
        or v[0] in "<{$*%[!&|"
        or _CODE_VALUE.match(v) is not None
        or low in _PLACEHOLDERS
        or set(v) <= {"x", "X", "*", "."}
        or low.startswith(("process.env", "os.environ", "os.getenv", "getenv(", "env.", "env[", "secrets.",
                           "config.", "settings.", "vault:", "ssm:", "arn:"))
        or ("_" in v and v.replace("_", "").isalnum() and v.isupper())
    )


def _has_url_credentials(text: str) -> bool:
    return any(not _placeholder(m.group(2)) for m in _URL_CREDENTIALS.finditer(text))


# any key that names a secret (a component of it: "secret_access_key", "DB_PASS", "x-auth-token"), then a
# value; a key that may name something else ("token", "key", "session") only with a value that looks random
_KEY_VALUE = re.compile(
    r"([A-Za-z0-9_.\-]{0,48}?(?:pass|pwd|secret|credential|token|key|auth|session|cookie|signature|salt|contrasena"
    r"|senha|kennwort|wachtwoord|losenord|haslo|parola)"
    r"[A-Za-z0-9_.\-]{0,24}?)[\"'*]{0,2}[^\S\r\n]*[:=][^\S\r\n]*[\"']?([^\s\"',;]{3,200})",
    re.IGNORECASE,
)
_STRONG_KEY = re.compile(r"pass(?!age|enger|port|ive|ing|ed|es\b)|pwd|secret(?!ar)|credential|contrasena|senha|kennwort"
                         r"|wachtwoord|losenord|haslo|parola", re.IGNORECASE)
_API_KEY = re.compile(r"key|token|auth|client", re.IGNORECASE)


def _random_looking(value: str) -> bool:
    """A value that looks generated: hex of 12+ characters with the entropy of one, or 16+ characters mixing
    letters and digits with high entropy."""
    v = value.strip("\"'.")
    if len(v) >= 12 and _HEX_OR_DIGITS.fullmatch(v) is not None and not v.isdigit():
        return _entropy(v) > 3.0
    return (len(v) >= 16 and any(c.isdigit() for c in v) and any(c.isalpha() for c in v)
            and _entropy(v) > 3.5)


def _scan_key_values(text: str, low: bytes, found: set[str]) -> None:
    if b":" not in low and b"=" not in low:
        return
    done = 0  # where the last pair examined ended: a keyword inside it is not looked at again
    for k in _KEY_WORD.finditer(low):
        i = k.start()
        if i < done or _PAIR_TAIL.match(low, i) is None:
            continue
        start = i
        while start > 0 and i - start < 48 and low[start - 1] in _KEY_CHARS:
            start -= 1
        m = _KEY_VALUE.match(text, start)
        if m is None:
            continue
        done = m.end()
        key, value = m.group(1), m.group(2)
        # the keyword ends its word: "secret_access_key", "secretKey", "passwords", not "secretsmanager" or
        # "passes_in_process"
        word = k.group().decode()
        suffix_ok = k.end() == m.end(1) if word in _AMBIGUOUS_KEYS else _KEY_SUFFIX.fullmatch(text, k.end(), m.end(1))
        if not suffix_ok or _placeholder(value):
            continue
        if _word_secret(text, m.start(1), key, m.end(2)) or _names_an_attribute(text, k.end(), m.end(1)) \
                or _CODE_REFERENCE.fullmatch(value.rstrip(",;)")) is not None or value.lower() == key.lower():
            continue
        if word in _STRONG_WORDS and (key.lower() not in _AMBIGUOUS_KEYS or _password_like(value)):
            found.add("api_token" if _API_KEY.search(key) is not None else "password")
            return
        if _random_looking(value):
            found.add("api_token")
            return


_KEY_WORD = re.compile(_trie(w.encode() for w in (
    "password", "passwort", "passwd", "passphrase", "passcode", "passe", "pass", "pwd", "secret", "credential", "token",
    "key", "auth", "session", "cookie", "signature", "salt", "contrasena", "senha", "kennwort", "wachtwoord",
    "losenord", "haslo", "parola",
)))
_STRONG_WORDS = frozenset((
    "password", "passwort", "passwd", "passphrase", "passcode", "passe", "pass", "pwd", "secret", "credential",
    "contrasena", "senha",
    "kennwort", "wachtwoord", "losenord", "haslo", "parola",
))
_KEY_SUFFIX = re.compile(r"s?(?:[_.\-][A-Za-z0-9_.\-]*|[A-Z][A-Za-z0-9_.\-]*)?")
# words that are keys of a password but ordinary words too ("a summary pass: …", "boarding pass: gate 5"): whole
# words only, and a password-like value when the key is the word alone
_AMBIGUOUS_KEYS = frozenset(("pass", "passe", "parola"))


# what follows a secret's word in a key that names something about the secret, not the secret:
# "secret_hash", "SECRET_FILE", "SecretId", "password_field", "token_count"
_ATTRIBUTE_WORDS = frozenset((
    "hash", "hashed", "file", "path", "name", "arn", "id", "ref", "field", "prefix", "suffix", "length", "len", "min",
    "max", "policy", "manager", "store", "dir", "env", "var", "type", "kind", "version", "rotation", "header",
    "param", "label", "url", "uri", "location", "provider", "backend", "count", "budget", "limit", "size", "ttl",
    "expiry", "expires", "lifetime", "format", "reset", "hint", "strength", "rules", "scope", "scopes",
))
_FIRST_WORD = re.compile(r"s?[_.\-]?([A-Z]+(?![a-z])|[A-Za-z][a-z]*)")
# code, not a value: a type ("str", "Any", "Optional[str]"), a name or an attribute ("secret_arn", "row.secret")
_TYPE_OR_ATTRIBUTE = re.compile(
    r"(?:str|int|bytes|bool|float|None|Any|dict|list|tuple|Optional\[.*|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"
    r"|[A-Za-z_]\w*\[[^\]]*\]?)\|?"
)
_CODE_REFERENCE = re.compile(_TYPE_OR_ATTRIBUTE.pattern + r"|[a-z_][a-z0-9]*(?:_[a-z0-9]+)+")


def _names_an_attribute(text: str, end: int, key_end: int) -> bool:
    m = _FIRST_WORD.match(text, end, key_end)
    return m is not None and m.group(1).lower() in _ATTRIBUTE_WORDS


def _password_like(value: str) -> bool:
    """Letters and digits together, or letters and a sign: what a password looks like, unlike a word."""
    v = value.strip("\"'`").rstrip(".,;:!?)]}")
    letters = any(c.isalpha() for c in v)
    return len(v) >= 6 and letters and (any(c.isdigit() for c in v) or any(c in _PASSWORD_SIGNS for c in v))


_PASSWORD_SIGNS = frozenset("!@#$%^&*+=?~")


_AWS_SPACED = re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)(?P<sep>[ .\-]?)(?:[A-Z0-9]{4}(?P=sep)){3}[A-Z0-9]{4}"
                         r"(?![A-Za-z0-9])")


# ----------------------------------------------------------------------------------------------------
# Phone numbers and SSNs said to be one; IBANs
# ----------------------------------------------------------------------------------------------------

_PHONE_LABELLED = re.compile(
    r"(?:tele?phone|phone|tel|mobile|cell(?:phone)?|whatsapp|fax|sms|call(?:\s+me)?|text\s+me|ring\s+me|reach\s+me"
    r"|contact\s+me|my\s+(?:phone\s+|cell\s+|mobile\s+)?number|dial)"
    r"(?:\s*(?:number|no\.?|nr\.?|#))?(?:\s+(?:is|at|on))?\s*[:=\-]?\s*"
    r"(\+?\(?[0-9][0-9 .\-()]{5,22}[0-9])(?![0-9])",
    re.IGNORECASE,
)
_PHONE_WORD = re.compile(_trie((b"phone", b"tel", b"mobile", b"cell", b"whatsapp", b"fax", b"sms", b"call", b"text me",
                                b"ring me", b"reach me", b"contact me", b"my ", b"dial")))
_DATE_LIKE = re.compile(r"[0-9]{4}[\-./][0-9]{1,2}[\-./][0-9]{1,2}|[0-9]{1,2}[\-./][0-9]{1,2}[\-./][0-9]{2,4}")

_SSN_LABELLED = re.compile(
    r"(?:ssn|social\s+security(?:\s+(?:number|no\.?|#))?)(?:\s+is)?\s*[:#=\-]?\s*"
    r"([0-9]{3}[ \-.]?[0-9]{2}[ \-.]?[0-9]{4})(?![0-9])",
    re.IGNORECASE,
)
_IBAN_CLASS = bytes(
    ord("A") if 65 <= i <= 90 or 97 <= i <= 122 else ord("d") if 48 <= i <= 57 else ord(" ") for i in range(256)
)
_IBAN = re.compile(r"[A-Za-z]{2}[0-9]{2}(?:[ \-]?[A-Za-z0-9]){10,32}")


def _word_start(low: bytes, i: int) -> bool:
    return i == 0 or not (chr(low[i - 1]).isalnum())


def _has_labelled_phone(text: str, low: bytes) -> bool:
    done = 0
    for w in _PHONE_WORD.finditer(low):
        i = w.start()
        if i < done or not _word_start(low, i):
            continue
        m = _PHONE_LABELLED.match(text, i)
        if m is not None:
            done = m.end()
            number = m.group(1)
            digits = _digits(number)
            if 7 <= len(digits) <= 15 and _DATE_LIKE.search(number) is None and _phone_possible()(number):
                return True
    return False


def _has_labelled_ssn(text: str, low: bytes) -> bool:
    for word in (b"ssn", b"social security"):
        for i in _find_all(low, word) if word in low else ():
            m = _SSN_LABELLED.match(text, i) if _word_start(low, i) else None
            if m is not None and _stdnum()[1](_digits(m.group(1))):
                return True
    return False


def _has_iban(text: str, raw: bytes) -> bool:
    classes = raw.translate(_IBAN_CLASS)
    done = 0
    for i in _find_all(classes, b"AAdd"):
        if i < done or (i > 0 and chr(raw[i - 1]).isalnum()):
            continue
        m = _IBAN.match(text, i)
        if m is None:
            continue
        done = m.end()
        compact = _IBAN_SEPARATORS.sub("", m.group()).upper()
        size = _iban_length(compact[:2])
        # the country fixes the length: what follows a spaced IBAN ("… 0130 00 EUR1") is not part of it
        if size is not None and len(compact) >= size and _stdnum()[0](compact[:size]):
            return True
    return False


_DIGIT_BYTES = re.compile(rb"[0-9]")
_IBAN_SEPARATORS = re.compile(r"[ \-]")


@cache
def _iban_length(country: str) -> int | None:
    """The length of an IBAN of ``country`` (from python-stdnum's registry of BBAN formats), None where
    there are none."""
    from stdnum import numdb

    info = numdb.get("iban").info(country)
    bban = info[0][1].get("bban") if info and info[0][0] == country else None
    if not bban:
        return None
    return 4 + sum(int(n) for n in re.findall(r"([0-9]+)!?[a-z]", bban))


# "Authorization: Basic dXNlcjpw…" — the scheme and its credentials
_AUTH_HEADER = re.compile(
    r"authorization[\"']?\s*[:=]\s*[\"']?(?:basic|digest|token|apikey|api-key|sso-key|negotiate|ntlm)\s+"
    r"[A-Za-z0-9+/=._~\-]{8,}",
    re.IGNORECASE,
)
# an address spelled out against scrapers: "ana [at] example [dot] com", "ana(at)example.com",
# "ana at example dot com" (a bare " at " only with a spelled-out dot, or "met at example.com" would be one)
_AT = r"(?:\s*[\[({<]\s*at\s*[\])}>]\s*|\s+at\s+)"
_DOT = r"(?:\s*[\[({<]\s*dot\s*[\])}>]\s*|\s+dot\s+|\.)"
_EMAIL_SPELLED = re.compile(
    r"(?<![\w.+\-])[\w.+\-]{1,64}(?P<at>" + _AT + r")[A-Za-z0-9\-]{1,63}(?:" + _DOT + r"[A-Za-z0-9\-]{1,63})*?"
    r"(?P<dot>" + _DOT + r")[A-Za-z]{2,24}(?![\w@])",
    re.IGNORECASE,
)
# an id document's number said to be one: "passport number: X1234567", "driver's licence no. D123-4567-8901"
_ID_LABELLED = re.compile(
    r"(?:passport|driver'?s?\s+licen[cs]e|driving\s+licen[cs]e|national\s+(?:id|identity|insurance)"
    r"|tax\s+(?:id|number)|nhs\s+number|personal\s+id|id\s+card|identity\s+card)"
    r"(?:\s+(?:number|no\.?|nr\.?|#))?(?:\s+is)?\s*[:#=\-]?\s*([A-Za-z0-9][A-Za-z0-9 \-]{4,18}[A-Za-z0-9])",
    re.IGNORECASE,
)
_ID_WORD = re.compile(_trie((b"passport", b"licen", b"national", b"tax ", b"nhs", b"personal id", b"id card",
                             b"identity card")))


def _has_spelled_email(text: str, low: bytes) -> bool:
    if b"at" not in low:
        return False
    if b"dot" not in low and not any(b in low for b in (b"at)", b"at]", b"at}", b"at>")):
        return False
    for m in _EMAIL_SPELLED.finditer(text):
        spelled_at = m.group("at").strip().lower() != "at"
        spelled_dot = m.group("dot").strip() != "."
        if spelled_at or spelled_dot:
            return True
    return False


def _has_labelled_id(text: str, low: bytes) -> bool:
    for w in _ID_WORD.finditer(low):
        m = _ID_LABELLED.match(text, w.start()) if _word_start(low, w.start()) else None
        if m is not None and sum(c.isdigit() for c in m.group(1)) >= 5:
            return True
    return False


# A secret said in words: "the wifi password is Tr0ub4dor&3", "my pin is 4821". The value must look like one
# (a digit or a symbol in it, or a capital past its first letter): "the password is stored safely" is none.
_STATED = re.compile(
    r"(?:pass(?:word|phrase|code|wd)|pwd|pin(?:\s+(?:code|number))?|secret\s+key|api[\s_-]?key|access[\s_-]?key"
    r"|(?:auth|access|api|bearer|session)[\s_-]?token)"
    r"(?:\s+(?:for|of|to|on)\s+(?:[\w.@/-]+\s+){0,3}?[\w.@/-]+)?"
    r"\s+(?:is|was|are)\s+(?:now\s+|still\s+)?[\"'`]?(?![{<*])(?P<v>[^\s\"'`,;]{4,})",
    re.IGNORECASE,
)
_STATED_WORD = re.compile(_trie((b"pass", b"pwd", b"pin", b"secret key", b"api", b"access", b"auth", b"bearer",
                                 b"session")))


def _has_stated_secret(text: str, low: bytes) -> bool:
    if b" is " not in low and b" was " not in low and b" are " not in low:
        return False
    for w in _STATED_WORD.finditer(low):
        if not _word_start(low, w.start()):
            continue
        m = _STATED.match(text, w.start())
        if m is None:
            continue
        value = m.group("v").rstrip(".!?)")
        if len(value) >= 4 and (any(c.isdigit() for c in value) or not value.isalnum()
                                or any(c.isupper() for c in value[1:])) and not _placeholder(value):
            return True
    return False


def _find_sensitive(text: str, raw: bytes, low: bytes) -> set[str]:
    found: set[str] = set()
    digits = _DIGIT_BYTES.search(raw) is not None
    _scan_tokens(text, raw, found)
    if b"://" in low and _has_url_credentials(text):
        found.add("password")
    _scan_key_values(text, low, found)
    if (b"akia" in low or b"asia" in low) and _AWS_SPACED.search(text) is not None:
        found.add("aws_access_key")
    if b"authorization" in low and _AUTH_HEADER.search(text) is not None:
        found.add("api_token")
    if _has_spelled_email(text, low):
        found.add("email")
    if _has_stated_secret(text, low):
        found.add("password")
    if digits:
        if _has_labelled_id(text, low):
            found.add("national_id")
        if _has_labelled_phone(text, low):
            found.add("phone_number")
        if _has_labelled_ssn(text, low):
            found.add("national_id")
        if _has_iban(text, raw):
            found.add("bank_account")
    if _has_bearer(text, low):
        found.add("api_token")
    if raw.find(b"PRIVATE KEY") != -1 and _PRIVATE_KEY.search(text) is not None:
        found.add("private_key")
    _scan_pairs(text, low, found)
    if _has_email(text, raw):
        found.add("email")
    if digits:
        _scan_numbers(text, raw, found)
    return found


_SENSITIVE_WORDS = {
    "aws_access_key": "an AWS access key",
    "private_key": "a private key",
    "api_token": "an API token",
    "password": "a password",
    "jwt": "a JWT",
    "email": "an email address",
    "phone_number": "a phone number",
    "card_number": "a payment card number",
    "national_id": "a national id number",
    "bank_account": "a bank account number (IBAN)",
}

# ====================================================================================================
# Public API
# ====================================================================================================


@dataclass(frozen=True)
class ScreeningResult:
    """What screening found. ``injection``: label of the first injection rule matched (None if clean);
    ``sensitive``: sorted unique labels of the sensitive kinds found."""

    injection: str | None
    sensitive: tuple[str, ...]

    @property
    def is_sensitive(self) -> bool:
        return bool(self.sensitive)


def screen(*texts: str | None) -> ScreeningResult:
    """Screen all given texts (``None`` ignored), e.g. ``screen(name, description, content)``.

    Each text is screened on its own, so two fields cannot combine into a match. The injection label is the
    first found, texts taken in order and rules in a fixed order (invisible characters, ``system:`` line,
    ignore/disregard instructions, "you are now …", "new system prompt").
    """
    injection: str | None = None
    sensitive: set[str] = set()
    for text in texts:
        if not text:
            continue
        plain = is_plain_ascii(text)
        if injection is None and not plain:
            injection = invisible_label(text)
            if injection is None and _OTHER_SCRIPTS.search(text) is not None:
                injection = "ignore_previous_instructions"
        for view in [text] if plain and _MARKUP_HINT.search(text) is None else _views(text):
            raw = view.encode("ascii", "replace")  # one byte per character: positions match the view's
            low = raw.lower()
            if injection is None:
                injection = _find_injection(view, low)
            if injection is None and _find_marker(low):
                injection = "chat_template_marker"
            if injection is None:
                injection = _find_squeezed(_squeeze(low))
            if injection is None:
                injection = _find_respelled(view, low)
            sensitive |= _find_sensitive(view, raw, low)
            if _letter_spaced(low):  # "p a s s w o r d :  h u n t e r 2"
                joined = _despace(view)
                joined_raw = joined.encode("ascii", "replace")
                sensitive |= _find_sensitive(joined, joined_raw, joined_raw.lower())
    return ScreeningResult(injection=injection, sensitive=tuple(sorted(sensitive)))


# Letter-spaced words ("Y o u  a r e  n o w"): four or more single characters, each after one space.
# one byte a character: white space → " ", anything else → "x" (then C-speed finds, no regex sweep)
_SPACE_CLASS = bytes(ord(" ") if chr(i).isspace() else ord("x") for i in range(256))
_LEET_CLASS = bytes(ord("a") if 97 <= i <= 122 else ord("1") if chr(i) in "013457" else ord(" ") for i in range(256))


def _letter_spaced(low: bytes) -> bool:
    """Four single characters in a row, each after one space ("y o u  a r e")."""
    return b" x x x x " in b" " + low.translate(_SPACE_CLASS) + b" "


def _leet_spelled(low: bytes) -> bool:
    """A digit that can stand for a letter, between two letters ("n0w", "5y5t3m")."""
    return b"a1a" in low.translate(_LEET_CLASS)

_SPACED_RUN = re.compile(r"(?<!\S)\S(?: \S){2,}(?!\S)")
# A digit standing for a letter inside a word ("n0w", "5y5t3m"); such a digit is read as that letter.
_LEET_WORD = re.compile(r"[A-Za-z013457]*[A-Za-z][A-Za-z013457]*")
_LEET_TABLE = {ord(k): v for k, v in {"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t"}.items()}


def _find_respelled(view: str, low: bytes) -> str | None:
    """The word-level injection rules and the markers, read again with letter-spaced words joined and digits
    inside words read as letters — only when the text holds such words."""
    for hint, respell in ((_letter_spaced, _despace), (_leet_spelled, _deleet)):
        if not hint(low):
            continue
        text = respell(view)
        text_low = text.encode("ascii", "replace").lower()
        found = _find_injection(text, text_low) or ("chat_template_marker" if _find_marker(text_low) else None)
        if found is not None:
            return found
    return None


def _despace(text: str) -> str:
    return _SPACED_RUN.sub(lambda m: m.group().replace(" ", ""), text)


def _deleet(text: str) -> str:
    return _LEET_WORD.sub(lambda m: m.group().translate(_LEET_TABLE), text)


# "Ignore (all) previous instructions" in Russian, Ukrainian, Chinese, Japanese and Korean, read on the text
# itself (folding would turn Cyrillic letters into Latin look-alikes)
_OTHER_SCRIPTS = re.compile(
    r"(?:проигнорируй|игнорируй|забудь|не\s+обращай\s+внимания\s+на|ігноруй|забудь)(?:те)?\s+"
    r"(?:(?:все|всі|свои|свої)\s+)?(?:(?:предыдущие|прежние|прошлые|вышеуказанные|попередні|усі)\s+)?"
    r"(?:инструкции|указания|правила|команды|інструкції|вказівки|правила)"
    r"|(?:忽略|无视|忘记|忽視|無視|忘記)(?:掉)?(?:你)?(?:之前|以前|先前|上述|上面|以上|前面|所有|全部|一切)(?:的)?(?:所有|全部)?(?:的)?"
    r"(?:指令|指示|说明|說明|规则|規則|提示)"
    r"|(?:以前|前|上記|これまで)の(?:すべての|全ての)?(?:指示|命令|ルール|指令)(?:を)?(?:すべて|全て|全部)?(?:を)?無視"
    r"|(?:이전|위의|앞의|모든)\s*(?:의\s*)?(?:모든\s*)?(?:지시|지침|명령|규칙)(?:을|를|사항을|들을)?\s*(?:모두\s*)?무시",
    re.IGNORECASE,
)


def _views(text: str) -> list[str]:
    """What the rules read: the text as it looks (``screening_unicode.fold``), and, when it holds markup, that
    text as rendered (``_demark``)."""
    folded = fold(text)
    if _MARKUP_HINT.search(folded) is not None:
        plain = _demark(folded)
        if plain != folded:
            return [folded, plain]
    return [folded]


@dataclass(frozen=True)
class WriteDecision:
    """Where a screened write lands. ``user_id``: the layer (None = account layer); ``forced``:
    ``"sensitive_content"`` when a write asking for the account layer was forced into the user's layer."""

    user_id: str | None
    forced: str | None


def decide_write(
    result: ScreeningResult, *, target_user: str | None, user_at_hand: str | None
) -> WriteDecision:
    """The screening decision shared by every write path (SPEC §2.5).

    * injection found → ``RejectedInjectionError`` (422 ``rejected_injection``, detail ``pattern``);
    * sensitive, written to a user's layer → allowed there;
    * sensitive, asked for the account layer, a user at hand → forced into that user's layer;
    * sensitive, no user at all → ``SensitiveWithoutUserError`` (422 ``sensitive_without_user``, ``kinds``);
    * otherwise → allowed where it asked to go.
    """
    if result.injection is not None:
        what = _INJECTION_WORDS.get(result.injection, "text that tries to steer the model")
        raise RejectedInjectionError(
            f"Rejected: the text contains {what}, which looks like an attempt to steer the model "
            "(prompt injection). Remove it and save again.",
            pattern=result.injection,
        )
    if not result.is_sensitive or target_user is not None:
        return WriteDecision(user_id=target_user, forced=None)
    if user_at_hand is not None:
        return WriteDecision(user_id=user_at_hand, forced=_FORCED_SENSITIVE)
    kinds = list(result.sensitive)
    words = ", ".join(_SENSITIVE_WORDS.get(k, k.replace("_", " ")) for k in kinds)
    raise SensitiveWithoutUserError(
        f"Rejected: the content looks like a credential or personal data ({words}); such content may only "
        "be saved in a user's layer. Save it for a user, or remove it.",
        kinds=kinds,
    )
