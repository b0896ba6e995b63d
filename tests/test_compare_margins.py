"""`evalret compare --margin` (#40): non-inferiority and equivalence of B against A for every
metric and slice, corrected across all of them, reported in compare.json, compare.md and on the
terminal; a pair compared without --margin writes compare.json as before."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from evalret.core.stats import adjust_p_values
from evalret.errors import InputError
from evalret.pipeline.compare import CompareSettings, compare_reports
from helpers import invoke
from test_compare import N, run_report

# B loses 0.01 on average, alternately 0.06 and gained 0.04 (sd 0.05 around the mean)
B_NDCG = [0.5 - 0.01 + (0.05 if i % 2 else -0.05) for i in range(N)]


@pytest.mark.parametrize("mode", ["non_inferiority", "equivalence"])
@pytest.mark.parametrize("margin", [0.005, 0.02, 0.05])
def test_every_margin_passes_exactly_when_its_bounds_prove_it(mode: str, margin: float) -> None:
    """Each (slice, metric) margin: proven exactly when its bounds (at the level the
    correction held it to) clear the margin; p-values Holm-corrected across all 9; the
    evidence word follows the observed difference."""
    settings = CompareSettings(margin=margin, margin_mode=mode, samples=2000)  # type: ignore[arg-type]
    report = compare_reports(run_report([0.5] * N), run_report(B_NDCG), settings)
    margins = [
        (sc.metrics[m], r) for sc in report.indexes["exact"].values() for m, r in sc.margins.items()
    ]
    assert len(margins) == 9
    adjusted = adjust_p_values([r.p_value for _, r in margins], "holm")
    for (change, r), q in zip(margins, adjusted, strict=True):
        assert r.p_adjusted == pytest.approx(q)
        assert r.low is not None and r.high is not None
        clears = r.low > -margin and (mode == "non_inferiority" or r.high < margin)
        assert r.passed == clears == (r.p_adjusted < 0.05)
        assert r.confidence >= 0.95
        within = change.delta > -margin if mode == "non_inferiority" else abs(change.delta) < margin
        expected = "proven" if r.passed else "underpowered" if within else "not_proven"
        assert r.evidence == expected
    record = report.settings
    assert (record.margin, record.margin_mode) == (margin, mode)
    ndcg = report.indexes["exact"]["all"].margins["ndcg@10"]
    if margin == 0.005:
        assert ndcg.evidence == "not_proven" and ndcg.queries_needed is None
    if margin == 0.05:
        assert ndcg.evidence == "proven"


def test_without_a_margin_compare_json_has_no_margin_keys() -> None:
    """No --margin: no margins per slice, no margin settings recorded."""
    report = compare_reports(run_report([0.5] * N), run_report(B_NDCG), CompareSettings())
    data = json.loads(report.model_dump_json())
    assert "margin" not in data["settings"] and "margin_mode" not in data["settings"]
    assert all("margins" not in sc for sc in data["indexes"]["exact"].values())


def test_the_command_line_reports_margins_and_refuses_bad_ones(tmp_path: Path) -> None:
    """`evalret compare A B --margin 0.05`: the terminal and compare.md list B - A on the
    primary metric per slice with its evidence; --margin 0, a negative one or --margin-mode
    without --margin exit 2."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(run_report([0.5] * N).model_dump_json())
    b.write_text(run_report(B_NDCG).model_dump_json())
    code, out = invoke("compare", str(a), str(b), "--margin", "0.05", "-o", str(tmp_path / "c"))
    assert code == 0, out
    line = "B vs A exact/all/ndcg@10 non-inferiority, margin 0.05: proven; difference -0.0100"
    assert "margins (B - A):" in out and line in out
    md = (tmp_path / "c" / "compare.md").read_text()
    assert "### Margins (B - A on ndcg@10" in md and line in md
    html = (tmp_path / "c" / "report.html").read_text()
    proven = "B vs A exact/all/ndcg@10 non-inferiority, margin 0.05: proven"
    assert "<h3>Margins (B - A)</h3>" in html and proven in html
    saved = json.loads((tmp_path / "c" / "compare.json").read_text())
    assert saved["indexes"]["exact"]["tail"]["margins"]["ndcg@10"]["evidence"] == "proven"
    for bad, words in (
        (["--margin", "0"], "--margin 0: a finite number > 0"),
        (["--margin", "-0.1"], "--margin -0.1: a finite number > 0"),
        (["--margin-mode", "equivalence"], "--margin-mode equivalence needs --margin"),
    ):
        code, out = invoke("compare", str(a), str(b), *bad, "-o", str(tmp_path / "d"))
        assert code == 2 and words in out, out
    with pytest.raises(InputError, match="--margin nan"):
        CompareSettings(margin=float(np.nan))
