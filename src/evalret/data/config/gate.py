"""``gate``: the CI gate's settings, each threshold model with the ``to_core()`` that gives the
plain value core/gate.py reads. Which indexes a check applies to is ``Config.gated_indexes``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from evalret.core import gate
from evalret.core.gate import ThresholdMode, UnjudgedPolicy
from evalret.core.metrics import parse_metrics
from evalret.core.stats import Correction, PairedTest
from evalret.data.config.base import AtKey, StrictModel, UsablePath
from evalret.errors import MetricError

Labels = Literal["all", "human"]  # gate.labels


class Threshold(StrictModel):
    """Limits for one metric: an absolute floor and/or the largest tolerated drop, or with
    ``mode`` non_inferiority or equivalence a margin the change must prove (core.gate.margins)."""

    min: float | None = Field(None, description="fail when the current value is below this")
    max_drop: float | None = Field(None, ge=0, description="fail on a larger absolute drop")
    max_drop_pct: float | None = Field(None, ge=0, description="fail on a larger relative drop, %")
    mode: ThresholdMode = Field(
        "drop",
        description="drop: max_drop / max_drop_pct (tested with gate.significance); "
        "non_inferiority: pass only when the one-sided (1 - alpha) lower bound of the paired "
        "difference is above -margin; equivalence: both bounds within ±margin (TOST)",
    )
    margin: float | None = Field(
        None,
        gt=0,
        allow_inf_nan=False,
        description="the margin δ of mode non_inferiority or equivalence (required there, "
        "refused with mode drop); choose it before seeing the data",
    )

    @model_validator(mode="after")
    def _mode_and_margin(self) -> Threshold:
        if self.mode == "drop":
            if self.margin is not None:
                raise AtKey(
                    "margin is read only by mode non_inferiority or equivalence: set mode, or "
                    "use max_drop for a drop limit",
                    ("margin",),
                )
            return self
        if self.margin is None:
            raise AtKey(
                f"mode {self.mode} needs a margin > 0 (the largest loss accepted)", ("mode",)
            )
        if self.max_drop is not None or self.max_drop_pct is not None:
            raise AtKey(
                f"mode {self.mode} replaces max_drop and max_drop_pct with its margin: write one "
                "or the other (a separate override can hold the other rule)",
                ("max_drop" if self.max_drop is not None else "max_drop_pct",),
            )
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """``mode`` only when not drop and ``margin`` only when set: reports of configs without
        them read as before."""
        data: dict[str, Any] = handler(self)
        if self.mode == "drop":
            data.pop("mode", None)
        if self.margin is None:
            data.pop("margin", None)
        return data

    def to_core(self) -> gate.Threshold:
        """The plain threshold the gate reads (the same fields)."""
        return gate.Threshold(
            min=self.min,
            max_drop=self.max_drop,
            max_drop_pct=self.max_drop_pct,
            mode=self.mode,
            margin=self.margin,
        )


class ThresholdOverride(Threshold):
    """Thresholds for one metric in one slice and/or index, replacing the metric's defaults."""

    metric: str = Field(description="the metric it applies to")
    slice: str | None = Field(None, description="a slice; null: every gated slice")
    index: str | None = Field(None, description="an index of the config")

    @field_validator("metric")
    @classmethod
    def _metric(cls, v: str) -> str:
        try:
            return str(parse_metrics([v])[0])
        except MetricError as e:
            raise ValueError("; ".join(p.message for p in e.problems)) from None

    def to_core(self) -> gate.ThresholdOverride:
        """The plain override the gate reads (the same fields)."""
        return gate.ThresholdOverride(
            min=self.min,
            max_drop=self.max_drop,
            max_drop_pct=self.max_drop_pct,
            mode=self.mode,
            margin=self.margin,
            metric=self.metric,
            slice=self.slice,
            index=self.index,
        )


class HealthThreshold(StrictModel):
    """Bounds for one intrinsic-health figure (booleans count as 0 / 1)."""

    min: float | None = Field(None, description="fail below this")
    max: float | None = Field(None, description="fail above this")

    def to_core(self) -> gate.HealthBounds:
        """The plain bounds the gate reads (the same fields)."""
        return gate.HealthBounds(**self.model_dump())


