"""The root ``Config``: every section under its key, and the validators that look across sections
(gated metrics and indexes exist and are computed, every gate setting applies to something)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import (
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from evalret.choices import WithoutRelevant as WithoutRelevant
from evalret.core.metrics import (
    MAX_CUTOFF,
    MAX_GRADE,
    Metric,
    cutoffs,
    parse_metrics,
    search_depth,
)
from evalret.core.relevance import DEFAULT_RELEVANCE_LEVEL
from evalret.core.suggest import did_you_mean
from evalret.data.config.base import AtKey, StrictModel
from evalret.data.config.gate import (
    BUDGET_INDEX_TYPES,
    DEFAULT_THRESHOLDS,
    LATENCY_INDEX_TYPES,
    GateConfig,
    IndexBudget,
    Threshold,
    ThresholdOverride,
)
from evalret.data.config.indexes import BUILTIN_INDEXES, IndexesConfig
from evalret.data.config.judge import JudgeConfig
from evalret.data.config.models import ModelConfig, SentenceTransformersModelConfig
from evalret.data.config.settings import (
    BeyondAccuracyConfig,
    BootstrapConfig,
    CacheConfig,
    EmbeddingConfig,
    GoldenSetConfig,
    HealthConfig,
    HistoryConfig,
    LeakageConfig,
    OutputConfig,
    SampleConfig,
)
from evalret.data.config.slices import SlicesConfig
from evalret.data.config.synth import SynthConfig
from evalret.errors import MetricError

DEFAULT_METRICS = [
    "ndcg@10",
    "mrr@10",
    "recall@10",
    "recall@100",
    "precision@10",
    "map@100",
    "hit_rate@10",
]


def _is_local(base: Path, name: str) -> bool:
    """Whether the relative ``name`` is a path under ``base`` (a name too long to be a path,
    or one the system refuses, is none)."""
    try:
        return not Path(name).is_absolute() and (base / name).exists()
    except (OSError, ValueError):
        return False


class Config(StrictModel):
    """The whole evalret configuration."""

    golden_set: GoldenSetConfig = Field(
        default_factory=GoldenSetConfig, description="the golden set"
    )
    model: ModelConfig = Field(
        SentenceTransformersModelConfig(), description="the embedding model, by provider"
    )
    indexes: IndexesConfig = Field(
        IndexesConfig(), description="the built-in indexes, and typed indexes by name"
    )
    metrics: list[str] = Field(
        default_factory=lambda: list(DEFAULT_METRICS),
        min_length=1,
        description="metric names: a family at a cutoff (ndcg@10), without one (map), "
        "either with :judged, and with parameters of its own: a relevance level "
        "(precision@5(rel=2)), nDCG's gains (ndcg@10(gains=0:0,1:1,2:3,3:7); quote it in a "
        "[...] list)",
    )
    search_depth: int | None = Field(
        None,
        ge=1,
        le=MAX_CUTOFF,
        description="ranks searched per query (the whole ranking of uncut metrics); default: "
        "the largest cutoff, or 1000 when a metric has no cutoff or is :judged; capped at the "
        "corpus size",
    )
    ndcg_gain: Literal["linear", "exponential"] = Field(
        "linear", description="nDCG gain: linear (the grade, as trec_eval) or exponential (2^g - 1)"
    )
    relevance_level: int = Field(
        DEFAULT_RELEVANCE_LEVEL,
        ge=1,
        le=MAX_GRADE,  # a higher level could never be reached by a grade
        description="trec_eval's -l: grade >= this is relevant (nDCG uses raw grades)",
    )
    queries_without_relevant: WithoutRelevant = Field(
        "exclude",
        description="exclude: left out of the means; zero: scored (0 on binary metrics), trec_eval",
    )
    slices: SlicesConfig = Field(SlicesConfig(), description="the slices reported and gated")
    bootstrap: BootstrapConfig = Field(BootstrapConfig(), description="confidence intervals")
    health: HealthConfig = Field(HealthConfig(), description="intrinsic embedding health")
    gate: GateConfig = Field(GateConfig(), description="the CI gate's checks")
    cache: CacheConfig = Field(CacheConfig(), description="the embedding cache")
    # where the cache misses are embedded: no part of the vectors or the fingerprint
    embedding: EmbeddingConfig = Field(
        EmbeddingConfig(), description="where cache misses are embedded: here or on Ray"
    )
    output: OutputConfig = Field(OutputConfig(), description="where report files go")
    leakage: LeakageConfig = Field(LeakageConfig(), description="settings of evalret leakage")
    # where `evalret history` keeps its database: not a setting of the run, so left out of the
    # dump (a report's resolved config stays as it was)
    history: HistoryConfig = Field(
        HistoryConfig(), exclude=True, description="the database of evalret history"
    )
    beyond_accuracy: BeyondAccuracyConfig = Field(
        BeyondAccuracyConfig(), description="corpus coverage and Gini of the top k"
    )
    sample: SampleConfig | None = Field(
        None, description="a seeded, stratified sample for fast gates; null: the whole set"
    )
    judge: JudgeConfig | None = Field(
        None, description="the LLM judge of `evalret judge` and `run --judge`; null: none"
    )
    synth: SynthConfig | None = Field(
        None, description="the settings of `evalret golden synth`; null: the defaults"
    )
    # the settings given on the command line (--set, --model, --dimension; data/overrides.py),
    # by dotted path: no key of the file, recorded in report.json
    _overrides: dict[str, Any] = PrivateAttr(default_factory=dict)

    @property
    def overrides(self) -> dict[str, Any]:
        """The command-line settings this config was made with ({} for a file as written)."""
        return dict(self._overrides)

    # the directory of the config file (the working directory for a config without one): the
    # modules its callables name are looked for there first (engines.plugins.import_callable)
    _code_dir: Path | None = PrivateAttr(None)

    @property
    def code_dir(self) -> Path | None:
        """Where the modules of this config's callables (python indexes, rerankers, encoders)
        are looked for first: the config file's directory, or the working directory for a
        config without a file (``resolve_paths``' base); None for a config made in code."""
        return self._code_dir

    def with_overrides(self, overrides: dict[str, Any]) -> Config:
        """A copy that records ``overrides`` as the command-line settings it was made with."""
        copy = self.model_copy()
        copy._overrides = dict(overrides)
        return copy

    @field_validator("metrics")
    @classmethod
    def _known_metrics(cls, v: list[str]) -> list[str]:
        try:
            return [str(m) for m in parse_metrics(v)]
        except MetricError as e:
            raise ValueError("; ".join(p.message for p in e.problems)) from None

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The config as a dict; ``search_depth``, ``sample``, ``judge`` and ``synth`` only when
        set, and ``embedding`` only when not the default, so that reports of configs without
        them read as they did before the keys existed."""
        data: dict[str, Any] = handler(self)
        for key in ("search_depth", "sample", "judge", "synth"):
            if getattr(self, key) is None:
                data.pop(key, None)
        if self.embedding == EmbeddingConfig():  # the default engine: dumps read as before
            data.pop("embedding", None)
        return data

    @field_validator("search_depth")
    @classmethod
    def _search_depth_holds_every_cutoff(cls, v: int | None, info: ValidationInfo) -> int | None:
        """A search depth below a metric's cutoff would score that metric on a cut ranking."""
        metrics = info.data.get("metrics")  # absent when the metrics themselves were refused
        deepest = max(cutoffs(parse_metrics(metrics)), default=0) if metrics else 0
        if v is not None and v < deepest:
            raise ValueError(
                f"search_depth {v} is below the largest metric cutoff {deepest}: raise it to at "
                f"least {deepest}, or leave it out"
            )
        return v

    @model_validator(mode="after")
    def _gated_metrics_are_computed(self) -> Config:
        computed = set(self.metrics)
        missing = [m for m in self.gate.thresholds or {} if m not in computed]
        missing += [o.metric for o in self.gate.overrides if o.metric not in computed]
        if missing:
            raise ValueError(
                f"gate thresholds name metrics that are not computed: {', '.join(missing)} "
                "(add them to metrics)"
            )
        self._gated_indexes_exist()
        enabled = set(self.indexes.enabled_names())
        named = [*(self.gate.indexes or []), *(o.index for o in self.gate.overrides if o.index)]
        disabled = sorted({i for i in named if i not in enabled})
        if disabled:  # their checks would never run: the gate could pass on nothing
            raise ValueError(f"the gate names indexes that are disabled: {', '.join(disabled)}")
        if self.gate.ann_k > self.depth:
            raise ValueError(f"gate.ann_k {self.gate.ann_k} exceeds the search depth {self.depth}")
        self._budgets_are_measured()
        return self

    @model_validator(mode="after")
    def _every_gate_setting_applies(self) -> Config:
        """A gate setting written in the config (or by a --set) that would check nothing in a
        run of it is refused at its key: a gate must never pass on a check that never ran. A
        default that applies to nothing (ann_min_recall 0.95 without an approximate index) is
        no error. Slices are checked once the golden set is read (pipeline.gate)."""
        problem = self._inert_gate_setting()
        if problem is not None:
            raise problem
        return self

    def gated_indexes(self) -> list[str]:
        """The indexes the gate checks, the one rule for every check of an index (thresholds
        and overrides, ann_min_recall, rerank_min_recall, budgets): ``gate.indexes`` when given,
        else every enabled index evalret searches over the model's vectors, exact search and
        every approximate index (hnsw, faiss, quantized, pgvector, a python one declared
        ``approximate: true``). bm25, hybrid, run, other python and rerank indexes are gated only
        when named."""
        if self.gate.indexes is not None:
            return list(self.gate.indexes)
        approximate = self.indexes.approximate_names()
        return [n for n in self.indexes.enabled_names() if n == "exact" or n in approximate]

    def _gated_text(self) -> str:
        """The gated indexes and where they come from, for messages."""
        gated = ", ".join(self.gated_indexes()) or "none"
        return f"gate.indexes: {gated}" if self.gate.indexes is not None else f"gated: {gated}"

    def _inert_gate_setting(self) -> AtKey | None:
        """The first gate setting given that applies to no gated index, slice or figure."""
        gate, gated = self.gate, self.gated_indexes()
        if gate.thresholds and not gated:
            return AtKey(f"no gated index to check ({self._gated_text()})", ("gate", "thresholds"))
        if gate.unjudged is not None and gate.unjudged.min_judged and not gated:
            return AtKey(
                f"no gated index to check ({self._gated_text()})",
                ("gate", "unjudged", "min_judged"),
            )
        for metric, t in (gate.thresholds or {}).items():
            if t.min is None and t.max_drop is None and t.max_drop_pct is None and t.mode == "drop":
                return AtKey(
                    "sets no bound: give min, max_drop, max_drop_pct or a mode with its margin "
                    "(or leave the metric out)",
                    ("gate", "thresholds", metric),
                )
        for n, o in enumerate(gate.overrides):
            problem = self._inert_override(n, o, gated)
            if problem is not None:
                return problem
        return self._inert_floor() or self._inert_budget() or self._inert_health()

    def _inert_override(self, n: int, o: ThresholdOverride, gated: list[str]) -> AtKey | None:
        """Why override ``n`` would replace no gated threshold (None: it applies)."""
        at: tuple[int | str, ...] = ("gate", "overrides", n)
        if o.index is not None and o.index not in gated:
            return AtKey(
                f"index {o.index} is not gated ({self._gated_text()}): add it to gate.indexes, "
                "or drop the override",
                (*at, "index"),
            )
        if not gated:
            return AtKey(f"no gated index to check ({self._gated_text()})", at)
        wanted = self.gate.slices
        if o.slice is not None and wanted is not None and o.slice not in wanted:
            return AtKey(
                f"slice {o.slice} is not gated (gate.slices: {', '.join(wanted) or 'none'}): add "
                "it there, or drop the override",
                (*at, "slice"),
            )
        return None

    def _inert_floor(self) -> AtKey | None:
        """Why ann_min_recall (given) or rerank_min_recall would hold no gated index."""
        gate, gated = self.gate, self.gated_indexes()
        if "ann_min_recall" in gate.model_fields_set and gate.ann_min_recall is not None:
            every = self.indexes.approximate_names()
            if not any(i in every for i in gated):
                fix = (
                    f"add {', '.join(every)} to gate.indexes"
                    if every
                    else "enable an approximate index (hnsw, a faiss, quantized or pgvector one, "
                    "or a python one with approximate: true)"
                )
                return AtKey(
                    f"no gated approximate index to hold to this floor ({self._gated_text()}): "
                    f"{fix}, or set it to null",
                    ("gate", "ann_min_recall"),
                )
            if not self.indexes.exact.enabled:
                return AtKey(
                    "an approximate index's recall is measured against exact search, and "
                    "indexes.exact is disabled: enable it, or set ann_min_recall to null",
                    ("gate", "ann_min_recall"),
                )
        if "ann_floor_on" in gate.model_fields_set and gate.ann_floor_on == "worst":
            problem = self._inert_floor_on(gated)
            if problem is not None:
                return problem
        if gate.rerank_min_recall is not None:
            every = [n for n in self.indexes.enabled_names() if self.indexes.kind(n) == "rerank"]
            if not any(i in every for i in gated):
                fix = f"add {', '.join(every)} to gate.indexes" if every else "add a rerank index"
                return AtKey(
                    f"no gated rerank index to hold to this floor ({self._gated_text()}): {fix}, "
                    "or drop it",
                    ("gate", "rerank_min_recall"),
                )
        return None

    def _inert_floor_on(self, gated: list[str]) -> AtKey | None:
        """Why ``ann_floor_on: worst`` would change no check: no floor, or no gated approximate
        index searched several times (the worst of one search is its recall)."""
        at = ("gate", "ann_floor_on")
        if self.gate.ann_min_recall is None:
            return AtKey("ann_min_recall is null: no floor to hold the worst repeat to", at)
        typed = self.indexes.typed
        approximate = self.indexes.approximate_names()
        if not any(i in approximate and i in typed and typed[i].repeats_of() > 1 for i in gated):
            return AtKey(
                "no gated approximate index is searched more than once (stability.repeats above "
                f"1; {self._gated_text()}): set repeats on one, or leave ann_floor_on out",
                at,
            )
        return None

    def _inert_budget(self) -> AtKey | None:
        """Why a budget would hold nothing: its index is not gated, or it sets no limit."""
        gated = self.gated_indexes()
        for name, budget in self.gate.budgets.items():
            if name not in gated:
                return AtKey(
                    f"index {name} is not gated ({self._gated_text()}): add it to gate.indexes, "
                    "or drop this budget",
                    ("gate", "budgets", name),
                )
            if all(getattr(budget, f) is None for f in IndexBudget.model_fields):
                return AtKey(
                    f"sets no limit: give one of {', '.join(IndexBudget.model_fields)}",
                    ("gate", "budgets", name),
                )
        return None

    def _inert_health(self) -> AtKey | None:
        """Why gate.health (given) would bound nothing: the figures are not computed, or a
        figure's bound sets neither min nor max."""
        health = self.gate.health
        if "health" in self.gate.model_fields_set and health and not self.health.enabled:
            return AtKey(
                "the health figures are not computed (health.enabled is false): enable them, "
                "or leave gate.health out",
                ("gate", "health", next(iter(health))),
            )
        for key, bound in health.items():
            if bound.min is None and bound.max is None:
                return AtKey("sets no bound: give min or max", ("gate", "health", key))
        return None

    def _budgets_are_measured(self) -> None:
        """AtKey at a budget on an index the run does not measure, and at a cost budget for a
        model without a price."""
        enabled = self.indexes.enabled_names()
        for name in self.gate.budgets:
            where = ("gate", "budgets", name)
            if name not in enabled:
                enabled_text = ", ".join(enabled)
                raise AtKey(f"no enabled index {name!r} to budget: one of {enabled_text}", where)
            typed = self.indexes.typed.get(name)
            kind = typed.type if typed is not None else name
            timed = typed is not None and kind in LATENCY_INDEX_TYPES and typed.approximate_of()
            if kind not in BUDGET_INDEX_TYPES and not timed:
                raise AtKey(
                    f"{name} is a {kind} index: a run measures the cost of "
                    f"{', '.join(BUDGET_INDEX_TYPES)} indexes, and the latency alone of "
                    "stores, pgvector and python indexes declared approximate",
                    where,
                )
            budget = self.gate.budgets[name]
            unmeasured = [k for k, v in budget.model_dump().items() if v is not None]
            unmeasured = [k for k in unmeasured if k != "max_p95_ms"] if timed else []
            if unmeasured:
                raise AtKey(
                    f"{name} is searched outside evalret ({kind}): its size and vectors "
                    "compared are not measured, only its latency (max_p95_ms)",
                    (*where, unmeasured[0]),
                )
        if self.gate.max_cost_per_run is not None and self.model.price is None:
            raise AtKey(
                "max_cost_per_run needs an API model with model.price_per_million_tokens",
                ("gate", "max_cost_per_run"),
            )

    def _gated_indexes_exist(self) -> None:
        """AtKey at the first gate key naming an index the config does not have (with the
        close name it may mean)."""
        known = {*BUILTIN_INDEXES, *self.indexes.typed}
        named: list[tuple[str, tuple[int | str, ...]]] = [
            (i, ("gate", "indexes", n)) for n, i in enumerate(self.gate.indexes or [])
        ]
        named += [
            (o.index, ("gate", "overrides", n, "index"))
            for n, o in enumerate(self.gate.overrides)
            if o.index is not None
        ]
        for index, loc in named:
            if index not in known:
                hint = did_you_mean(index, sorted(known))
                raise AtKey(
                    f"unknown index {index!r}{hint}: one of {', '.join(sorted(known))}", loc
                )

    @property
    def thresholds(self) -> dict[str, Threshold]:
        """The gate's per-metric thresholds; the defaults cover only metrics that are computed."""
        if self.gate.thresholds is not None:
            return dict(self.gate.thresholds)
        return {m: t for m, t in DEFAULT_THRESHOLDS.items() if m in self.metrics}

    # ``metrics`` parsed (core.metrics.parse_metrics), once per list of names: a private
    # attribute, so no part of the schema or the dump; keyed by the names, so a copy with other
    # metrics (model_copy(update=...)) parses its own
    _parsed_metrics: tuple[tuple[str, ...], tuple[Metric, ...]] | None = PrivateAttr(None)

    @property
    def metric_specs(self) -> list[Metric]:
        """The configured metrics, parsed: every stage reads them here (the names are parsed
        once per config, not once per stage)."""
        names = tuple(self.metrics)
        if self._parsed_metrics is None or self._parsed_metrics[0] != names:
            self._parsed_metrics = (names, tuple(parse_metrics(names)))
        return list(self._parsed_metrics[1])

    @property
    def depth(self) -> int:
        """The search depth of ``metrics`` and ``search_depth`` (core.metrics.search_depth
        states the rule; the pipeline searches no deeper than the corpus size)."""
        return search_depth(self.metric_specs, self.search_depth)

    def resolve_paths(self, base: Path) -> Config:
        """A copy whose relative paths are made absolute against ``base``, the directory the
        modules of its callables are looked for first (``code_dir``)."""

        def fix(p: Path | None) -> Path | None:
            return None if p is None or p.is_absolute() else (base / p).resolve()

        gs = self.golden_set
        updates = {k: fix(getattr(gs, k)) for k in ("path", "queries", "corpus", "qrels")}
        golden = gs.model_copy(update={k: v for k, v in updates.items() if v is not None})
        model = self.model
        if model.name_is_path and _is_local(base, model.name):
            model = model.model_copy(update={"name": str(base / model.name)})
        out = self.output.model_copy(update={"dir": fix(self.output.dir) or self.output.dir})
        gate = self.gate.model_copy(
            update={"baseline": fix(self.gate.baseline) or self.gate.baseline}
        )
        cache = self.cache.model_copy(update={"dir": fix(self.cache.dir) or self.cache.dir})
        history = self.history.model_copy(
            update={"path": fix(self.history.path) or self.history.path}
        )
        judge = self.judge
        if judge is not None and judge.prompt != "umbrela":
            prompt = fix(Path(judge.prompt)) or judge.prompt
            judge = judge.model_copy(update={"prompt": str(prompt)})
        synth = self.synth
        if synth is not None and synth.template is not None:
            synth = synth.model_copy(update={"template": fix(synth.template) or synth.template})
        resolved = self.model_copy(
            update={
                "judge": judge,
                "synth": synth,
                "indexes": self.indexes.resolve_paths(base),
                "golden_set": golden,
                "model": model.beside(base.resolve()),
                "output": out,
                "gate": gate,
                "cache": cache,
                "history": history,
            }
        )
        resolved._code_dir = base.resolve()
        return resolved


def refresh_unions() -> None:
    """After a member joined or left ``MODEL_CONFIGS`` or ``INDEX_CONFIGS`` (a plug-in's
    registration): the config models validate with the registries' members from now on."""
    IndexesConfig.model_rebuild(force=True)  # the inner model first: Config takes its schema
    Config.model_rebuild(force=True)
