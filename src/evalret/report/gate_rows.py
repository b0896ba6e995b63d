"""The gate's rows, shared by the terminal, Markdown, JUnit, comment and HTML views: its summary
and checks (``gate_summary``, ``check_rows``), the limits as a reader writes them, and the
unjudged documents with the judge commands that would label them. Their numbers are written by the
one formatter (``evalret.report.numbers``); each view adds only its own markup (colours, bold,
escaping), so a figure is computed once and reads the same everywhere.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from evalret.core.gate import amount
from evalret.data.schema import (
    GateCheck,
    GateSection,
    RunReport,
    ThresholdNote,
    UnderpoweredSlice,
)
from evalret.errors import docs_page
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
        )
        for c in checks
    ]


def _budget_figure(v: float | None, medium: Medium) -> str:
    """A budget check's figure as counted (``core.gate.amount``)."""
    if v is None or v != v:  # not measured
        return medium.missing
    return amount(v)


def threshold_heading(notes: list[ThresholdNote], brief: bool = False) -> str:
    """The one warning on drop thresholds finer than their slices' minimum detectable drop
    (``pipeline.gate.threshold_notes``), before its lines (``threshold_line``); every view
    writes it once, never per check. It changes no verdict, and says so. ``brief``: the
    terminal's, which leaves the remedy to report.md."""
    n, first = len(notes), notes[0]
    head = (
        f"{n} drop threshold{'s are' if n != 1 else ' is'} finer than some slices can detect: a "
        "drop smaller than a slice's minimum detectable drop (MDE, from the baseline's per-query "
        f"spread, one-sided alpha {first.alpha:g}, power {first.power:g}) may be noise there. "
        "Flagged once, when the baseline was read; it changes no verdict."
    )
    if brief:
        return head + " Each slice's MDE: report.md."
    return head + (
        " Raise the threshold (or override it for those slices) or add queries (evalret "
        "validate --report BASELINE: each slice's size and nDCG@10 MDE)."
    )


def threshold_line(note: ThresholdNote, medium: Medium, brief: bool = False) -> str:
    """``gate.thresholds.recall@10.max_drop 0.01 (default) is below the MDE of 10 slices:
    exact/all 0.058 (244 queries), exact/head 0.291 (13 queries), ...``; ``brief`` (the
    terminal): the smallest and the largest MDE only. Untrusted (index and slice names):
    escape where shown."""
    limit = f"{note.threshold:g}{'%' if note.kind == 'max_drop_pct' else ''}"
    default = " (default)" if note.default else ""
    k = len(note.slices)

    def figure(s: UnderpoweredSlice) -> str:
        allowed = number(s.allowed_drop, digits=3, medium=medium)
        return (
            f"{s.index}/{s.slice} {number(s.mde, digits=3, medium=medium)} ({s.n_queries} "
            f"quer{'ies' if s.n_queries != 1 else 'y'}"
            + (f"; allowed {allowed})" if note.kind == "max_drop_pct" else ")")
        )

    shown = note.slices
    if brief and k > 2:
        by_mde = sorted(note.slices, key=lambda s: s.mde)
        shown = [by_mde[0], by_mde[-1]]
    figures = (" to " if shown is not note.slices else ", ").join(map(figure, shown))
    return (
        f"{note.key} {limit}{default} is below the MDE of {k} slice{'s' if k != 1 else ''}: "
        f"{figures}"
    )


RESULT_WORDS = {"pass": "pass", "fail": "FAIL", "inconclusive": "INCONCLUSIVE"}


JUDGED_ONLY_DROPPED = "the judged-only metric dropped too"


@dataclass(frozen=True)
class GateSummary:
    """What every view says of a gate before its tables: the verdict and the counts."""

    passed: bool
    n_checks: int
    failed: list[GateCheck]
    inconclusive: list[GateCheck]  # checks that could not tell (blocking or not)
    policy: str  # gate.unjudged.policy ("warn" when the report does not say)

    @property
    def unstable(self) -> list[GateCheck]:
        """The inconclusive checks whose verdict flips under resampling (gate.min_stability)."""
        return [c for c in self.inconclusive if c.inconclusive_reason == "unstable"]

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
    """The verdict, the failed checks and the inconclusive checks of ``gate``."""
    return GateSummary(
        passed=gate.verdict == "pass",
        n_checks=len(gate.checks),
        failed=gate.failed,
        inconclusive=gate.inconclusive,
        policy=gate.unjudged.policy if gate.unjudged is not None else "warn",
    )


