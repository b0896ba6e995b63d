"""trec_eval's measures (those ``-m all_trec`` names, with ``dcg`` and ``ideal_dcg``), one
function each on a query's ``Ranking``, and ``MEASURES``: their table in trec_eval's print
order, with each one's kind of value, kind of parameter and default parameters (its cut list).

Conventions every function keeps (trec_eval's): ``rels[i]`` is relevant when it is >= the
relevance level; a measure that cannot be computed for a query (no relevant document, nothing
retrieved) is 0; cutoffs count ranks of the ranking as formed (after ``-M`` and ``-J``).

Each walks only the ranks where its value can change (the ``Ranking``'s relevant, judged,
positive or pooled ranks) and finds a cutoff's value by bisection, adding the same terms in
the same order as a walk down every rank would, so the values are trec_eval's to the bit."""

from __future__ import annotations

import functools
import math
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evalret.core.relevance import is_judged, is_relevant
from evalret.core.treceval import gains
from evalret.core.treceval.ranking import NONPOOL, UNJUDGED, Ranking, Settings

MIN_GEO_MEAN = 0.00001  # the floor of a value whose logarithm a geometric mean averages
INFAP_EPSILON = 0.00001

Kind = Literal["runid", "num_q", "long", "double", "gm", "cuts", "relstring"]
ParamKind = Literal["none", "cut_long", "cut_double", "double", "pairs"]


def _rel(q: Ranking, s: Settings) -> list[int]:
    """The 0-based ranks of the documents relevant at ``s``'s level, ascending."""
    if q.level == s.relevance_level:
        return q.relevant
    return [i for i, r in enumerate(q.rels.tolist()) if is_relevant(r, s.relevance_level)]


def _precisions(rel: list[int]) -> list[float]:
    """The running sum of precision at the relevant ranks: entry j after j of them."""
    out, total = [0.0], 0.0
    for found, i in enumerate(rel, start=1):
        total += found / (i + 1)
        out.append(total)
    return out


def average_precision(q: Ranking, s: Settings, p: Any) -> float:
    """Sum of precision at each relevant rank / R (0 when none is retrieved)."""
    rel = _rel(q, s)
    return _precisions(rel)[-1] / q.num_rel if rel else 0.0


def gm_ap(q: Ranking, s: Settings, p: Any) -> float:
    """log(max(AP, MIN_GEO_MEAN)): what the geometric mean of AP averages."""
    return math.log(max(average_precision(q, s, p), MIN_GEO_MEAN))


def r_precision(q: Ranking, s: Settings, p: Any) -> float:
    """Relevant documents in the top R / R."""
    n = min(q.num_ret, q.num_rel)
    return bisect_left(_rel(q, s), n) / q.num_rel if n else 0.0


def _bpref(q: Ranking, s: Settings) -> float:
    key = ("bpref", s.relevance_level)
    got: float | None = q.memo.get(key)
    if got is None:
        got = q.memo[key] = _bpref_of(q, s)
    return got


def _bpref_of(q: Ranking, s: Settings) -> float:
    nonrel_total = sum(q.rel_levels[: max(s.relevance_level, 0)])
    nonrel = 0
    total = 0.0
    for r in q.judged_grades:
        if not is_relevant(r, s.relevance_level):
            nonrel += 1
        elif nonrel > 0:
            total += 1.0 - min(nonrel, q.num_rel) / min(nonrel_total, q.num_rel)
        else:
            total += 1.0
    return total / q.num_rel if q.num_rel else total


def bpref(q: Ranking, s: Settings, p: Any) -> float:
    """Each judged relevant document retrieved: 1 - min(n, R) / min(N, R), n the judged
    non-relevant documents above it, N all judged non-relevant ones; summed / R."""
    return _bpref(q, s)


def gm_bpref(q: Ranking, s: Settings, p: Any) -> float:
    """log(max(bpref, MIN_GEO_MEAN))."""
    return math.log(max(_bpref(q, s), MIN_GEO_MEAN))


def recip_rank(q: Ranking, s: Settings, p: Any) -> float:
    """1 / the rank of the first relevant document (0 when none)."""
    rel = _rel(q, s)
    return 1.0 / (rel[0] + 1) if rel else 0.0


