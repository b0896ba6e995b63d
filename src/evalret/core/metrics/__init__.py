"""Ranking metrics, computed per query with numpy and identical to trec_eval's definitions.

Pure: takes arrays, returns arrays. A metric is a small declared value (`Metric("ndcg", 10)`),
parsed from the names ranx users write (`ndcg@10`); the functions that compute each family live in
one registry, and the error for an unknown name is built from that registry.

Conventions shared by every metric (they match trec_eval run with ``-l relevance_level``):

* A document is *relevant* when its judged grade is >= the relevance level (trec_eval's ``-l``,
  default 1; the rule is ``core.relevance.is_relevant``); a grade from 0 up to the level means
  judged non-relevant, and a negative grade or an unjudged document counts as non-relevant. The
  binary metrics (recall, precision, MAP, MRR, hit rate) and ``R`` use the level.
* A metric may carry its own level (``precision@5(rel=2)``, ``Metric.rel``): it reads the same
  rankings at that level (``RankedJudgments.at_level``), as trec_eval run with ``-l 2``.
* An nDCG metric may carry its own gains (``ndcg@10(gains=0:0,1:1,2:3)``, ``Metric.gains``):
  each listed grade gains the given value, the others their own grade
  (``RankedJudgments.with_gains``), as trec_eval on qrels so remapped (ir_measures'
  ``nDCG(gains=...)``; for ``ndcg``, trec_eval's ``-m ndcg.0=0,1=1,2=3``).
* ``err`` (ERR, Chapelle et al. 2009) is ir_measures' ERR (gdeval.pl), not a trec_eval measure:
  its stop probability (2^g - 1) / 2^4 has a fixed maximum grade 4 (``families.err``).
* nDCG ignores the level, as trec_eval does: its gain is the raw grade for grade > 0 and 0 for
  grade <= 0 (or 2^grade - 1 with exponential gain), so at level 2 a grade-1 document still gains.
* The ranking is the one the index returned after evalret's tie rule (score descending, then
  document id descending, as trec_eval sorts a run); metrics never re-sort it.
* ``R`` is the number of relevant judged documents of the query, retrieved or not. A query with
  ``R = 0`` scores 0 on every binary metric; by default the pipeline leaves such queries out of
  the means (``queries_without_relevant: exclude``) and reports how many there were, with
  ``zero`` it scores them as trec_eval does.
* A ranking shorter than ``k`` (a corpus smaller than ``k``) counts as padded with non-relevant
  ranks: precision@k still divides by k, the others see no more relevant documents. A cutoff is
  at most MAX_CUTOFF; the search depth is bounded by the corpus size, never by ``k`` alone.
* A metric written without a cutoff (``map``, ``ndcg``, ...) scores the whole ranking, as
  trec_eval's uncut measures do: the function gets ``k=None``. Its value depends on how deep the
  rankings go, so evalret's own indexes search ``search_depth`` deep (``DEFAULT_SEARCH_DEPTH``,
  trec_eval's usual 1000, when a metric has no cutoff and no depth is configured).

* ``bpref`` (Buckley & Voorhees 2004, trec_eval's definition) reads judged documents only: each
  relevant document retrieved scores 1 - min(n, R) / min(N, R), n the judged non-relevant
  documents ranked above it, N the query's judged non-relevant documents (grade below the level),
  summed and divided by R. Unjudged documents play no part.
* A judged-only variant of every family (``ndcg@10:judged``, ``map:judged``; Sakai 2007's
  "condensed list", trec_eval ``-J``) drops the unjudged documents from each ranking *before*
  cutting it at k, then scores what is left as usual. It looks past rank k for judged documents,
  so its value depends on how deep the rankings go, as a metric without a cutoff does.
* A negative grade is read as trec_eval reads it, "pooled but not judged" (the rule is
  ``core.relevance.is_judged``): non-relevant in every metric (gain 0), and unjudged in
  judged@k, bpref and the judged-only variants, the only places where it differs from grade 0.
  evalret equals trec_eval given the same qrels, negative grades included.

Each family declares, as data, the trec_eval measure it equals with a cutoff and without one
(``Family.trec_eval``, a ``TrecEval``); ``trec_eval_reference`` turns a metric into the exact
trec_eval call (measure, ``-J``, run cut) it equals. The conformance tests read it from there and
compare every family and variant with trec_eval per query, so the mapping is written once.

The parts: ``metric`` (a metric as a value, and what a list of them asks of a search),
``judgments`` (the judged rankings the metrics read), ``families`` (one function per built-in
family), ``registry`` (the families as data; a new family is a function and one ``Family`` line in
``FAMILIES``, or from outside evalret one ``register_family`` call), ``parsing`` (names into
metrics) and ``scoring`` (a list of metrics scored per query). Every name is importable from here.
"""

from evalret.core.metrics.families import (
    ERR_MAX_GRADE,
    average_precision,
    bpref,
    check_err_grades,
    err,
    hit_rate,
    mrr,
    ndcg,
    precision,
    recall,
)
from evalret.core.metrics.judgments import Cells, Hits, RankedJudgments, build_judgments
from evalret.core.metrics.metric import (
    DEFAULT_SEARCH_DEPTH,
    JUDGED_SUFFIX,
    MAX_CUTOFF,
    MAX_GAIN,
    MAX_GRADE,
    Gain,
    GainMap,
    Metric,
    cutoffs,
    has_uncut,
    is_plain_cut,
    search_depth,
)
from evalret.core.metrics.parsing import known_metrics, parse_metric, parse_metrics
from evalret.core.metrics.registry import (
    FAMILIES,
    REGISTRY,
    SCORE_SLACK,
    Family,
    MetricFn,
    TrecEval,
    TrecEvalReference,
    alias_table,
    register_family,
    trec_eval_reference,
    unregister_family,
)
from evalret.core.metrics.scoring import at_cutoffs, compute, compute_condensed, judged_at

__all__ = [
    "DEFAULT_SEARCH_DEPTH",
    "ERR_MAX_GRADE",
    "FAMILIES",
    "JUDGED_SUFFIX",
    "MAX_CUTOFF",
    "MAX_GAIN",
    "MAX_GRADE",
    "REGISTRY",
    "SCORE_SLACK",
    "Cells",
    "Family",
    "Gain",
    "GainMap",
    "Hits",
    "Metric",
    "MetricFn",
    "RankedJudgments",
    "TrecEval",
    "TrecEvalReference",
    "alias_table",
    "at_cutoffs",
    "average_precision",
    "bpref",
    "build_judgments",
    "check_err_grades",
    "compute",
    "compute_condensed",
    "cutoffs",
    "err",
    "has_uncut",
    "hit_rate",
    "is_plain_cut",
    "judged_at",
    "known_metrics",
    "mrr",
    "ndcg",
    "parse_metric",
    "parse_metrics",
    "precision",
    "recall",
    "register_family",
    "search_depth",
    "trec_eval_reference",
    "unregister_family",
]
