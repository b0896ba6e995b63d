"""Verdict stability (#40): every check over per-query values carries its flip probability,
the share of seeded bootstrap resamples of its slice's queries in which its rule decides
otherwise, equal to a direct resampling; gate.min_stability turns a flip-prone check
inconclusive (its exit as the unjudged policy decides) and never a broken system's failure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps

from conftest import DEMO
from evalret.core.gate import (
    Stability,
    Threshold,
    evaluate_gate,
    gate_verdict,
    resolve_rules,
    with_stability,
)
from evalret.core.stats import seed_for
from helpers import SEEDED_WORD_ENCODER, invoke

ALL = np.ones(100, dtype=bool)
HALF = np.arange(100) < 50


def direct_flips(
    kind: str,
    limit: float,
    cur: np.ndarray,
    base: np.ndarray,
    samples: int,
    seed: int,
    slice_name: str,
    alpha: float = 0.05,
) -> float:
    """The flip probability computed here by hand: resample the slice's queries with the
    documented seed, decide the rule on each resample and on the slice, count the differences."""
    n = len(cur)
    idx = np.random.default_rng(seed_for(seed, "stability", slice_name)).integers(
        0, n, size=(samples, n)
    )

    def decide(c: np.ndarray, b: np.ndarray) -> bool:
        if kind == "min":
            return bool(c.mean() < limit - 1e-12)
        if kind == "max_drop":
            return bool(b.mean() - c.mean() > limit + 1e-12)
        if kind == "max_drop_pct":
            return bool(b.mean() - c.mean() > limit / 100 * b.mean() + 1e-12)
        d = c - b
        half = sps.t.ppf(1 - alpha, n - 1) * d.std(ddof=1) / np.sqrt(n)
        return bool(d.mean() - half > -limit)

    whole = decide(cur, base)
    return sum(decide(cur[row], base[row]) != whole for row in idx) / samples


def checks_with_stability(
    cur: np.ndarray, base: np.ndarray, threshold: Threshold, stability: Stability
) -> list[Any]:
    slices = {"all": ALL, "half": HALF}
    rules = resolve_rules({"ndcg@10": threshold}, [], ["exact"], list(slices))
    current, baseline = {"exact": {"ndcg@10": cur}}, {"exact": {"ndcg@10": base}}
    checks = evaluate_gate(current, baseline, slices, rules)
    return with_stability(checks, current, baseline, slices, stability)


def close_pair() -> tuple[np.ndarray, np.ndarray]:
    """A candidate whose loss (0.0098 on all) sits near a max_drop of 0.01."""
    rng = np.random.default_rng(4)
    base = rng.random(100)
    noise = 0.1 * rng.standard_normal(100)
    return base - 0.0098 + noise - noise.mean(), base


@pytest.mark.parametrize(
    "threshold",
    [
        Threshold(min=0.5),
        Threshold(max_drop=0.01),
        Threshold(max_drop_pct=2),
        Threshold(mode="non_inferiority", margin=0.03),
        Threshold(mode="equivalence", margin=0.03),
    ],
)
def test_flip_probabilities_equal_a_direct_resampling(threshold: Threshold) -> None:
    """Every check's flip probability is exactly what resampling by hand gives (same seed)."""
    cur, base = close_pair()
    stability = Stability(samples=300, seed=5)
    checks = checks_with_stability(cur, base, threshold, stability)
    assert checks
    for c in checks:
        mask = {"all": ALL, "half": HALF}[c.slice]
        limit = c.threshold
        if c.kind == "equivalence":
            continue  # checked below: both bounds
        expected = direct_flips(c.kind, limit, cur[mask], base[mask], 300, 5, c.slice)
        assert c.flip_probability == expected, (c.name, c.flip_probability, expected)
    assert any(0 < (c.flip_probability or 0) < 1 for c in checks if c.kind != "equivalence") or (
        threshold.mode == "equivalence"
    )


def test_min_stability_turns_a_flip_prone_check_inconclusive() -> None:
    """gate.min_stability 0.9: the max_drop check near its threshold (flips in about half the
    resamples) becomes inconclusive; under policy warn it does not block (verdict
    inconclusive), under fail it does; a stable check keeps its verdict."""
    cur, base = close_pair()
    plain = checks_with_stability(cur, base, Threshold(max_drop=0.01), Stability(300, 5))
    flips = {c.slice: c.flip_probability for c in plain}
    assert flips["all"] is not None and flips["all"] > 0.1
    for policy, passed, verdict in (("warn", True, "inconclusive"), ("fail", False, "fail")):
        stability = Stability(300, 5, min_stability=0.9, policy=policy)  # type: ignore[arg-type]
        checks = checks_with_stability(cur, base, Threshold(max_drop=0.01), stability)
        shaky = [c for c in checks if c.status == "inconclusive"]
        assert shaky and all(c.inconclusive_reason == "unstable" for c in shaky)
        assert all(c.passed is passed for c in shaky)
        assert all("more than gate.min_stability 0.9" in c.message for c in shaky)
        assert gate_verdict(checks) == verdict
    # the flip probabilities do not depend on the level
    again = checks_with_stability(cur, base, Threshold(max_drop=0.01), Stability(300, 5, 0.9))
    assert [c.flip_probability for c in again] == [c.flip_probability for c in plain]


def test_a_broken_system_stays_failed_under_min_stability() -> None:
    """A candidate 0.2 worse on every query: its drop fails in every resample (flip 0), so no
    stability level makes it inconclusive, even under policy warn."""
    rng = np.random.default_rng(6)
    base = rng.random(100)
    broken = base - 0.2 + 0.01 * rng.standard_normal(100)
    stability = Stability(300, 5, min_stability=1.0, policy="warn")
    checks = checks_with_stability(broken, base, Threshold(max_drop=0.01), stability)
    assert all(c.flip_probability == 0 and c.status == "fail" for c in checks)
    assert gate_verdict(checks) == "fail"


