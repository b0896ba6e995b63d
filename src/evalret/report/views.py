"""View-models shared by the terminal, Markdown, JUnit and HTML views.

The rows every view draws from: the gate's summary and
checks (``gate_summary``, ``check_rows``), the per-slice rows of a comparison on its primary
metric (``compare_rows``) and the embedding backend's line (``backend_line``), their numbers
written by the one formatter (``evalret.report.numbers``). Each view adds only its own markup
(colours, bold, escaping), so a figure is computed once and reads the same everywhere.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from evalret.core.gate import amount
from evalret.data.schema import (
    AnnSection,
    ApiUse,
    EmbeddingInfo,
    GateCheck,
    GateSection,
    LatencySection,
    MetricComparison,
    RunReport,
    SliceComparison,
    UnjudgedDoc,
)
from evalret.report.numbers import Medium, number, p_pair

# --- the gate ----------------------------------------------------------------------------------

LIMITS = {
    "min": "≥ {:g}",
    "max_drop": "drop ≤ {:g}",
    "max_drop_pct": "drop ≤ {:g}%",
    "ann_min_recall": "≥ {:g}",
    "rerank_min_recall": "≥ {:g}",
    "health_min": "≥ {:g}",
    "health_max": "≤ {:g}",
    "judged_min": "≥ {:g}",
}


def limit_text(check: GateCheck) -> str:
    """What a check allows, as a reader writes it: ``≥ 0.95``, ``drop ≤ 0.01``, ``drop ≤ 2%``,
    ``≤ 8,000,000``."""
    if check.kind == "budget_max":
        return f"≤ {amount(check.threshold)}"
    return LIMITS[check.kind].format(check.threshold)


def allowed_change(check: GateCheck) -> float | None:
    """The largest change a drop check allows (negative), None for the other kinds."""
    if check.kind == "max_drop":
        return -check.threshold
    if check.kind == "max_drop_pct" and check.baseline is not None:
        return -check.threshold / 100 * check.baseline
    return None


@dataclass(frozen=True)
class CheckRow:
    """One gate check with its numbers formatted for a medium."""

    check: GateCheck
    baseline: str
    current: str
    delta: str
    limit: str
    p: str
    weak: bool  # passes, but its slice is too small to detect the threshold (underpowered)
    mde: str  # the minimum detectable drop, 3 decimals ("" unless weak)


def check_rows(checks: list[GateCheck], medium: Medium) -> list[CheckRow]:
    """The rows of a checks table, in the order given."""
    return [
        CheckRow(
            check=c,
            baseline=number(c.baseline, medium=medium),
            current=(
                _budget_figure(c.current, medium)
                if c.kind == "budget_max"
                else number(c.current, medium=medium)
            ),
            delta=number(c.delta, signed=True, medium=medium),
            limit=limit_text(c),
            p=p_pair(c.p_value, c.p_adjusted, medium),
            weak=c.underpowered and c.outcome == "pass",
            mde=(
                number(c.mde, digits=3, medium=medium)
                if c.underpowered and c.outcome == "pass" and c.mde is not None
                else ""
            ),
        )
        for c in checks
    ]


def _budget_figure(v: float | None, medium: Medium) -> str:
    """A budget check's figure as counted (``core.gate.amount``)."""
    if v is None or v != v:  # not measured
        return medium.missing
    return amount(v)


WEAK_EVIDENCE = (
    "{n} passing check(s) have slices too small to detect their threshold (minimum detectable "
    "drop, MDE, above it): a pass there is weak evidence."
)


RESULT_WORDS = {"pass": "pass", "fail": "FAIL", "inconclusive": "INCONCLUSIVE"}


JUDGED_ONLY_DROPPED = "the judged-only metric dropped too"


