"""The one source of a gate's verdict words: every sentence that names a verdict (PASSED,
FAILED, INCONCLUSIVE, "no baseline", an exit code) in the terminal, report.md, comment.md,
report.html and the hook is made here, from the verdict and the exit code the run ends with, so
no text can contradict the exit code.

The exit code of a gate is ``gate_exit_code``: 1 when it failed, else 0 (an inconclusive gate
under policy warn exits 0). A gate without a baseline checks only fixed limits (floors, health
bounds, budgets): it passes as "no baseline: N fixed checks", never as "GATE PASSED", since
nothing was compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from evalret.core.gate import DROP_KINDS  # the drops and margins, drawn from a baseline
from evalret.data.schema import CompareReport, GateCheck, GateSection
from evalret.errors import ExitCode
from evalret.report.gate_rows import GateSummary, gate_summary, result_word
from evalret.report.numbers import Medium, number

COMPARED_KINDS = (*DROP_KINDS, "judged_min")  # checks drawn from a baseline
VerdictState = Literal["pass", "fail", "inconclusive", "no baseline"]


def gate_exit_code(gate: GateSection | None) -> ExitCode:
    """1 when the gate failed (a check blocks it), else 0: no gate, a pass, an inconclusive
    gate under policy warn, or fixed checks that pass without a baseline."""
    return ExitCode.REGRESSION if gate is not None and gate.verdict == "fail" else ExitCode.OK


def _checks(n: int, fixed: bool = False) -> str:
    return f"{n} {'fixed ' if fixed else ''}check{'s' if n != 1 else ''}"


@dataclass(frozen=True)
class VerdictWords:
    """A gate's verdict as each view writes it."""

    state: VerdictState
    exit_code: ExitCode
    title: str  # the terminal's line: "GATE PASSED: all 43 checks pass"
    heading: str  # report.md's and comment.md's first line
    line: str  # report.html's verdict line, a sentence
    badge: str  # report.html's badge
    hook: str  # `evalret hook`'s line after "<hook id>: " (with "{where}" for the baseline)
    inconclusive_effect: str  # what the inconclusive checks do to the exit code ("" if none)

    def inconclusive_sentence(self, s: GateSummary) -> str:
        """Why some checks could not tell, and what that does to the exit code."""
        n = len(s.inconclusive)
        n_unstable = len(s.unstable)
        n_unjudged = n - n_unstable
        why = []
        if n_unjudged:
            why.append(
                f"{n_unjudged} drop check{'s are' if n_unjudged != 1 else ' is'} inconclusive: "
                "the current run's judged@k fell more than gate.unjudged.max_drop below the "
                "baseline's, so the new top k holds documents nobody judged and the metrics "
                "cannot tell."
            )
        if n_unstable:
            why.append(
                f"{n_unstable} check{'s are' if n_unstable != 1 else ' is'} inconclusive: "
                f"{'their verdicts flip' if n_unstable != 1 else 'its verdict flips'} under "
                "resampling of the queries more often than gate.min_stability allows."
            )
        return " ".join([*why, self.inconclusive_effect]).strip()

    @property
    def badge_state(self) -> str:
        """The badge's colour class: pass, fail or neutral."""
        return {"pass": "pass", "fail": "fail"}.get(self.state, "neutral")


def _pass_words(s: GateSummary, code: ExitCode, no_baseline: bool) -> VerdictWords:
    n = s.n_checks
    if no_baseline:
        what = "the fixed check" if n == 1 else f"all {n} fixed checks"
        return VerdictWords(
            "no baseline",
            code,
            f"NO BASELINE: {what} pass{'es' if n == 1 else ''} (nothing compared)",
            f"## evalret gate: no baseline: {_checks(n, True)} pass{'es' if n == 1 else ''} "
            "(nothing compared)",
            f"No baseline: {what} pass{'es' if n == 1 else ''}; nothing was compared.",
            f"no baseline: {_checks(n, True)}",
            f"PASS: {_checks(n, True)} (no baseline to compare with)",
            "",
        )
    every = f"{'the' if n == 1 else f'all {n}'} check{'s' if n != 1 else ''}"
    return VerdictWords(
        "pass",
        code,
        f"GATE PASSED: {every} pass{'es' if n == 1 else ''}",
        f"## evalret gate: ✅ pass ({_checks(n)})",
        f"All {n} checks pass." if n != 1 else "The check passes.",
        "✔ GATE PASSED",
        f"PASS: {_checks(n)} against {{where}}",
        "",
    )


def _inconclusive_effect(s: GateSummary, code: ExitCode) -> str:
    """What the inconclusive checks do to the exit code, as it is."""
    if not s.inconclusive:
        return ""
    if s.policy == "fail":
        return f"Policy fail: they fail the gate (exit {code})."
    if code == ExitCode.OK:
        return f"Policy warn: they do not block the gate (exit {code})."
    return (
        "Policy warn: they alone would not fail the gate, but other checks failed it "
        f"(exit {code})."
    )