def _health_key(key: str) -> str:
    """``figure``, ``documents.figure`` or ``queries.figure``, with a known figure name."""
    from evalret.core.health import HEALTHIER

    figure = key.split(".", 1)[1] if key.startswith(("documents.", "queries.")) else key
    if figure not in HEALTHIER:
        raise ValueError(
            f"unknown health figure {figure!r}; one of {', '.join(sorted(HEALTHIER))} "
            "(optionally prefixed documents. or queries.)"
        )
    return key


class SignificanceConfig(StrictModel):
    """Fail a drop only when a paired test against the baseline finds it significant."""

    test: PairedTest = Field("randomization", description="the paired test over queries")
    alpha: float = Field(0.05, gt=0, lt=1, description="significance level")
    correction: Correction = Field(
        "holm", description="multiple-comparison correction over the checks"
    )
    samples: int = Field(10_000, ge=100, description="permutations or resamples of the test")
    seed: int = Field(0, ge=0, description="seed of the test's sampling")
    power: float = Field(
        0.8, gt=0, lt=1, description="power for the minimum detectable effect reported"
    )

    def to_core(self) -> gate.Significance:
        """The plain significance settings the gate reads (the same fields)."""
        return gate.Significance(**self.model_dump())


class UnjudgedConfig(StrictModel):
    """When a drop check cannot tell: the run's judged@k fell below the baseline's by more than
    max_drop (a new model retrieving documents nobody judged)."""

    max_drop: float = Field(
        0.10, ge=0, le=1, description="largest fall of judged@k below the baseline's"
    )
    policy: UnjudgedPolicy = Field(
        "warn", description="warn: inconclusive checks exit 0 with a warning; fail: exit 1"
    )
    min_judged: float | None = Field(
        None,
        ge=0,
        le=1,
        description="floor on judged@k (slice all) below which the run fails outright (a random "
        "ranking, wrong document ids); null: a tenth of the baseline's judged@k; 0: none",
    )

    def to_core(self) -> gate.Unjudged:
        """The plain settings the gate reads (the same fields)."""
        return gate.Unjudged(**self.model_dump())


DEFAULT_THRESHOLDS = {"recall@10": Threshold(max_drop=0.01), "mrr@10": Threshold(max_drop=0.01)}


class IndexBudget(StrictModel):
    """What one index may cost (``gate.budgets.<index>``): the deterministic figures of its
    search, and the p95 latency only when asked, since latency depends on the machine."""

    max_index_bytes: int | None = Field(
        None, ge=0, description="the serialized index's size in bytes (vectors or codes, graph)"
    )
    max_bytes_per_vector: float | None = Field(
        None, ge=0, description="the index's bytes divided by the corpus's documents"
    )
    max_distances_per_query: float | None = Field(
        None,
        ge=0,
        description="vectors compared per query, as faiss counts them (HNSW and IVF statistics; "
        "every eligible vector for a flat or binary scan)",
    )
    max_p95_ms: float | None = Field(
        None,
        gt=0,
        description="single-query latency, 95th percentile, in ms: machine-dependent, measured "
        "on this run's machine (report.json's latency section)",
    )


class CoverageGate(StrictModel):
    """`evalret golden doctor --log`: how much of the logged traffic the golden set must cover.
    A logged query is covered when its nearest golden query's cosine is at least ``similarity``
    (core/coverage.py)."""

    min: float | None = Field(
        None,
        ge=0,
        le=1,
        description="fail (exit 1) when the covered share of the logged queries is below this; "
        "null: reported, never failed",
    )
    similarity: float = Field(
        0.5,
        gt=-1,
        le=1,
        description="the cosine (the config's model) from which a golden query covers a logged one",
    )


BUDGET_INDEX_TYPES = ("hnsw", "faiss", "quantized")  # the indexes whose cost a run measures
# the indexes searched outside evalret whose latency alone a run measures (a python one when
# declared approximate): only max_p95_ms budgets them
LATENCY_INDEX_TYPES = ("store", "pgvector", "python")