@dataclass(frozen=True)
class GateSummary:
    """What every view says of a gate before its tables: the verdict and the counts."""

    passed: bool
    n_checks: int
    failed: list[GateCheck]
    weak: list[GateCheck]  # passing checks that cannot detect their threshold
    inconclusive: list[GateCheck]  # drop checks whose labels could not tell (blocking or not)
    policy: str  # gate.unjudged.policy ("warn" when the report does not say)

    @property
    def weak_sentence(self) -> str:
        """The warning on underpowered passes (report.md and the HTML page)."""
        return WEAK_EVIDENCE.format(n=len(self.weak))

    @property
    def is_inconclusive(self) -> bool:
        """No check failed, but some could not tell (policy warn): exit 0 with a warning."""
        return not self.failed and bool(self.inconclusive)

    @property
    def failed_note(self) -> str:
        """What a failed gate's count leaves out: how many of the failed checks are inconclusive
        (policy fail), how many failed although judged@k fell (their judged-only form dropped
        too), or how many more are inconclusive (policy warn, not blocking); "" when none."""
        blocking = sum(c.outcome == "inconclusive" for c in self.failed)
        beside = len(self.inconclusive) - blocking
        judged_only = sum(
            c.outcome == "fail" and c.condensed_current is not None for c in self.failed
        )
        among = [f"{blocking} of them inconclusive, policy fail"] if blocking else []
        if judged_only:
            among.append(f"{judged_only} of them although judged@k fell: {JUDGED_ONLY_DROPPED}")
        return (f" ({'; '.join(among)})" if among else "") + (
            f"; {beside} more inconclusive (policy warn, not blocking)" if beside else ""
        )

    @property
    def inconclusive_sentence(self) -> str:
        """Why some checks could not tell, and what that does to the exit code."""
        n = len(self.inconclusive)
        effect = (
            "Policy fail: they fail the gate (exit 1)."
            if self.policy == "fail"
            else "Policy warn: they do not block the gate (exit 0)."
        )
        return (
            f"{n} drop check{'s are' if n != 1 else ' is'} inconclusive: the current run's "
            "judged@k fell more than gate.unjudged.max_drop below the baseline's, so the new "
            f"top k holds documents nobody judged and the metrics cannot tell. {effect}"
        )


def gate_summary(gate: GateSection) -> GateSummary:
    """The verdict, the failed checks, the weak passes and the inconclusive checks of ``gate``."""
    return GateSummary(
        passed=gate.verdict == "pass",
        n_checks=len(gate.checks),
        failed=gate.failed,
        weak=[c for c in gate.checks if c.underpowered and c.outcome == "pass"],
        inconclusive=gate.inconclusive,
        policy=gate.unjudged.policy if gate.unjudged is not None else "warn",
    )


def result_word(check: GateCheck) -> str:
    """``pass``, ``FAIL`` or ``INCONCLUSIVE``: a check's outcome as the tables write it."""
    return RESULT_WORDS[check.outcome]


# --- when the labels cannot tell ---------------------------------------------------------------

LABELS_FILE = "labels.jsonl"  # where the suggested judge command writes its labels


@dataclass(frozen=True)
class UnjudgedRow:
    """One index and slice whose drop checks are inconclusive: judged@k of baseline and
    current, and how many checks it made inconclusive."""

    index: str
    slice: str
    k: int
    baseline: float | None
    current: float | None
    n_checks: int

    @property
    def never_judged(self) -> float | None:
        """The share of the current top k that was never judged (1 - judged@k)."""
        return None if self.current is None else 1 - self.current


def unjudged_rows(gate: GateSection) -> list[UnjudgedRow]:
    """One row per (index, slice, k) of the inconclusive checks, in check order."""
    rows: dict[tuple[str, str, int], UnjudgedRow] = {}
    for c in gate.inconclusive:
        if c.judged_k is None:
            continue
        key = (c.index, c.slice, c.judged_k)
        n = rows[key].n_checks if key in rows else 0
        rows[key] = UnjudgedRow(
            c.index, c.slice, c.judged_k, c.judged_baseline, c.judged_current, n + 1
        )
    return list(rows.values())


def judge_command(report_json: str, index: str, k: int) -> str:
    """The command that would judge the unjudged documents of ``index``'s top ``k`` in the run
    of ``report_json`` (shell-quoted; untrusted: escape where shown)."""
    return (
        f"evalret judge --from-report {shlex.quote(report_json)} --index {shlex.quote(index)} "
        f"--k {k} --out {LABELS_FILE}"
    )


