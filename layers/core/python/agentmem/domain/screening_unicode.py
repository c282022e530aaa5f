"""What screening reads instead of the raw text: invisible characters found, and the text folded to what it
looks like (SPEC §2.5). Pure: no I/O; Unicode's confusables data is read once, on the first text that needs it.

Two rules over character classes (not lists of known tricks):

* **Invisible characters** are Unicode's Default_Ignorable_Code_Point characters, every format character
  (general category Cf) and every control character (Cc) but tab, line feed, carriage return, vertical tab
  and form feed. A model reads them, a person does not see them: text that holds one is refused
  (``invisible_label``), except where it is ordinary typography — a soft hyphen, a left-to-right or
  right-to-left mark, one variation selector after a visible character (❤️), a zero-width joiner between two
  emoji (👨‍👩‍👧), the tag characters of a flag's tag sequence (🏴 + letters + cancel tag), and the visible
  format characters that prepend to numbers in Arabic, Syriac and Kaithi scripts.
* **Folding** (``fold``) gives the text as it looks, for the detectors to read: invisible characters removed,
  compatibility forms replaced (NFKC/NFKD: full-width ``＠``, mathematical bold letters, ligatures,
  superscripts …), combining marks dropped (``ï`` → ``i``), every decimal digit of any script made ASCII, and
  every remaining character that Unicode's confusables data (``confusable_homoglyphs``' copy of
  confusables.txt) says looks like an ASCII letter, digit or sign replaced by it (Cyrillic ``і`` → ``i``).

ASCII text without control characters is its own fold, at the cost of one C-speed test.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import cache
from importlib import resources

__all__ = ["fold", "invisible_label", "is_plain_ascii", "strip_invisible"]

# Default_Ignorable_Code_Point (DerivedCoreProperties.txt), the format characters (Cf) that are not in it, and
# the control characters (Cc) but \t \n \v \f \r.
_DEFAULT_IGNORABLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_OTHER_FORMAT = "\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
_CONTROL = "\x00-\x08\x0e-\x1f\x7f-\x9f"
_INVISIBLE = re.compile(f"[{_DEFAULT_IGNORABLE}{_OTHER_FORMAT}{_CONTROL}]")
_INVISIBLE_RUN = re.compile(f"[{_DEFAULT_IGNORABLE}{_OTHER_FORMAT}{_CONTROL}]+")
_CONTROL_BYTES = re.compile(f"[{_CONTROL}]".encode("latin-1"))

# visible format characters: they print (the Arabic number sign, the Syriac abbreviation mark …)
_VISIBLE_FORMAT = frozenset("\u0600\u0601\u0602\u0603\u0604\u0605\u06dd\u070f\u0890\u0891\u08e2\U000110bd\U000110cd")
_TYPOGRAPHIC = frozenset("\u00ad\u200e\u200f\u061c")  # soft hyphen; left-to-right, right-to-left, Arabic letter marks
_ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff")  # named by SPEC §2.5
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_ZWJ = "\u200d"
_BLACK_FLAG = "\U0001f3f4"
_CANCEL_TAG = "\U000e007f"
_FLAG_TAGS = re.compile("[\U000e0030-\U000e0039\U000e0061-\U000e007a]{2,6}\U000e007f")


def _variation_selector(ch: str) -> bool:
    o = ord(ch)
    return 0xFE00 <= o <= 0xFE0F or 0xE0100 <= o <= 0xE01EF or 0x180B <= o <= 0x180D or o == 0x180F


def _pictograph(ch: str) -> bool:
    """An emoji, or what modifies one (a skin tone, a variation selector)."""
    return unicodedata.category(ch) in ("So", "Sk") or ch == "\ufe0f"


def _allowed(text: str, i: int, typography: bool = True) -> int:
    """If the invisible character at ``i`` is ordinary typography (or, with ``typography=False``, part of an
    emoji): the index just past what it allows; else -1."""
    ch = text[i]
    if ch in _VISIBLE_FORMAT or (typography and ch in _TYPOGRAPHIC):
        return i + 1
    before = text[i - 1] if i > 0 else ""
    if _variation_selector(ch):
        # one selector after a visible character; two in a row can carry hidden bytes
        if before and _INVISIBLE.match(before) is None:
            return i + 1
        return -1
    if ch == _ZWJ:
        after = text[i + 1] if i + 1 < len(text) else ""
        return i + 1 if before and after and _pictograph(before) and unicodedata.category(after) == "So" else -1
    if before == _BLACK_FLAG:
        m = _FLAG_TAGS.match(text, i)
        if m is not None:
            return m.end()
    return -1


def is_plain_ascii(text: str) -> bool:
    """ASCII without control characters (but tab and line breaks): its own fold, with nothing invisible."""
    return text.isascii() and _CONTROL_BYTES.search(text.encode("ascii")) is None


def invisible_label(text: str, *, typography: bool = True) -> str | None:
    """The injection label of the first invisible character that is not ordinary typography, else None.

    ``zero_width_character`` and ``bidi_override`` for the characters SPEC §2.5 names, ``tag_characters`` for
    Unicode tags (invisible ASCII), ``control_character`` for NUL and the other controls, else
    ``invisible_character``. With ``typography=False`` (a file name) the soft hyphen and the bidi marks are
    refused too: only what is part of an emoji passes.
    """
    if is_plain_ascii(text):
        return None
    m = _INVISIBLE.search(text)
    while m is not None:
        i = m.start()
        end = _allowed(text, i, typography)
        if end < 0:
            ch = text[i]
            if ch in _ZERO_WIDTH:
                return "zero_width_character"
            if ch in _BIDI:
                return "bidi_override"
            if 0xE0000 <= ord(ch) <= 0xE007F:
                return "tag_characters"
            if unicodedata.category(ch) == "Cc":
                return "control_character"
            return "invisible_character"
        m = _INVISIBLE.search(text, end)
    return None


def strip_invisible(text: str) -> str:
    """``text`` without invisible characters that are not ordinary typography (what a checkpoint keeps)."""
    if invisible_label(text) is None:
        return text
    out: list[str] = []
    pos = 0
    for m in _INVISIBLE_RUN.finditer(text):
        out.append(text[pos : m.start()])
        i = m.start()
        while i < m.end():
            end = _allowed(text, i)
            if end < 0:
                i += 1
            else:
                out.append(text[i:end])
                i = end
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


# ----------------------------------------------------------------------------------------------------
# Folding
# ----------------------------------------------------------------------------------------------------


def _prefer(source: str, candidates: list[str]) -> str:
    """Which ASCII look-alike stands for ``source``: a letter for a letter (same case first), a digit for a
    digit, else the first."""
    def rank(c: str) -> tuple[int, int, str]:
        kind = 0 if c.isalpha() == source.isalpha() and c.isdigit() == source.isdigit() else 1
        case = 0 if (c.isupper() == source.isupper() and c.islower() == source.islower()) else 1
        return (kind, case, c)
    return min(candidates, key=rank)


@cache
def _confusables() -> dict[str, str]:
    """Every non-ASCII character that Unicode's confusables data says looks like one ASCII letter, digit or
    sign, and that ASCII character (read once)."""
    data = json.loads(resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text("utf-8"))
    found: dict[str, str] = {}
    for char, glyphs in data.items():
        if len(char) != 1 or char.isascii():
            continue
        ascii_glyphs = [g["c"] for g in glyphs if len(g["c"]) == 1 and g["c"].isascii() and g["c"].isprintable()]
        if ascii_glyphs:
            glyph = _prefer(char, ascii_glyphs)
            # the data's prototype of capital I is small l: a capital that looks like it stays a capital
            found[char] = "I" if glyph == "l" and unicodedata.category(char) == "Lu" else glyph
    return found


class _FoldTable(dict[int, str]):
    """``str.translate`` table for what NFKD leaves non-ASCII: filled as characters are met."""

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        cat = unicodedata.category(ch)
        if code < 128:
            out = ch
        elif cat in ("Mn", "Me"):
            out = ""  # a combining mark: ï → i, and no stacking of marks hides a letter
        elif cat == "Nd":
            out = str(unicodedata.digit(ch))
        elif cat == "Zs" or ch == "\u2800":  # every space (and the blank braille pattern) is a space
            out = " "
        else:
            out = _confusables().get(ch) or _latin_letter(ch) or ch
        self[code] = out
        return out


# a Latin letter that neither NFKD nor the confusables data make ASCII: small capitals (ɪɢɴᴏʀᴇ), modifier
# letters, turned or reversed forms named after their letter
_LATIN_NAME = re.compile(r"LATIN (CAPITAL |SMALL )?LETTER (?:SMALL CAPITAL |MODIFIER |TURNED |REVERSED )?([A-Z])")


def _latin_letter(ch: str) -> str | None:
    m = _LATIN_NAME.fullmatch(unicodedata.name(ch, ""))
    if m is None:
        return None
    return m.group(2) if m.group(1) == "CAPITAL " else m.group(2).lower()


_FOLD = _FoldTable()


def fold(text: str) -> str:
    """``text`` as it looks (see the module's docstring); ``text`` itself when it is plain ASCII."""
    if is_plain_ascii(text):
        return text
    text = _INVISIBLE.sub("", text)
    text = unicodedata.normalize("NFKD", text)
    if text.isascii():
        return text
    text = _COMBINING.sub("", text)  # accented Latin text ends here, ASCII: a regex is much cheaper than translate
    if text.isascii():
        return text
    return text.translate(_FOLD)


_COMBINING = re.compile("[\u0300-\u036f]+")
