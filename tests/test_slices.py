"""Slices: all, head/torso/tail from frequency, tags, custom definitions, reliability labels."""

from __future__ import annotations

import pytest

from evalret.core.slices import build_slices, frequency_masks, reliability
from evalret.data.config import SliceDefinition
from evalret.errors import ConfigError


def test_frequency_slices_by_hand() -> None:
    """20 queries with frequencies 1..20: head = top ceil(5%*20)=1, tail = bottom 10."""
    freq = list(range(1, 21))
    m = frequency_masks(freq, 0.05, 0.5)
    assert [f for f, h in zip(freq, m["head"], strict=True) if h] == [20]
    assert [f for f, t in zip(freq, m["tail"], strict=True) if t] == list(range(1, 11))
    assert m["torso"].sum() == 9


def test_frequency_ties_stay_together() -> None:
    """Equal frequencies fall in the same slice; queries without frequency in none."""
    m = frequency_masks([5, 5, 1, 1, 1, None], 0.05, 0.5)
    assert m["head"].tolist() == [True, True, False, False, False, False]
    assert m["tail"].tolist() == [False, False, True, True, True, False]
    assert not m["torso"].any()


def test_build_slices_order_and_custom() -> None:
    """Order: all, frequency slices, tags (sorted), custom; custom criteria are ANDed."""
    slices = build_slices(
        ["q1", "q2", "q3"],
        ["what is X?", "X error 42", "reset"],
        [("semantic",), ("exact-match", "head"), ()],
        [10, 1, None],
        custom=[
            SliceDefinition(name="questions", pattern=r"\?$").to_core(),
            SliceDefinition(name="listed", query_ids=["q2", "q3"], tag="exact-match").to_core(),
        ],
    )
    assert [s.name for s in slices] == [
        "all",
        "head",
        "torso",
        "tail",
        "exact-match",
        "tag:head",
        "semantic",
        "questions",
        "listed",
    ]
    by = {s.name: s.mask.tolist() for s in slices}
    assert by["questions"] == [True, False, False]
    assert by["listed"] == [False, True, False]


def test_custom_slice_problems() -> None:
    """Unknown query ids and a name clash are reported together."""
    with pytest.raises(ConfigError) as e:
        build_slices(
            ["q1"],
            ["t"],
            [()],
            [None],
            custom=[
                SliceDefinition(name="all", tag="x").to_core(),
                SliceDefinition(name="mine", query_ids=["q9"]).to_core(),
            ],
        )
    text = str(e.value)
    assert "'all' is already used" in text and "unknown query ids q9" in text


@pytest.mark.parametrize(
    ("n", "label"),
    [
        (0, "unreliable"),
        (199, "unreliable"),
        (200, "minimal"),
        (999, "minimal"),
        (1000, "production"),
        (5000, "high"),
    ],
)
def test_reliability_table(n: int, label: str) -> None:
    """Labels follow domain.md's reliability table."""
    assert reliability(n) == label