def _cannot_tell(s: GateSummary) -> str:
    """Why the inconclusive checks could not tell, in a few words."""
    unjudged = "too much of the new top k was never judged"
    unstable = "verdicts flip under resampling of the queries"
    if not s.unstable:
        return unjudged
    if len(s.unstable) == len(s.inconclusive):
        return unstable
    return f"{unjudged}, or {unstable}"


def verdict_words(gate: GateSection) -> VerdictWords:
    """The verdict words of ``gate`` for the exit code it ends the run with."""
    return words_for(gate_summary(gate), gate_exit_code(gate), no_baseline=fixed_only(gate))


def fixed_only(gate: GateSection) -> bool:
    """No baseline was compared: the gate names none and no check is drawn from one (a drop, a
    judged@k floor)."""
    return gate.baseline is None and not any(c.kind in COMPARED_KINDS for c in gate.checks)


def words_for(s: GateSummary, code: ExitCode, *, no_baseline: bool = False) -> VerdictWords:
    """The verdict words of the gate summarised by ``s`` ending with exit ``code``. A summary and
    code that disagree (a failed check, exit 0) are a bug: ValueError."""
    if (code == ExitCode.REGRESSION) != bool(s.failed):
        raise ValueError(f"gate with {len(s.failed)} failed checks cannot exit {code}")
    effect = _inconclusive_effect(s, code)
    n, n_inc = s.n_checks, len(s.inconclusive)
    if s.passed:
        return _pass_words(s, code, no_baseline)
    if s.is_inconclusive:
        why = _cannot_tell(s)
        return VerdictWords(
            "inconclusive",
            code,
            f"GATE INCONCLUSIVE: {n_inc} of {n} checks cannot tell ({why}; policy warn, not "
            "blocking)",
            f"## evalret gate: ⚠️ inconclusive ({n_inc} of {n} checks cannot tell: {why})",
            f"{n_inc} of {n} checks are inconclusive.",
            "? GATE INCONCLUSIVE",
            f"INCONCLUSIVE: {n_inc} of {n} checks against {{where}} cannot tell ({why}); not "
            "blocking (gate.unjudged.policy warn)",
            effect,
        )
    n_failed = len(s.failed)
    scope = " (no baseline: fixed checks only)" if no_baseline else ""
    return VerdictWords(
        "fail",
        code,
        f"GATE FAILED: {n_failed} of {n} checks failed{s.failed_note}{scope}",
        f"## evalret gate: ❌ fail ({n_failed} of {n} checks failed){s.failed_note}{scope}",
        f"{n_failed} of {n} checks failed.",
        f"✖ GATE FAILED: {n_failed} of {n} checks",
        f"FAIL: {n_failed} of {n} checks failed against {{where}}; the push is blocked",
        effect,
    )


def recorded_verdict(gate: GateSection | None) -> str:
    """What ``evalret baseline show`` says of the gate recorded in a baseline: the verdict of
    the run that saved it, in the past tense, and what a baseline is (the reference later runs
    are gated against, not a verdict of its own)."""
    if gate is None:
        return (
            "the run that saved this baseline had no gate check. A baseline is no verdict: "
            "`evalret run` gates later runs against it."
        )
    words = verdict_words(gate)
    n = len(gate.checks)
    if words.state == "no baseline":
        was = f"its {_checks(n, True)} passed (it had no baseline to compare with)"
    else:
        against = f"against {gate.baseline}" if gate.baseline else "with no baseline"
        was = f"its gate was {words.state} ({_checks(n)}, {against})"
    return (
        f"the run that saved this baseline: {was}. A baseline is no verdict: `evalret run` "
        "gates later runs against it."
    )


def loss_line(gate: GateSection, medium: Medium, arrow: str = "→") -> str | None:
    """How much was lost, in one line under a failed verdict: the failed drop check that fell
    most (baseline, current, change) and the range of the failed drops; None when no drop check
    failed. Figures by ``report.numbers.number``."""
    drops = [
        c
        for c in gate.failed
        if c.kind in DROP_KINDS and c.delta is not None and c.delta < 0 and c.delta == c.delta
    ]
    if not drops:
        return None
    by_change = sorted(drops, key=lambda c: c.delta or 0.0)
    worst, least = by_change[0], by_change[-1]

    def signed(v: float | None) -> str:
        return number(v, signed=True, medium=medium)

    line = (
        f"lost: {worst.index}/{worst.slice}/{worst.metric} fell most, "
        f"{number(worst.baseline, medium=medium)} {arrow} {number(worst.current, medium=medium)} "
        f"({signed(worst.delta)})"
    )
    if len(drops) > 1:
        line += f"; the {len(drops)} failed drops range from {signed(least.delta)} to "
        line += signed(worst.delta)
    return line


# --- what a margin check proved, and how close a check is ---------------------------------------

# a margin check's evidence as every view writes it (core.gate.margins says when each holds)
EVIDENCE_WORDS = {
    "proven": "proven",
    "not_proven": "not proven",
    "underpowered": "inconclusive (underpowered)",
}
MARGIN_NAMES = {"non_inferiority": "non-inferiority", "equivalence": "equivalence"}
# a check is close, and its flip probability shown beside it, from this share of resamples on
CLOSE_FLIP = 0.01


