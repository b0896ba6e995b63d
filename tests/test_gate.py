"""The pure gate: thresholds, overrides, significance with correction, MDE, the ANN floor."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pytest

from evalret.core.gate import (
    HealthBounds,
    Threshold,
    ann_check,
    evaluate_gate,
    health_checks,
    resolve_rules,
)
from evalret.data.config import (
    GateConfig,
    HealthThreshold,
    SignificanceConfig,
    ThresholdOverride,
)

ALL = np.ones(100, dtype=bool)
HALF = np.arange(100) < 50


def scores(values: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    return {"exact": {"recall@10": values}}


def test_overrides_replace_defaults_for_their_slice_and_index() -> None:
    """An override replaces the whole threshold where it matches; later overrides win."""
    rules = resolve_rules(
        {"recall@10": Threshold(max_drop=0.01)},
        [
            ThresholdOverride(metric="recall@10", slice="tail", max_drop=0.05).to_core(),
            ThresholdOverride(metric="recall@10", slice="tail", index="hnsw", min=0.5).to_core(),
            ThresholdOverride(metric="mrr@10", index="exact", min=0.3).to_core(),
        ],
        ["exact", "hnsw"],
        ["all", "tail"],
    )
    table = {(r.index, r.slice, r.metric): r.threshold for r in rules}
    assert table[("exact", "all", "recall@10")] == Threshold(max_drop=0.01)
    assert table[("exact", "tail", "recall@10")] == Threshold(max_drop=0.05)
    assert table[("hnsw", "tail", "recall@10")] == Threshold(min=0.5)
    assert table[("exact", "all", "mrr@10")] == Threshold(min=0.3)
    assert ("hnsw", "all", "mrr@10") not in table


def run(current: np.ndarray, baseline: np.ndarray | None, threshold: Threshold, **kw: object):
    rules = resolve_rules({"recall@10": threshold}, [], ["exact"], ["all", "half"])
    return evaluate_gate(
        scores(current),
        scores(baseline) if baseline is not None else None,
        {"all": ALL, "half": HALF},
        rules,
        **kw,  # type: ignore[arg-type]
    )


def test_identical_runs_pass_every_check() -> None:
    """Same scores: every drop check passes with delta 0."""
    base = np.linspace(0, 1, 100)
    checks = run(base, base.copy(), Threshold(max_drop=0.01, max_drop_pct=1, min=0.1))
    assert len(checks) == 6 and all(c.passed for c in checks)
    assert {c.delta for c in checks if c.kind != "min"} == {0.0}


def test_max_drop_and_pct_by_hand() -> None:
    """Baseline 0.5 everywhere, current 0.48: drop 0.02 fails max_drop 0.01, passes 5%."""
    base = np.full(100, 0.5)
    checks = {
        (c.slice, c.kind): c
        for c in run(base - 0.02, base, Threshold(max_drop=0.01, max_drop_pct=5))
    }
    assert not checks[("all", "max_drop")].passed
    assert checks[("all", "max_drop_pct")].passed  # 0.02 / 0.5 = 4% <= 5%
    assert checks[("all", "max_drop")].delta == pytest.approx(-0.02)
    assert "dropped more than 0.01" in checks[("all", "max_drop")].message
    # a drop exactly at the threshold passes (float noise aside)
    exact = {c.kind: c for c in run(base - 0.01, base, Threshold(max_drop=0.01))}
    assert exact["max_drop"].passed


def test_min_floor_needs_no_baseline() -> None:
    """A floor is checked without a baseline; drop checks need one and are not created."""
    checks = run(np.full(100, 0.4), None, Threshold(min=0.5, max_drop=0.01))
    assert [(c.slice, c.kind, c.passed) for c in checks] == [
        ("all", "min", False),
        ("half", "min", False),
    ]


def test_significance_turns_a_noisy_crossing_into_a_pass() -> None:
    """A drop past the threshold that a paired test cannot tell from noise passes."""
    rng = np.random.default_rng(0)
    base = rng.random(100)
    noisy = np.clip(base - 0.02 + 0.4 * rng.standard_normal(100), 0, 1)
    sig = SignificanceConfig(test="randomization", samples=2000, seed=1).to_core()
    checks = {
        (c.slice, c.kind): c for c in run(noisy, base, Threshold(max_drop=0.01), significance=sig)
    }
    c = checks[("all", "max_drop")]
    assert c.delta is not None and -c.delta > 0.01
    assert c.p_value is not None and c.p_adjusted is not None and c.p_adjusted >= 0.05
    assert c.passed and "not significant" in c.message
    assert c.underpowered and c.mde is not None and c.mde > 0.01
    assert "slice too small" not in c.message  # flagged once, not per check (threshold_notes)


def test_significant_drop_fails_and_correction_is_applied() -> None:
    """A consistent drop is significant after Holm; p_adjusted >= p_value; deterministic."""
    rng = np.random.default_rng(1)
    base = rng.random(100)
    worse = base - 0.1 + 0.02 * rng.standard_normal(100)
    sig = SignificanceConfig(
        test="randomization", samples=2000, seed=4, correction="holm"
    ).to_core()
    first = run(worse, base, Threshold(max_drop=0.01), significance=sig)
    again = run(worse, base, Threshold(max_drop=0.01), significance=sig)
    assert [asdict(c) for c in first] == [asdict(c) for c in again]
    for c in first:
        assert not c.passed and c.p_value is not None and c.p_adjusted is not None
        assert c.p_adjusted >= c.p_value and c.p_adjusted < 0.05
        assert "significant" in c.message


@pytest.mark.parametrize("test", ["randomization", "t-test", "bootstrap"])
def test_every_test_kind_gates(test: str) -> None:
    """Each significance test yields p-values and fails a clear drop."""
    rng = np.random.default_rng(2)
    base = rng.random(100)
    sig = SignificanceConfig(test=test, samples=1000).to_core()  # type: ignore[arg-type]
    checks = run(base - 0.2, base, Threshold(max_drop=0.01), significance=sig)
    assert all(not c.passed and c.p_value is not None for c in checks)


def test_ann_floor() -> None:
    """An approximate index's recall floor is one check on slice all."""
    ann = ann_check("hnsw", 0.93, 0.95, 10, 100)
    assert (ann.kind, ann.index, ann.slice, ann.metric) == (
        "ann_min_recall", "hnsw", "all", "ann_recall@10",
    )  # fmt: skip
    assert not ann.passed and "HNSW keeps 0.9300 of the exact top-10" in ann.message
    assert "below the floor 0.95" in ann.message
    assert ann_check("faiss", 0.95, 0.95, 10, 100).passed  # the floor itself passes