# --- on the demo --------------------------------------------------------------------------------

ENCODER = SEEDED_WORD_ENCODER


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config on the demo golden set, embedded by seeded word vectors (the baseline at 64
    dimensions saved), gating ndcg@10 (max_drop, a floor, non-inferiority on the tail)."""
    (tmp_path / "stab_words.py").write_text(ENCODER)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "cfg.yaml").write_text(
        f"golden_set: {{path: {DEMO}}}\n"
        f"cache: {{dir: {tmp_path / 'cache'}}}\n"
        "model: {provider: python, callable: 'stab_words:make', options: {dim: 64}}\n"
        "indexes: {hnsw: {enabled: false}, hybrid: {enabled: false}}\n"
        "health: {enabled: false}\n"
        "metrics: [ndcg@10, recall@10]\n"
        "bootstrap: {samples: 200, seed: 3}\n"
        "gate:\n"
        f"  baseline: {tmp_path / 'base.json'}\n"
        "  thresholds:\n"
        "    ndcg@10: {max_drop: 0.01, min: 0.1}\n"
        "    recall@10: {mode: non_inferiority, margin: 0.05}\n"
    )
    code, out = invoke(
        "run",
        "-c",
        str(tmp_path / "cfg.yaml"),
        "--no-progress",
        "--out",
        str(tmp_path / "r0"),
        "--save-baseline",
        str(tmp_path / "base.json"),
    )
    assert code in (0, 1) and (tmp_path / "base.json").is_file(), out
    return tmp_path


def _run(demo: Path, *extra: str) -> tuple[int, str, dict[str, Any]]:
    code, out = invoke(
        "run",
        "-c",
        str(demo / "cfg.yaml"),
        "--no-progress",
        "--out",
        str(demo / "r1"),
        "--set",
        "model.options.dim=48",
        *extra,
    )
    return code, out, json.loads((demo / "r1" / "report.json").read_text())


def test_the_demos_flip_probabilities_equal_a_direct_resampling(demo: Path) -> None:
    """On the demo (48 against 64 dimensions), every floor, drop and margin check's flip
    probability in report.json equals the direct resampling of the per-query values in the
    report and the baseline (bootstrap.samples 200, bootstrap.seed 3); close checks are named
    with their flip probability in the terminal, report.md, report.html and comment.md."""
    _code, out, report = _run(demo)
    base = json.loads((demo / "base.json").read_text())
    assert base["query_ids"] == report["query_ids"]
    checks = [
        c for c in report["gate"]["checks"] if c["kind"] in ("min", "max_drop", "non_inferiority")
    ]
    assert {c["kind"] for c in checks} == {"min", "max_drop", "non_inferiority"}
    for c in checks:
        members = np.array(report["slices"][c["slice"]]["members"])
        cur = np.asarray(report["indexes"][c["index"]]["per_query"][c["metric"]])[members]
        was = np.asarray(base["indexes"][c["index"]]["per_query"][c["metric"]])[members]
        if len(members) < 2:
            assert "flip_probability" not in c
            continue
        expected = direct_flips(c["kind"], c["threshold"], cur, was, 200, 3, c["slice"])
        assert c["flip_probability"] == expected, c["name"]
    assert report["gate"]["stability"] == {"samples": 200, "seed": 3, "min_stability": None}
    close = [c for c in checks if c.get("flip_probability", 0) >= 0.01]
    assert close, "the demo's change has no close check to show"
    first = max(close, key=lambda c: c["flip_probability"])
    line = f"{first['name']}: "
    flips = f"its verdict flips in {first['flip_probability']:.0%} of 200 resamples"
    assert "close checks" in out and flips in out
    for name in ("report.md", "report.html", "comment.md"):
        text = (demo / "r1" / name).read_text()
        assert flips in text and line.split("/")[0] in text, name
    margins = [c for c in checks if c["kind"] == "non_inferiority"]
    for c in margins:
        assert c["evidence"] in ("proven", "not_proven", "underpowered")
        assert c["interval_method"] == "bootstrap" and "interval_low" in c
    assert "non-inferiority, margin 0.05:" in (demo / "r1" / "report.md").read_text()


def test_min_stability_makes_the_demos_flip_prone_checks_inconclusive(demo: Path) -> None:
    """gate.min_stability 0.99 on the same change: every check that flips in more than 1% of
    the resamples (and is not an unproven margin) is inconclusive, reason unstable; the gate
    says why, and exits as gate.unjudged.policy decides (warn: 0 unless another check fails;
    fail: 1)."""
    code, out, report = _run(demo, "--set", "gate.min_stability=0.99")
    checks = report["gate"]["checks"]
    shaky = [c for c in checks if c["status"] == "inconclusive"]
    assert shaky, "no flip-prone check on the demo"
    for c in shaky:
        assert c["inconclusive_reason"] == "unstable" and c["flip_probability"] > 0.01
    for c in checks:
        if c.get("flip_probability", 0) > 0.01 + 1e-12 and c["status"] != "inconclusive":
            assert c["kind"] == "non_inferiority" and c["status"] == "fail"
    failed = [c for c in checks if not c["passed"]]
    assert code == (1 if failed else 0), out
    assert "under resampling of the queries" in out
    code, out, report = _run(
        demo, "--set", "gate.min_stability=0.99", "--set", "gate.unjudged.policy=fail"
    )
    assert code == 1 and report["gate"]["verdict"] == "fail", out
