"""Stability across rebuilds (``indexes.<name>.stability.repeats``, #38 item 5): a store index
searched (in scratch mode built) N times gets the spread of its recall and of every metric's
change over the repeats in its ANN section, on the terminal, in report.md and report.html; and
``gate.ann_floor_on`` holds ``gate.ann_min_recall`` on the mean over the repeats (the default)
or on the worst repeat.

LanceDB is real (scratch mode, IVF_PQ on the demo embedded by a hashed bag-of-words encoder):
its index builds take no seed (k-means starts at random), so three builds differ and the spread
is not zero. The gate's tests re-gate one run's report (pipeline.gate.run_gate) under each
setting, the figures being the run's own; the ways a setting could soften a verdict each try to
pass a broken index through it.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from conftest import DEMO
from evalret.core.ranking import topk_overlap
from evalret.data.config import Config, parse_config
from evalret.data.schema import RunReport, Spread
from evalret.errors import ConfigError
from evalret.pipeline.evaluate import Evaluation, run_evaluation
from evalret.pipeline.gate import run_gate
from evalret.pipeline.pages import render_run_html
from helpers import HASH_ENCODER, invoke

pytest.importorskip("lancedb", reason="the lancedb extra (evalret[lancedb]) is not installed")

IVF_PQ = (
    "{type: store, driver: lancedb, mode: scratch, "
    "build: {index_type: IVF_PQ, num_partitions: 8, num_sub_vectors: 4}, "
    "stability: {repeats: 3}}"
)


@pytest.fixture
def encoder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A module ``store_stability_encoder`` (tests/helpers.py's hashed bag of words) in
    tmp_path, importable."""
    (tmp_path / "store_stability_encoder.py").write_text(textwrap.dedent(HASH_ENCODER))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("store_stability_encoder", None)


def _yaml(tmp_path: Path, index: str, gate: str = "{ann_min_recall: null}") -> str:
    return (
        f"golden_set: {{path: {DEMO}}}\ncache: {{dir: {tmp_path / 'cache'}}}\n"
        "model: {provider: python, callable: 'store_stability_encoder:make'}\n"
        "metrics: [ndcg@10, recall@10]\n"
        "indexes:\n  hnsw: {enabled: false}\n  bm25: {enabled: false}\n"
        f"  hybrid: {{enabled: false}}\n  lance: {index}\ngate: {gate}\n"
    )


@pytest.fixture
def built(tmp_path: Path, encoder: None) -> Evaluation:
    """The demo with a scratch LanceDB IVF_PQ index built three times."""
    return run_evaluation(parse_config(_yaml(tmp_path, IVF_PQ), "c.yaml"))


def _gated(ev: Evaluation, floor: float, on: str) -> tuple[str, str]:
    """(verdict, message) of ``ann_min_recall: floor`` with ``ann_floor_on: on`` on the run's
    report."""
    gate = {"ann_min_recall": floor, "ann_floor_on": on, "health": {}}
    config = Config.model_validate({**ev.report.config, "gate": gate})
    gate = run_gate(config, ev.report, ev.slices, None, None)
    assert gate is not None
    (check,) = [c for c in gate.checks if c.kind == "ann_min_recall"]
    return gate.verdict, check.message


def _spread(report: RunReport) -> Spread:
    stability = report.ann["lance"].stability
    assert stability is not None
    return stability.slices["all"].recall["recall@10"]


def test_three_builds_report_their_spread(built: Evaluation) -> None:
    """The section's stability holds 3 repeats; each figure's first value is the index's own
    (its slices' figures), mean / min / max are those of the values; the builds differ (LanceDB
    seeds no build), so worst < best; every metric's change has its spread too; the section
    reads back from its JSON unchanged."""
    report = built.report
    section = report.ann["lance"]
    assert section.stability is not None and section.stability.repeats == 3
    assert report.indexes["lance"].params["repeats"] == 3
    for name, s in section.stability.slices.items():
        ann = section.slices[name]
        assert s.n_queries == ann.n_queries
        for figures, own in ((s.recall, ann.recall), (s.metric_deltas, ann.metric_deltas)):
            assert list(figures) == list(own)
            for key, sp in figures.items():
                assert len(sp.values) == 3 and sp.values[0] == pytest.approx(own[key])
                values = np.array(sp.values, dtype=np.float64)
                assert sp.mean == pytest.approx(values.mean())
                assert (sp.min, sp.max) == (values.min(), values.max())
    recall = _spread(report)
    assert recall.values[0] == pytest.approx(
        topk_overlap(built.rankings["lance"].ids, built.rankings["exact"].ids, 10).mean()
    )
    assert recall.min is not None and recall.max is not None and recall.min < recall.max
    assert set(section.stability.slices["all"].metric_deltas) == {"ndcg@10", "recall@10"}
    again = RunReport.model_validate_json(report.model_dump_json())  # report.json reads back
    assert again.ann["lance"].stability == section.stability


