"""How text becomes search terms: words, stems and stop words. Pure.

One analyzer for every keyword path, so that what a store pre-filters and what recall ranks agree:

- a *word* is a run of letters or digits (``_``, ``-`` and ``.`` split words, so ``refund-policy`` holds
  ``policy``), lower-cased;
- a *term* is a word's stem, by the Porter algorithm (PyStemmer's; SQLite FTS5's ``porter`` tokenizer, which
  the embedded stores index with, implements the same algorithm): ``refunding``, ``refunds`` and ``refund``
  are one term;
- *stop words* ("when", "did", "the"…) are left out of a query's terms, so that a question asked in natural
  language does not match every message on its function words; a query made only of stop words keeps them.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

import Stemmer

WORD = re.compile(r"[^\W_]+")  # a word (``words``): letters and digits
_STEMMER = Stemmer.Stemmer("porter")
_STEMMING = threading.Lock()  # a Stemmer object is not thread-safe: requests and summary passes share it

# English function words: pronouns, auxiliaries, determiners, prepositions, conjunctions and question words.
# Kept short on purpose: a content word here could never be searched for on its own.
_STOP_TEXT = """
a about above after again against all am an and any are as at be because been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers
herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off on
once only or other our ours ourselves out over own same she should so some such than that the their theirs
them themselves then there these they this those through to too under until up very was we were what when
where which while who whom why will with would you your yours yourself yourselves s t d ll m re ve don didn
doesn isn wasn aren weren won wouldn shouldn couldn
"""
STOP_WORDS: frozenset[str] = frozenset(_STOP_TEXT.split())


def words(text: str) -> list[str]:
    """The lower-cased words of ``text``, in order, repeats kept."""
    return WORD.findall(text.lower())


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Porter stem of one lower-cased word."""
    with _STEMMING:
        return str(_STEMMER.stemWord(word))


def terms(text: str) -> list[str]:
    """The stems of every word of ``text``, in order, repeats kept (a document's side)."""
    return [stem(w) for w in words(text)]


def query_words(text: str) -> list[str]:
    """A query's distinct words that count, in order: stop words left out unless it holds nothing else."""
    return telling_words(text) or list(dict.fromkeys(words(text)))


def telling_words(text: str) -> list[str]:
    """The distinct words of ``text`` that are not stop words, in order (none when it holds only stop words)."""
    return [w for w in dict.fromkeys(words(text)) if w not in STOP_WORDS]


def folded(text: str) -> str:
    """``text`` as two texts that say the same read alike: case folded, every run of spaces one space."""
    return " ".join(text.casefold().split())


def folded_head(text: str, size: int = 64) -> str:
    """``folded(text)[:size]``, read from the text's start alone when that holds enough (a long message's
    folding costs a pass over all of it, and most texts differ in their first words)."""
    head = folded(text[: 4 * size])
    if len(head) < size and len(text) > 4 * size:
        head = folded(text)
    return head[:size]


def index_text(text: str | None) -> str:
    """What a full-text index holds of ``text``: its words without the stop words, so that a document's length
    counts what it says (BM25's length normalisation) and no function word matches a query."""
    return " ".join(w for w in words(text or "") if w not in STOP_WORDS)


def entry_index_text(name: str, description: str | None, content: str | None) -> str:
    """What an entry stands for when it is read by meaning (its vector, the re-ranking stage): its name's words,
    its description and its content. Both backends' indexes and recall read an entry through here."""
    words_of_name = name.replace("-", " ").replace("_", " ").replace(".", " ")
    return f"{words_of_name}: {description or ''}\n{content or ''}"
