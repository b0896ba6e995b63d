"""From logged queries to a drawn sample (`evalret golden from-logs`). Pure: texts and counts in,
groups, strata and a draw out.

**Counting.** Logged queries count by their normalized text (``core.duplicates.normalize_text``,
the rule `validate` uses): ``Reset  Password`` and ``reset password`` are one query, typed as many
times as their counts add up to. The spelling shown is the most frequent one (ties: the smallest
in code-point order). A text whose normalized form is empty (no letter or digit) is no query.

**Near-duplicates.** Two distinct normalized texts whose character 3-gram Jaccard similarity
reaches ``NEAR_DUPLICATE_JACCARD`` (0.8, validate's rule: ``core.duplicates.similar_pairs``) are
one query: the groups are the connected components of those pairs (so a chain ``a ~ b ~ c``
is one group even where ``a`` and ``c`` are further apart), the spelling kept is that of the most
frequent member (ties: the smallest normalized text, then the spelling rule above), its count
the sum of the members' counts.

**Strata by traffic.** Queries sorted by count (descending), then normalized text; a query is in
the *head* when the traffic of the queries before it is under ``cuts[0]`` (0.5) of the total, in
the *torso* when under ``cuts[1]`` (0.8), else in the *tail*: the head holds the most frequent
queries that make up the first half of traffic (the query that crosses the line included, so
the head is never empty), the torso the next 30 %, the tail the last 20 %. In a Zipf-like log
the head is a few dozen queries and the tail most of the distinct ones.

**Allocation** of ``n`` among the strata (``allocate``): ``proportional`` gives each stratum its
share of traffic (head 50 %, torso 30 %, tail 20 % with the default cuts), so that the set weighs
the strata as users do; a draw proportional to the number of distinct queries would be nearly all
tail (most distinct queries are rare) and is what a draw without strata gives anyway. ``equal``
gives each stratum the same number, which protects the tail (and the torso) when each stratum is
to be measured with the same precision. A stratum with fewer queries than its allotment gives all
of them and its surplus to the others (in proportion to their weights, again); shares are rounded
by largest remainder (ties to the earlier stratum). ``n`` at least the number of queries: all of
them.

**The draw** within a stratum takes its queries in the seeded order of ``core.sampling``
(``seeded_keys`` of the normalized texts): it depends only on the seed and the texts, not on the
log's line order, and reruns draw the same queries.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evalret.core.duplicates import NEAR_DUPLICATE_JACCARD, normalize_text, similar_pairs
from evalret.core.sampling import seeded_keys

STRATA = ("head", "torso", "tail")
DEFAULT_CUTS = (0.5, 0.8)
SEED_KIND = "log-query"  # the kind hashed with the seed into a query's draw key


@dataclass(frozen=True)
class LoggedQuery:
    """One query of the log after counting (and collapsing): the spelling kept, its normalized
    text, how often it was typed in all, and how many distinct normalized texts it stands for."""

    text: str
    normalized: str
    count: int
    members: int = 1
    merged: tuple[str, ...] = ()  # the other normalized texts collapsed into this one, sorted


@dataclass(frozen=True)
class Counted:
    """The log counted: the distinct queries, and the texts that had no letter or digit."""

    queries: list[LoggedQuery]
    no_alphanumeric: int


def _spelling(spellings: Counter[str]) -> str:
    """The most frequent spelling; ties: the smallest."""
    return min(spellings.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def count_queries(entries: Sequence[tuple[str, int]]) -> Counted:
    """(text, count) entries counted by normalized text (the module doc), in order of first
    appearance."""
    totals: dict[str, int] = {}
    spellings: dict[str, Counter[str]] = {}
    empty = 0
    for text, count in entries:
        key = normalize_text(text)
        if not key:
            empty += 1
            continue
        totals[key] = totals.get(key, 0) + count
        spellings.setdefault(key, Counter())[text] += count
    queries = [LoggedQuery(_spelling(spellings[k]), k, totals[k]) for k in totals]
    return Counted(queries, empty)


def _components(n: int, pairs: Sequence[tuple[int, int, float]]) -> list[list[int]]:
    """The connected components of ``pairs`` over ``0..n-1`` (union-find), each sorted."""
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j, _ in pairs:
        a, b = root(i), root(j)
        if a != b:
            parent[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())


def collapse_near_duplicates(
    queries: Sequence[LoggedQuery], threshold: float = NEAR_DUPLICATE_JACCARD
) -> list[LoggedQuery]:
    """Near-duplicate queries merged (the module doc), in order of each group's first member."""
    pairs = similar_pairs([q.normalized for q in queries], threshold=threshold)
    out = []
    for group in _components(len(queries), pairs):
        members = [queries[i] for i in group]
        kept = min(members, key=lambda q: (-q.count, q.normalized, q.text))
        total = sum(q.count for q in members)
        n_members = sum(q.members for q in members)
        merged = {m for q in members for m in (q.normalized, *q.merged)} - {kept.normalized}
        out.append(LoggedQuery(kept.text, kept.normalized, total, n_members, tuple(sorted(merged))))
    return out


