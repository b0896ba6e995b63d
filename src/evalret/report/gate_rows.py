"""The gate's rows, shared by the terminal, Markdown, JUnit, comment and HTML views: its summary
and checks (``gate_summary``, ``check_rows``), the limits as a reader writes them, and the
unjudged documents with the judge commands that would label them. Their numbers are written by the
one formatter (``evalret.report.numbers``); each view adds only its own markup (colours, bold,
escaping), so a figure is computed once and reads the same everywhere.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from evalret.core.gate import amount
from evalret.data.schema import (
    GateCheck,
    GateSection,
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
    "non_inferiority": "bound > −{:g}",
    "equivalence": "bounds within ±{:g}",
}


def limit_text(check: GateCheck) -> str:
    """What a check allows, as a reader writes it: ``≥ 0.95``, ``drop ≤ 0.01``, ``drop ≤ 2%``,
    ``≤ 8,000,000``."""
    if check.kind == "budget_max":
        return f"≤ {amount(check.threshold)}"
    return LIMITS[check.kind].format(check.threshold)


def allowed_change(check: GateCheck) -> float | None:
    """The largest change a drop check allows (negative; a margin check: its margin), None for
    the other kinds."""
    if check.kind in ("max_drop", "non_inferiority", "equivalence"):
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
    inconclusive: list[GateCheck]  # checks that could not tell (blocking or not)
    policy: str  # gate.unjudged.policy ("warn" when the report does not say)

    @property
    def unstable(self) -> list[GateCheck]:
        """The inconclusive checks whose verdict flips under resampling (gate.min_stability)."""
        return [c for c in self.inconclusive if c.inconclusive_reason == "unstable"]

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
        if c.judged_k is None or c.inconclusive_reason == "unstable":
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
