"""The gain-based measures of trec_eval (G, ndcg, dcg, ideal_dcg, ndcg_rel, Rndcg, rbp): each
grade's gain (the grade itself unless a ``level=gain`` parameter sets it), and the walk down
the ideal ordering they share. Each function states its formula; trec_eval's order of
floating-point operations is kept, so that the values agree to the last bit. Past the ideal
ordering's end a walk visits only the ranks whose gain is not 0 (``Gains.events``). The ideal
ordering depends only on the query's grade counts: its gains and sums are made once for each
(``Gains.of``), and what the walks of one query share once for the query (``_walk``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from evalret.core.relevance import is_judged
from evalret.core.treceval.ranking import NONPOOL, Ranking

Pairs = tuple[tuple[str, float], ...]


def _is_int(text: str) -> bool:
    body = text[1:] if text[:1] in "+-" else text
    return body.isdigit() and body.isascii()


@dataclass(frozen=True)
class Gains:
    """(grade, gain, judged documents at that grade), by increasing gain. Shared between the
    queries with the same grade counts (``of`` caches them): never changed once made."""

    levels: tuple[tuple[int, float, int], ...]

    @classmethod
    def of(cls, q: Ranking, pairs: Pairs) -> Gains:
        """Gains from ``pairs`` (``level=gain``, non-integer levels ignored) and, for every
        other grade 0..max of the query, the grade itself."""
        return _gains_of(q.rel_levels, pairs)

    @cached_property
    def table(self) -> dict[int, float]:
        """Grade -> gain (the first level with that grade)."""
        out: dict[int, float] = {}
        for g, v, _ in self.levels:
            out.setdefault(g, v)
        return out

    def gain(self, grade: int) -> float:
        return self.table.get(grade, 0.0)

    @cached_property
    def sequence(self) -> list[float]:
        """The ideal gain before its first step, then after each step (``Ideal.step``), up to
        and with the first that is not positive, where every walk of the ideal stops."""
        ideal = Ideal(self)
        out = [ideal.gain]
        while ideal.gain > 0.0:
            out.append(ideal.step())
        return out

    @cached_property
    def ideal_prefix(self) -> list[float]:
        """The ideal DCG after each of the ideal's positive ranks (0.0 first): each rank's gain
        / log2(rank + 1), added in rank order."""
        out, total = [0.0], 0.0
        for t, g in enumerate(self.sequence[1:-1], start=1):
            total += g / math.log2(t + 1)
            out.append(total)
        return out

    @cached_property
    def ideal_sum(self) -> float:
        """The ideal's positive gains added in rank order."""
        total = 0.0
        for g in self.sequence[1:-1]:
            total += g
        return total

    @cached_property
    def _plain(self) -> bool:
        """Whether the positive ranks are the ranks that gain, each its grade: every positive
        grade's gain is the grade, and every other grade's (0 and the negative ones, such as
        -1 for a document outside the qrels) is 0. A gain of -1 for grade -1 is the grade too,
        but those ranks gain (-1 each), so it is not plain."""
        return all(v == (g if g > 0 else 0) for g, v, _ in self.levels)

    @cached_property
    def _judged_gain(self) -> bool:
        return all(is_judged(g) for g, v in self.table.items() if v != 0)

    def events(self, q: Ranking, start: int = 0) -> list[tuple[int, float]]:
        """(0-based rank, gain) of the ranks from ``start`` on whose gain is not 0."""
        if self._plain:  # gains are the grades: the positive ranks
            pairs = zip(q.positive, q.positive_grades, strict=True)
            return [(i, float(g)) for i, g in pairs if i >= start]
        gains = self.table
        if self._judged_gain:  # only judged ranks gain
            grade_at = q.pooled_grades
            events = [(i, gains.get(grade_at[i], 0.0)) for i in q.judged if i >= start]
            return [(i, v) for i, v in events if v != 0]
        rels = q.rels[start:]
        values = {r: self.gain(r) for r in np.unique(rels).tolist()}
        nonzero = [r for r, v in values.items() if v != 0]
        at = np.flatnonzero(np.isin(rels, nonzero)).tolist()
        return [(start + i, values[q.grade(start + i)]) for i in at]


@lru_cache(maxsize=4096)
def _gains_of(rel_levels: tuple[int, ...], pairs: Pairs) -> Gains:
    top = [i for i, n in enumerate(rel_levels) if n]
    num_rel_levels = top[-1] + 1 if top else 0
    given = [[int(name), value, 0] for name, value in pairs if _is_int(name)]
    for grade in range(num_rel_levels):
        for entry in given:
            if entry[0] == grade:
                entry[2] = rel_levels[grade]
                break
        else:
            given.append([grade, float(grade), rel_levels[grade]])
    # trec_eval compares gains as (int)(g1 - g2): gains less than 1 apart tie
    levels = [(int(g), float(v), int(n)) for g, v, n in given]
    ordered = sorted(levels, key=lambda e: math.trunc(e[1]))
    return Gains(tuple(ordered))