def test_health_checks_bounds_and_targets() -> None:
    """A figure for both matrices, or one of them by prefix; booleans compare as 0 / 1."""
    figures = {
        "documents": {"n_vectors": 100, "avg_cosine": 0.62, "collapsed": True},
        "queries": {"n_vectors": 20, "avg_cosine": 0.10, "collapsed": False},
    }
    checks = health_checks(
        figures,
        {
            "collapsed": HealthBounds(max=0),
            "avg_cosine": HealthBounds(max=0.5),
            "queries.avg_cosine": HealthBounds(min=0.2),
        },
    )
    outcome = {c.name: c.passed for c in checks}
    assert outcome == {
        "embedding/documents/collapsed max 0": False,
        "embedding/queries/collapsed max 0": True,
        "embedding/documents/avg_cosine max 0.5": False,
        "embedding/queries/avg_cosine max 0.5": True,
        "embedding/queries/avg_cosine min 0.2": False,
    }
    failed = next(c for c in checks if c.name == "embedding/documents/collapsed max 0")
    assert failed.kind == "health_max" and failed.n_queries == 100
    assert "collapsed = true" in failed.message
    assert health_checks({"documents": figures["documents"], "queries": None}, {}) == []


def test_unknown_health_figure_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="unknown health figure 'avg_cos'"):
        GateConfig(health={"documents.avg_cos": HealthThreshold(max=1)})


NON_FINITE = [np.nan, np.inf, -np.inf]


@pytest.mark.parametrize("bad", NON_FINITE)
@pytest.mark.parametrize("where", ["current", "baseline"])
@pytest.mark.parametrize("significance", [None, SignificanceConfig(samples=200)])
def test_non_finite_values_fail_min_and_drop_checks(
    bad: float, where: str, significance: SignificanceConfig | None
) -> None:
    """One NaN or infinite per-query value (current or baseline) makes the slice mean non-finite:
    every min, max_drop and max_drop_pct check on it fails and says why, never 'nan >= floor'."""
    good = np.full(100, 0.8)
    broken = good.copy()
    broken[3] = bad
    current, baseline = (broken, good) if where == "current" else (good, broken)
    threshold = Threshold(min=0.1, max_drop=0.5, max_drop_pct=90)
    sig = significance.to_core() if significance else None
    checks = run(current, baseline, threshold, significance=sig)
    kinds = ("max_drop", "max_drop_pct") + (("min",) if where == "current" else ())
    hit = [c for c in checks if c.kind in kinds]
    assert len(hit) == 2 * len(kinds)  # both slices hold query 3
    for c in hit:
        assert not c.passed, c.message
        assert "not a finite number" in c.message
    if where == "baseline":  # the floor only reads the current values
        assert all(c.passed for c in checks if c.kind == "min")


def test_non_finite_check_survives_a_json_round_trip() -> None:
    """A check failed on a NaN mean is written as JSON (NaN becomes null) and read back: a report
    holding it can still be loaded as a baseline or redrawn."""
    from evalret.data.baseline import gate_check
    from evalret.data.schema import GateCheck

    broken = np.full(100, 0.8)
    broken[0] = np.nan
    check = gate_check(next(c for c in run(broken, None, Threshold(min=0.1)) if c.kind == "min"))
    again = GateCheck.model_validate_json(check.model_dump_json())
    assert again.current is None and not again.passed
    assert again.message == check.message


@pytest.mark.parametrize("bad", NON_FINITE)
def test_non_finite_ann_recall_fails(bad: float) -> None:
    ann = ann_check("hnsw", bad, 0.95, 10, 100)
    assert not ann.passed and "not a finite number" in ann.message


@pytest.mark.parametrize("bad", NON_FINITE)
def test_non_finite_health_figure_fails_both_bounds(bad: float) -> None:
    figures = {"documents": {"n_vectors": 10, "avg_cosine": bad}, "queries": None}
    checks = health_checks(figures, {"avg_cosine": HealthBounds(min=-1, max=1)})
    assert len(checks) == 2
    assert all(not c.passed and "not a finite number" in c.message for c in checks)
