"""A metric's trend across history entries (oldest first): what changed between one entry's
fingerprint and the previous one's, where the numbers stop being comparable, and each value's
change from the previous comparable value and from the latest baseline before it.

Two entries are comparable when they share the golden set and the metric definitions (gain,
relevance level, tie rule, ...); a new model or index setting is what a trend is there to show, so
it is reported but does not break the trend. Pure: plain values in, plain values out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

GOLDEN_SET = "golden set"
DEFINITIONS = "metric definitions"
MODEL = "model"
INDEXES = "indexes"
# after a change of these parts the numbers measure something else: the trend starts again
BREAKING = (GOLDEN_SET, DEFINITIONS)


@dataclass(frozen=True)
class EntryPrint:
    """The parts of an entry's fingerprint a trend compares, each as one string (a digest)."""

    golden_set: str
    definitions: str
    model: str
    indexes: str


@dataclass(frozen=True)
class TrendPoint:
    """One entry's value of one series, and how it moved."""

    value: float | None  # None: the entry has no (finite) value for this series
    change: float | None  # value - the previous value in the same segment (None: no such value)
    since_baseline: float | None  # value - the latest earlier baseline's value in the segment


def changed_parts(prints: Sequence[EntryPrint]) -> list[tuple[str, ...]]:
    """For each entry, the fingerprint parts that differ from the previous entry's (the first
    entry: none), in the order golden set, metric definitions, model, indexes."""
    out: list[tuple[str, ...]] = []
    for i, p in enumerate(prints):
        if i == 0:
            out.append(())
            continue
        q = prints[i - 1]
        pairs = (
            (GOLDEN_SET, q.golden_set, p.golden_set),
            (DEFINITIONS, q.definitions, p.definitions),
            (MODEL, q.model, p.model),
            (INDEXES, q.indexes, p.indexes),
        )
        out.append(tuple(name for name, before, after in pairs if before != after))
    return out


def breaks(changed: Sequence[tuple[str, ...]]) -> list[bool]:
    """Whether each entry starts a new comparable segment (its golden set or metric definitions
    differ from the previous entry's)."""
    return [any(part in BREAKING for part in parts) for parts in changed]


def segments(changed: Sequence[tuple[str, ...]]) -> list[int]:
    """The comparable segment of each entry: 0 for the first, one more after every break."""
    out: list[int] = []
    current = 0
    for starts in breaks(changed):
        current += int(starts and bool(out))
        out.append(current)
    return out


def _finite(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


def trend_points(
    values: Sequence[float | None], segment: Sequence[int], baseline: Sequence[bool]
) -> list[TrendPoint]:
    """Each value with its change from the previous entry that has a value in the same segment,
    and from the latest earlier baseline entry with a value in the same segment (None where
    there is no such entry, across a break, or where the value is missing or not finite)."""
    if not len(values) == len(segment) == len(baseline):
        raise ValueError("values, segments and baseline marks must have one entry each")
    points: list[TrendPoint] = []
    previous: tuple[int, float] | None = None  # (segment, value)
    last_baseline: tuple[int, float] | None = None
    for raw, seg, is_baseline in zip(values, segment, baseline, strict=True):
        value = _finite(raw)
        change = since = None
        if value is not None:
            if previous is not None and previous[0] == seg:
                change = value - previous[1]
            if last_baseline is not None and last_baseline[0] == seg:
                since = value - last_baseline[1]
            previous = (seg, value)
            if is_baseline:
                last_baseline = (seg, value)
        points.append(TrendPoint(value, change, since))
    return points
