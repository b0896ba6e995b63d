"""The statistics of `evalret compare`: paired per-query score arrays of two runs in, plain values
out. Pure: numpy and the standard library; the command assembles the report around them.

Per index, slice and metric: A, B, delta = B - A, a percentile bootstrap interval of the delta
(queries resampled, paired), two-sided p-values from a paired randomization test and a paired
t-test, both corrected across every (index, slice, metric) test, the minimum detectable effect
for the slice's size, and per-query wins, ties and losses. Rank drift between the two rankings
(Jaccard@k and extrapolated rank-biased overlap) shows change even when means are flat. A slice's
changes are read as one diagnosis, and the primary metric's changes decide the verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from evalret.core.metrics import parse_metric
from evalret.core.stats import (
    Correction,
    adjust_p_values,
    bootstrap_ci,
    minimum_detectable_effect,
    paired_p_value,
    randomization_p_values,
)

RBO_P = 0.9
DRIFT_DEPTH = 10  # default depth of rank drift (a report keeps the top 10 ids per query)
EXAMPLES = 5
# a per-query change this small is float rounding (two evalret versions may sum a metric in
# another order), not a change: counted as a tie and left out of the tests
FLOAT_NOISE = 1e-12


def changes(after: np.ndarray, before: np.ndarray) -> np.ndarray:
    """``after - before`` per query (per column), float noise (``FLOAT_NOISE``) as 0."""
    d = np.asarray(after, dtype=np.float64) - np.asarray(before, dtype=np.float64)
    d[np.abs(d) <= FLOAT_NOISE] = 0.0
    return d


CompareStatus = Literal["candidate", "not a candidate", "no difference"]


@dataclass(frozen=True)
class Criteria:
    """What counts as a change: the primary metric, the smallest gain that matters and the
    significance level of the corrected randomization test."""

    primary: str
    min_gain: float
    alpha: float


@dataclass(frozen=True)
class Tested:
    """One metric's paired statistics in one slice, before the correction across all tests."""

    a: float
    b: float
    delta: float  # b - a
    ci_low: float
    ci_high: float
    wins: int  # queries where B scores higher
    ties: int
    losses: int
    p_randomization: float  # two-sided, paired
    p_t_test: float
    mde: float | None  # two-sided minimum detectable effect (None: no spread)


@dataclass(frozen=True)
class MetricChange:
    """One metric's change in one slice (the report's MetricComparison, field for field)."""

    a: float
    b: float
    delta: float
    ci_low: float
    ci_high: float
    p_randomization: float
    p_t_test: float
    p_randomization_adjusted: float
    p_t_test_adjusted: float
    significant: bool  # adjusted randomization p < alpha, and a nonzero delta
    wins: int
    ties: int
    losses: int


@dataclass(frozen=True)
class CompareVerdict:
    """Whether B is a candidate to replace A, why, and what blocks it."""

    status: CompareStatus
    reason: str
    blocking: tuple[str, ...]
    regressions: tuple[str, ...]  # significant regressions anywhere


# index -> slice -> metric -> change
Changes = Mapping[str, Mapping[str, Mapping[str, MetricChange]]]


def rank_drift(
    a_top: Sequence[Sequence[str]], b_top: Sequence[Sequence[str]], k: int = DRIFT_DEPTH
) -> tuple[np.ndarray, np.ndarray]:
    """Per query Jaccard@k of the two top-k sets and extrapolated RBO (p = 0.9) of the lists.

    RBO_ext = (1-p)/p * sum_{d<=k} (X_d / d) p^d + (X_k / k) p^k, X_d = overlap of the top d;
    1 for identical lists, 0 for disjoint ones (Webber et al. 2010). When both lists are shorter
    than k, k is the longer one's length; two empty lists count as identical.
    """
    n = len(a_top)
    A = np.full((n, k), "", dtype=object)
    B = np.full((n, k), "", dtype=object)
    for i, (x, y) in enumerate(zip(a_top, b_top, strict=True)):
        A[i, : min(k, len(x))] = list(x[:k])
        B[i, : min(k, len(y))] = list(y[:k])
    same = (A[:, :, None] == B[:, None, :]) & (A[:, :, None] != "")
    overlap = np.stack([same[:, :d, :d].sum(axis=(1, 2)) for d in range(1, k + 1)], axis=1)
    sizes = (A != "").sum(axis=1) + (B != "").sum(axis=1) - overlap[:, -1]
    jaccard = np.divide(overlap[:, -1], sizes, out=np.ones(n), where=sizes > 0)
    # evaluated to the longer list's length (at most k): a ranking shorter than k (a lexical
    # index that matched few documents) compared with itself still scores 1
    length = np.maximum((A != "").sum(axis=1), (B != "").sum(axis=1))
    last = np.maximum(length, 1)
    depth = np.arange(1, k + 1)
    within = depth[None, :] <= last[:, None]
    weighted = np.where(within, (overlap / depth) * RBO_P**depth, 0.0)
    at_last = overlap[np.arange(n), last - 1]
    rbo = (1 - RBO_P) / RBO_P * weighted.sum(axis=1) + (at_last / last) * RBO_P**last
    rbo = np.where(length > 0, rbo, 1.0)
    return jaccard.astype(np.float64), rbo.astype(np.float64)


