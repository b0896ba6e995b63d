"""junit.xml: one test case per gate check, so any CI shows the gate natively."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from evalret.data.schema import GateSection
from evalret.report.escape import xml_text
from evalret.report.views import gate_summary


def render_junit(gate: GateSection) -> str:
    """junit.xml of a gate: every check a test case, a failed check a failure with its numbers
    (written as Python writes them: the full value, None when missing)."""
    summary = gate_summary(gate)
    failures = len(summary.failed)
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
        skipped="0",
    )
    for c in gate.checks:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=xml_text(f"evalret.{c.index}.{c.slice}"),
            name=f"{c.metric} {c.kind} {c.threshold:g}",
            time="0",
        )
        details = (
            f"index={c.index} slice={c.slice} n={c.n_queries} metric={c.metric} kind={c.kind} "
            f"threshold={c.threshold:g} baseline={c.baseline} current={c.current} delta={c.delta} "
            f"p_value={c.p_value} p_adjusted={c.p_adjusted} mde={c.mde}"
        )
        if not c.passed:
            failure = ET.SubElement(case, "failure", message=xml_text(c.message), type="regression")
            failure.text = xml_text(details)
        else:
            ET.SubElement(case, "system-out").text = xml_text(f"{c.message}\n{details}")
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
