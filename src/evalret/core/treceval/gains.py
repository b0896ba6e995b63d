"""The gain-based measures of trec_eval (G, ndcg, dcg, ideal_dcg, ndcg_rel, Rndcg, rbp): each
grade's gain (the grade itself unless a ``level=gain`` parameter sets it), and the walk down
the ideal ordering they share. Each function states its formula; trec_eval's order of
floating-point operations is kept, so that the values agree to the last bit. Past the ideal
ordering's end a walk visits only the ranks whose gain is not 0 (``Gains.events``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from evalret.core.relevance import is_judged
from evalret.core.treceval.ranking import Ranking

Pairs = tuple[tuple[str, float], ...]


def _is_int(text: str) -> bool:
    body = text[1:] if text[:1] in "+-" else text
    return body.isdigit() and body.isascii()


@dataclass
class Gains:
    """(grade, gain, judged documents at that grade), by increasing gain."""

    levels: list[tuple[int, float, int]]

    @classmethod
    def of(cls, q: Ranking, pairs: Pairs) -> Gains:
        """Gains from ``pairs`` (``level=gain``, non-integer levels ignored) and, for every
        other grade 0..max of the query, the grade itself."""
        given = [[int(name), value, 0] for name, value in pairs if _is_int(name)]
        for grade in range(q.num_rel_levels):
            for entry in given:
                if entry[0] == grade:
                    entry[2] = q.rel_levels[grade]
                    break
            else:
                given.append([grade, float(grade), q.rel_levels[grade]])
        # trec_eval compares gains as (int)(g1 - g2): gains less than 1 apart tie
        levels = [(int(g), float(v), int(n)) for g, v, n in given]
        ordered = sorted(levels, key=lambda e: math.trunc(e[1]))
        return cls(ordered)

    def gain(self, grade: int) -> float:
        for g, v, _ in self.levels:
            if g == grade:
                return v
        return 0.0

    def events(self, q: Ranking, start: int = 0) -> list[tuple[int, float]]:
        """(0-based rank, gain) of the ranks from ``start`` on whose gain is not 0."""
        if all(v == g for g, v, _ in self.levels):  # gains are the grades: the positive ranks
            pairs = zip(q.positive, q.positive_grades, strict=True)
            return [(i, float(g)) for i, g in pairs if i >= start]
        gains = {g: self.gain(g) for g, _, _ in self.levels}
        if all(is_judged(g) for g, v in gains.items() if v != 0):  # only judged ranks gain
            events = [(i, gains.get(q.grade(i), 0.0)) for i in q.judged if i >= start]
            return [(i, v) for i, v in events if v != 0]
        rels = q.rels[start:]
        values = {r: self.gain(r) for r in np.unique(rels).tolist()}
        nonzero = [r for r, v in values.items() if v != 0]
        at = np.flatnonzero(np.isin(rels, nonzero)).tolist()
        return [(start + i, values[q.grade(start + i)]) for i in at]


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


def dcg_pair(q: Ranking, pairs: Pairs) -> tuple[float, float]:
    """(DCG, ideal DCG) over the whole ranking: sum gain(rank i) / log2(i + 1), the ideal one over
    the query's judged documents in decreasing gain, as long as the gain is positive."""
    gains = Gains.of(q, pairs)
    ideal = Ideal(gains)
    dcg = ideal_dcg = 0.0
    i = 0
    n = q.num_ret
    while i < n and ideal.gain > 0.0:
        g = gains.gain(q.grade(i))
        if g != 0:
            dcg += g / math.log2(i + 2)
        if ideal.step() > 0.0:
            ideal_dcg += ideal.gain / math.log2(i + 2)
        i += 1
    for j, g in gains.events(q, i):
        dcg += g / math.log2(j + 2)
    i = max(i, n)
    while ideal.gain > 0.0:
        if ideal.step() > 0.0:
            ideal_dcg += ideal.gain / math.log2(i + 2)
        i += 1
    return dcg, ideal_dcg


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
    gains = Gains.of(q, pairs)
    ideal = Ideal(gains)
    dcg = ideal_dcg = total = 0.0
    rel_ret = rel = 0
    i, n = 0, q.num_ret
    while i < n and ideal.gain > 0.0:
        g = gains.gain(q.grade(i))
        if g != 0:
            dcg += g / math.log2(i + 2)
        if ideal.step() > 0.0:
            rel += 1
            ideal_dcg += ideal.gain / math.log2(i + 2)
        if g > 0:
            total += _div(dcg, ideal_dcg)
            rel_ret += 1
        i += 1
    for j, g in gains.events(q, i):
        dcg += g / math.log2(j + 2)
        if g > 0:
            total += _div(dcg, ideal_dcg)
            rel_ret += 1
    i = max(i, n)
    while ideal.gain > 0.0:
        if ideal.step() > 0.0:
            rel += 1
            ideal_dcg += ideal.gain / math.log2(i + 2)
        i += 1
    total += _div((rel - rel_ret) * dcg, ideal_dcg)
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
    gains = Gains.of(q, pairs)
    if q.num_rel == 0:
        return 0.0
    ideal = Ideal(gains)
    points = _Points(ideal.gain)
    dcg = ideal_dcg = 0.0
    i, n = 0, q.num_ret
    while i < n and ideal.gain > 0.0:
        g = gains.gain(q.grade(i))
        points.at(ideal.step(), dcg, ideal_dcg)
        if g != 0:
            dcg += g / math.log2(i + 2)
        if ideal.gain > 0.0:
            ideal_dcg += ideal.gain / math.log2(i + 2)
        i += 1
    if i < n:
        for j, g in gains.events(q, i):
            dcg += g / math.log2(j + 2)
        i = n
        points.read(dcg, ideal_dcg)
    while ideal.gain > 0.0:
        points.at(ideal.step(), dcg, ideal_dcg)
        if ideal.gain > 0.0:
            ideal_dcg += ideal.gain / math.log2(i + 2)
        i += 1
    return _div(points.total, float(points.n))