def _at_cutoffs(q: Ranking, s: Settings, cuts: list[int]) -> list[int]:
    """Relevant documents within each cutoff (made once per cut list: P, recall and
    relative_P share trec_eval's)."""
    key = ("at", s.relevance_level, *cuts)
    got: list[int] | None = q.memo.get(key)
    if got is None:
        rel = _rel(q, s)
        got = q.memo[key] = [bisect_left(rel, k) for k in cuts]
    return got


def precision(q: Ranking, s: Settings, cuts: list[int]) -> list[float]:
    """Relevant in the top k / k."""
    return [n / k for n, k in zip(_at_cutoffs(q, s, cuts), cuts, strict=True)]


def recall(q: Ranking, s: Settings, cuts: list[int]) -> list[float]:
    """Relevant in the top k / R."""
    if q.num_rel == 0:
        return [0.0] * len(cuts)
    return [n / q.num_rel for n in _at_cutoffs(q, s, cuts)]


def relative_precision(q: Ranking, s: Settings, cuts: list[int]) -> list[float]:
    """Relevant in the top k / min(k, R)."""
    if q.num_rel == 0:
        return [0.0] * len(cuts)
    return [n / min(k, q.num_rel) for n, k in zip(_at_cutoffs(q, s, cuts), cuts, strict=True)]


def success(q: Ranking, s: Settings, cuts: list[int]) -> list[float]:
    """1 when a relevant document is in the top k."""
    return [1.0 if n else 0.0 for n in _at_cutoffs(q, s, cuts)]


def map_cut(q: Ranking, s: Settings, cuts: list[int]) -> list[float]:
    """AP over the top k: sum of precision at the relevant ranks <= k, / R."""
    if q.num_rel == 0:
        return [0.0] * len(cuts)
    rel = _rel(q, s)
    running = _precisions(rel)
    n = q.num_ret
    return [(running[bisect_left(rel, min(k, n))] if n else 0.0) / q.num_rel for k in cuts]


def unjudged_at(q: Ranking, s: Settings, cuts: list[int]) -> list[float]:
    """Unjudged documents (not in the qrels, or with a negative grade) in the top k / k."""
    n = q.num_ret
    return [(min(k, n) - bisect_left(q.judged, k)) / k for k in cuts]


def ndcg_cut(q: Ranking, s: Settings, cuts: list[int]) -> list[float]:
    """DCG of the top k (gain = the grade when positive) / the ideal DCG of the top k, the
    ideal ordering all the query's positive grades, highest first."""
    dcg, total = [0.0], 0.0
    for i, r in zip(q.positive, q.positive_grades, strict=True):
        total += r / math.log2(i + 2)
        dcg.append(total)
    n = q.num_ret
    ideal = _ideal_cut(q.rel_levels)
    out = []
    for k in cuts:
        got = dcg[bisect_left(q.positive, min(k, n))]
        best = ideal[min(k, len(ideal)) - 1] if ideal else 0.0
        out.append(got / best if best > 0.0 else got)
    return out


@functools.lru_cache(maxsize=4096)
def _ideal_cut(rel_levels: tuple[int, ...]) -> list[float]:
    """ndcg_cut's ideal DCG after each rank: the positive grades, highest first (read-only)."""
    top = max((g for g, n in enumerate(rel_levels) if n), default=0)
    ideal_grades = [g for g in range(top, 0, -1) for _ in range(rel_levels[g])]
    ideal, total = [], 0.0
    for i, g in enumerate(ideal_grades):
        total += g / math.log2(i + 2)
        ideal.append(total)
    return ideal


def _interpolated(q: Ranking, s: Settings, percents: list[float]) -> list[float]:
    """Interpolated precision at each recall level (v10: the rank cutoff is round(level * R)),
    made once per query and levels (iprec_at_recall and 11pt_avg share trec_eval's)."""
    key = ("interpolated", s.relevance_level, *percents)
    got: list[float] | None = q.memo.get(key)
    if got is None:
        got = q.memo[key] = _interpolated_of(q, s, percents)
    return got


