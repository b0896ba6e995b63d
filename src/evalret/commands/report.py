"""`evalret report`: report.html drawn again from a saved report.json or compare.json (what the
page shows of single queries is picked by ``pipeline/pages.py``, the page drawn by
``report/html/``).

`evalret report` reads JSON only (never a model or an index). What the page can add from
elsewhere is looked up and used only when it matches: the run's golden set (for texts) when its
fingerprint is unchanged, the gate's baseline (for bars and per-query changes) when its
fingerprint is the one the gate recorded, and a comparison's two reports when they were saved
reports with the recorded fingerprints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalret.data.atomic import atomic_write_text
from evalret.data.baseline import definition_differences, golden_set_of, load_baseline
from evalret.data.paths import Declared, Input, Output, guard
from evalret.data.schema import CompareReport, RunReport
from evalret.data.textfile import read_json, schema_problems
from evalret.errors import EvalretError, IncomparableError, InputError, Problem
from evalret.pipeline.pages import render_compare_html, render_run_html


def _matching_report(candidates: list[Path], digest: str | None) -> RunReport | None:
    """The first candidate that reads as a report with fingerprint ``digest``."""
    for candidate in candidates:
        if candidate.suffix != ".json" or not candidate.is_file():
            continue
        try:
            report = load_baseline(candidate, "report")
        except EvalretError:
            continue
        if digest is None or report.fingerprint.digest == digest:
            return report
    return None


def _near(name: str, beside: Path) -> list[Path]:
    """``name`` as given (relative to the working directory) and relative to ``beside``."""
    path = Path(name)
    return [path] if path.is_absolute() else [path, beside / path]


def _read_compare(path: Path, data: dict[str, Any]) -> CompareReport:
    try:
        return CompareReport.model_validate(data)
    except ValidationError as e:
        raise InputError(
            f"{path} is not an evalret compare.json", schema_problems(e, path)
        ) from None


def render_saved(path: Path, baseline: Path | None = None) -> str:
    """The HTML page of a saved report.json or compare.json; ``baseline`` (a saved report of the
    same golden set) is drawn beside a run instead of the one its gate names."""
    data = read_json(path, "report")
    if isinstance(data, dict) and {"verdict", "losers", "primary_index"} <= data.keys():
        if baseline is not None:
            raise InputError("--baseline applies to a run's report.json, not to compare.json")
        comparison = _read_compare(path, data)
        a = _matching_report(_near(comparison.a.label, path.parent), comparison.a.fingerprint)
        b = _matching_report(_near(comparison.b.label, path.parent), comparison.b.fingerprint)
        return render_compare_html(comparison, a, b)
    report = load_baseline(path, "report")
    base = None
    if baseline is not None:
        base = load_baseline(baseline)
        if base.golden_set.fingerprint != report.golden_set.fingerprint:
            raise InputError(
                f"baseline {baseline} was computed on another golden set "
                f"({base.golden_set.fingerprint[:12]}, the report's is "
                f"{report.golden_set.fingerprint[:12]})"
            )
        differences = definition_differences(base.fingerprint.metrics, report.fingerprint.metrics)
        if differences:
            raise IncomparableError(
                f"baseline {baseline} cannot be drawn beside {path}: its numbers were computed "
                "on other terms",
                [Problem(d) for d in differences],
            )
    elif report.gate is not None and report.gate.baseline:
        base = _matching_report(
            _near(report.gate.baseline, path.parent), report.gate.baseline_fingerprint
        )
    return render_run_html(report, base, golden_set_of(report))


def write_saved_html(
    *, path: Path, out_dir: Path | None = None, baseline: Path | None = None
) -> Path:
    """Write ``report.html`` for the saved report at ``path`` into ``out_dir`` (default: beside
    it); returns the path written."""
    target_dir = out_dir if out_dir is not None else path.parent
    reads = [Input("the saved report (PATH)", path)]
    if baseline is not None:
        reads.append(Input("the baseline (--baseline)", baseline))
    guard(Declared("report", reads, [Output("--out", target_dir, "dir", ("report.html",))]))
    html = render_saved(path, baseline)
    try:
        target_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(
            f"cannot create output directory {target_dir}: {e.strerror or e}"
        ) from None
    target = target_dir / "report.html"
    atomic_write_text(target, html)
    return target