def g_measure(q: Ranking, pairs: Pairs) -> float:
    """G: sum over ranks of gain / log2(2 + ideal cost so far - gain so far), the cost the
    ideal gain (at least 1 a rank), / the ideal's total gain."""
    gains = Gains.of(q, pairs)
    ideal = Ideal(gains)
    results_g = sum_results = sum_ideal = sum_cost = 0.0
    i, n = 0, q.num_ret
    while i < n and ideal.gain > 0.0:
        g = gains.gain(q.grade(i))
        sum_results += g
        if ideal.step() > 0.0:
            sum_ideal += ideal.gain
        sum_cost += ideal.gain if ideal.gain >= 1.0 else 1.0
        if g != 0:
            results_g += _div(g, _c_log2(2 + sum_cost - sum_results))
        i += 1
    if sum_cost == math.floor(sum_cost) and abs(sum_cost) + n < 2**52:
        # sum_cost grows by 1.0 a rank, exactly while it is a whole number: read it at the events
        base, start = sum_cost, i
        for j, g in gains.events(q, i):
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
    while ideal.gain > 0.0:
        if ideal.step() > 0.0:
            sum_ideal += ideal.gain
        i += 1
    return results_g / sum_ideal if sum_ideal > 0.0 else 0.0


def rbp(q: Ranking, pairs: Pairs) -> float:
    """Rank-biased precision (Moffat & Zobel 2008): (1 - p) sum gain(i) p^(i-1), p 0.9 unless
    ``p=`` sets it; gains outside [0, 1] are scaled into it by (gain - min) / (max - min)."""
    p = 0.9
    for name, value in pairs:
        if name == "p":
            p = value
    gains = Gains.of(q, pairs)
    low = min([0.0, *(v for _, v, _ in gains.levels)])
    high = max([0.0, *(v for _, v, _ in gains.levels)])
    if low < 0 or high > 1:
        gains.levels = [(g, (v - low) / (high - low), n) for g, v, n in gains.levels]
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
