"""The config sections' ``to_core()``: each is a one-line conversion to the core's frozen
dataclass of the same fields, so the two must declare the same fields; a value set in the
config arrives in the core unchanged."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, get_type_hints

import pytest
from pydantic import BaseModel

from evalret.core import gate
from evalret.core.slices import CustomSlice
from evalret.data import config

SECTIONS = sorted(
    (
        cls
        for _, cls in inspect.getmembers(config, inspect.isclass)
        if issubclass(cls, BaseModel) and "to_core" in vars(cls)
    ),
    key=lambda cls: cls.__name__,
)


def test_every_section_with_to_core_is_known_here() -> None:
    """The sections below are every config model that defines ``to_core``."""
    names = [cls.__name__ for cls in SECTIONS]
    assert names == [
        "HealthThreshold",
        "SignificanceConfig",
        "SliceDefinition",
        "Threshold",
        "ThresholdOverride",
        "UnjudgedConfig",
    ]


@pytest.mark.parametrize("section", SECTIONS, ids=lambda cls: cls.__name__)
def test_the_section_and_its_core_dataclass_have_the_same_fields(section: type[BaseModel]) -> None:
    """A field added to one side only would be dropped, or refused at run time: both sides
    declare the same names."""
    # the return annotation, read in the namespace of the module that defines the section
    core = get_type_hints(section.to_core)["return"]  # type: ignore[attr-defined]
    assert dataclasses.is_dataclass(core)
    assert set(section.model_fields) == {f.name for f in dataclasses.fields(core)}


@pytest.mark.parametrize(
    ("section", "values", "expected"),
    [
        (
            config.Threshold,
            {"min": 0.5, "max_drop": 0.01, "max_drop_pct": 2.0},
            gate.Threshold(min=0.5, max_drop=0.01, max_drop_pct=2.0),
        ),
        (
            config.ThresholdOverride,
            {"metric": "NDCG@10", "slice": "tail", "index": "hnsw", "max_drop": 0.05},
            gate.ThresholdOverride(metric="ndcg@10", slice="tail", index="hnsw", max_drop=0.05),
        ),
        (config.HealthThreshold, {"min": -1.0, "max": 0.5}, gate.HealthBounds(min=-1.0, max=0.5)),
        (
            config.SignificanceConfig,
            {"test": "t-test", "alpha": 0.01, "correction": "none", "samples": 500, "seed": 7},
            gate.Significance(
                test="t-test", alpha=0.01, correction="none", samples=500, seed=7, power=0.8
            ),
        ),
        (
            config.SliceDefinition,
            {"name": "mine", "tag": "t", "query_ids": ["q1", "q2"], "pattern": "^how"},
            CustomSlice(name="mine", tag="t", query_ids=("q1", "q2"), pattern="^how"),
        ),
        (config.SliceDefinition, {"name": "tagged", "tag": "t"}, CustomSlice("tagged", tag="t")),
        (
            config.UnjudgedConfig,
            {"max_drop": 0.25, "policy": "fail"},
            gate.Unjudged(max_drop=0.25, policy="fail"),
        ),
    ],
)
def test_to_core_carries_every_value(
    section: type[BaseModel], values: dict[str, Any], expected: object
) -> None:
    """Every value set in the config (the metric name normalised) reaches the core."""
    assert section.model_validate(values).to_core() == expected  # type: ignore[attr-defined]
