"""Non-inferiority and equivalence gate modes (#40): bounds by hand, the bootstrap's bounds by
direct resampling, Holm across the family, the config's strictness, and the softening path
tried with broken systems: a margin check fails a clearly worse system and never passes an
underpowered one because its drop is insignificant."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from pydantic import ValidationError

from evalret.core.gate import (
    Check,
    JudgedSides,
    Stability,
    Threshold,
    Unjudged,
    evaluate_gate,
    gate_verdict,
    mark_inconclusive,
    resolve_rules,
    with_stability,
)
from evalret.core.stats import adjust_p_values, margin_bounds, seed_for
from evalret.data.config import GateConfig, SignificanceConfig

T_TEST = SignificanceConfig(test="t-test").to_core()

# five queries, baseline 0.5 each; differences current - baseline:
DIFFS = np.array([-0.02, 0.01, -0.01, 0.00, -0.03])
# mean -0.01; deviations -0.01, 0.02, 0, 0.01, -0.02: squares sum 0.001, sd = sqrt(0.001 / 4)
# = 0.0158114; se = sd / sqrt(5) = 0.00707107; t(0.95, 4 df) = 2.1318468 (tables), so
# lower = -0.01 - 2.1318468 * 0.00707107 = -0.0250745 and upper = +0.0050745
LOW, HIGH = -0.0250745, 0.0050745


def gate(
    current: np.ndarray,
    baseline: np.ndarray,
    threshold: Threshold,
    significance: object = None,
    slices: dict[str, np.ndarray] | None = None,
) -> list[Check]:
    """The checks of one threshold on ndcg@10 of index exact (slice all unless given)."""
    slices = slices or {"all": np.ones(len(current), dtype=bool)}
    rules = resolve_rules({"ndcg@10": threshold}, [], ["exact"], list(slices))
    return evaluate_gate(
        {"exact": {"ndcg@10": current}},
        {"exact": {"ndcg@10": baseline}},
        slices,
        rules,
        significance,  # type: ignore[arg-type]
    )


def test_the_t_bound_matches_the_hand_computed_example() -> None:
    """n = 5, mean difference -0.01: the t lower bound -0.0251 proves a margin of 0.05 and not
    one of 0.02 (the observed difference is within it: underpowered, about 7 queries at this
    spread, (1.6449 * 0.0158 / 0.01)^2 = 6.76)."""
    base = np.full(5, 0.5)
    [proven] = gate(base + DIFFS, base, Threshold(mode="non_inferiority", margin=0.05), T_TEST)
    assert proven.interval_low == pytest.approx(LOW, abs=1e-7)
    assert proven.interval_high == pytest.approx(HIGH, abs=1e-7)
    assert proven.passed and proven.status == "pass" and proven.evidence == "proven"
    assert proven.interval_method == "t" and proven.interval_confidence == pytest.approx(0.95)
    [short] = gate(base + DIFFS, base, Threshold(mode="non_inferiority", margin=0.02), T_TEST)
    assert short.interval_low == proven.interval_low
    assert not short.passed and short.status == "fail" and short.evidence == "underpowered"
    assert short.queries_needed == 7
    assert "about 7 queries would prove it" in short.message


def test_equivalence_needs_both_bounds_within_the_margin() -> None:
    """TOST on the same example: [-0.0251, +0.0051] lies within ±0.03 (proven), not within
    ±0.02 (underpowered: the mean is within it), and a margin of 0.005 is below the observed
    |difference| 0.01 itself (not proven, no number of queries would)."""
    base = np.full(5, 0.5)
    cur = base + DIFFS
    [c] = gate(cur, base, Threshold(mode="equivalence", margin=0.03), T_TEST)
    assert c.passed and c.evidence == "proven"
    assert (c.interval_low, c.interval_high) == pytest.approx((LOW, HIGH), abs=1e-7)
    [c] = gate(cur, base, Threshold(mode="equivalence", margin=0.02), T_TEST)
    assert not c.passed and c.evidence == "underpowered"
    [c] = gate(cur, base, Threshold(mode="equivalence", margin=0.005), T_TEST)
    assert not c.passed and c.evidence == "not_proven" and c.queries_needed is None
    # a gain beyond the margin is no equivalence either: the upper bound decides
    [c] = gate(base - DIFFS + 0.02, base, Threshold(mode="equivalence", margin=0.03), T_TEST)
    assert c.interval_low is not None and c.interval_low > -0.03
    assert c.interval_high is not None and c.interval_high >= 0.03 and not c.passed


def test_the_bootstrap_bounds_equal_a_direct_resampling() -> None:
    """Without a t-test the bounds are the percentile bootstrap's: the k-th smallest and k-th
    largest of the seeded resampled means, k = ceil(alpha * samples); a single check passes
    exactly when the lower bound is above -margin."""
    rng = np.random.default_rng(3)
    base = rng.random(60)
    cur = np.clip(base - 0.02 + 0.1 * rng.standard_normal(60), 0, 1)
    sig = SignificanceConfig(samples=2000, seed=7).to_core()
    for margin in (0.01, 0.03, 0.05, 0.08):
        [c] = gate(cur, base, Threshold(mode="non_inferiority", margin=margin), sig)
        draw = np.random.default_rng(seed_for(7, "margin", "exact", "all", "ndcg@10"))
        d = cur - base
        means = np.sort(d[draw.integers(0, 60, size=(2000, 60))].mean(axis=1))
        k = int(np.ceil(0.05 * 2000))
        assert c.interval_low == means[k - 1] and c.interval_high == means[2000 - k]
        assert c.interval_method == "bootstrap"
        assert c.passed == (means[k - 1] > -margin), margin


@pytest.mark.parametrize("method", ["t", "bootstrap"])
def test_each_p_value_is_the_inverse_of_its_bound(method: str) -> None:
    """p_low < alpha exactly when the lower bound is above -margin (and p_high < alpha when
    the upper bound is below +margin), for every margin tried."""
    rng = np.random.default_rng(5)
    d = 0.05 * rng.standard_normal(40) - 0.01
    for margin in np.linspace(0.001, 0.06, 25):
        low, high, p_low, p_high = margin_bounds(d, margin, 0.05, method, 500, 1)  # type: ignore[arg-type]
        assert (p_low < 0.05) == (low > -margin)
        assert (p_high < 0.05) == (high < margin)


def test_holm_corrects_the_margin_checks_as_one_family() -> None:
    """Two slices' margin checks: their p-values are Holm-adjusted together (significance not
    configured), and a check passes only when its adjusted p-value is below alpha."""
    rng = np.random.default_rng(8)
    base = rng.random(80)
    cur = base - 0.01 + 0.05 * rng.standard_normal(80)
    slices = {"all": np.ones(80, dtype=bool), "half": np.arange(80) < 40}
    checks = gate(cur, base, Threshold(mode="non_inferiority", margin=0.03), slices=slices)
    p = [c.p_value for c in checks]
    assert all(v is not None for v in p)
    adjusted = adjust_p_values([float(v) for v in p if v is not None], "holm")
    assert [c.p_adjusted for c in checks] == pytest.approx(list(adjusted))
    assert all(c.passed == (c.p_adjusted is not None and c.p_adjusted < 0.05) for c in checks)


def test_a_clearly_worse_system_fails_the_margin() -> None:
    """A broken candidate (0.2 lower on every query, little noise) fails non-inferiority and
    equivalence alike: not proven, the observed difference itself past the margin."""
    rng = np.random.default_rng(9)
    base = rng.random(200)
    broken = base - 0.2 + 0.01 * rng.standard_normal(200)
    for mode in ("non_inferiority", "equivalence"):
        [c] = gate(broken, base, Threshold(mode=mode, margin=0.05))  # type: ignore[arg-type]
        assert not c.passed and c.status == "fail" and c.evidence == "not_proven"
        assert gate_verdict([c]) == "fail"


def test_an_underpowered_set_never_passes_the_margin_for_want_of_a_significant_drop() -> None:
    """Ten noisy queries losing 0.03: the significance mode passes the drop (not
    significant), but non-inferiority at 0.05 fails it, as underpowered; neither the unjudged
    policy warn (judged@k fell) nor gate.min_stability turns that failure into an
    inconclusive pass."""
    rng = np.random.default_rng(11)
    base = rng.random(10)
    noise = 0.3 * rng.standard_normal(10)
    cur = base - 0.03 + noise - noise.mean()  # a mean loss of 0.03 exactly
    sig = SignificanceConfig(samples=2000).to_core()
    [drop] = gate(cur, base, Threshold(max_drop=0.02), sig)
    assert drop.passed and "not significant" in drop.message  # the softening it replaces
    [margin] = gate(cur, base, Threshold(mode="non_inferiority", margin=0.05), sig)
    assert not margin.passed and margin.evidence == "underpowered"
    assert margin.queries_needed is not None and margin.queries_needed > 10
    judged = JudgedSides(
        current={"exact": {"all": {10: 0.05}}}, baseline={"exact": {"all": {10: 0.9}}}
    )
    [after] = mark_inconclusive([margin], judged, Unjudged(policy="warn"))
    assert after.status == "fail" and not after.passed
    shaky = replace(margin, flip_probability=0.5)
    stable = Stability(samples=100, seed=0, min_stability=0.99, policy="warn")
    [kept] = with_stability(
        [shaky],
        {"exact": {"ndcg@10": cur}},
        {"exact": {"ndcg@10": base}},
        {"all": np.ones(10, dtype=bool)},
        stable,
    )
    assert kept.status == "fail" and not kept.passed and gate_verdict([kept]) == "fail"


def test_the_config_is_strict_about_modes_and_margins() -> None:
    """mode and margin: a margin is required by the margin modes and must be > 0 (finite),
    refused with mode drop and beside max_drop; unknown keys and modes are refused; the
    config's dump leaves mode and margin out of a drop threshold."""
    ok = GateConfig(thresholds={"ndcg@10": {"mode": "equivalence", "margin": 0.02}})
    assert ok.thresholds is not None
    t = ok.thresholds["ndcg@10"].to_core()
    assert (t.mode, t.margin) == ("equivalence", 0.02)
    bad = [
        ({"mode": "non_inferiority"}, "needs a margin"),
        ({"mode": "non_inferiority", "margin": 0}, "greater than 0"),
        ({"mode": "non_inferiority", "margin": -0.1}, "greater than 0"),
        ({"mode": "equivalence", "margin": float("inf")}, "finite"),
        ({"margin": 0.05}, "read only by mode"),
        ({"mode": "non_inferiority", "margin": 0.05, "max_drop": 0.01}, "replaces max_drop"),
        ({"mode": "noninferiority", "margin": 0.05}, "'drop', 'non_inferiority'"),
        ({"mode": "equivalence", "margin": 0.05, "delta": 1}, "Extra inputs"),
    ]
    for given, words in bad:
        with pytest.raises(ValidationError, match=words):
            GateConfig(thresholds={"ndcg@10": given})
    plain = GateConfig(thresholds={"ndcg@10": {"max_drop": 0.01}}).model_dump()
    assert plain["thresholds"]["ndcg@10"] == {"min": None, "max_drop": 0.01, "max_drop_pct": None}
    with pytest.raises(ValidationError, match="less than or equal to 1"):
        GateConfig(min_stability=1.5)
