"""compare.json's models (``CompareReport``) and the checks that a comparison agrees with itself."""

from __future__ import annotations

from typing import Any

from pydantic import (
    field_validator,
    model_validator,
)

from evalret.choices import MarginMode

# the closed vocabularies are the core's, defined once there
from evalret.core.comparison import CompareStatus
from evalret.core.gate import Evidence
from evalret.core.slices import Reliability
from evalret.core.stats import Correction, IntervalMethod
from evalret.data.schema.base import (
    BUILT_WHEN_USED,
    Change,
    _Model,
    _Sparse,
)


class MetricComparison(_Model):
    model_config = BUILT_WHEN_USED

    a: float  # A's mean
    b: float  # B's mean
    delta: float  # b - a
    ci_low: float  # bootstrap interval of the delta
    ci_high: float  # upper end of the delta's interval
    p_randomization: float  # two-sided, paired
    p_t_test: float  # paired t-test p-value
    p_randomization_adjusted: float  # after the correction across all tests
    p_t_test_adjusted: float  # after the correction across all tests
    significant: bool  # adjusted randomization p < alpha
    wins: int  # queries where B scores higher
    ties: int  # queries where both score the same
    losses: int  # queries where B scores lower


class MarginComparison(_Model):
    """B against A on one metric and slice at the margin of `evalret compare --margin`: the
    one-sided bounds of B - A, the test's p-value corrected across every metric and slice, and
    what they showed (core.gate.margins, as the gate's margin checks)."""

    model_config = BUILT_WHEN_USED

    low: float | None  # one-sided (1 - alpha) lower bound of B - A (null: under two queries)
    high: float | None  # one-sided (1 - alpha) upper bound of B - A
    method: IntervalMethod  # how the bounds were drawn (the percentile bootstrap)
    confidence: float  # their one-sided level: 1 - the alpha the correction held the test to
    p_value: float  # the margin's test (equivalence: the larger one-sided p)
    p_adjusted: float  # after the correction across every margin tested
    passed: bool  # the margin is proven (p_adjusted < alpha)
    evidence: Evidence  # proven, not_proven or underpowered
    queries_needed: int | None  # queries that would prove it at the observed spread (null: none)


class JudgedPair(_Model):
    """judged@k of one slice in A and in B (None: an empty slice)."""

    model_config = BUILT_WHEN_USED

    a: float | None  # judged@k of A
    b: float | None  # judged@k of B


class SliceComparison(_Sparse):
    model_config = BUILT_WHEN_USED

    n_queries: int  # queries in the slice
    reliability: Reliability  # how far its means can be trusted, from its number of queries
    mde: dict[str, float | None]  # two-sided minimum detectable effect per metric
    metrics: dict[str, MetricComparison]  # every metric's comparison, by name
    drift: dict[str, float]  # jaccard@10, rbo@10 between A's and B's rankings
    diagnosis: str  # what the numbers say, in words
    # judged@k of A and of B at every cutoff both computed ("judged@10": {a, b}); absent in
    # compare.json of older versions
    judged: dict[str, JudgedPair] = {}
    # `evalret compare --margin`: every metric's margin test (absent without --margin)
    margins: dict[str, MarginComparison] = {}


class UnjudgedDoc(_Model):
    """A document in B's top k that nobody judged for the queries it was retrieved for."""

    model_config = BUILT_WHEN_USED

    id: str  # the document
    lists: int  # how many of B's top-k lists (one per query) hold it unjudged
    text: str  # its first characters ("" when the golden set is not at hand)


class UnjudgedDocs(_Model):
    """B's most frequent unjudged documents in one index's top k, most frequent first."""

    model_config = BUILT_WHEN_USED

    index: str  # the index read
    k: int  # the cutoff
    n_queries: int  # B's top-k lists read
    documents: list[UnjudgedDoc]  # the documents, most frequent first


class RankedDoc(_Model):
    id: str  # the document
    grade: int | None  # None when unjudged (or unknown: golden set not available)
    text: str  # its first characters


class QueryExample(_Model):
    query_id: str  # the query
    text: str  # its text
    a: float  # A's score on the primary metric
    b: float  # B's score
    delta: float  # B - A
    relevant: list[RankedDoc]  # its relevant documents
    a_top: list[RankedDoc]  # A's top documents
    b_top: list[RankedDoc]  # B's top documents


