"""trec_eval's whole measure set and its text output, written from trec_eval 10's definitions
(the measures of ``-m all_trec``, with ``dcg`` and ``ideal_dcg``), per query equal to it.

Pure: qrels and run as Python values in, values and text out. Kept apart from
``core.metrics``, whose vectorised families are what evalret's own pipeline scores with; this is
the literal, per-query form, what ``evalret trec_eval`` and ``evalret score --trec-eval-output``
print. The parts: ``ranking`` (a query's ranking as the measures read it, and trec_eval's
settings), ``measures`` (one function per measure, and the table in print order), ``gains``
(the gain-based measures) and ``output`` (``-m`` selection, averaging, the text)."""

from evalret.core.treceval.measures import BY_NAME, MEASURES, NICKNAMES, Measure
from evalret.core.treceval.output import MeasureError, select_measures, trec_eval_text
from evalret.core.treceval.ranking import Ranking, Settings, form_ranking

__all__ = [
    "BY_NAME",
    "MEASURES",
    "NICKNAMES",
    "Measure",
    "MeasureError",
    "Ranking",
    "Settings",
    "form_ranking",
    "select_measures",
    "trec_eval_text",
]