def test_a_floor_between_worst_and_mean_fails_only_on_the_worst(built: Evaluation) -> None:
    """A floor between the worst repeat's recall and the mean: ``mean`` (the default) passes,
    ``worst`` fails, its message naming the worst of 3 repeats; a floor above the mean (every
    build broken on average) fails both; one under the worst passes both."""
    recall = _spread(built.report)
    assert recall.min is not None and recall.mean is not None and recall.min < recall.mean
    between = (recall.min + recall.mean) / 2
    assert _gated(built, between, "mean")[0] == "pass"
    verdict, message = _gated(built, between, "worst")
    assert verdict == "fail"
    assert f"keeps {recall.min:.4f} of the exact top-10 (worst of 3 repeats), below" in message
    above = (recall.mean + 1.0) / 2
    assert [_gated(built, above, on)[0] for on in ("mean", "worst")] == ["fail", "fail"]
    below = recall.min - 0.01
    assert [_gated(built, below, on)[0] for on in ("mean", "worst")] == ["pass", "pass"]
    assert "(mean of 3 repeats)" in _gated(built, below, "mean")[1]


def test_a_repeat_without_a_number_fails_the_floor(built: Evaluation) -> None:
    """A repeat whose recall is not a number (NaN) is not left out of the mean or the worst:
    the floor fails under both settings, whatever the other repeats."""
    report = built.report
    section = report.ann["lance"]
    assert section.stability is not None
    spread = _spread(report).model_copy(update={"mean": float("nan"), "min": float("nan")})
    all_ = section.stability.slices["all"]
    broken = all_.model_copy(update={"recall": {**all_.recall, "recall@10": spread}})
    stability = section.stability.model_copy(
        update={"slices": {**section.stability.slices, "all": broken}}
    )
    ann = {"lance": section.model_copy(update={"stability": stability})}
    nan = Evaluation(
        report=report.model_copy(update={"ann": ann}),
        golden_set=built.golden_set,
        rankings=built.rankings,
        slices=built.slices,
    )
    for on in ("mean", "worst"):
        verdict, message = _gated(nan, 0.0, on)
        assert verdict == "fail" and "not a finite number" in message, message


def test_worst_on_an_index_searched_once_reads_its_recall(built: Evaluation) -> None:
    """An approximate index without a spread (searched once) under ``ann_floor_on: worst`` is
    held to its one recall: no spread is no pass."""
    section = built.report.ann["lance"]
    once = section.model_copy(update={"stability": None})
    report = built.report.model_copy(update={"ann": {"lance": once}})
    ev = Evaluation(report, built.golden_set, built.rankings, built.slices)
    recall = once.slices["all"].recall["recall@10"]
    assert recall is not None and recall < 1.0
    verdict, message = _gated(ev, min(1.0, recall + 0.01), "worst")
    assert verdict == "fail" and "repeats" not in message


def test_worst_without_a_repeated_index_or_a_floor_is_refused(tmp_path: Path) -> None:
    """``ann_floor_on: worst`` that would change no check is a config error at its key: no
    gated approximate index searched more than once, or ann_min_recall null; left at mean,
    it stays out of the report's config (a report of a config without it reads as before)."""
    once = IVF_PQ.replace("stability: {repeats: 3}", "stability: {repeats: 1}")
    with pytest.raises(ConfigError, match=r"gate\.ann_floor_on.*searched more than once"):
        parse_config(_yaml(tmp_path, once, "{ann_floor_on: worst}"), "c.yaml")
    with pytest.raises(ConfigError, match=r"gate\.ann_floor_on.*no floor"):
        parse_config(
            _yaml(tmp_path, IVF_PQ, "{ann_min_recall: null, ann_floor_on: worst}"), "c.yaml"
        )
    parse_config(_yaml(tmp_path, IVF_PQ, "{ann_floor_on: worst}"), "c.yaml")
    with pytest.raises(ConfigError, match="ann_floor_on"):
        parse_config(_yaml(tmp_path, IVF_PQ, "{ann_floor_on: median}"), "c.yaml")
    plain = Config.model_validate({}).model_dump(mode="json")
    assert "ann_floor_on" not in plain["gate"]


def test_the_spread_is_shown_and_the_worst_floor_fails_the_run(
    tmp_path: Path, encoder: None
) -> None:
    """`evalret run` with ``ann_floor_on: worst`` and a floor no build reaches: exit 1; the
    terminal's spread line; the failed check on the worst repeat in junit.xml and report.md;
    report.md's and report.html's tables of the spread; report.json's stability read back."""
    config = tmp_path / "c.yaml"
    config.write_text(_yaml(tmp_path, IVF_PQ, "{ann_min_recall: 0.999, ann_floor_on: worst}"))
    out = tmp_path / "out"
    code, text = invoke("run", "-c", str(config), "--out", str(out), "--no-progress")
    assert code == 1, text
    report = RunReport.model_validate_json((out / "report.json").read_bytes())
    recall = _spread(report)
    assert recall.min is not None and recall.max is not None and recall.mean is not None
    line = (
        f"ANN spread lance: recall@10 mean {recall.mean:.4f} (worst {recall.min:.4f}, best "
        f"{recall.max:.4f} over 3 builds)"
    )
    assert line in " ".join(text.split()), text
    failed = f"lance keeps {recall.min:.4f} of the exact top-10 (worst of 3 repeats), below"
    assert failed in (out / "junit.xml").read_text()
    md = (out / "report.md").read_text()
    assert failed.replace("(", "\\(").replace(")", "\\)") in md
    assert "lance over 3 builds (slice all):" in md
    assert f"| recall@10 | {recall.mean:.4f} | {recall.min:.4f} | {recall.max:.4f} |" in md
    assert "| Δndcg@10 |" in md
    html = render_run_html(report)
    assert "Over 3 builds (slice all):" in html and f"{recall.min:.4f}" in html
    assert "ann_floor_on" in json.loads((out / "report.json").read_text())["config"]["gate"]