class Ideal:
    """The ideal ordering's gains, one rank at a time: the highest gain first, as many times as
    the query has judged documents at it, then the next; 0 once the positive gains run out."""

    def __init__(self, gains: Gains) -> None:
        self.levels = gains.levels
        self.cur = len(self.levels) - 1
        self.gain = self.levels[self.cur][1] if self.cur >= 0 else 0.0
        self.at_level = 0

    def step(self) -> float:
        self.at_level += 1
        while self.cur >= 0 and self.at_level > self.levels[self.cur][2]:
            self.at_level = 1
            self.cur -= 1
            self.gain = self.levels[self.cur][1] if self.cur >= 0 else 0.0
        return self.gain


def _walk(q: Ranking, pairs: Pairs) -> tuple[Gains, list[float], list[tuple[int, float]]]:
    """What the walks of G, ndcg, ndcg_rel and Rndcg share for one query, made once (kept in
    ``q.memo``): the gains; the gain at each rank while the ideal's gain is positive (the
    ``head``, ranks 0..min(n, ideal's length) - 1); and the events past it (``Gains.events``)."""
    key = ("walk", pairs)
    got: tuple[Gains, list[float], list[tuple[int, float]]] | None = q.memo.get(key)
    if got is None:
        gains = Gains.of(q, pairs)
        table, grade_at = gains.table, q.pooled_grades
        m = min(q.num_ret, len(gains.sequence) - 1)
        head = [table.get(grade_at.get(i, NONPOOL), 0.0) for i in range(m)]
        got = q.memo[key] = (gains, head, gains.events(q, m))
    return got


def dcg_pair(q: Ranking, pairs: Pairs) -> tuple[float, float]:
    """(DCG, ideal DCG) over the whole ranking: sum gain(rank i) / log2(i + 1), the ideal one over
    the query's judged documents in decreasing gain, as long as the gain is positive."""
    gains, head, tail = _walk(q, pairs)
    dcg = 0.0
    for i, g in enumerate(head):
        if g != 0:
            dcg += g / math.log2(i + 2)
    for j, g in tail:
        dcg += g / math.log2(j + 2)
    return dcg, gains.ideal_prefix[-1]


def dcg(q: Ranking, pairs: Pairs) -> float:
    """DCG of the whole ranking: sum of gain(grade at rank i) / log2(i + 1)."""
    return dcg_pair(q, pairs)[0]


def ideal_dcg(q: Ranking, pairs: Pairs) -> float:
    """DCG of the ideal ordering of the query's judged documents (positive gains)."""
    return dcg_pair(q, pairs)[1]


def ndcg(q: Ranking, pairs: Pairs) -> float:
    """DCG / ideal DCG over the whole ranking (0 when the ideal is 0); gain = the grade."""
    dcg, ideal = dcg_pair(q, pairs)
    return dcg / ideal if ideal > 0.0 else 0.0


def ndcg_rel(q: Ranking, pairs: Pairs) -> float:
    """nDCG averaged over the ranks of the relevant (positive-gain) documents, the ideal's
    relevant documents not retrieved counting at the final nDCG; / their number."""
    gains, head, tail = _walk(q, pairs)
    prefix = gains.ideal_prefix
    rel = len(prefix) - 1  # the ideal's relevant documents
    dcg = total = 0.0
    rel_ret = 0
    for i, g in enumerate(head):
        if g != 0:
            dcg += g / math.log2(i + 2)
        if g > 0:
            total += _div(dcg, prefix[min(i + 1, rel)])
            rel_ret += 1
    ideal_dcg = prefix[min(len(head), rel)]
    for j, g in tail:
        dcg += g / math.log2(j + 2)
        if g > 0:
            total += _div(dcg, ideal_dcg)
            rel_ret += 1
    total += _div((rel - rel_ret) * dcg, prefix[rel])
    return _div(total, float(rel)) if total > 0.0 else 0.0


def _div(a: float, b: float) -> float:
    """a / b as C divides doubles (x / 0 is +-inf, 0 / 0 is NaN)."""
    if b != 0.0:
        return a / b
    if a == 0.0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _c_log2(x: float) -> float:
    """log2 as C's ``log(x) / log(2.0)`` reads it: NaN below 0, -inf at 0 (G's cost minus its
    gain can go there when custom gains exceed the ideal's)."""
    if x < 0.0 or math.isnan(x):
        return math.nan
    return -math.inf if x == 0.0 else math.log2(x)


class _Points:
    """The nDCG values Rndcg averages: read where the ideal gain changes."""

    def __init__(self, gain: float) -> None:
        self.old, self.total, self.n = gain, 0.0, 0

    def read(self, dcg: float, ideal_dcg: float) -> None:
        if ideal_dcg > 0.0:
            self.total += dcg / ideal_dcg
            self.n += 1

    def at(self, gain: float, dcg: float, ideal_dcg: float) -> None:
        if gain != self.old:
            self.read(dcg, ideal_dcg)
            self.old = gain


