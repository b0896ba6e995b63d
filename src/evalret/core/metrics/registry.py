"""The metric registry: each family declared as data (its function, the trec_eval measure it
equals, or for a family trec_eval lacks what else it equals, its aliases, a sentence on what it
scores), the built-in ones in ``FAMILIES``. A new family
is a function and one ``Family`` line here, or, outside this package, one ``register_family``
call; the parser, the error for an unknown name, the conformance tests and the metrics reference
page all read the registry."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from evalret.core.metrics.families import (
    average_precision,
    bpref,
    err,
    hit_rate,
    mrr,
    ndcg,
    precision,
    recall,
)
from evalret.core.metrics.judgments import RankedJudgments
from evalret.core.metrics.metric import Gain, GainMap, Metric

MetricFn = Callable[[RankedJudgments, int | None, Gain], np.ndarray]  # k None: whole ranking


@dataclass(frozen=True)
class TrecEval:
    """The trec_eval measures a family equals, named as trec_eval (and pytrec_eval) take them.

    cut: the measure at cutoff k, spelled ``{cut}.{k}`` (``ndcg_cut.10``); with ``cut_run`` the
      measure takes no cutoff and trec_eval scores each run cut at depth k instead (MRR@k is
      ``recip_rank`` on the run cut at k).
    uncut: the measure over the whole ranking, the family written without a cutoff.
    positive: the family is 1 where ``uncut`` is above 0 and 0 elsewhere (hit rate is
      ``num_rel_ret > 0``: trec_eval has no uncut ``success``).
    A judged-only metric (``:judged``) is the same measure with trec_eval's ``-J``.
    """

    cut: str
    uncut: str
    cut_run: bool = False
    positive: bool = False

    def measure(self, k: int | None) -> str:
        """The measure at cutoff ``k`` (None: the whole ranking): ``ndcg_cut.10``, ``set_P``."""
        if k is None:
            return self.uncut
        return self.cut if self.cut_run else f"{self.cut}.{k}"


@dataclass(frozen=True)
class Family:
    name: str
    fn: MetricFn
    # what it equals in trec_eval, the conformance tests' reference; None for a family trec_eval
    # lacks, which says in ``equals`` what it equals instead (and its tests check that)
    trec_eval: TrecEval | None
    aliases: tuple[str, ...] = ()
    # what a query scores, with a cutoff k and over the whole ranking, in a sentence each (the
    # metrics reference page, docs/reference/metrics.md, is generated from them)
    at_k: str = ""
    whole: str = ""
    # it reads grades as gains, so a metric of it may set its own (``ndcg@10(gains=1:1,2:3)``)
    takes_gains: bool = False
    equals: str = ""  # what it equals where trec_eval has no such measure, in a few words


# every family scores a query in [0, 1]; a stored per-query score outside it, beyond rounding, is
# not one of ours (a forged or corrupt report)
SCORE_SLACK = 1e-6

FAMILIES = (
    Family(
        "ndcg",
        ndcg,
        TrecEval("ndcg_cut", "ndcg"),
        at_k="DCG of the top k over the DCG of the query's judged grades in ideal order, cut at k; "
        "the gain of a grade g > 0 is g (or 2^g - 1 with ndcg_gain exponential), else 0",
        whole="DCG of the whole ranking over the DCG of all the query's positive grades in "
        "ideal order (the ideal is never cut)",
        takes_gains=True,
    ),
    Family(
        "mrr",
        mrr,
        TrecEval("recip_rank", "recip_rank", cut_run=True),
        ("rr", "recip_rank"),
        at_k="1 / the rank of the first relevant document in the top k, 0 when there is none",
        whole="1 / the rank of the first relevant document retrieved, 0 when there is none",
    ),
    Family(
        "recall",
        recall,
        TrecEval("recall", "set_recall"),
        ("r",),
        at_k="relevant documents in the top k / R",
        whole="relevant documents retrieved / R",
    ),
    Family(
        "precision",
        precision,
        TrecEval("P", "set_P"),
        ("p",),
        at_k="relevant documents in the top k / k (k even when fewer were retrieved)",
        whole="relevant documents retrieved / documents retrieved (0 when none)",
    ),
    Family(
        "map",
        average_precision,
        TrecEval("map_cut", "map"),
        ("ap",),
        at_k="the sum of precision@i over the ranks i ≤ k holding a relevant document, / R",
        whole="the sum of precision@i over the ranks i holding a relevant document, / R",
    ),
    Family(
        "hit_rate",
        hit_rate,
        TrecEval("success", "num_rel_ret", positive=True),
        ("success", "hit", "hits"),
        at_k="1 when a relevant document is in the top k, else 0",
        whole="1 when any relevant document was retrieved, else 0",
    ),
    Family(
        "bpref",
        bpref,
        TrecEval("bpref", "bpref", cut_run=True),
        at_k="bpref of the top k only",
        whole="for each relevant document retrieved, 1 - min(n, R) / min(N, R) with n the judged "
        "non-relevant documents above it and N all the query's judged non-relevant ones; the "
        "sum / R (unjudged documents are skipped)",
    ),
    Family(
        "err",
        err,
        None,
        at_k="the sum over the top k ranks i of r_i / i times the product of (1 - r_j) over the "
        "ranks j above i, r = (2^g - 1) / 2^4 for grade g (gdeval's fixed maximum grade 4, not "
        "the query's; a grade above 4 is refused); r = 0 for grade 0, unjudged or negative",
        whole="the same sum over the whole ranking",
        equals="ir_measures' ERR@k (gdeval.pl, TREC Web 2010-14); not a trec_eval measure",
    ),
)


@dataclass(frozen=True)
class TrecEvalReference:
    """The trec_eval computation one metric equals per query (what the conformance tests run).

    measure: the measure's name (``ndcg_cut.10``; pytrec_eval's result key swaps ``.`` for
      ``_``). judged_only: with trec_eval's ``-J`` (pytrec_eval ``judged_docs_only_flag``).
    run_depth: cut each run after this many documents first (judged documents only, with
      ``judged_only``); None: the whole run. positive: the metric is 1 where the measure is above
      0, else 0. Negative grades are pooled, not judged, for trec_eval as for evalret (the
      package's docstring). relevance_level: trec_eval's ``-l`` for a metric with its own level
      (``P@5(rel=2)``); None: the run's. gains: a metric's own gains (``ndcg@10(gains=1:1,2:3)``)
      are the measure on qrels whose grades are replaced by their gains (a grade not listed
      keeps itself: ir_measures' ``nDCG(gains=...)``, and trec_eval's ``-m ndcg.1=1,2=3`` for
      the uncut measure); None: the grades as they are.
    """

    measure: str
    judged_only: bool = False
    run_depth: int | None = None
    positive: bool = False
    relevance_level: int | None = None
    gains: GainMap | None = None


def trec_eval_reference(metric: Metric) -> TrecEvalReference:
    """How trec_eval computes ``metric``, read from its family's ``TrecEval`` data; a family
    trec_eval lacks (``Family.equals`` says what it equals) is a ValueError."""
    trec = REGISTRY[metric.family].trec_eval
    if trec is None:
        raise ValueError(f"metric family {metric.family!r} is no trec_eval measure")
    return TrecEvalReference(
        measure=trec.measure(metric.k),
        judged_only=metric.judged,
        run_depth=metric.k if trec.cut_run else None,
        positive=trec.positive and metric.k is None,
        relevance_level=metric.rel,
        gains=metric.gains,
    )


def alias_table(families: Iterable[Family]) -> dict[str, str]:
    """Every name a family answers to (its own name and its aliases, lowercase) -> the family's
    name. A name claimed twice, by two families or twice by one, is a ValueError naming the
    name and both claimants: a clash must never silently re-point a metric name."""
    table: dict[str, str] = {}
    for f in families:
        for alias in (f.name, *f.aliases):
            key = alias.lower()
            if key in table:
                raise ValueError(
                    f"metric name {key!r} of family {f.name!r} is already taken by family "
                    f"{table[key]!r}"
                )
            table[key] = f.name
    return table


_REGISTRY: dict[str, Family] = {f.name: f for f in FAMILIES}
_ALIASES = alias_table(FAMILIES)  # checked first: no family may shadow another's name
REGISTRY: Mapping[str, Family] = _REGISTRY  # every registered family, by name, built-ins first
BUILT_IN = frozenset(_REGISTRY)


def register_family(family: Family) -> Family:
    """Add ``family`` to the registry: from then on its names parse (``parse_metric``) and every
    computation scores it. Its name and aliases are checked against every registered family's
    (``alias_table``): a clash is a ValueError and registers nothing. Returns the family."""
    table = alias_table((*_REGISTRY.values(), family))
    _REGISTRY[family.name] = family
    _ALIASES.clear()
    _ALIASES.update(table)
    return family


def unregister_family(name: str) -> None:
    """Remove a family ``register_family`` added (a built-in family cannot be removed)."""
    if name in BUILT_IN:
        raise ValueError(f"metric family {name!r} is built in and cannot be unregistered")
    family = _REGISTRY.pop(name)
    for alias in (family.name, *family.aliases):
        _ALIASES.pop(alias.lower(), None)


def aliases() -> Mapping[str, str]:
    """Every registered name, lowercase -> its family's name (what the parser reads)."""
    return _ALIASES
