"""Leakage: training queries that copy golden-set queries, found over texts and vectors.

A training query and a golden query form a pair of one of three kinds, strongest first:

* ``exact``: equal normalized text (NFKC, case-folded, punctuation and whitespace collapsed; see
  ``evalret.core.duplicates``);
* ``near-text``: character 3-gram Jaccard similarity of the normalized texts >= 0.8, the
  near-duplicate rule of `evalret validate`;
* ``embedding``: cosine similarity of the two query embeddings >= a threshold (0.85 by default),
  unless the two queries name different identifiers (tokens with a digit, such as error codes or
  versions): all-MiniLM-L6-v2 puts ``LMW-3105`` and ``LMW-3106`` at cosine 0.978, and a training
  query about another error code is not a copy.

The default threshold comes from measurements with the packaged all-MiniLM-L6-v2 on the demo set:
43 hand-written paraphrases of demo queries reach their original at cosine 0.32-0.99 (median
0.87; 25 of 43 at >= 0.85, 14 at >= 0.90); among the demo's own distinct queries that name the same
identifiers the highest cosine is 0.79; of 25 hand-written queries with another intent, one
reaches 0.86 (``delete a nightly job permanently`` against ``stop a nightly job from running for a
while without deleting it``) and none 0.90.

The fraction of the golden set affected is the share of its evaluated queries (those with a
relevant document) that have at least one pair. Pure: reading a training file is
``evalret.data.training``, loading the model ``evalret.commands.leakage``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from evalret.core.duplicates import (
    NEAR_DUPLICATE_JACCARD,
    identifiers,
    jaccard,
    ngrams,
    normalize_text,
    similar_pairs,
)

if TYPE_CHECKING:
    from evalret.core.slices import Slice

Kind = Literal["exact", "near-text", "embedding"]
MAX_CELLS = 8_000_000  # similarities held in memory at once
Embed = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class TrainQuery:
    """One query of a training file and the line it is on."""

    line: int
    text: str


@dataclass(frozen=True)
class LeakPair:
    """A golden query and a training query that copies it."""

    query_id: str
    query_text: str
    train_line: int
    train_text: str
    kind: Kind
    text_similarity: float  # character 3-gram Jaccard of the normalized texts
    cosine: float | None  # None when no embedding was computed


@dataclass(frozen=True)
class SliceLeak:
    """How many queries of one slice have a copy in the training file."""

    name: str
    n_queries: int
    n_leaked: int

    @property
    def fraction(self) -> float:
        """The share of the slice's queries that leak (0 for an empty slice)."""
        return self.n_leaked / self.n_queries if self.n_queries else 0.0


@dataclass(frozen=True)
class LeakageResult:
    """Every pair found, the leaked share of the golden set and of each slice, and the verdict
    against ``max_fraction``."""

    golden_source: str
    train_source: str
    n_golden: int
    n_train: int
    pairs: list[LeakPair]
    slices: list[SliceLeak]
    settings: dict[str, Any] = field(default_factory=dict)
    max_fraction: float | None = None

    @property
    def leaked(self) -> list[str]:
        """Golden query ids with at least one pair, in golden-set order."""
        return list(dict.fromkeys(p.query_id for p in self.pairs))

    @property
    def fraction(self) -> float:
        """The share of the golden queries with at least one pair."""
        return len(self.leaked) / self.n_golden if self.n_golden else 0.0

    @property
    def failed(self) -> bool:
        """True when more of the golden set leaks than ``max_fraction`` allows."""
        return self.max_fraction is not None and self.fraction > self.max_fraction

    def kind_counts(self) -> dict[str, int]:
        """Pairs per kind, strongest kind first."""
        counts = dict.fromkeys(("exact", "near-text", "embedding"), 0)
        for p in self.pairs:
            counts[p.kind] += 1
        return counts

    def to_json(self) -> dict[str, Any]:
        """The JSON object `evalret leakage --json` prints and ``--out`` writes."""
        return {
            "golden_set": self.golden_source,
            "train": self.train_source,
            "n_golden_queries": self.n_golden,
            "n_train_queries": self.n_train,
            "n_leaked_queries": len(self.leaked),
            "fraction": self.fraction,
            "max_fraction": self.max_fraction,
            "failed": self.failed,
            "settings": self.settings,
            "pairs_by_kind": self.kind_counts(),
            "leaked_query_ids": self.leaked,
            "slices": [{**asdict(s), "fraction": s.fraction} for s in self.slices],
            "pairs": [asdict(p) for p in self.pairs],
        }