def _interpolated_of(q: Ranking, s: Settings, percents: list[float]) -> list[float]:
    cuts = list(_recall_cuts(tuple(percents), q.num_rel))
    out = [0.0] * len(cuts)
    cur = len(cuts) - 1
    while cur >= 0 and cuts[cur] > q.num_rel_ret:
        cur -= 1
    best = q.num_rel_ret / q.num_ret if q.num_ret else math.nan
    found = q.num_rel_ret
    for i in _walk_up(q, s):
        if found <= 0:
            break
        here = found / i
        best = max(best, here) if not math.isnan(best) else here
        if is_relevant(q.grade(i - 1), s.relevance_level):
            while cur >= 0 and found == cuts[cur]:
                out[cur] = best
                cur -= 1
            found -= 1
    while cur >= 0:
        out[cur] = best
        cur -= 1
    return out


def _walk_up(q: Ranking, s: Settings) -> Sequence[int]:
    """The 1-based ranks a walk from the last rank up, counting down the relevant retrieved
    documents, must visit: only the relevant ones, where their count is the relevant retrieved
    (the precision found / i peaks at them, and each is read there); every rank otherwise (a
    level below 0, where documents not judged count as relevant)."""
    rel = _rel(q, s)
    if len(rel) == q.num_rel_ret:
        return [i + 1 for i in reversed(rel)]
    return range(q.num_ret, 0, -1)


@functools.lru_cache(maxsize=1024)
def _recall_cuts(percents: tuple[float, ...], num_rel: int) -> tuple[int, ...]:
    return tuple(_lround(x * num_rel) for x in percents)


def _lround(x: float) -> int:
    """C's lround: to the nearest integer, halves away from zero."""
    whole = math.floor(abs(x))
    rounded = whole + 1 if abs(x) - whole >= 0.5 else whole
    return rounded if x >= 0 else -rounded


def iprec_at_recall(q: Ranking, s: Settings, percents: list[float]) -> list[float]:
    """Interpolated precision (the best precision at any rank at or below) at each recall."""
    return list(_interpolated(q, s, percents))


def eleven_point(q: Ranking, s: Settings, percents: list[float]) -> float:
    """The mean of the interpolated precisions at the recall levels (0.0, 0.1, ..., 1.0)."""
    total = 0.0
    for v in reversed(_interpolated(q, s, percents)):
        total += v
    return total / len(percents)


def rprec_mult(q: Ranking, s: Settings, mults: list[float]) -> list[float]:
    """Precision at the rank (long)(m * R + 0.9) for each multiple m of R (past the ranking's
    end: relevant retrieved / that rank)."""
    cuts = [int(m * q.num_rel + 0.9) for m in mults]
    out = [0.0] * len(cuts)
    cur = len(cuts) - 1
    while cur >= 0 and cuts[cur] > q.num_ret:
        out[cur] = q.num_rel_ret / cuts[cur] if cuts[cur] else math.nan
        cur -= 1
    rel = _rel(q, s)
    if len(rel) == q.num_rel_ret:  # found at rank i is the relevant ranks up to i
        while cur >= 0 and cuts[cur] > 0:
            out[cur] = bisect_left(rel, cuts[cur]) / cuts[cur]
            cur -= 1
        return out
    found = q.num_rel_ret
    i = q.num_ret
    while i > 0 and found > 0:
        here = found / i
        while cur >= 0 and i == cuts[cur]:
            out[cur] = here
            cur -= 1
        if is_relevant(q.grade(i - 1), s.relevance_level):
            found -= 1
        i -= 1
    return out


def infap(q: Ranking, s: Settings, p: Any) -> float:
    """Inferred AP (Yilmaz & Aslam 2006): precision at each relevant rank estimated from the
    judged documents above it, documents pooled but unjudged left out."""
    nonrel = rel = pooled = 0
    total = 0.0
    for j, r in q.pooled_grades.items():
        if r == NONPOOL:
            continue
        if r == UNJUDGED:
            pooled += 1
            continue
        if is_judged(r) and not is_relevant(r, s.relevance_level):
            nonrel += 1
            continue
        rel += 1
        if j == 0:
            total += 1.0
        else:
            fj = float(j)
            total += 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * ((rel - 1 + nonrel + pooled) / fj) * (
                (rel - 1 + INFAP_EPSILON) / (rel - 1 + nonrel + 2 * INFAP_EPSILON)
            )
    return total / q.num_rel if q.num_rel else total


