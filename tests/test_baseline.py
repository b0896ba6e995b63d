"""Baselines: atomic save, strict load, refusal of incompatible ones, gating against them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO
from evalret.data.baseline import check_compatible, load_baseline, save_baseline
from evalret.data.config import (
    Config,
    GateConfig,
    GoldenSetConfig,
    SignificanceConfig,
    SliceDefinition,
    SlicesConfig,
    Threshold,
)
from evalret.data.goldenset import load_golden_set
from evalret.data.schema import RunReport
from evalret.errors import IncomparableError, InputError
from evalret.pipeline.evaluate import metric_definitions, run_evaluation
from helpers import HashEmbedder, make_set


class ExplodingEmbedder(HashEmbedder):
    """Fails if asked to embed: proves a refusal happens before any embedding."""

    def embed(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("embedding should not have started")


class OtherModel(HashEmbedder):
    dim = 32

    def identity(self) -> dict[str, Any]:
        return {"name": "hash-bow-32", "source": "test"}


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return Config(golden_set=GoldenSetConfig(path=make_set(tmp_path / "gs")))


@pytest.fixture
def baseline(config: Config, tmp_path: Path) -> tuple[RunReport, Path]:
    report = run_evaluation(config, embedder=HashEmbedder()).report
    path = tmp_path / "baselines" / "b.json"
    save_baseline(report, path)
    return report, path


def test_save_and_load_roundtrip(baseline: tuple[RunReport, Path]) -> None:
    """A saved baseline reads back equal, and the directory holds no temporary file."""
    report, path = baseline
    assert load_baseline(path) == report
    assert [p.name for p in path.parent.iterdir()] == ["b.json"]


def test_interrupted_save_keeps_the_old_file(
    baseline: tuple[RunReport, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the write dies before the rename, the previous baseline is intact and no temp remains."""
    report, path = baseline
    before = path.read_bytes()

    def boom(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(InputError, match="cannot write baseline"):
        save_baseline(report.model_copy(update={"query_ids": []}), path)
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == ["b.json"]


def test_broken_and_foreign_files_are_input_errors(tmp_path: Path) -> None:
    """Truncated JSON, another schema version and a missing file all exit 2 with the path."""
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 1, "indexes": {')
    with pytest.raises(InputError, match="not valid JSON") as e:
        load_baseline(bad)
    assert f"{bad}:1: invalid JSON" in str(e.value)
    with pytest.raises(InputError, match="cannot read baseline"):
        load_baseline(tmp_path / "missing.json")


def test_schema_version_is_checked(baseline: tuple[RunReport, Path], tmp_path: Path) -> None:
    """A baseline from a future schema is refused with both versions named."""
    _, path = baseline
    data = json.loads(path.read_text())
    data["schema_version"] = 99
    future = tmp_path / "future.json"
    future.write_text(json.dumps(data))
    with pytest.raises(InputError, match="schema version 99"):
        load_baseline(future)


@pytest.mark.parametrize("value", [1e308, -5.0, 2.0])
def test_a_per_query_score_outside_0_1_is_refused(
    baseline: tuple[RunReport, Path], tmp_path: Path, value: float
) -> None:
    """Every metric family scores a query in [0, 1]: a hand-edited baseline's 1e308 made the
    gate's mean overflow and the HTML chart crash (Internal error, exit 3); -5 or 2 moved the
    drop checks at will. Refused (exit 2) naming the index, metric and query position."""
    _, path = baseline
    data = json.loads(path.read_text())
    index = next(iter(data["indexes"]))
    metric = next(iter(data["indexes"][index]["per_query"]))
    data["indexes"][index]["per_query"][metric][3] = value
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(data))
    with pytest.raises(InputError) as e:
        load_baseline(forged)
    assert e.value.exit_code == 2
    assert f"indexes.{index}.per_query.{metric}[3]: {value!r} is not a score in [0, 1]" in str(
        e.value
    )


def test_changed_judgment_is_refused_before_embedding(
    config: Config, baseline: tuple[RunReport, Path]
) -> None:
    """One grade changed in the golden set: refused (exit 2) naming the query, nothing embedded."""
    report, _ = baseline
    queries = config.golden_set.path / "queries.jsonl"
    lines = queries.read_text().splitlines()
    first = json.loads(lines[3])
    doc, grade = next(iter(first["relevant"].items()))
    first["relevant"][doc] = grade - 1
    lines[3] = json.dumps(first)
    queries.write_text("\n".join(lines) + "\n")
    with pytest.raises(IncomparableError) as e:
        run_evaluation(config, embedder=ExplodingEmbedder(), baseline=report, baseline_source="b")
    assert e.value.exit_code == 2
    assert f"queries whose text, judgments, tags or frequency changed: {first['id']}" in str(
        e.value
    )


def test_changed_metric_definition_is_refused(
    config: Config, baseline: tuple[RunReport, Path]
) -> None:
    """Exponential nDCG gain against a linear-gain baseline is refused."""
    report, _ = baseline
    other = config.model_copy(update={"ndcg_gain": "exponential"})
    with pytest.raises(IncomparableError, match="ndcg_gain: 'linear' -> 'exponential'"):
        run_evaluation(other, embedder=ExplodingEmbedder(), baseline=report)


def test_search_depth_is_a_definition_only_for_metrics_without_a_cutoff(
    config: Config, tmp_path: Path
) -> None:
    """A baseline with map over 1000 ranks refuses a run with map over 30 ranks; a search depth
    set beside cut metrics alone changes no number, and the default baseline accepts it."""
    uncut = config.model_copy(update={"metrics": ["map", "ndcg@10"]})
    report = run_evaluation(uncut, embedder=HashEmbedder()).report
    shallower = uncut.model_copy(update={"search_depth": 30})
    with pytest.raises(IncomparableError, match="search_depth: 1000 -> 30"):
        run_evaluation(shallower, embedder=ExplodingEmbedder(), baseline=report)
    cut = run_evaluation(config, embedder=HashEmbedder()).report
    deeper = config.model_copy(update={"search_depth": 200})
    assert run_evaluation(deeper, embedder=HashEmbedder(), baseline=cut).report.gate is not None


def test_model_change_is_shown_and_gated(config: Config, baseline: tuple[RunReport, Path]) -> None:
    """Another model is compared, not refused; what changed is listed in the gate section."""
    report, path = baseline
    gated = run_evaluation(
        config, embedder=OtherModel(), baseline=report, baseline_source=str(path)
    ).report
    assert gated.gate is not None
    assert gated.gate.changed["model.name"].model_dump() == {
        "baseline": "hash-bow",
        "current": "hash-bow-32",
    }
    assert gated.gate.baseline == str(path)
    kinds = {c.kind for c in gated.gate.checks}
    # health: not collapsed; judged_min: judged@10 at least a tenth of the baseline's
    assert kinds == {"max_drop", "ann_min_recall", "health_max", "judged_min"}
    assert gated.gate.verdict in {"pass", "fail"}


def test_randomization_gate_is_reproducible(
    config: Config, baseline: tuple[RunReport, Path]
) -> None:
    """Two gated runs with a randomization test give the same verdict and p-values."""
    report, _ = baseline
    gate = GateConfig(
        thresholds={"ndcg@10": Threshold(max_drop=0.0), "recall@10": Threshold(max_drop=0.0)},
        significance=SignificanceConfig(test="randomization", samples=2000, seed=7),
    )
    cfg = config.model_copy(update={"gate": gate})
    runs = [
        run_evaluation(cfg, embedder=OtherModel(), baseline=report).report.gate for _ in range(2)
    ]
    assert runs[0] is not None and runs[1] is not None
    assert runs[0].model_dump() == runs[1].model_dump()
    assert any(c.p_value is not None and c.p_value < 1 for c in runs[0].checks)


def test_committed_demo_baseline_matches_the_demo_golden_set() -> None:
    """baselines/demo.json (used by the project's CI gate) is comparable with the demo set."""
    config = Config(golden_set=GoldenSetConfig(path=REPO / "golden_sets" / "demo"))
    report = load_baseline(REPO / "baselines" / "demo.json")
    check_compatible(report, load_golden_set(config.golden_set), metric_definitions(config), "demo")
    assert report.fingerprint.model["name"] == "all-MiniLM-L6-v2"


def test_drop_check_the_baseline_cannot_answer_is_refused(
    config: Config, baseline: tuple[RunReport, Path]
) -> None:
    """A max_drop on a metric the baseline lacks (or on an index it did not run) was skipped with
    a note, so a gate of nothing but such checks said GATE PASSED: it is refused (exit 2). A floor
    on that metric needs no baseline and still runs."""
    report, _ = baseline
    metrics = [*config.metrics, "ndcg@5"]
    asks_drop = config.model_copy(
        update={
            "metrics": metrics,
            "gate": GateConfig(thresholds={"ndcg@5": Threshold(max_drop=0.01)}),
        }
    )
    with pytest.raises(IncomparableError) as e:
        run_evaluation(asks_drop, embedder=HashEmbedder(), baseline=report, baseline_source="b")
    assert e.value.exit_code == 2
    assert "exact: no ndcg@5 in the baseline" in str(e.value)
    assert "hnsw: no ndcg@5 in the baseline" in str(e.value)
    no_hnsw = RunReport.model_validate(
        {**report.model_dump(), "indexes": {"exact": report.indexes["exact"]}}
    )
    with pytest.raises(IncomparableError, match="hnsw: no results in the baseline"):
        run_evaluation(config, embedder=HashEmbedder(), baseline=no_hnsw, baseline_source="b")
    floor_only = asks_drop.model_copy(
        update={"gate": GateConfig(thresholds={"ndcg@5": Threshold(min=0.0)})}
    )
    gated = run_evaluation(floor_only, embedder=HashEmbedder(), baseline=report).report
    assert gated.gate is not None and {c.metric for c in gated.gate.checks} >= {"ndcg@5"}


def test_gate_slices_the_run_does_not_have_are_refused_before_embedding(config: Config) -> None:
    """A typo in gate.slices gated nothing it named and said GATE PASSED (a note aside); one in
    an override's slice silently kept the default threshold: refused (exit 2) naming the key and
    the slices there are, before anything is embedded."""
    typo = config.model_copy(
        update={
            "gate": GateConfig(slices=["even", "tial"], thresholds={"ndcg@10": Threshold(min=1)})
        }
    )
    with pytest.raises(InputError) as e:
        run_evaluation(typo, embedder=ExplodingEmbedder())
    assert e.value.exit_code == 2
    assert "no query in this run (its slices with queries: all" in str(e.value)
    assert [p.message for p in e.value.problems] == [
        "gate.slices: tial: no query of the run is in it"
    ]
    override = config.model_copy(
        update={"gate": GateConfig(overrides=[{"metric": "mrr@10", "slice": "od", "min": 0.9}])}
    )
    with pytest.raises(InputError) as e:
        run_evaluation(override, embedder=ExplodingEmbedder())
    assert [p.message for p in e.value.problems] == [
        "gate.overrides[0].slice: od: no query of the run is in it"
    ]
    nobody = config.model_copy(
        update={
            "slices": SlicesConfig(custom=[SliceDefinition(name="none", pattern="zzzz")]),
            "gate": GateConfig(slices=["none"]),
        }
    )
    with pytest.raises(InputError) as e:  # a slice of no query: GATE PASSED on nothing
        run_evaluation(nobody, embedder=ExplodingEmbedder())
    assert [p.message for p in e.value.problems] == [
        "gate.slices: none: no query of the run is in it",
        "slices.custom[0]: none: no query of the run is in it",  # gated or not
    ]