def judge_commands(gate: GateSection, report_json: str) -> list[str]:
    """One judge command per (index, k) of the inconclusive checks."""
    seen = dict.fromkeys((r.index, r.k) for r in unjudged_rows(gate))
    return [judge_command(report_json, index, k) for index, k in seen]


def unjudged_line(row: UnjudgedRow, medium: Medium) -> str:
    """``exact/all: judged@10 0.19 -> 0.04, 96% of the new top 10 never judged (2 checks)``."""
    share = "" if row.never_judged is None else f", {row.never_judged:.0%}"
    return (
        f"{row.index}/{row.slice}: judged@{row.k} {number(row.baseline, medium=medium)} -> "
        f"{number(row.current, medium=medium)}{share} of the new top {row.k} never judged "
        f"({row.n_checks} check{'s' if row.n_checks != 1 else ''} inconclusive)"
    )


# --- a comparison ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompareRow:
    """One slice of a comparison on its primary metric, formatted for a medium (the columns of
    ``common.COMPARE_COLUMNS``, then the diagnosis)."""

    name: str
    n: str
    a: str
    b: str
    delta: str
    ci: str
    p_randomization: str
    p_t_test: str
    wtl: str
    mde: str
    diagnosis: str
    metric: MetricComparison  # the numbers, for a view's colours and emphasis


def compare_rows(
    slices: dict[str, SliceComparison], primary: str, medium: Medium
) -> list[CompareRow]:
    """One row per slice that has the ``primary`` metric."""
    rows = []
    for name, sc in slices.items():
        if primary not in sc.metrics:
            continue
        m = sc.metrics[primary]
        mde = sc.mde.get(primary)
        low, high = (number(x, signed=True, medium=medium) for x in (m.ci_low, m.ci_high))
        rows.append(
            CompareRow(
                name=name,
                n=str(sc.n_queries),
                a=number(m.a, medium=medium),
                b=number(m.b, medium=medium),
                delta=number(m.delta, signed=True, medium=medium),
                ci=f"[{low}, {high}]",
                p_randomization=p_pair(m.p_randomization, m.p_randomization_adjusted, medium),
                p_t_test=p_pair(m.p_t_test, m.p_t_test_adjusted, medium),
                wtl=f"{m.wins}/{m.ties}/{m.losses}",
                mde=number(mde, digits=3, medium=medium),
                diagnosis=sc.diagnosis,
                metric=m,
            )
        )
    return rows


def compared_judged_key(slices: dict[str, SliceComparison]) -> str | None:
    """The judged@k a comparison shows: judged@10 when both sides computed it, else the
    smallest k; None for a compare.json without judged figures."""
    keys = list(next(iter(slices.values())).judged) if slices else []
    if not keys:
        return None
    return "judged@10" if "judged@10" in keys else min(keys, key=lambda k: int(k.split("@")[1]))


@dataclass(frozen=True)
class JudgedRow:
    """judged@k of one slice in A and in B, and B - A, formatted for a medium."""

    name: str
    a: str
    b: str
    delta: str


def judged_rows(
    slices: dict[str, SliceComparison], medium: Medium
) -> tuple[str | None, list[JudgedRow]]:
    """The judged@k shown and one row per slice (none without judged figures)."""
    key = compared_judged_key(slices)
    if key is None:
        return None, []
    rows = []
    for name, sc in slices.items():
        pair = sc.judged.get(key)
        if pair is None:
            continue
        delta = None if pair.a is None or pair.b is None else pair.b - pair.a
        rows.append(
            JudgedRow(
                name=name,
                a=number(pair.a, medium=medium),
                b=number(pair.b, medium=medium),
                delta=number(delta, signed=True, medium=medium),
            )
        )
    return key, rows


SNIPPET_CHARS = 80  # characters of an unjudged document's text shown in a list


def snippet(doc: UnjudgedDoc) -> str:
    """The start of an unjudged document's text (untrusted: escape where shown)."""
    text = " ".join(doc.text.split())
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"


# --- the embedding -----------------------------------------------------------------------------


