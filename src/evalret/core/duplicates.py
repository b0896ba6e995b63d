"""Duplicate and near-duplicate texts. Pure: strings in, indices and similarities out.

* **Normalized text**: Unicode NFKC, case-folded, apostrophes dropped (``can't`` = ``cant``), every
  other run of characters that are not letters or digits (punctuation, symbols, underscores,
  whitespace) turned into one space, trimmed. Two texts are *exact duplicates* when their
  normalized texts are equal and not empty.
* **Near-duplicates**: the Jaccard similarity of the sets of character 3-grams of the normalized
  texts (padded with a space at each end) is at least a threshold, 0.8 by default. One changed
  word in a 10-word sentence stays above 0.8; ``LMW-4031`` against ``LMW-4032`` (0.60) or
  ``is SSO included in the Team plan`` against ``... Pro plan`` (0.69) stay below it. The
  similarity depends on length: a one-letter typo in a three-word query can fall under 0.8.

Pairs are found with prefix filtering (Bayardo et al., "Scaling up all pairs similarity search",
2007): with the 3-grams of every set in one global order (rarest first), two sets whose Jaccard
similarity reaches ``t`` share one of the first ``|x| - ceil(t * |x|) + 1`` 3-grams of each, so
only texts sharing a rare 3-gram are compared, and a text whose prefix holds only 3-grams the
other collection never uses is skipped outright. Every candidate is then scored exactly; nothing
is approximated.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

NGRAM = 3
NEAR_DUPLICATE_JACCARD = 0.8
_APOSTROPHES = re.compile("['\u2019\u02bc]")
_NOT_ALNUM = re.compile(r"[\W_]+")


def normalize_text(text: str) -> str:
    """The normalized form of ``text`` used by every duplicate check (see the module doc)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _NOT_ALNUM.sub(" ", _APOSTROPHES.sub("", folded)).strip()


def ngrams(normalized: str, n: int = NGRAM) -> set[str]:
    """Character n-grams of a normalized text padded with one space at each end; empty for an
    empty text."""
    if not normalized:
        return set()
    padded = f" {normalized} "
    return {padded[i : i + n] for i in range(max(1, len(padded) - n + 1))}


def jaccard(a: AbstractSet[str], b: AbstractSet[str]) -> float:
    """Size of the intersection over size of the union; 0 when both are empty."""
    if not a and not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def exact_duplicate_groups(normalized: Sequence[str]) -> list[list[int]]:
    """Indices of equal, non-empty normalized texts: groups of two or more, each in input order,
    groups ordered by their first member."""
    groups: dict[str, list[int]] = {}
    for i, t in enumerate(normalized):
        if t:
            groups.setdefault(t, []).append(i)
    return [g for g in groups.values() if len(g) > 1]


def identifiers(normalized: str) -> frozenset[str]:
    """Tokens of a normalized text that contain a digit: error codes, versions, numbers."""
    return frozenset(w for w in normalized.split() if any(c.isdigit() for c in w))


def _prefix_length(size: int, threshold: float) -> int:
    # the tolerance keeps float error (0.55 * 100 = 55.00000000000001) from shortening the prefix
    return size - math.ceil(threshold * size - 1e-9) + 1


def _rarity(sets: Sequence[set[str]]) -> dict[str, int]:
    """Each 3-gram's position when ordered rarest first (by its frequency in ``sets``, then the
    3-gram itself)."""
    counts: Counter[str] = Counter()
    for grams in sets:
        counts.update(grams)
    return {g: r for r, (g, _) in enumerate(sorted(counts.items(), key=lambda x: (x[1], x[0])))}


def _prefix_index(
    sets: Sequence[set[str]], rank: dict[str, int], threshold: float
) -> dict[str, list[int]]:
    """3-gram -> the texts of ``sets`` that have it among their rarest (prefix) 3-grams."""
    index: dict[str, list[int]] = {}
    for j, grams in enumerate(sets):
        for g in sorted(grams, key=rank.__getitem__)[: _prefix_length(len(grams), threshold)]:
            index.setdefault(g, []).append(j)
    return index


def similar_pairs(
    left: Sequence[str],
    right: Sequence[str] | None = None,
    threshold: float = NEAR_DUPLICATE_JACCARD,
) -> list[tuple[int, int, float]]:
    """(i, j, similarity) for every pair of normalized texts whose 3-gram Jaccard similarity is at
    least ``threshold`` (0 < threshold <= 1).

    With ``right`` None, pairs within ``left`` with i < j; otherwise i indexes ``left`` and j
    ``right`` (keep the smaller collection on the right: it is the one indexed). Sorted by
    (i, j). Empty texts are never paired.
    """
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    within = right is None
    a_sets = [ngrams(t) for t in left]
    b_sets = a_sets if right is None else [ngrams(t) for t in right]
    # 3-grams ordered rarest first by their frequency on the indexed side; a left-hand 3-gram
    # absent from it comes before all of them (and can never be shared)
    rank = _rarity(b_sets)
    index = _prefix_index(b_sets, rank, threshold)
    out: list[tuple[int, int, float]] = []
    for i, grams in enumerate(a_sets):
        known = grams if within else grams & rank.keys()
        k = _prefix_length(len(grams), threshold) - (len(grams) - len(known))
        if not grams or k <= 0:
            continue  # empty, or too many 3-grams that no right-hand text has
        candidates = {j for g in sorted(known, key=rank.__getitem__)[:k] for j in index.get(g, ())}
        out += _verified(
            i, grams, sorted(j for j in candidates if not within or j > i), b_sets, threshold
        )
    out.sort(key=lambda x: (x[0], x[1]))
    return out


def _verified(
    i: int,
    grams: set[str],
    candidates: Sequence[int],
    sets: Sequence[set[str]],
    threshold: float,
) -> list[tuple[int, int, float]]:
    """The candidates whose size allows the threshold and whose Jaccard similarity reaches it."""
    low, high = threshold * len(grams) - 1e-9, len(grams) / threshold + 1e-9
    out = []
    for j in candidates:
        if low <= len(sets[j]) <= high:
            sim = jaccard(grams, sets[j])
            if sim >= threshold:
                out.append((i, j, sim))
    return out


def word_difference(a: str, b: str) -> str:
    """The words that tell two normalized texts apart, for a reader to judge whether a
    near-duplicate means the same (a typo, a reordering) or not (a negation, another entity):
    "only: 'reduces' vs 'increases'", or "the same words, reordered"."""
    wa, wb = a.split(), b.split()
    only_a = [w for w in wa if w not in set(wb)]
    only_b = [w for w in wb if w not in set(wa)]
    if not only_a and not only_b:
        return "the same words, reordered" if wa != wb else "the same words"
    shown = [" ".join(only_a[:4]) or "(nothing)", " ".join(only_b[:4]) or "(nothing)"]
    return f"differing words: {shown[0]!r} vs {shown[1]!r}"