def _unit(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (a zero row stays zero)."""
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(norms > 0, norms, 1.0)


Found = dict[tuple[int, int], tuple[Kind, float]]  # (training line index, golden) -> kind, jaccard


def _text_matches(g_norm: Sequence[str], t_norm: Sequence[str], threshold: float) -> Found:
    """Exact copies of a golden text, then near-text copies (3-gram Jaccard >= threshold)."""
    found: Found = {}
    by_text: dict[str, list[int]] = {}
    for g, t in enumerate(g_norm):
        if t:
            by_text.setdefault(t, []).append(g)
    for i, t in enumerate(t_norm):
        for g in by_text.get(t, ()):
            found[(i, g)] = ("exact", 1.0)
    for i, g, sim in similar_pairs(t_norm, g_norm, threshold):
        found.setdefault((i, g), ("near-text", sim))
    return found


def _embedding_matches(
    golden_texts: Sequence[str],
    g_norm: Sequence[str],
    train: Sequence[TrainQuery],
    t_norm: Sequence[str],
    embed: Embed,
    threshold: float,
    found: Found,
) -> dict[tuple[int, int], float]:
    """The cosine of every pair at or above ``threshold`` and of every text pair in ``found``;
    adds to ``found`` the pairs above it that share their identifiers (numbers, codes) and are
    not already text copies. Identical training texts are embedded once."""
    unique = list(dict.fromkeys(q.text for q in train))
    row_of = {t: k for k, t in enumerate(unique)}
    lines_of: list[list[int]] = [[] for _ in unique]
    for i, q in enumerate(train):
        lines_of[row_of[q.text]].append(i)
    gold = _unit(embed(list(golden_texts)))
    vecs = _unit(embed(unique))
    idents = [identifiers(t) for t in g_norm]
    cosines: dict[tuple[int, int], float] = {}
    block = max(1, MAX_CELLS // max(1, len(golden_texts)))
    for start in range(0, len(unique), block):
        sims = vecs[start : start + block] @ gold.T
        for r, g in zip(*np.nonzero(sims >= threshold), strict=True):
            for i in lines_of[start + int(r)]:
                key = (i, int(g))
                cosines[key] = float(sims[r, g])
                if key not in found and identifiers(t_norm[i]) == idents[g]:
                    found[key] = ("embedding", jaccard(ngrams(t_norm[i]), ngrams(g_norm[g])))
    for i, g in found.keys() - cosines.keys():  # text pairs below the cosine threshold
        cosines[(i, g)] = float(vecs[row_of[train[i].text]] @ gold[g])
    return cosines


def find_leaks(
    golden_ids: Sequence[str],
    golden_texts: Sequence[str],
    train: Sequence[TrainQuery],
    embed: Embed | None = None,
    cosine_threshold: float = 0.85,
    text_threshold: float = NEAR_DUPLICATE_JACCARD,
) -> list[LeakPair]:
    """Every (golden query, training query) pair that is an exact copy, a near-text copy, or
    (with ``embed``, which maps texts to vectors) an embedding match; sorted by golden-set order,
    then training line. Identical training texts are embedded once."""
    g_norm = [normalize_text(t) for t in golden_texts]
    t_norm = [normalize_text(q.text) for q in train]
    found = _text_matches(g_norm, t_norm, text_threshold)
    cosines: dict[tuple[int, int], float] = {}
    if embed is not None:
        cosines = _embedding_matches(
            golden_texts, g_norm, train, t_norm, embed, cosine_threshold, found
        )
    pairs = [
        LeakPair(
            query_id=golden_ids[g],
            query_text=golden_texts[g],
            train_line=train[i].line,
            train_text=train[i].text,
            kind=kind,
            text_similarity=round(sim, 4),
            cosine=round(cosines[(i, g)], 4) if (i, g) in cosines else None,
        )
        for (i, g), (kind, sim) in found.items()
    ]
    position = {q: k for k, q in enumerate(golden_ids)}
    pairs.sort(key=lambda p: (position[p.query_id], p.train_line))
    return pairs


def slice_leaks(
    slices: Sequence[Slice], golden_ids: Sequence[str], leaked: set[str]
) -> list[SliceLeak]:
    """How many queries of each slice leak."""
    hit = np.array([q in leaked for q in golden_ids], dtype=bool)
    return [SliceLeak(s.name, s.n_queries, int((s.mask & hit).sum())) for s in slices]