def api_line(api: ApiUse) -> str:
    """The embedding API's endpoint and what each kind of text used there."""
    parts = []
    for label, use in (("documents", api.document), ("queries", api.query)):
        if use is None:
            continue
        tokens = "tokens not reported" if use.tokens is None else f"{use.tokens} tokens"
        cost = f", cost {use.cost:.4f}" if use.cost is not None else ""
        retries = f", {use.retries} retried" if use.retries else ""
        texts = f"{use.texts} text{'s' if use.texts != 1 else ''}"
        requests = f"{use.requests} request{'s' if use.requests != 1 else ''}"
        parts.append(f"{label} {texts} in {requests}, {tokens}{cost}{retries}")
    used = "; ".join(parts) if parts else "nothing sent (all cached)"
    return f"API {api.model} at {api.endpoint}: {used}"


def engine_line(embedding: EmbeddingInfo) -> str | None:
    """One line on the Ray engine that embedded the cache misses (configured text, to be
    escaped where shown); None for the local engine."""
    engine = embedding.engine
    if engine is None:
        return None
    gpus = f", {engine.gpus_per_worker:g} GPU each" if engine.gpus_per_worker else ""
    where = engine.address if engine.address != "local runtime" else "a local Ray runtime"
    return (
        f"embedded on Ray ({where}): {engine.workers} workers{gpus}, batches of "
        f"{engine.batch_size}, {engine.texts} texts"
    )


def backend_line(embedding: EmbeddingInfo) -> str | None:
    """One line on a non-torch backend and its agreement with torch, or on the embedding API
    (the terminal and report.md; it holds configured text, to be escaped where shown), or on
    torch running on another device than the CPU; None for torch on the CPU or a report that does
    not say."""
    backend, check = embedding.backend, embedding.backend_check
    if embedding.api is not None:
        return api_line(embedding.api)
    if backend is not None and backend.name == "torch" and backend.device not in (None, "cpu"):
        return f"backend torch {backend.precision} on {backend.device}"
    if backend is None or backend.name == "torch":
        return None
    line = f"backend {backend.name} {backend.precision}"
    if backend.threads:
        line += f", {backend.threads} threads"
    if backend.model in ("read", "exported"):
        line += ", model " + ("read from cache" if backend.model == "read" else "exported")
    if check is not None:
        line += (
            f": cosine to {check.reference} on {check.sample} sampled documents "
            f"mean {check.mean_cosine:.5f}, min {check.min_cosine:.5f}"
        )
    return line


# --- what an index costs -----------------------------------------------------------------------


def cost_text(ann: AnnSection) -> str:
    """What an approximate index told of its cost ('index 0.58 MiB (1,807 bytes a vector),
    334 distances a query'); empty when it told nothing."""
    parts = []
    if ann.index_bytes is not None and ann.bytes_per_vector is not None:
        parts.append(
            f"index {ann.index_bytes / 2**20:.2f} MiB ({ann.bytes_per_vector:,.0f} bytes a vector)"
        )
    if ann.distances_per_query is not None:
        parts.append(f"{ann.distances_per_query:,.0f} distances a query")
    return ", ".join(parts)


def machine_text(latency: LatencySection) -> str:
    """The machine latency was measured on, in a few words ('2 CPUs, x86_64, load 0.98')."""
    m = latency.machine
    load = m.get("load_average_1m")
    return f"{m.get('cpu_count')} CPUs, {m.get('processor')}" + (
        f", load {load}" if load is not None else ""
    )


def latency_text(report: RunReport) -> str | None:
    """One line: every timed index's single-query latency and the machine ('latency
    (machine-dependent; 2 CPUs, x86_64, load 0.98): exact p50 0.17 ms, p95 0.22 ms; ...');
    None when nothing was timed."""
    lat = report.latency
    if lat is None or not lat.indexes:
        return None
    each = "; ".join(
        f"{name} p50 {t.p50_ms:.3g} ms, p95 {t.p95_ms:.3g} ms" for name, t in lat.indexes.items()
    )
    return f"latency (machine-dependent; {machine_text(lat)}): {each}"
