"""Seeded, stratified samples of a golden set for fast pull-request gates: which queries a run
evaluates and which documents it embeds. Pure: takes ids and slice masks, returns positions.

**The seeded order.** Every query (and document) gets a key, the first 8 bytes of
blake2b(``seed``, kind, id); "drawn" means taken in increasing key order. The draw therefore
depends only on the seed and the ids: it is identical on reruns, and an edit to the set does not
reshuffle the rest (without strata, adding or removing one query moves at most that query in or
out; with strata, the shares may move one query of a stratum).

**Strata.** Slices overlap (a query can be ``tail``, ``short`` and ``exact-match`` at once), so a
query's stratum is the set of slices it belongs to: two queries are in the same stratum when they
belong to exactly the same slices. A slice is a union of strata, so a sample that gives every
stratum its share gives every slice its share, whatever the overlaps. Strata are ordered by their
first query in file order.

**Queries** (``sample_queries``), ``n`` out of ``Q``:

1. the floor: every slice keeps at least min(``floor``, its size) queries (a slice holding
   every query, ``all``, holds the whole sample and needs no floor). Slices are visited
   smallest first (ties in the order given); a slice short of its floor takes its next members in
   the seeded order. This oversamples small slices (tail queries, a rare tag), as the literature
   recommends for strata that matter;
2. the shares: the stratum of ``s`` queries has the quota n·s/Q. The queries still to draw,
   ``n`` minus those the floor took, go to the strata in proportion to how far each is below its
   quota, rounded by largest remainder (ties to the earlier stratum); each stratum takes its next
   members in the seeded order.

The sample holds exactly ``n`` queries, unless the floors alone need more (many small slices and
a small ``n``): then it holds what the floors need, and ``QuerySample.size`` says so. With
``n >= Q`` every query is kept.

**Documents** (``sample_documents``): every document judged for a sampled query is kept (the
relevant ones and the judged non-relevant ones, which are hard negatives), then distractors are
drawn from the rest of the corpus in the seeded order up to ``m`` documents in all. Fewer
distractors than the full corpus make retrieval easier: absolute figures on a sampled corpus are
optimistic, comparable only with a run on the same sample.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SAMPLING_METHOD = "stratified-1"  # the algorithm above; part of a sample's fingerprint


def seeded_keys(ids: Sequence[str], seed: int, kind: str) -> np.ndarray:
    """The seeded draw key of every id (uint64): blake2b of the seed, ``kind`` and the id."""
    prefix = f"{seed}\x00{kind}\x00".encode()
    return np.array(
        [
            int.from_bytes(hashlib.blake2b(prefix + i.encode(), digest_size=8).digest(), "big")
            for i in ids
        ],
        dtype=np.uint64,
    )


def _seeded_order(keys: np.ndarray, members: np.ndarray) -> np.ndarray:
    """``members`` (positions) sorted by key, ties by position."""
    return members[np.lexsort((members, keys[members]))]


@dataclass(frozen=True)
class QuerySample:
    """A drawn query sample: the positions kept (ascending), what was asked and how the floor
    acted."""

    positions: np.ndarray  # int64, ascending: the file order is kept
    requested: int
    floor: int
    floor_raised: tuple[str, ...]  # slices whose floor is above their proportional share
    n_strata: int

    @property
    def size(self) -> int:
        return len(self.positions)


def _strata(masks: Sequence[np.ndarray], n: int) -> np.ndarray:
    """Per query, its stratum number (0, 1, ... by first query in file order)."""
    if not masks:
        return np.zeros(n, dtype=np.int64)
    matrix = np.column_stack(masks)
    _, first, inverse = np.unique(matrix, axis=0, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)]


def _apply_floor(
    slices: Sequence[tuple[str, np.ndarray]], keys: np.ndarray, floor: int, chosen: np.ndarray
) -> None:
    """Mark in ``chosen`` the queries every slice needs to reach min(floor, size), smallest
    slice first."""
    order = sorted(range(len(slices)), key=lambda i: (int(slices[i][1].sum()), i))
    for i in order:
        mask = slices[i][1]
        need = min(floor, int(mask.sum())) - int(chosen[mask].sum())
        if need > 0:
            free = _seeded_order(keys, np.flatnonzero(mask & ~chosen))
            chosen[free[:need]] = True


def _largest_remainder(total: int, weights: np.ndarray) -> np.ndarray:
    """``total`` units split in proportion to ``weights`` (sum > 0): floors, then one more each
    to the largest remainders (ties to the lower index)."""
    exact = total * weights / weights.sum()
    counts: np.ndarray = np.floor(exact).astype(np.int64)
    left = total - int(counts.sum())
    if left > 0:
        remainder = exact - counts
        counts[np.lexsort((np.arange(len(weights)), -remainder))[:left]] += 1
    return counts


def sample_queries(
    query_ids: Sequence[str],
    slices: Sequence[tuple[str, np.ndarray]],
    n: int,
    seed: int,
    floor: int,
) -> QuerySample:
    """Draw ``n`` of ``query_ids``, stratified over ``slices`` (name, boolean mask; a slice
    holding every query, like ``all``, splits nothing), with ``floor`` queries at least per slice
    (fewer when the slice is smaller). See the module docstring for the rule."""
    total = len(query_ids)
    splitting = [(name, m) for name, m in slices if m.any() and not m.all()]
    strata = _strata([m for _, m in splitting], total)
    n_strata = int(strata.max()) + 1 if total else 0
    if n >= total:
        return QuerySample(np.arange(total, dtype=np.int64), n, floor, (), n_strata)
    keys = seeded_keys(query_ids, seed, "query")
    chosen = np.zeros(total, dtype=bool)
    _apply_floor(splitting, keys, floor, chosen)
    raised = [name for name, m in splitting if min(floor, int(m.sum())) > n * m.sum() / total]
    left = n - int(chosen.sum())
    if left > 0:
        sizes = np.bincount(strata, minlength=n_strata)
        taken = np.bincount(strata[chosen], minlength=n_strata)
        deficit = np.maximum(n * sizes / total - taken, 0.0)
        for stratum, count in enumerate(_largest_remainder(left, deficit)):
            free = _seeded_order(keys, np.flatnonzero((strata == stratum) & ~chosen))
            chosen[free[:count]] = True
    short = n - int(chosen.sum())  # only if rounding left a stratum without enough members
    if short > 0:
        chosen[_seeded_order(keys, np.flatnonzero(~chosen))[:short]] = True
    return QuerySample(np.flatnonzero(chosen), n, floor, tuple(raised), n_strata)


def sample_documents(doc_ids: Sequence[str], keep: np.ndarray, m: int, seed: int) -> np.ndarray:
    """Positions (ascending) of the documents a sampled run embeds: every position ``keep``
    marks (the judged documents of the sampled queries), then distractors from the rest in the
    seeded order up to ``m`` in all (none when ``keep`` already holds ``m`` or more)."""
    chosen = keep.copy()
    extra = m - int(keep.sum())
    if extra > 0:
        keys = seeded_keys(doc_ids, seed, "document")
        chosen[_seeded_order(keys, np.flatnonzero(~keep))[:extra]] = True
    return np.flatnonzero(chosen)
