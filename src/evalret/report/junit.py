"""junit.xml: one test case per gate check, so any CI shows the gate natively.

An inconclusive check (too much of the new top k never judged) is a ``<skipped>`` test case under
policy warn: JUnit has no third outcome, and skipped is the one every CI test view (GitHub test
reporters, GitLab, Jenkins, Azure DevOps) shows apart from pass and fail, counted and with its
message, without failing the build; a ``<property>`` would sit unseen in the XML. Under policy
fail it is a ``<failure type="inconclusive">``. Either way the message carries judged@k of
baseline and current and the command that would judge the unjudged documents.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from evalret.data.schema import GateCheck, GateSection
from evalret.report.escape import xml_text
from evalret.report.gate_rows import DEFAULT_HINT, JudgeHint, gate_summary, judge_lines


def _details(c: GateCheck) -> str:
    """A check's numbers, written as Python writes them (the full value, None when missing)."""
    details = (
        f"index={c.index} slice={c.slice} n={c.n_queries} metric={c.metric} kind={c.kind} "
        f"threshold={c.threshold:g} baseline={c.baseline} current={c.current} delta={c.delta} "
        f"p_value={c.p_value} p_adjusted={c.p_adjusted} mde={c.mde}"
    )
    if c.judged_k is not None:
        details += (
            f" judged_k={c.judged_k} judged_baseline={c.judged_baseline} "
            f"judged_current={c.judged_current}"
        )
    return details


def _inconclusive(case: ET.Element, c: GateCheck, commands: dict[tuple[str, int], str]) -> None:
    """An inconclusive check: skipped (policy warn) or failed (policy fail), with the judge
    command of its index and k (``commands``: ``gate_rows.judge_lines``)."""
    command = commands.get((c.index, c.judged_k), "") if c.judged_k is not None else ""
    text = f"{c.message}\n{_details(c)}" + (
        f"\njudge the unjudged documents: {command}" if command else ""
    )
    if c.passed:
        skipped = ET.SubElement(case, "skipped", message=xml_text(f"inconclusive: {c.message}"))
        skipped.text = xml_text(text)
    else:
        failure = ET.SubElement(case, "failure", message=xml_text(c.message), type="inconclusive")
        failure.text = xml_text(text)


def render_junit(gate: GateSection, hint: JudgeHint = DEFAULT_HINT) -> str:
    """junit.xml of a gate: every check a test case, a failed check a failure with its numbers,
    an inconclusive one skipped (policy warn) or a failure (policy fail); ``hint``: where the
    run's report.json is and its config words, for the judge command."""
    summary = gate_summary(gate)
    commands = judge_lines(gate, hint)
    failures = len(summary.failed)
    skipped = sum(c.passed for c in summary.inconclusive)
    suites = ET.Element(
        "testsuites",
        name="evalret",
        tests=str(summary.n_checks),
        failures=str(failures),
        errors="0",
    )
    suite = ET.SubElement(
        suites,
        "testsuite",
        name="evalret gate",
        tests=str(summary.n_checks),
        failures=str(failures),
        errors="0",
        skipped=str(skipped),
    )
    for c in gate.checks:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=xml_text(f"evalret.{c.index}.{c.slice}"),
            name=f"{c.metric} {c.kind} {c.threshold:g}",
            time="0",
        )
        if c.outcome == "inconclusive":
            _inconclusive(case, c, commands)
        elif not c.passed:
            failure = ET.SubElement(case, "failure", message=xml_text(c.message), type="regression")
            failure.text = xml_text(_details(c))
        else:
            ET.SubElement(case, "system-out").text = xml_text(f"{c.message}\n{_details(c)}")
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