def evidence_word(check: GateCheck) -> str | None:
    """``proven``, ``not proven`` or ``inconclusive (underpowered)``; None for a check that is
    not a margin check."""
    return EVIDENCE_WORDS[check.evidence] if check.evidence is not None else None


def level_text(confidence: float) -> str:
    """A bound's confidence as a percentage, to four significant digits: ``95%``, ``99.8%``."""
    return f"{100 * confidence:.4g}%"


def margin_sentence(
    where: str,
    mode: str,
    margin: float,
    found: str,
    delta: float | None,
    bounds: tuple[float | None, float | None],
    how: str,
    needed: int | None,
    medium: Medium,
) -> str:
    """A margin's evidence in a line (a gate check's or a comparison's): what it claims, the
    margin, the evidence word, the difference and its bounds and, when not proven, the queries
    that would prove it at the observed spread."""
    low, high = (number(v, signed=True, medium=medium) for v in bounds)
    shown = f"lower bound {low}" if mode == "non_inferiority" else f"bounds [{low}, {high}]"
    difference = number(delta, signed=True, medium=medium)
    line = (
        f"{where} {MARGIN_NAMES[mode]}, margin {margin:g}: {EVIDENCE_WORDS[found]}; "
        f"difference {difference}, {shown} ({how})"
    )
    if found == "proven":
        return line
    if needed is None:
        return f"{line}; the observed difference itself is past the margin"
    return f"{line}; about {needed} queries would prove it at the observed spread"


def margin_line(check: GateCheck, medium: Medium) -> str | None:
    """``margin_sentence`` of a gate's margin check; None for another kind."""
    if check.evidence is None:
        return None
    level = f"{level_text(check.interval_confidence or 0.95)} one-sided, {check.interval_method}"
    return margin_sentence(
        f"{check.index}/{check.slice}/{check.metric}",
        check.kind,
        check.threshold,
        check.evidence,
        check.delta,
        (check.interval_low, check.interval_high),
        level,
        check.queries_needed,
        medium,
    )


def compare_margin_lines(report: CompareReport, medium: Medium) -> list[str]:
    """``margin_sentence`` of B - A on the primary metric, every index and slice (`evalret
    compare --margin`); none without --margin."""
    s = report.settings
    if s.margin is None or s.margin_mode is None:
        return []
    lines = []
    for index, slices in report.indexes.items():
        for name, sc in slices.items():
            m = sc.margins.get(s.primary)
            if m is None:
                continue
            how = f"{level_text(m.confidence)} one-sided after {s.correction}, {m.method}"
            lines.append(
                margin_sentence(
                    f"B vs A {index}/{name}/{s.primary}",
                    s.margin_mode,
                    s.margin,
                    m.evidence,
                    sc.metrics[s.primary].delta,
                    (m.low, m.high),
                    how,
                    m.queries_needed,
                    medium,
                )
            )
    return lines


def flip_note(check: GateCheck) -> str:
    """``flips 12%``: a close check's flip probability (its verdict differs in that share of the
    resamples of its slice's queries); "" below ``CLOSE_FLIP`` or without one."""
    flip = check.flip_probability
    if flip is None or flip < CLOSE_FLIP:
        return ""
    return f"flips {flip:.0%}"


def check_note(check: GateCheck) -> str:
    """What a views' result cell adds to a check's outcome: its evidence (a margin check) and,
    when close, its flip probability; "" when neither."""
    return " · ".join(part for part in (evidence_word(check) or "", flip_note(check)) if part)


def close_checks(gate: GateSection) -> list[GateCheck]:
    """The checks whose verdict flips in at least ``CLOSE_FLIP`` of the resamples, the most
    flip-prone first."""
    close = [c for c in gate.checks if flip_note(c)]
    return sorted(close, key=lambda c: -(c.flip_probability or 0.0))


def close_line(check: GateCheck, samples: int | None) -> str:
    """``exact/tail/ndcg@10 max_drop 0.01: pass, its verdict flips in 23% of 1000 resamples of
    the queries``."""
    of = f"{samples} resamples" if samples else "the resamples"
    flip = check.flip_probability or 0.0
    flips = f"its verdict flips in {flip:.0%} of {of} of the queries"
    return f"{check.name}: {result_word(check)}, {flips}"


def margin_lines(gate: GateSection, medium: Medium) -> list[str]:
    """``margin_line`` of every margin check, in gate order."""
    return [line for c in gate.checks if (line := margin_line(c, medium)) is not None]


CLOSE_TITLE = "close checks (their verdict flips under resampling of the queries):"


def close_lines(gate: GateSection) -> list[str]:
    """``close_line`` of every close check, the most flip-prone first."""
    samples = gate.stability.samples if gate.stability is not None else None
    return [close_line(c, samples) for c in close_checks(gate)]