def rndcg(q: Ranking, pairs: Pairs) -> float:
    """nDCG read at each rank where the ideal gain changes (and at the ranking's end), averaged
    over those points; 0 when the query has no relevant document."""
    gains, head, tail = _walk(q, pairs)
    if q.num_rel == 0:
        return 0.0
    seq = gains.sequence
    points = _Points(seq[0])
    dcg = ideal_dcg = 0.0
    for i, g in enumerate(head):
        gain = seq[i + 1]
        points.at(gain, dcg, ideal_dcg)
        if g != 0:
            dcg += g / math.log2(i + 2)
        if gain > 0.0:
            ideal_dcg += gain / math.log2(i + 2)
    step = i = len(head)
    if i < q.num_ret:
        for j, g in tail:
            dcg += g / math.log2(j + 2)
        i = q.num_ret
        points.read(dcg, ideal_dcg)
    while seq[step] > 0.0:
        step += 1
        points.at(seq[step], dcg, ideal_dcg)
        if seq[step] > 0.0:
            ideal_dcg += seq[step] / math.log2(i + 2)
        i += 1
    return _div(points.total, float(points.n))


def g_measure(q: Ranking, pairs: Pairs) -> float:
    """G: sum over ranks of gain / log2(2 + ideal cost so far - gain so far), the cost the
    ideal gain (at least 1 a rank), / the ideal's total gain."""
    gains, head, tail = _walk(q, pairs)
    seq = gains.sequence
    results_g = sum_results = sum_cost = 0.0
    for i, g in enumerate(head):
        sum_results += g
        gain = seq[i + 1]
        sum_cost += gain if gain >= 1.0 else 1.0
        if g != 0:
            results_g += _div(g, _c_log2(2 + sum_cost - sum_results))
    i, n = len(head), q.num_ret
    if sum_cost == math.floor(sum_cost) and abs(sum_cost) + n < 2**52:
        # sum_cost grows by 1.0 a rank, exactly while it is a whole number: read it at the events
        base, start = sum_cost, i
        for j, g in tail:
            sum_results += g
            sum_cost = base + (j - start + 1)
            results_g += _div(g, _c_log2(2 + sum_cost - sum_results))
        i = max(i, n)
    while i < n:
        g = gains.gain(q.grade(i))
        sum_results += g
        sum_cost += 1.0
        if g != 0:
            results_g += _div(g, _c_log2(2 + sum_cost - sum_results))
        i += 1
    sum_ideal = gains.ideal_sum
    return results_g / sum_ideal if sum_ideal > 0.0 else 0.0


def rbp(q: Ranking, pairs: Pairs) -> float:
    """Rank-biased precision (Moffat & Zobel 2008): (1 - p) sum gain(i) p^(i-1), p 0.9 unless
    ``p=`` sets it; gains outside [0, 1] are scaled into it by (gain - min) / (max - min)."""
    p = 0.9
    for name, value in pairs:
        if name == "p":
            p = value
    gains = _rbp_gains(q.rel_levels, pairs)
    powers = _power_list(p, q.num_ret)
    total = 0.0
    for j, g in gains.events(q):
        total += g * powers[j]
    return (1.0 - p) * total


def rbp_resid(q: Ranking, pairs: Pairs) -> float:
    """The RBP residual: p^n + (1 - p) sum over unjudged ranks i of p^(i-1); 0 when every
    document retrieved is judged."""
    p = 0.9
    for name, value in pairs:
        if name == "p":
            p = value
    powers = _powers(p, q.num_ret)
    unjudged = ~is_judged(q.rels)
    if not unjudged.any():
        return 0.0
    total = float(np.cumsum(powers[:-1][unjudged])[-1])  # cumsum adds in rank order
    return float(powers[-1]) + (1 - p) * total


@lru_cache(maxsize=4096)
def _rbp_gains(rel_levels: tuple[int, ...], pairs: Pairs) -> Gains:
    """The gains rbp weighs: outside [0, 1], scaled into it by (gain - min) / (max - min)."""
    gains = _gains_of(rel_levels, pairs)
    low = min([0.0, *(v for _, v, _ in gains.levels)])
    high = max([0.0, *(v for _, v, _ in gains.levels)])
    if low < 0 or high > 1:
        return Gains(tuple((g, (v - low) / (high - low), n) for g, v, n in gains.levels))
    return gains


@lru_cache(maxsize=64)
def _powers(p: float, n: int) -> np.ndarray:
    """1, p, p*p, ... (n + 1 of them), each the one before times p, as a walk multiplies; made
    once for each (p, n), as most queries of a run retrieve as many documents (read-only)."""
    steps = np.full(n + 1, p, dtype=np.float64)
    steps[0] = 1.0
    powers = np.multiply.accumulate(steps)
    powers.flags.writeable = False
    return powers


@lru_cache(maxsize=64)
def _power_list(p: float, n: int) -> list[float]:
    """``_powers`` as a list (rbp's walk reads it item by item; do not change it)."""
    powers: list[float] = _powers(p, n).tolist()
    return powers
