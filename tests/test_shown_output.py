"""The shown-output check of the docs (report/shown_output.py): the normalisation rules and the
matching with ``...`` elisions, on texts whose answer is known."""

from __future__ import annotations

from evalret.report.shown_output import mismatch, normalise
from evalret.version import __version__

REAL = """\x1b[1mGATE FAILED\x1b[0m: 1 of 4 checks failed
Embedding queries   ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 244/244 0:00:01 0:00:00
embedding cache /tmp/xyz/cache: documents 338 cached, 0 embedded
┏━━━━━━━━┳━━━━━━━━━┓
┃ index  ┃ ndcg@10 ┃
┡━━━━━━━━╇━━━━━━━━━┩
│ exact  │   0.615 │
└────────┴─────────┘

latency (machine-dependent; 2 CPUs, x86_64, load 1.27): exact p50 0.0431 ms, p95 12 ms
report files in /tmp/xyz/work/reports/run: report.json, report.md
written 2026-11-28T03:30:49Z by evalret 0.1.0 in 3.2 s
"""
PLACES = {"/tmp/xyz/work": "", "/tmp/xyz/cache": "~/.cache/evalret"}


def test_normalise_drops_styles_borders_and_blank_lines_and_replaces_what_varies() -> None:
    assert __version__ == "0.1.0"  # the version the text above names
    assert normalise(REAL, PLACES) == [
        "GATE FAILED: 1 of 4 checks failed",
        "embedding cache ~/.cache/evalret: documents 338 cached, 0 embedded",
        "┃ index ┃ ndcg@10",
        "│ exact │ 0.615",
        "latency (machine-dependent; … CPUs, x86_64, load …): exact p50 …s, p95 …s",
        "report files in reports/run: report.json, report.md",
        "written <time> by evalret <version> in …s",
    ]


def test_the_whole_output_matches_and_elisions_stand_for_lines_or_text() -> None:
    real = normalise(REAL, PLACES)
    assert mismatch(real, real) is None
    shown = normalise(
        "GATE FAILED: 1 of 4 checks failed\n...\n│ exact  │   0.615 │\n"
        "latency (machine-dependent; 16 CPUs, x86_64, load 9.9): exact p50 1 ms, p95 2 ms\n"
        "report files in reports/run: report.json, ...\n..."
    )
    # an elision line, the padding of a cell, another machine's figures, text cut with "..."
    assert mismatch(shown, real) is None
    assert (
        mismatch(normalise("...\nwritten 2025-01-01 10:00 by evalret 0.1.0 in 9 s"), real) is None
    )


def test_a_changed_figure_a_missing_line_or_an_early_end_is_a_mismatch() -> None:
    real = normalise(REAL, PLACES)
    changed = [line.replace("0.615", "0.616") for line in real]
    assert "shown line 4 ('│ exact │ 0.616')" in (mismatch(changed, real) or "")
    skipped = [real[0], real[2]]  # a line left out with no elision: the order is the text's
    assert "shown line 2" in (mismatch(skipped, real) or "")
    assert "ends before" in (mismatch(real[:3], real) or "")
    assert "shown line 2 ('not printed')" in (mismatch(["...", "not printed"], real) or "")