def by_traffic(queries: Sequence[LoggedQuery]) -> list[LoggedQuery]:
    """Queries by count (descending), then normalized text, then spelling."""
    return sorted(queries, key=lambda q: (-q.count, q.normalized, q.text))


def strata(ranked: Sequence[LoggedQuery], cuts: tuple[float, float] = DEFAULT_CUTS) -> list[str]:
    """The stratum of each query of ``ranked`` (in ``by_traffic`` order): the module doc's rule."""
    total = sum(q.count for q in ranked)
    out = []
    before = 0
    for q in ranked:
        share = before / total if total else 0.0
        out.append("head" if share < cuts[0] else "torso" if share < cuts[1] else "tail")
        before += q.count
    return out


def _largest_remainder(total: int, weights: Sequence[float]) -> list[int]:
    """``total`` shared in proportion to ``weights``, rounded by largest remainder (ties to the
    earlier); all zero weights: shared equally."""
    w = np.asarray(weights, dtype=float)
    if w.sum() <= 0:
        w = np.ones(len(w))
    exact = total * w / w.sum()
    base = np.floor(exact + 1e-9).astype(int)
    rest = total - int(base.sum())
    order = sorted(range(len(w)), key=lambda i: (-(exact[i] - base[i]), i))
    for i in order[:rest]:
        base[i] += 1
    return [int(x) for x in base]


def allocate(n: int, sizes: Sequence[int], weights: Sequence[float]) -> list[int]:
    """How many of ``n`` each stratum of ``sizes`` queries gives, by ``weights`` (the module
    doc: a stratum too small gives all it has and its surplus to the others)."""
    if n >= sum(sizes):
        return list(sizes)
    given = [0] * len(sizes)
    open_ = [i for i, s in enumerate(sizes) if s > 0]
    left = n
    while open_:
        shares = _largest_remainder(left, [weights[i] for i in open_])
        full = [i for i, share in zip(open_, shares, strict=True) if share >= sizes[i]]
        if not full:
            for i, share in zip(open_, shares, strict=True):
                given[i] = share
            break
        for i in full:
            given[i] = sizes[i]
            left -= sizes[i]
        open_ = [i for i in open_ if i not in full]
    return given


@dataclass(frozen=True)
class Draw:
    """The drawn queries (positions in the ranked list, in ranked order) and each one's stratum,
    with the queries per stratum before the draw and drawn."""

    positions: list[int]
    strata: list[str]  # of every ranked query
    sizes: dict[str, int]
    traffic: dict[str, int]
    drawn: dict[str, int]


def draw(
    ranked: Sequence[LoggedQuery],
    n: int,
    seed: int,
    allocation: str = "proportional",
    cuts: tuple[float, float] = DEFAULT_CUTS,
) -> Draw:
    """``n`` of the ``ranked`` queries (``by_traffic`` order), drawn by stratum (the module doc)."""
    labels = strata(ranked, cuts)
    members = {s: [i for i, lab in enumerate(labels) if lab == s] for s in STRATA}
    sizes = [len(members[s]) for s in STRATA]
    traffic = [sum(ranked[i].count for i in members[s]) for s in STRATA]
    weights = traffic if allocation == "proportional" else [1.0] * len(STRATA)
    quota = allocate(n, sizes, weights)
    keys = seeded_keys([q.normalized for q in ranked], seed, SEED_KIND)
    chosen: list[int] = []
    for s, k in zip(STRATA, quota, strict=True):
        pos = np.asarray(members[s], dtype=np.int64)
        order = pos[np.lexsort((pos, keys[pos]))] if len(pos) else pos
        chosen += [int(i) for i in order[:k]]
    return Draw(
        positions=sorted(chosen),
        strata=labels,
        sizes=dict(zip(STRATA, sizes, strict=True)),
        traffic=dict(zip(STRATA, traffic, strict=True)),
        drawn=dict(zip(STRATA, quota, strict=True)),
    )


@dataclass(frozen=True)
class StratumRow:
    """One traffic stratum: distinct queries, their traffic, and how many were drawn."""

    name: str
    queries: int
    traffic: int
    drawn: int


@dataclass(frozen=True)
class FromLogsResult:
    """What `evalret golden from-logs` read, screened, collapsed and drew, and where the draft
    went (counts only: no query's text)."""

    out: Path
    log_format: str
    lines: int
    skipped: int
    pii_mode: str
    pii_queries: int
    pii_by_kind: dict[str, int]
    no_alphanumeric: int
    distinct: int
    collapsed: int
    strata: list[StratumRow]
    written: int
    requested: int
    documents: int
    shapes: dict[str, int]
