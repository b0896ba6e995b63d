"""`evalret compare`: two runs of the same golden set side by side, with the statistics to trust
the difference. Pure apart from reading values out of the two reports: no files, models or output.

Per index, slice and metric: A, B, delta = B - A, a percentile bootstrap interval of the delta
(queries resampled, paired), two-sided p-values from a paired randomization test and a paired
t-test, both corrected across every (index, slice, metric) test, the minimum detectable effect
for the slice's size, and per-query wins, ties and losses. Rank drift between the two rankings
(Jaccard@10 and extrapolated rank-biased overlap) shows change even when means are flat.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evalret.core.metrics import parse_metric
from evalret.core.stats import (
    Correction,
    adjust_p_values,
    bootstrap_ci,
    minimum_detectable_effect,
    paired_p_value,
    randomization_p_values,
    resamples_for,
    seed_for,
)
from evalret.data.baseline import DEFINITION_KEYS, changed_settings
from evalret.data.goldenset import GoldenSet
from evalret.data.schema import (
    SCHEMA_VERSION,
    TOP_KEPT,
    CompareReport,
    MetricComparison,
    QueryExample,
    RankedDoc,
    RunReport,
    SliceComparison,
    Verdict,
)
from evalret.errors import IncomparableError, InputError, Problem
from evalret.version import __version__

RBO_P = 0.9
EXAMPLES = 5
SHOWN_RESULTS = 5


@dataclass(frozen=True)
class CompareSettings:
    primary: str = "ndcg@10"
    min_gain: float = 0.01
    alpha: float = 0.05
    correction: Correction = "holm"
    samples: int = 10_000
    bootstrap_samples: int = 1000
    confidence: float = 0.95
    seed: int = 0
    power: float = 0.8

    def __post_init__(self) -> None:
        """Refuse settings no comparison can use, naming them as `evalret compare` spells them
        (NaN fails every range check: nothing compares true with it)."""
        problems = []
        if self.correction not in ("holm", "bonferroni", "bh", "none"):
            problems.append(f"--correction {self.correction}: choose holm, bonferroni, bh or none")
        if not 0 < self.alpha < 1:
            problems.append(f"--alpha {self.alpha:g}: a significance level between 0 and 1")
        if not 0 <= self.min_gain < float("inf"):
            problems.append(f"--min-gain {self.min_gain:g}: a finite number >= 0")
        if self.samples < 100:
            problems.append(f"--samples {self.samples}: at least 100 resamples")
        if self.seed < 0:
            problems.append(f"--seed {self.seed}: a seed is an integer >= 0")
        if problems:
            raise InputError("invalid comparison settings", [Problem(p) for p in problems])


def check_comparable(a: RunReport, b: RunReport) -> None:
    """Refuse (exit 2) two runs of different golden sets or metric definitions."""
    problems = []
    if a.golden_set.fingerprint != b.golden_set.fingerprint:
        problems.append(
            f"golden sets differ: {a.golden_set.source} ({a.golden_set.fingerprint[:12]}) vs "
            f"{b.golden_set.source} ({b.golden_set.fingerprint[:12]})"
        )
    for key in (*DEFINITION_KEYS, "names"):
        va, vb = a.fingerprint.metrics.get(key), b.fingerprint.metrics.get(key)
        if va != vb:
            problems.append(f"metric definition {key}: {va!r} (A) vs {vb!r} (B)")
    common = a.indexes.keys() & b.indexes.keys()
    if not common:
        problems.append(f"no index in common: A has {sorted(a.indexes)}, B has {sorted(b.indexes)}")
    if a.query_ids != b.query_ids and set(a.query_ids) != set(b.query_ids):
        problems.append("the evaluated queries differ")
    if problems:
        raise IncomparableError(
            "cannot compare: A and B must share golden set, metrics and an index type",
            [Problem(p) for p in problems],
        )


def rank_drift(
    a_top: Sequence[Sequence[str]], b_top: Sequence[Sequence[str]], k: int = TOP_KEPT
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


def _direction(m: MetricComparison | None, s: CompareSettings) -> str:
    if m is None or abs(m.delta) < s.min_gain or m.p_randomization >= s.alpha:
        return "flat"
    return "up" if m.delta > 0 else "down"


def _first(
    metrics: dict[str, MetricComparison], family: str
) -> tuple[str, MetricComparison] | None:
    names = sorted((parse_metric(n).k, n) for n in metrics if parse_metric(n).family == family)
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


def diagnose(metrics: dict[str, MetricComparison], s: CompareSettings) -> str:
    """Read a slice's pattern of changes the way domain.md's "Reading a change" table does."""
    picked = {f: _first(metrics, f) for f in ("ndcg", "mrr", "recall")}
    words = [f"{name} {_direction(m, s)}" for name, m in (v for v in picked.values() if v)]
    mrr = _direction(picked["mrr"][1], s) if picked["mrr"] else "flat"
    rec = _direction(picked["recall"][1], s) if picked["recall"] else "flat"
    ndcg = _direction(picked["ndcg"][1], s) if picked["ndcg"] else "flat"
    if (mrr, rec) == ("flat", "flat"):
        meaning = {
            "flat": "no meaningful change",
            "up": "better ordering of the same documents",
            "down": "worse ordering of the same documents",
        }[ndcg]
    else:
        meaning = MEANINGS[(mrr, rec)]
    return f"{', '.join(words)}: {meaning}"


def _pair_diagnosis(
    slices: dict[str, SliceComparison],
    first: str,
    second: str,
    primary: str,
    s: CompareSettings,
    meaning: dict[tuple[str, str], str],
) -> str | None:
    if first not in slices or second not in slices:
        return None
    d1 = _direction(slices[first].metrics.get(primary), s)
    d2 = _direction(slices[second].metrics.get(primary), s)
    text = meaning.get((d1, d2))
    return f"{first} {d1}, {second} {d2}: {text}" if text else None


def query_examples(
    a: RunReport,
    b: RunReport,
    index: str,
    metric: str,
    order: np.ndarray,
    delta: np.ndarray,
    golden: GoldenSet | None,
) -> list[QueryExample]:
    """One example per position in ``order`` (positions in A's query_ids; ``delta`` aligned with
    them): the query's text, its relevant documents and the top results of A and of B, with
    grades and texts when ``golden`` is known."""
    text = dict(zip(golden.query_ids, golden.query_texts, strict=True)) if golden else {}
    titles = dict(zip(golden.doc_ids, golden.doc_texts, strict=True)) if golden else {}
    qa, qb = a.indexes[index], b.indexes[index]
    pos_b = {q: i for i, q in enumerate(b.query_ids)}
    out = []
    for i in order:
        q = a.query_ids[i]
        judged = golden.qrels.get(q, {}) if golden else {}

        def ranked(ids: list[str], judged: dict[str, int] = judged) -> list[RankedDoc]:
            return [
                RankedDoc(id=d, grade=judged.get(d), text=titles.get(d, "")[:160])
                for d in ids[:SHOWN_RESULTS]
            ]

        relevant = sorted(((g, d) for d, g in judged.items() if g >= 1), reverse=True)
        out.append(
            QueryExample(
                query_id=q,
                text=text.get(q, ""),
                a=qa.per_query[metric][i],
                b=qb.per_query[metric][pos_b[q]],
                delta=float(delta[i]),
                relevant=[
                    RankedDoc(id=d, grade=g, text=titles.get(d, "")[:160]) for g, d in relevant
                ],
                a_top=ranked(qa.top_ids[i]),
                b_top=ranked(qb.top_ids[pos_b[q]]),
            )
        )
    return out


def compare_reports(
    a: RunReport,
    b: RunReport,
    settings: CompareSettings,
    golden: GoldenSet | None = None,
    labels: tuple[str, str] = ("A", "B"),
) -> CompareReport:
    """Compare B against A query by query. ``golden`` (when known) adds texts and grades to the
    biggest losers and gainers."""
    check_comparable(a, b)
    order_b = np.array([{q: i for i, q in enumerate(b.query_ids)}[q] for q in a.query_ids])
    # BM25 does not depend on the model: with the same settings it is the same ranking in A and
    # B, and testing it would only dilute the correction across the tests that matter
    same_lexical = [
        i
        for i in a.indexes
        if i in b.indexes and i == "bm25" and a.indexes[i].params == b.indexes[i].params
    ]
    indexes = [i for i in a.indexes if i in b.indexes and i not in same_lexical]
    metrics = list(a.fingerprint.metrics["names"])
    if settings.primary not in metrics:
        raise InputError(
            f"--primary {settings.primary} is not computed; computed: {', '.join(metrics)}"
        )
    tests: list[tuple[str, str, str, float, float]] = []
    raw: dict[tuple[str, str, str], dict[str, float | int]] = {}
    drift: dict[tuple[str, str], dict[str, float]] = {}
    mdes: dict[tuple[str, str], dict[str, float | None]] = {}
    samples = resamples_for(
        len(indexes) * len(a.slices) * len(metrics), settings.alpha, settings.samples, True
    )
    for index in indexes:
        ra, rb = a.indexes[index], b.indexes[index]
        jac, rbo = rank_drift(ra.top_ids, [rb.top_ids[j] for j in order_b])
        per_a = np.column_stack([np.asarray(ra.per_query[m]) for m in metrics])
        per_b = np.column_stack([np.asarray(rb.per_query[m]) for m in metrics])[order_b]
        for slice_name, info in a.slices.items():
            members = np.array(info.members, dtype=np.int64)
            drift[(index, slice_name)] = {
                f"jaccard@{TOP_KEPT}": float(jac[members].mean()) if len(members) else 1.0,
                f"rbo@{TOP_KEPT}": float(rbo[members].mean()) if len(members) else 1.0,
            }
            va_all, vb_all = per_a[members], per_b[members]
            diffs = vb_all - va_all
            seed = seed_for(settings.seed, index, slice_name)
            p_rand_all = randomization_p_values(diffs, samples, seed)
            low, high = bootstrap_ci(diffs, settings.bootstrap_samples, settings.confidence, seed)
            mdes[(index, slice_name)] = {}
            for j, metric in enumerate(metrics):
                va, vb, d = va_all[:, j], vb_all[:, j], diffs[:, j]
                sd = float(d.std(ddof=1)) if len(d) > 1 else 0.0
                mdes[(index, slice_name)][metric] = (
                    minimum_detectable_effect(sd, len(d), settings.alpha, settings.power, True)
                    if sd > 0
                    else None
                )
                raw[(index, slice_name, metric)] = {
                    "a": float(va.mean()) if len(va) else float("nan"),
                    "b": float(vb.mean()) if len(vb) else float("nan"),
                    "delta": float(d.mean()) if len(d) else 0.0,
                    "ci_low": float(low[j]),
                    "ci_high": float(high[j]),
                    "wins": int((d > 0).sum()),
                    "ties": int((d == 0).sum()),
                    "losses": int((d < 0).sum()),
                }
                p_t = paired_p_value(vb, va, "t-test")
                tests.append((index, slice_name, metric, float(p_rand_all[j]), p_t))
    adj_rand = adjust_p_values([t[3] for t in tests], settings.correction)
    adj_t = adjust_p_values([t[4] for t in tests], settings.correction)

    result: dict[str, dict[str, SliceComparison]] = {}
    for (index, slice_name, metric, p_rand, p_t), pr, pt in zip(
        tests, adj_rand, adj_t, strict=True
    ):
        values = raw[(index, slice_name, metric)]
        comparison = MetricComparison(
            **values,
            p_randomization=p_rand,
            p_t_test=p_t,
            p_randomization_adjusted=float(pr),
            p_t_test_adjusted=float(pt),
            significant=bool(pr < settings.alpha and values["delta"] != 0),
        )
        slices = result.setdefault(index, {})
        if slice_name not in slices:
            info = a.slices[slice_name]
            slices[slice_name] = SliceComparison(
                n_queries=info.n_queries,
                reliability=info.reliability,
                metrics={},
                mde=mdes[(index, slice_name)],
                drift=drift[(index, slice_name)],
                diagnosis="",
            )
        slices[slice_name].metrics[metric] = comparison
    for slices in result.values():
        for sc in slices.values():
            sc.diagnosis = diagnose(sc.metrics, settings)

    primary_index = "exact" if "exact" in result else indexes[0]
    notes = [
        f"{i} is not compared: the same settings give the same ranking in A and B"
        for i in same_lexical
    ]
    for first, second, meaning in (
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
    ):
        line = _pair_diagnosis(
            result[primary_index], first, second, settings.primary, settings, meaning
        )
        if line:
            notes.append(line)

    verdict = _verdict(a, b, order_b, result, primary_index, settings)
    ra, rb = a.indexes[primary_index], b.indexes[primary_index]
    delta = np.asarray(rb.per_query[settings.primary])[order_b] - np.asarray(
        ra.per_query[settings.primary]
    )
    order = np.argsort(delta, kind="stable")
    losers = [i for i in order[:EXAMPLES] if delta[i] < 0]
    gainers = [i for i in order[::-1][:EXAMPLES] if delta[i] > 0]
    return CompareReport(
        schema_version=SCHEMA_VERSION,
        evalret_version=__version__,
        a={
            "label": labels[0],
            "fingerprint": a.fingerprint.digest,
            "model": a.fingerprint.model,
            "indexes": a.fingerprint.indexes,
        },
        b={
            "label": labels[1],
            "fingerprint": b.fingerprint.digest,
            "model": b.fingerprint.model,
            "indexes": b.fingerprint.indexes,
        },
        changed=changed_settings(a, b),
        settings={
            **settings.__dict__,
            "samples_drawn": samples,
            "rbo_p": RBO_P,
            "tests": "two-sided, paired",
            "ci": "percentile bootstrap of the paired differences",
        },
        golden_set={
            "source": a.golden_set.source,
            "fingerprint": a.golden_set.fingerprint,
            "n_queries": len(a.query_ids),
        },
        primary_index=primary_index,
        indexes=result,
        notes=notes,
        verdict=verdict,
        losers=query_examples(
            a, b, primary_index, settings.primary, np.array(losers, dtype=np.int64), delta, golden
        ),
        gainers=query_examples(
            a, b, primary_index, settings.primary, np.array(gainers, dtype=np.int64), delta, golden
        ),
    )


def _verdict(
    a: RunReport,
    b: RunReport,
    order_b: np.ndarray,
    result: dict[str, dict[str, SliceComparison]],
    primary_index: str,
    s: CompareSettings,
) -> Verdict:
    identical = all(
        np.array_equal(
            np.asarray(a.indexes[i].per_query[m]), np.asarray(b.indexes[i].per_query[m])[order_b]
        )
        for i in result
        for m in a.fingerprint.metrics["names"]
    )
    regressions = sorted(
        f"{index}/{name}/{metric} {m.delta:+.4f} (p adj. {m.p_randomization_adjusted:.3g})"
        for index, slices in result.items()
        for name, sc in slices.items()
        for metric, m in sc.metrics.items()
        if m.significant and m.delta < 0
    )
    if identical:
        return Verdict(
            status="no difference",
            reason="A and B score every query identically",
            blocking=[],
            regressions=[],
        )
    blocking = []
    for name, sc in result[primary_index].items():
        m = sc.metrics[s.primary]
        if m.delta < s.min_gain:
            blocking.append(f"{name}: {s.primary} {m.delta:+.4f} < min_gain {s.min_gain:g}")
        down = [k for k, v in sc.metrics.items() if v.significant and v.delta < 0]
        if down:
            blocking.append(f"{name}: significant regression in {', '.join(down)}")
    if not blocking and not regressions:
        return Verdict(
            status="candidate",
            reason=f"B gains at least {s.min_gain:g} {s.primary} in every slice of "
            f"{primary_index} and no slice regresses significantly",
            blocking=[],
            regressions=[],
        )
    first = blocking[0] if blocking else regressions[0]
    return Verdict(
        status="not a candidate",
        reason=f"blocked by {first}",
        blocking=blocking,
        regressions=regressions,
    )