def utility(q: Ranking, s: Settings, c: list[float]) -> float:
    """c0 rel_ret + c1 nonrel_ret + c2 rel_not_ret + c3 nonrel_not_ret (default 1, -1, 0, 0)."""
    if len(c) != 4:
        raise ValueError("utility takes 4 coefficients")
    return (
        c[0] * q.num_rel_ret
        + c[1] * (q.num_ret - q.num_rel_ret)
        + c[2] * (q.num_rel - q.num_rel_ret)
        + c[3] * (s.docs_in_collection + q.num_rel_ret - q.num_ret - q.num_rel)
    )


def bin_g(q: Ranking, s: Settings, p: Any) -> float:
    """Sum over relevant ranks of 1 / log2(2 + non-relevant documents above), / R."""
    found, total = 0, 0.0
    for found, i in enumerate(_rel(q, s), start=1):
        total += 1.0 / math.log2(3 + i - found)
    return total / q.num_rel if found else 0.0


def set_p(q: Ranking, s: Settings, p: Any) -> float:
    """Relevant retrieved / retrieved."""
    return q.num_rel_ret / q.num_ret if q.num_ret else 0.0


def set_relative_p(q: Ranking, s: Settings, p: Any) -> float:
    """Relevant retrieved / min(retrieved, R)."""
    if q.num_ret and q.num_rel:
        return q.num_rel_ret / min(q.num_ret, q.num_rel)
    return 0.0


def set_recall(q: Ranking, s: Settings, p: Any) -> float:
    """Relevant retrieved / R."""
    return q.num_rel_ret / q.num_rel if q.num_rel else 0.0


def set_map(q: Ranking, s: Settings, p: Any) -> float:
    """set_P x set_recall."""
    if q.num_ret and q.num_rel:
        return (float(q.num_rel_ret) * float(q.num_rel_ret)) / (float(q.num_ret) * float(q.num_rel))
    return 0.0


def set_f(q: Ranking, s: Settings, c: list[float]) -> float:
    """(beta + 1) P R / (beta P + R) of the whole retrieved set, beta 1 by default (trec_eval's
    parameter is beta itself, not beta squared)."""
    if not q.num_rel_ret:
        return 0.0
    prec = q.num_rel_ret / q.num_ret
    rec = q.num_rel_ret / q.num_rel
    x = c[0]
    return (x + 1.0) * prec * rec / (x * prec + rec)


def relstring(q: Ranking, s: Settings, c: list[float]) -> str:
    """The first N (10) grades as characters: 0-9, '>' above 9, '-' not in the qrels, '.'
    pooled but unjudged."""
    n = max(min(int(c[0]), q.num_ret), 0)
    return "".join(
        ">" if r > 9 else str(r) if r >= 0 else "-" if r == NONPOOL else "."
        for r in q.rels[:n].tolist()
    )


def _pairs(fn: Callable[[Ranking, gains.Pairs], float]) -> Callable[..., float]:
    def call(q: Ranking, s: Settings, p: gains.Pairs) -> float:
        return fn(q, p)

    call.__doc__ = fn.__doc__
    return call


@dataclass(frozen=True)
class Measure:
    """One trec_eval measure: its name, what it prints (``kind``), its parameter's kind and
    default (a cut list, coefficients or ``level=gain`` pairs), and its per-query function."""

    name: str
    kind: Kind
    params: ParamKind
    default: tuple[Any, ...]
    fn: Callable[..., Any] | None


CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
RECALLS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def _count(attr: str, doc: str) -> Callable[..., float]:
    def count(q: Ranking, s: Settings, p: Any) -> float:
        return float(getattr(q, attr))

    count.__doc__ = doc
    return count


def _nonrel_judged(q: Ranking, s: Settings, p: Any) -> float:
    """Judged non-relevant documents retrieved (the 'all' line: their sum)."""
    return float(q.num_ret - q.num_nonpool - q.num_unjudged - q.num_rel_ret)


