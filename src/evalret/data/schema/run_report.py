"""report.json's root model, ``RunReport``, and the checks that a report agrees with itself."""

from __future__ import annotations

from typing import Any

from pydantic import (
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

# the closed vocabularies are the core's, defined once there
from evalret.core.metrics import SCORE_SLACK
from evalret.data.schema.base import (
    SCHEMA_VERSION,
    _Model,
)
from evalret.data.schema.gate_section import (
    GateSection,
)
from evalret.data.schema.results import (
    AnnSection,
    IndexResult,
    IntrinsicSection,
    LabelsSection,
    LatencySection,
    LexicalSection,
    MetricCurves,
    RerankSection,
    SliceInfo,
)
from evalret.data.schema.run_info import (
    BootstrapInfo,
    EmbeddingInfo,
    Fingerprint,
    GoldenSetInfo,
    SampleSection,
)


class BaselineSaved(_Model):
    """When a baseline was saved, and at which commit (`run --save-baseline` records it; absent in
    a run's report.json and in baselines of older versions)."""

    at: str  # when, UTC, ISO 8601 to the second
    commit: str | None  # $GITHUB_SHA, else git HEAD where evalret ran; null outside git


class RunReport(_Model):
    """report.json, schema version 2. A report of version 1 (``ann`` the hnsw index's section
    or null, ``ann_others`` every other approximate index by name) reads as this layout: both
    become the one mapping ``ann``. A newer version is refused (data/baseline.py)."""

    schema_version: int = SCHEMA_VERSION  # the version of this layout (2)
    evalret_version: str  # the evalret that wrote the report
    config: dict[str, Any]  # the resolved config the run used, every key (paths absolute)
    # what must match for two runs to be compared: golden set, model, indexes, metrics
    fingerprint: Fingerprint
    golden_set: GoldenSetInfo  # the golden set read: source, format, counts and fingerprints
    embedding: EmbeddingInfo  # the vectors: dimension, counts, the cache, backend and API use
    bootstrap: BootstrapInfo  # how the confidence intervals were computed
    query_ids: list[str]  # the evaluated queries, in the order every per-query list follows
    slices: dict[str, SliceInfo]  # every slice by name: its rule and member queries
    indexes: dict[str, IndexResult]  # every index by name: its settings and metrics per slice
    # every approximate index (hnsw, faiss, quantized, pgvector, a python one declared
    # approximate) against exact search, by index name; empty when there is none
    ann: dict[str, AnnSection] = {}
    # the dense index against BM25 and the hybrid, per slice; absent without bm25
    lexical: LexicalSection | None = None
    # the label-free health of the vectors; absent when health is off
    intrinsic: IntrinsicSection | None = None
    # the gate's verdict and every check; absent when nothing was gated
    gate: GateSection | None = None
    timings: dict[str, float]  # seconds spent per stage of the run
    # what a sampled run evaluated; absent for a run on the whole golden set
    sample: SampleSection | None = None
    # the id of the run that wrote this report.json (a fresh uuid per run, or $EVALRET_RUN_ID):
    # the action and the hook take a verdict only from the report of the run they started;
    # absent in saved baselines and in reports of older versions
    run_id: str | None = None
    # the config settings given on the command line (--set, --model, --dimension), by dotted
    # path, as given (the config above holds their effect); absent when there were none
    overrides: dict[str, Any] | None = None
    # the headline on human labels beside all labels, when an LLM judge graded part of the golden
    # set; absent otherwise (and in reports of older versions)
    labels: LabelsSection | None = None
    # `run --judge`: the LLM judge's labels this run was scored with (their source, the indexes
    # and top k judged, pairs labelled, cached, asked, left unjudged); absent without --judge
    judge: dict[str, Any] | None = None
    # how many of the scored queries' judgments each label source gave, as the metrics used
    # them: "human" (every source that is not a model's) and each LLM judge's
    # "llm:<model>@<prompt hash>" (`run --judge`'s listed even when it labelled nothing); a
    # baseline and a run whose sources differ are not compared (data/baseline.py); absent in
    # reports of older versions
    label_sources: dict[str, int] | None = None
    # every rerank index beside its first stage, by index name; absent when there is none
    rerank: dict[str, RerankSection] = {}
    # single-query latency of the exact and faiss-backed indexes (machine-dependent); absent
    # when none was timed (and in reports of older versions)
    latency: LatencySection | None = None
    # when and at which commit `run --save-baseline` saved this baseline; absent in a run's
    # report.json and in baselines saved by older versions
    saved: BaselineSaved | None = None

    @model_validator(mode="before")
    @classmethod
    def _older_layout(cls, data: Any) -> Any:
        """Schema version 1 read as this layout: its ``ann`` (the hnsw index's section, or null)
        and ``ann_others`` (every other approximate index by name) become the one mapping
        ``ann``, keyed by each section's index, hnsw first; nothing else changed."""
        if not isinstance(data, dict) or data.get("schema_version") != 1:
            return data
        first, others = data.get("ann"), data.get("ann_others", {})
        if not isinstance(others, dict) or not (first is None or isinstance(first, dict)):
            return data  # left to the field checks, which name the wrong part
        ann = {str(first.get("index", "hnsw")): first} if first is not None else {}
        rest = {k: v for k, v in data.items() if k not in ("ann", "ann_others")}
        return {**rest, "schema_version": SCHEMA_VERSION, "ann": {**ann, **others}}

    @model_serializer(mode="wrap")
    def _absent_stays_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A report on the whole golden set dumps without ``sample``, one not written by a run
        without ``run_id``, and so on for every optional section left out."""
        data: dict[str, Any] = handler(self)
        if self.sample is None:
            data.pop("sample", None)
        if self.run_id is None:
            data.pop("run_id", None)
        if self.overrides is None:
            data.pop("overrides", None)
        if self.labels is None:
            data.pop("labels", None)
        if self.judge is None:
            data.pop("judge", None)
        if self.label_sources is None:
            data.pop("label_sources", None)
        if not self.rerank:
            data.pop("rerank", None)
        if self.latency is None:
            data.pop("latency", None)
        if self.saved is None:
            data.pop("saved", None)
        return data

    def ann_sections(self) -> list[AnnSection]:
        """Every approximate index against exact search, in the run's order of indexes."""
        return list(self.ann.values())

    @model_validator(mode="after")
    def _aligned_with_query_ids(self) -> RunReport:
        problems = alignment_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self


def alignment_problems(report: RunReport) -> list[str]:
    """Where a report disagrees with itself, each named by its JSON path: per-query arrays of
    another length than ``query_ids``, slice members outside it, an index's slices that are not
    the report's or that list other metrics than the index's first slice, metric@k curves of
    another length than their cutoffs, ANN and lexical sections the report cannot draw."""
    n = len(report.query_ids)
    out = []
    for name, info in report.slices.items():
        outside = [m for m in info.members if not 0 <= m < n]
        if outside:
            out.append(f"slices.{name}.members: position {outside[0]} is not in query_ids")
    for name, index in report.indexes.items():
        out += _index_problems(f"indexes.{name}", index, n, report.slices.keys())
    for name, section in report.ann.items():
        if not section.slices:
            out.append(f"ann.{name}.slices: empty")
        if section.index != name:
            out.append(f"ann.{name}.index: {section.index!r}, not the index it is filed under")
    if report.lexical is not None:
        out += _lexical_problems(report.lexical)
    return out


def _lexical_problems(lex: LexicalSection) -> list[str]:
    first = next(iter(lex.slices.values()), None)
    metrics = set(first.dense_minus_bm25) if first is not None else set()
    out = [] if metrics else ["lexical.slices: no slice with metrics"]
    hybrid = set(first.hybrid_minus_dense) if first is not None else set()
    for name, result in lex.slices.items():
        for field in ("dense_minus_bm25", "hybrid_minus_dense", "dense_wins", "bm25_wins"):
            # without a hybrid index, hybrid_minus_dense is empty in every slice
            expected = hybrid if field == "hybrid_minus_dense" and not hybrid else metrics
            if set(getattr(result, field)) != expected:
                out.append(f"lexical.slices.{name}.{field}: other metrics than the first slice's")
    return out


def _index_problems(where: str, index: IndexResult, n: int, slices: Any) -> list[str]:
    out = []
    arrays: dict[str, list[Any]] = {f"per_query.{m}": v for m, v in index.per_query.items()}
    arrays |= {f"condensed.{m}": v for m, v in (index.condensed or {}).items()}
    for field, values in {**arrays, "top_ids": index.top_ids}.items():
        if len(values) != n:
            out.append(f"{where}.{field}: {len(values)} entries for {n} query_ids")
    for field, values in arrays.items():  # every metric family scores a query in [0, 1]
        bad = next(
            (i for i, v in enumerate(values) if not -SCORE_SLACK <= v <= 1 + SCORE_SLACK), None
        )
        if bad is not None:
            out.append(f"{where}.{field}[{bad}]: {values[bad]!r} is not a score in [0, 1]")
    if index.curves is not None:
        out += _curve_problems(f"{where}.curves", index.curves)
    metrics = [set(s.metrics) for s in index.slices.values()]
    for name, names in zip(index.slices, metrics, strict=True):
        if name not in slices:
            out.append(f"{where}.slices.{name}: not a slice of the report")
        elif names != metrics[0]:
            out.append(f"{where}.slices.{name}.metrics: other metrics than the first slice's")
    return out


def _curve_problems(where: str, curves: MetricCurves) -> list[str]:
    return [
        f"{where}.values.{family}.{name}: {len(values)} entries for {len(curves.k)} cutoffs k"
        for family, per_slice in curves.values.items()
        for name, values in per_slice.items()
        if len(values) != len(curves.k)
    ]