def paired_statistics(
    va_all: np.ndarray,
    vb_all: np.ndarray,
    samples: int,
    bootstrap_samples: int,
    confidence: float,
    seed: np.random.SeedSequence,
    alpha: float,
    power: float,
) -> list[Tested]:
    """The statistics of every metric (a column of ``va_all`` / ``vb_all`` [queries, metrics])
    in one slice; the columns share the randomization and bootstrap draws of ``seed``."""
    diffs = changes(vb_all, va_all)
    p_rand_all = randomization_p_values(diffs, samples, seed)
    low, high = bootstrap_ci(diffs, bootstrap_samples, confidence, seed)
    out = []
    for j in range(diffs.shape[1]):
        va, vb, d = va_all[:, j], vb_all[:, j], diffs[:, j]
        sd = float(d.std(ddof=1)) if len(d) > 1 else 0.0
        out.append(
            Tested(
                a=float(va.mean()) if len(va) else float("nan"),
                b=float(vb.mean()) if len(vb) else float("nan"),
                delta=float(d.mean()) if len(d) else 0.0,
                ci_low=float(low[j]),
                ci_high=float(high[j]),
                wins=int((d > 0).sum()),
                ties=int((d == 0).sum()),
                losses=int((d < 0).sum()),
                p_randomization=float(p_rand_all[j]),
                p_t_test=paired_p_value(vb, va, "t-test"),
                mde=minimum_detectable_effect(sd, len(d), alpha, power, True) if sd > 0 else None,
            )
        )
    return out


def corrected(tests: Sequence[Tested], correction: Correction, alpha: float) -> list[MetricChange]:
    """Every test with its p-values corrected across all of ``tests`` (one family)."""
    adj_rand = adjust_p_values([t.p_randomization for t in tests], correction)
    adj_t = adjust_p_values([t.p_t_test for t in tests], correction)
    return [
        MetricChange(
            a=t.a,
            b=t.b,
            delta=t.delta,
            ci_low=t.ci_low,
            ci_high=t.ci_high,
            p_randomization=t.p_randomization,
            p_t_test=t.p_t_test,
            p_randomization_adjusted=float(pr),
            p_t_test_adjusted=float(pt),
            significant=bool(pr < alpha and t.delta != 0),
            wins=t.wins,
            ties=t.ties,
            losses=t.losses,
        )
        for t, pr, pt in zip(tests, adj_rand, adj_t, strict=True)
    ]


def direction(m: MetricChange | None, c: Criteria) -> str:
    """``up`` or ``down`` for a significant change of at least ``min_gain``; else ``flat``."""
    if m is None or abs(m.delta) < c.min_gain or m.p_randomization >= c.alpha:
        return "flat"
    return "up" if m.delta > 0 else "down"


def _first(metrics: Mapping[str, MetricChange], family: str) -> tuple[str, MetricChange] | None:
    """The metric of ``family`` a diagnosis reads: the shallowest cutoff of at least 10, else
    the shallowest; the whole ranking (no cutoff) counts as the deepest; a judged-only variant
    only when the family has no plain metric. None when the family is not computed."""
    parsed = {n: parse_metric(n) for n in metrics}
    ranked = sorted((m.judged, m.depth_key, n) for n, m in parsed.items() if m.family == family)
    names = [(k, n) for judged, k, n in ranked if judged == ranked[0][0]]
    preferred = [n for k, n in names if k >= 10] or [n for _, n in names]
    return (preferred[0], metrics[preferred[0]]) if preferred else None


MEANINGS = {
    ("up", "flat"): "better first hit, coverage unchanged",
    ("flat", "up"): "more complete result sets, first hit unchanged",
    ("down", "flat"): "first hit worse, coverage unchanged",
    ("flat", "down"): "coverage lost, first hit unchanged",
    ("up", "up"): "better across the board",
    ("down", "down"): "worse across the board",
    ("up", "down"): "sharper top, thinner coverage",
    ("down", "up"): "broader coverage, weaker first hit",
}