def result_word(check: GateCheck) -> str:
    """``pass``, ``FAIL`` or ``INCONCLUSIVE``: a check's outcome as the tables write it."""
    return RESULT_WORDS[check.outcome]


# --- when the labels cannot tell ---------------------------------------------------------------

# where a suggested judge command writes its labels: one file per index (and per k when one
# index is judged at several k), in the working directory
LABELS_FILE = "labels.{index}.jsonl"
LABELS_FILE_AT_K = "labels.{index}.k{k}.jsonl"


@dataclass(frozen=True)
class JudgeHint:
    """What the judge command a run prints needs besides the gate: where the run's report.json
    is, the words that gave the run its config (``--config PATH`` and every ``--set``,
    ``--model``, ``--dimension``: ``pipeline.configs.config_words``) and whether that config has
    a ``judge:`` section (without one, the command is preceded by how to add it)."""

    report_json: str = "report.json"
    config_words: tuple[str, ...] = ()
    has_judge: bool = True


# the hint of a renderer called without one: report.json beside the view, no config words
DEFAULT_HINT = JudgeHint()


def judge_hint(report: RunReport, report_json: str, config_words: Sequence[str] = ()) -> JudgeHint:
    """The judge hint of ``report`` written at ``report_json`` by a run given ``config_words``."""
    return JudgeHint(report_json, tuple(config_words), report.config.get("judge") is not None)


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


def judge_command(hint: JudgeHint, index: str, k: int, out: str) -> str:
    """The command that would judge the unjudged documents of ``index``'s top ``k`` in the run
    of ``hint`` into ``out``, with the run's config and settings: it runs as pasted in the
    directory the run ran in (shell-quoted; untrusted: escape where shown)."""
    words = ["evalret", "judge", *hint.config_words, "--from-report", hint.report_json]
    return shlex.join([*words, "--index", index, "--k", str(k), "--out", out])


def judge_lines(gate: GateSection, hint: JudgeHint) -> dict[tuple[str, int], str]:
    """One judge command per (index, k) of the inconclusive checks, each writing its own labels
    file (``LABELS_FILE``; ``LABELS_FILE_AT_K`` when an index is judged at several k)."""
    pairs = list(dict.fromkeys((c.index, c.judged_k) for c in gate.inconclusive))
    found = [(index, k) for index, k in pairs if k is not None]
    lines = {}
    for index, k in found:
        several = sum(i == index for i, _ in found) > 1
        out = (LABELS_FILE_AT_K if several else LABELS_FILE).format(index=index, k=k)
        lines[(index, k)] = judge_command(hint, index, k, out)
    return lines


def judge_commands(gate: GateSection, hint: JudgeHint) -> list[str]:
    """The judge commands of the inconclusive checks (``judge_lines``), in check order."""
    return list(judge_lines(gate, hint).values())


def judge_page() -> str:
    """The documentation of the ``judge:`` section (the page a config without one is sent to)."""
    return docs_page("how-to/annotate-and-judgments", "judging-with-an-llm")


def judge_intro(hint: JudgeHint) -> str:
    """The words before the judge commands: with a ``judge:`` section to add first when the
    run's config has none (else the pasted command would stop there, exit 2)."""
    if hint.has_judge:
        return "judge the unjudged documents"
    return f"add a judge: section to the config ({judge_page()}), then judge the unjudged documents"


def unjudged_line(row: UnjudgedRow, medium: Medium) -> str:
    """``exact/all: judged@10 0.19 -> 0.04, 96% of the new top 10 never judged (2 checks)``."""
    share = "" if row.never_judged is None else f", {row.never_judged:.0%}"
    return (
        f"{row.index}/{row.slice}: judged@{row.k} {number(row.baseline, medium=medium)} -> "
        f"{number(row.current, medium=medium)}{share} of the new top {row.k} never judged "
        f"({row.n_checks} check{'s' if row.n_checks != 1 else ''} inconclusive)"
    )