class GateConfig(StrictModel):
    """The CI gate: checks of the current run against floors and a stored baseline."""

    baseline: UsablePath | None = Field(None, description="baseline file to compare with")
    thresholds: dict[str, Threshold] | None = Field(
        None, description="per metric; default: max_drop 0.01 on recall@10 and mrr@10 when computed"
    )
    overrides: list[ThresholdOverride] = Field(
        [], description="thresholds for a metric in one slice and/or index, replacing its own"
    )
    slices: list[str] | None = Field(None, description="slices to gate; default all")
    indexes: list[str] | None = Field(
        None,
        description="the indexes every check of an index applies to (thresholds, overrides, "
        "ann_min_recall, rerank_min_recall, budgets); default: exact and every approximate "
        "index (hnsw, faiss, quantized, pgvector, python with approximate: true)",
    )
    ann_min_recall: float | None = Field(
        0.95,
        ge=0,
        le=1,
        description="floor on every gated approximate index's recall@ann_k against exact search "
        "(slice all); written with no approximate index gated, a config error",
    )
    ann_k: int = Field(10, ge=1, description="the k of ann_min_recall")
    ann_floor_on: Literal["mean", "worst"] = Field(
        "mean",
        description="an index searched several times (a store's stability.repeats): "
        "ann_min_recall on the mean recall over the repeats, or on the worst repeat's",
    )
    rerank_min_recall: float | None = Field(
        None,
        ge=0,
        le=1,
        description="floor on every gated rerank index's candidate ceiling (its first stage's "
        "recall@k); with no rerank index gated, a config error",
    )
    budgets: dict[str, IndexBudget] = Field(
        default_factory=dict,
        description="gated index name -> its budget (hnsw, faiss and quantized indexes): a "
        "figure over its budget fails the gate",
    )
    max_cost_per_run: float | None = Field(
        None,
        ge=0,
        description="API models: the most embedding every text of the run may cost, nothing "
        "cached (tokens counted as --dry-run counts them x model.price_per_million_tokens)",
    )
    labels: Labels = Field(
        "all",
        description="the labels the run's metrics and the gate use: all, or human (an LLM "
        "judge's grades left out; core/provenance.py)",
    )
    significance: SignificanceConfig | None = Field(
        None, description="fail a drop only when significant; null: every drop counts"
    )
    min_stability: float | None = Field(
        None,
        gt=0,
        le=1,
        allow_inf_nan=False,
        description="a check whose verdict holds in fewer than this share of bootstrap "
        "resamples of its slice's queries (bootstrap.samples, bootstrap.seed) is inconclusive, "
        "its exit as gate.unjudged.policy decides; null: flip probabilities reported only",
    )
    unjudged: UnjudgedConfig | None = Field(
        default_factory=UnjudgedConfig,
        description="inconclusive drop checks when judged@k falls; null: never inconclusive",
    )
    health: dict[str, HealthThreshold] = Field(
        default_factory=lambda: {"collapsed": HealthThreshold(max=0)},
        description="intrinsic-health figure -> {min, max}; default: fail a collapsed embedding",
    )
    coverage: CoverageGate | None = Field(
        None,
        description="`evalret golden doctor --log`: the share of logged queries the golden set "
        "must cover; null: the doctor reports coverage at similarity 0.5 and never fails on it",
    )

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """``rerank_min_recall``, ``budgets``, ``max_cost_per_run`` and ``min_stability`` only
        when set,
        ``ann_floor_on`` only when not ``mean``: reports of configs without them read as
        before."""
        data: dict[str, Any] = handler(self)
        if self.rerank_min_recall is None:
            data.pop("rerank_min_recall", None)
        if self.ann_floor_on == "mean":
            data.pop("ann_floor_on", None)
        if not self.budgets:
            data.pop("budgets", None)
        if self.max_cost_per_run is None:
            data.pop("max_cost_per_run", None)
        if self.coverage is None:
            data.pop("coverage", None)
        if self.min_stability is None:
            data.pop("min_stability", None)
        return data

    @field_validator("health")
    @classmethod
    def _health_figures(cls, v: dict[str, HealthThreshold]) -> dict[str, HealthThreshold]:
        for key in v:
            _health_key(key)
        return v

    @field_validator("thresholds")
    @classmethod
    def _metric_names(cls, v: dict[str, Threshold] | None) -> dict[str, Threshold] | None:
        if v is None:
            return None
        try:
            names = [str(m) for m in parse_metrics(v)]
        except MetricError as e:
            raise ValueError("; ".join(p.message for p in e.problems)) from None
        return dict(zip(names, v.values(), strict=True))