def diagnose(metrics: Mapping[str, MetricChange], c: Criteria) -> str:
    """Read a slice's pattern of changes the way domain.md's "Reading a change" table does."""
    picked = {f: _first(metrics, f) for f in ("ndcg", "mrr", "recall")}
    words = [f"{name} {direction(m, c)}" for name, m in (v for v in picked.values() if v)]
    mrr = direction(picked["mrr"][1], c) if picked["mrr"] else "flat"
    rec = direction(picked["recall"][1], c) if picked["recall"] else "flat"
    ndcg = direction(picked["ndcg"][1], c) if picked["ndcg"] else "flat"
    if (mrr, rec) == ("flat", "flat"):
        meaning = {
            "flat": "no meaningful change",
            "up": "better ordering of the same documents",
            "down": "worse ordering of the same documents",
        }[ndcg]
    else:
        meaning = MEANINGS[(mrr, rec)]
    return f"{', '.join(words)}: {meaning}"


# pairs of slices whose opposite moves on the primary metric mean something
PAIR_READINGS: tuple[tuple[str, str, dict[tuple[str, str], str]], ...] = (
    (
        "head",
        "tail",
        {
            ("up", "down"): "over-fitted to frequent queries",
            ("down", "up"): "gains on rare queries at the cost of frequent ones",
        },
    ),
    (
        "semantic",
        "exact-match",
        {
            ("up", "down"): "paraphrases gained, exact matches lost",
            ("down", "up"): "exact matches gained, paraphrases lost",
        },
    ),
)


def pair_notes(slices: Mapping[str, Mapping[str, MetricChange]], c: Criteria) -> list[str]:
    """One line per pair of PAIR_READINGS whose slices both exist and move as a reading says,
    on the primary metric (``slices``: slice -> metric -> change, of the primary index)."""
    notes = []
    for first, second, meaning in PAIR_READINGS:
        if first not in slices or second not in slices:
            continue
        d1 = direction(slices[first].get(c.primary), c)
        d2 = direction(slices[second].get(c.primary), c)
        text = meaning.get((d1, d2))
        if text:
            notes.append(f"{first} {d1}, {second} {d2}: {text}")
    return notes


def regressions(changes: Changes) -> list[str]:
    """Every significant drop, as ``index/slice/metric delta (p adj. ...)``, sorted."""
    return sorted(
        f"{index}/{name}/{metric} {m.delta:+.4f} (p adj. {m.p_randomization_adjusted:.3g})"
        for index, slices in changes.items()
        for name, metrics in slices.items()
        for metric, m in metrics.items()
        if m.significant and m.delta < 0
    )


def blocking(slices: Mapping[str, Mapping[str, MetricChange]], c: Criteria) -> list[str]:
    """What keeps B from being a candidate in the primary index's ``slices``: a primary gain
    below ``min_gain``, or a significant regression of any metric, per slice."""
    out = []
    for name, metrics in slices.items():
        m = metrics[c.primary]
        if m.delta < c.min_gain:
            out.append(f"{name}: {c.primary} {m.delta:+.4f} < min_gain {c.min_gain:g}")
        down = [k for k, v in metrics.items() if v.significant and v.delta < 0]
        if down:
            out.append(f"{name}: significant regression in {', '.join(down)}")
    return out


def verdict(identical: bool, changes: Changes, primary_index: str, c: Criteria) -> CompareVerdict:
    """The verdict: no difference when A and B score every query identically; a candidate when
    every slice of the primary index gains at least ``min_gain`` and nothing regresses
    significantly; otherwise not a candidate, blocked by the first reason."""
    if identical:
        return CompareVerdict("no difference", "A and B score every query identically", (), ())
    found = regressions(changes)
    blocked = blocking(changes[primary_index], c)
    if not blocked and not found:
        return CompareVerdict(
            "candidate",
            f"B gains at least {c.min_gain:g} {c.primary} in every slice of "
            f"{primary_index} and no slice regresses significantly",
            (),
            (),
        )
    first = blocked[0] if blocked else found[0]
    return CompareVerdict("not a candidate", f"blocked by {first}", tuple(blocked), tuple(found))


def example_positions(delta: np.ndarray, n: int = EXAMPLES) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the ``n`` biggest losers (most negative ``delta`` first) and the ``n``
    biggest gainers (most positive first); a zero change is neither. Ties keep query order
    (losers) or reverse query order (gainers)."""
    order = np.argsort(delta, kind="stable")
    losers = [i for i in order[:n] if delta[i] < 0]
    gainers = [i for i in order[::-1][:n] if delta[i] > 0]
    return np.array(losers, dtype=np.int64), np.array(gainers, dtype=np.int64)
