"""The shape of a query: the edge cases a golden set must cover (`evalret golden`: the tags
``shape:<name>`` of a drawn or written query, and the doctor's coverage counts). Pure: texts in,
tags out.

Words: of the text in Unicode NFKC, case-folded (not core.duplicates.normalize_text, which would
split ``LMW-4031`` and drop a ``?``): runs of letters and digits, joined by ``-``, ``_``, ``.``,
``/`` or ``:`` when no space separates them (``lmw-4031``, ``v2.3.1``, ``api/v2`` are one word
each). A query can carry several shapes:

* ``short``: at most SHORT_WORDS (2) words;
* ``long``: at least LONG_WORDS (10) words;
* ``identifier``: a word with both a letter and a digit (``lmw-4031``, ``e404``, ``gpt4``), or a
  run of IDENTIFIER_DIGITS (5) or more digits (an order number);
* ``question``: the text ends with ``?`` or begins with a question word (QUESTION_WORDS);
* ``rare-terms``: a word (3 characters or more, not all digits) found in at least one document
  and in at most ``rare_df(n_docs)`` of them: max(2, 0.1% of the documents, rounded up). A word
  found in no document is no rare term (a typo, or what the corpus cannot answer).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

SHAPES = ("short", "long", "identifier", "question", "rare-terms")
SHORT_WORDS = 2
LONG_WORDS = 10
IDENTIFIER_DIGITS = 5
RARE_SHARE = 0.001
RARE_MIN_DF = 2
QUESTION_WORDS = frozenset(
    (
        *("what", "why", "how", "when", "where", "who", "whom", "whose", "which"),
        *("is", "are", "was", "were", "can", "could", "does", "do", "did"),
        *("should", "would", "will", "shall", "may", "might"),
    )
)
_WORD = re.compile(r"[^\W_]+(?:[-_./:][^\W_]+)*")
_DIGITS = re.compile(rf"\d{{{IDENTIFIER_DIGITS},}}")


def words(text: str) -> list[str]:
    """The words of a text (see the module doc)."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def document_frequency(docs: Iterable[str]) -> Counter[str]:
    """How many documents hold each word."""
    df: Counter[str] = Counter()
    for text in docs:
        df.update(set(words(text)))
    return df


def rare_df(n_docs: int) -> int:
    """The most documents a rare term may appear in."""
    return max(RARE_MIN_DF, math.ceil(RARE_SHARE * n_docs))


def is_identifier(word: str) -> bool:
    has_digit = any(c.isdigit() for c in word)
    return (has_digit and any(c.isalpha() for c in word)) or bool(_DIGITS.search(word))


def query_shapes(
    text: str, df: Mapping[str, int] | None = None, n_docs: int = 0
) -> tuple[str, ...]:
    """The shapes of one query, in SHAPES order; ``rare-terms`` only with the corpus's document
    frequencies ``df`` over ``n_docs`` documents."""
    ws = words(text)
    found = {
        "short": 0 < len(ws) <= SHORT_WORDS,
        "long": len(ws) >= LONG_WORDS,
        "identifier": any(is_identifier(w) for w in ws),
        "question": text.rstrip().endswith("?") or (bool(ws) and ws[0] in QUESTION_WORDS),
        "rare-terms": df is not None
        and any(
            len(w) >= 3 and not w.isdigit() and 0 < df.get(w, 0) <= rare_df(n_docs) for w in ws
        ),
    }
    return tuple(s for s in SHAPES if found[s])


def shape_tags(queries: Sequence[str], docs: Sequence[str] | None = None) -> list[tuple[str, ...]]:
    """``shape:<name>`` tags of each query; rare terms judged against the texts ``docs``."""
    df = document_frequency(docs) if docs is not None else None
    n = len(docs) if docs is not None else 0
    return [tuple(f"shape:{s}" for s in query_shapes(q, df, n)) for q in queries]