class Verdict(_Model):
    model_config = BUILT_WHEN_USED

    status: CompareStatus  # candidate, not a candidate or no difference
    reason: str  # why, in words
    blocking: list[str]  # what keeps B from being a candidate, per slice
    regressions: list[str]  # significant regressions anywhere


class CompareSide(_Sparse):
    """One of the two compared runs: its label (the path given), fingerprint, model, indexes,
    and the settings its run took from the command line (absent when none)."""

    model_config = BUILT_WHEN_USED

    label: str  # the path given
    fingerprint: str  # its run's fingerprint digest
    model: dict[str, Any]  # its model settings
    indexes: dict[str, dict[str, Any]]  # its indexes' settings
    # settings its run took from the command line; absent when none
    overrides: dict[str, Any] | None = None

    @field_validator("model", mode="before")
    @classmethod
    def _model_object(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            raise ValueError("not an object")
        return v


class SettingsRecord(_Sparse):
    """The settings of a comparison (``evalret compare`` options) and its fixed methods."""

    model_config = BUILT_WHEN_USED

    primary: str  # the metric the verdict is decided on
    min_gain: float  # gain B needs on the primary metric in every slice
    alpha: float  # significance level
    correction: Correction  # multiple-test correction
    samples: int  # randomization-test resamples
    bootstrap_samples: int  # bootstrap resamples of the intervals
    confidence: float  # the intervals' confidence level
    seed: int  # seed of every resampling
    power: float  # power behind the minimum detectable effect
    samples_drawn: int | None = None  # absent in compare.json of older versions
    margin: float | None = None  # --margin (absent without it)
    margin_mode: MarginMode | None = None  # --margin-mode (absent without --margin)
    rbo_p: float  # persistence of rank-biased overlap
    tests: str  # the paired tests run, in words
    ci: str  # how the intervals are computed, in words

    @field_validator("primary", mode="before")
    @classmethod
    def _metric_name(cls, v: Any) -> Any:
        if not isinstance(v, str):
            raise ValueError("not a metric name")
        return v


class ComparedGoldenSet(_Model):
    model_config = BUILT_WHEN_USED

    source: str  # the path it was read from
    fingerprint: str  # its fingerprint
    n_queries: int  # queries compared


class CompareReport(_Sparse):
    model_config = BUILT_WHEN_USED

    schema_version: int  # the version of this layout
    evalret_version: str  # the evalret that wrote it
    a: CompareSide  # the first run (the reference)
    b: CompareSide  # the second run (the candidate)
    changed: dict[str, Change]  # the settings that differ between A and B
    settings: SettingsRecord  # the options of the comparison
    golden_set: ComparedGoldenSet  # the golden set both runs were scored on
    primary_index: str  # the index the verdict is decided on
    indexes: dict[str, dict[str, SliceComparison]]  # per index, then per slice: the comparison
    notes: list[str]  # what the reader should know about this comparison
    verdict: Verdict  # whether B is a candidate, and why
    losers: list[QueryExample]  # biggest losses of B on the primary metric
    gainers: list[QueryExample]  # biggest gains of B on the primary metric
    # B's most frequent unjudged documents on the primary index; None when the golden set is not
    # at hand (absent in compare.json of older versions)
    unjudged: UnjudgedDocs | None = None

    @model_validator(mode="after")
    def _consistent(self) -> CompareReport:
        problems = comparison_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self


def comparison_problems(report: CompareReport) -> list[str]:
    """Where a compare.json disagrees with itself (by JSON path): a primary index or metric it
    does not hold, slices of one index listing other metrics."""
    primary = report.settings.primary
    out = []
    if report.indexes and report.primary_index not in report.indexes:
        out.append(f"primary_index: {report.primary_index!r} is not in indexes")
    for index, slices in report.indexes.items():
        out += _compared_index_problems(f"indexes.{index}", slices, primary)
    return out


def _compared_index_problems(
    where: str, slices: dict[str, SliceComparison], primary: str
) -> list[str]:
    first = next(iter(slices.values()), None)
    if first is None:
        return [f"{where}: no slice"]
    out = []
    for name, result in slices.items():
        if set(result.metrics) != set(first.metrics):
            out.append(f"{where}.{name}.metrics: other metrics than the first slice's")
        elif primary not in result.metrics:
            out.append(f"{where}.{name}.metrics: no {primary} (settings.primary)")
    return out
