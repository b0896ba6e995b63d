"""Rank drift between two rankings (the pure part of `evalret compare`)."""

from __future__ import annotations

import pytest

from evalret.core.comparison import RBO_P, rank_drift


def _rbo_by_hand(a: list[str], b: list[str], k: int) -> float:
    total = sum(len(set(a[:d]) & set(b[:d])) / d * RBO_P**d for d in range(1, k + 1))
    return (1 - RBO_P) / RBO_P * total + len(set(a[:k]) & set(b[:k])) / k * RBO_P**k


def test_rank_drift_identical_disjoint_and_partial() -> None:
    full = [f"d{i}" for i in range(10)]
    other = [f"x{i}" for i in range(10)]
    swapped = [full[1], full[0], *full[2:9], "x"]
    jac, rbo = rank_drift([full, full, full], [full, other, swapped])
    assert jac.tolist() == pytest.approx([1.0, 0.0, 9 / 11])
    assert rbo[0] == pytest.approx(1.0) and rbo[1] == pytest.approx(0.0)
    assert rbo[2] == pytest.approx(_rbo_by_hand(full, swapped, 10))


def test_rank_drift_of_short_rankings() -> None:
    """Rankings shorter than k (a lexical index matching few documents): identical is 1."""
    short = ["a", "b", "c"]
    jac, rbo = rank_drift([short, [], short], [short, [], ["c", "b", "a"]])
    assert jac.tolist() == [1.0, 1.0, 1.0]
    assert rbo[0] == pytest.approx(1.0) and rbo[1] == 1.0
    assert rbo[2] == pytest.approx(_rbo_by_hand(short, ["c", "b", "a"], 3))
    assert rbo[2] < 1.0
