"""Checks that make the silent mistakes of code returning rankings loud (a Python retriever, a
store driver): ``check_score_direction`` refuses scores that rise along the returned lists (a
distance passed as a similarity), and ``RankingCounts`` counts short rankings and documents
returned outside a query's filter."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalret.errors import ConfigError, Problem

# a distance passed as a similarity (check_score_direction): refused when at least this share of
# the queries that can tell have scores rising along the returned list, and at least this many can
RISING_SHARE = 0.9
RISING_MIN_QUERIES = 5
EXAMPLES_SHOWN = 3  # query ids kept as examples of a count (report params and notes)


def rising_queries(returned: Iterable[Sequence[float]]) -> tuple[int, int]:
    """(queries whose scores rise along their returned list, queries that can tell). A query
    can tell when its list holds at least two distinct scores; its scores rise when they never
    fall from one pair to the next (so they rise strictly somewhere)."""
    rising = telling = 0
    for scores in returned:
        values = np.asarray(scores, dtype=np.float64)
        if values.size < 2 or values.min() == values.max():
            continue
        telling += 1
        rising += bool((np.diff(values) >= 0).all())
    return rising, telling


FIX_PYTHON = (
    "fix: return a similarity (higher is better), e.g. -distance or 1 - cosine distance; "
    "similarities returned worst-first: return them best-first"
)


def check_score_direction(
    label: str, returned: Iterable[Sequence[float]], fix: str = FIX_PYTHON
) -> None:
    """ConfigError (exit 2) naming ``label`` when the scores, each query's list in the order the
    code returned it, rise along the lists: the code returns its best document first with the
    lowest score, a distance, which evalret's score-descending order would turn upside down.

    The rule: among the queries whose list holds at least two distinct scores, at least
    ``RISING_SHARE`` have scores that never fall along the list, and there are at least
    ``RISING_MIN_QUERIES`` such queries. A list returned best-first with similarities falls; one
    in no particular order (a dict's, a set's) rises for a query by chance only (1 in n! for n
    distinct scores), so is accepted; scores all equal, or too few queries, tell nothing and are
    accepted. Similarities returned worst-first are refused like distances (return them
    best-first, or in any other order). ``fix`` says what to change."""
    rising, telling = rising_queries(returned)
    if telling < RISING_MIN_QUERIES or rising < RISING_SHARE * telling:
        return
    raise ConfigError(
        f"{label} returned scores that rise along the returned list in {rising} of {telling} "
        "queries: these look like distances (smaller is nearer), which evalret's "
        "higher-is-better order would turn upside down",
        [Problem(fix)],
    )


@dataclass
class RankingCounts:
    """What code returning rankings did that evalret corrected silently before, counted over
    one index's queries: rankings shorter than the depth while the corpus had more eligible
    documents, and documents returned outside the query's filter (dropped), with the first few
    query ids of each as examples."""

    queries_short: int = 0
    documents_outside_filter: int = 0
    short_examples: list[str] = field(default_factory=list)
    outside_examples: list[str] = field(default_factory=list)

    def add(self, qid: str, kept: int, wanted: int, outside: int) -> None:
        """Count one query: ``kept`` ranks kept of the ``wanted`` (the depth, or fewer when
        fewer documents are eligible), ``outside`` documents dropped as outside its filter."""
        if kept < wanted:
            self.queries_short += 1
            if len(self.short_examples) < EXAMPLES_SHOWN:
                self.short_examples.append(qid)
        if outside:
            self.documents_outside_filter += outside
            if len(self.outside_examples) < EXAMPLES_SHOWN:
                self.outside_examples.append(qid)

    def params(self) -> dict[str, Any]:
        """The nonzero counts (and their examples) as the index's params: an index that did
        nothing wrong keeps the params, and so the fingerprint, it had."""
        out: dict[str, Any] = {}
        if self.queries_short:
            out["queries_short"] = self.queries_short
            out["queries_short_examples"] = list(self.short_examples)
        if self.documents_outside_filter:
            out["documents_outside_filter"] = self.documents_outside_filter
            out["documents_outside_filter_examples"] = list(self.outside_examples)
        return out
