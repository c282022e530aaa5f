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

import re
from collections.abc import Iterator
from dataclasses import dataclass

from agentmem.domain.errors import RejectedInjectionError, SensitiveWithoutUserError

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

# Invisible characters: zero-width (U+200B–U+200D, U+2060, U+FEFF) and bidi overrides/isolates
# (U+202A–U+202E, U+2066–U+2069). Only looked for in non-ASCII text.
_ZERO_WIDTH_CHARS = "\u200b\u200c\u200d\u2060\ufeff"
_BIDI_CHARS = "".join(chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A)))

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

# Plain-word descriptions used in messages (never the matched text).
_INJECTION_WORDS = {
    "zero_width_character": "an invisible zero-width character",
    "bidi_override": "an invisible bidirectional-override character",
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
    """``text[i:i+6]`` is "system" (any case): is it the first thing on its line, followed by ':'?"""
    j = i
    while j > 0 and text[j - 1] in _HSPACE:
        j -= 1
    if j > 0 and text[j - 1] not in _LINE_BREAKS:
        return False
    return _COLON_AFTER_SYSTEM.match(text, i + 6) is not None


def _find_injection(text: str, low: bytes) -> str | None:
    """Label of the first injection rule that matches; rules are checked in a fixed order."""
    if not text.isascii():
        if any(c in text for c in _ZERO_WIDTH_CHARS):
            return "zero_width_character"
        if any(c in text for c in _BIDI_CHARS):
            return "bidi_override"
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
        if _SYSTEM_PROMPT_AFTER.match(text, i + 6) is not None and _word_before(text, i, "new") >= 0:
            return "new_system_prompt"
    return None


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
    r")[\"'*]{0,2}[^\S\r\n]*[:=][^\S\r\n]*[\"']?[^\s\"',;<{$*][^\s\"',;]{2}",
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
    r"|[0-9]{3}(?P<csep>[ \-])[0-9]{4}(?P=csep)[0-9]{4}(?P=csep)[0-9]{1,4}(?:(?P=csep)[0-9]{3})?"
    r"|[0-9]{3}(?P<xsep>[ \-])[0-9]{6}(?P=xsep)[0-9]{4,5})(?![0-9])(?P<card>)"
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
                    if m is not None:
                        found.add("api_token" if m.group("api") else "password")
                        break


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


def _find_sensitive(text: str, raw: bytes, low: bytes) -> set[str]:
    found: set[str] = set()
    _scan_tokens(text, raw, found)
    if _has_bearer(text, low):
        found.add("api_token")
    if raw.find(b"PRIVATE KEY") != -1 and _PRIVATE_KEY.search(text) is not None:
        found.add("private_key")
    _scan_pairs(text, low, found)
    if _has_email(text, raw):
        found.add("email")
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
        raw = text.encode("ascii", "replace")  # one byte per character: positions match the text's
        low = raw.lower()
        if injection is None:
            injection = _find_injection(text, low)
        sensitive |= _find_sensitive(text, raw, low)
    return ScreeningResult(injection=injection, sensitive=tuple(sorted(sensitive)))


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