_RET = "Documents retrieved (the 'all' line: their sum)."
_REL = "R, the judged relevant documents (the 'all' line: their sum)."
_REL_RET = "Relevant documents retrieved (the 'all' line: their sum)."
MEASURES: tuple[Measure, ...] = (
    Measure("runid", "runid", "none", (), None),
    Measure("num_q", "num_q", "none", (), None),
    Measure("num_ret", "long", "none", (), _count("num_ret", _RET)),
    Measure("num_rel", "long", "none", (), _count("num_rel", _REL)),
    Measure("num_rel_ret", "long", "none", (), _count("num_rel_ret", _REL_RET)),
    Measure("map", "double", "none", (), average_precision),
    Measure("gm_map", "gm", "none", (), gm_ap),
    Measure("Rprec", "double", "none", (), r_precision),
    Measure("bpref", "double", "none", (), bpref),
    Measure("recip_rank", "double", "none", (), recip_rank),
    Measure("iprec_at_recall", "cuts", "cut_double", RECALLS, iprec_at_recall),
    Measure("P", "cuts", "cut_long", CUTS, precision),
    Measure("relstring", "relstring", "double", (10.0,), relstring),
    Measure("recall", "cuts", "cut_long", CUTS, recall),
    Measure("infAP", "double", "none", (), infap),
    Measure("gm_bpref", "gm", "none", (), gm_bpref),
    Measure("Rprec_mult", "cuts", "cut_double", tuple(x / 10 for x in range(2, 21, 2)), rprec_mult),
    Measure("utility", "double", "double", (1.0, -1.0, 0.0, 0.0), utility),
    Measure("11pt_avg", "double", "double", RECALLS, eleven_point),
    Measure("binG", "double", "none", (), bin_g),
    Measure("G", "double", "pairs", (), _pairs(gains.g_measure)),
    Measure("dcg", "double", "pairs", (), _pairs(gains.dcg)),
    Measure("ideal_dcg", "double", "pairs", (), _pairs(gains.ideal_dcg)),
    Measure("ndcg", "double", "pairs", (), _pairs(gains.ndcg)),
    Measure("ndcg_rel", "double", "pairs", (), _pairs(gains.ndcg_rel)),
    Measure("Rndcg", "double", "pairs", (), _pairs(gains.rndcg)),
    Measure("ndcg_cut", "cuts", "cut_long", CUTS, ndcg_cut),
    Measure("map_cut", "cuts", "cut_long", CUTS, map_cut),
    Measure("relative_P", "cuts", "cut_long", CUTS, relative_precision),
    Measure("success", "cuts", "cut_long", (1, 5, 10), success),
    Measure("set_P", "double", "none", (), set_p),
    Measure("set_relative_P", "double", "none", (), set_relative_p),
    Measure("set_recall", "double", "none", (), set_recall),
    Measure("set_map", "double", "none", (), set_map),
    Measure("set_F", "double", "double", (1.0,), set_f),
    Measure("num_nonrel_judged_ret", "long", "none", (), _nonrel_judged),
    Measure("rbp", "double", "pairs", (), _pairs(gains.rbp)),
    Measure("rbp_resid", "double", "pairs", (), _pairs(gains.rbp_resid)),
    Measure("unj", "cuts", "cut_long", (5, 10, 20), unjudged_at),
)
BY_NAME = {m.name: m for m in MEASURES}

_OFFICIAL: tuple[str, ...] = (
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
)
_OFFICIAL += ("bpref", "recip_rank", "iprec_at_recall", "P")
NICKNAMES: dict[str, tuple[str, ...]] = {
    "official": _OFFICIAL,
    "all_trec": (
        *_OFFICIAL,
        *("relstring", "recall", "unj", "rbp", "rbp_resid", "infAP", "gm_bpref", "utility"),
        *("11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success", "map_cut", "ndcg_cut"),
        *("ndcg_rel", "Rndcg", "binG", "G", "set_P", "set_recall", "set_relative_P", "set_map"),
        *("set_F", "num_nonrel_judged_ret"),
    ),
    "set": (
        *("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P"),
        *("set_recall", "set_relative_P", "set_map", "set_F"),
    ),
}
