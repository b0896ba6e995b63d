"""Which queries belong to which slice. Pure: takes the queries' fields, returns boolean masks.

Order of the slices: ``all``; then ``head``, ``torso``, ``tail`` when queries carry a frequency;
then one slice per tag (sorted); then the custom slices (the config's, as ``CustomSlice`` values),
in their order.

Frequency slices: with ``n`` queries carrying a frequency, ``head`` holds every query at least as
frequent as the ceil(head_fraction * n)-th most frequent one, ``tail`` every other query at most as
frequent as the floor(tail_fraction * n)-th least frequent one, ``torso`` the rest. A query's slice
depends only on its frequency, so ties at a boundary all fall on the head (or tail) side.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from evalret.errors import ConfigError, Problem

FREQUENCY_SLICES = ("head", "torso", "tail")

Reliability = Literal["high", "production", "minimal", "unreliable"]

# (minimum number of queries, label, meaning), after domain.md's reliability table
RELIABILITY: tuple[tuple[int, Reliability, str], ...] = (
    (5000, "high", "high confidence"),
    (1000, "production", "production grade: resolves +0.01 nDCG"),
    (200, "minimal", "minimal viable: directional for big changes"),
    (0, "unreliable", "unreliable: only large changes show"),
)


@dataclass(frozen=True)
class CustomSlice:
    """A declared slice: the queries matching every given criterion (None: not a criterion)."""

    name: str
    tag: str | None = None
    query_ids: tuple[str, ...] | None = None
    pattern: str | None = None  # a regular expression searched in the query text


@dataclass(frozen=True)
class Slice:
    name: str
    kind: str  # all | frequency | tag | custom
    definition: str
    mask: np.ndarray  # bool [Q]

    @property
    def n_queries(self) -> int:
        return int(self.mask.sum())


def reliability(n_queries: int) -> Reliability:
    """The reliability label of a slice of ``n_queries`` queries (``unreliable`` under 200)."""
    return next(label for minimum, label, _ in RELIABILITY if n_queries >= minimum)


def frequency_masks(
    frequency: Sequence[int | None], head_fraction: float, tail_fraction: float
) -> dict[str, np.ndarray]:
    """head / torso / tail masks; queries without a frequency are in none of them."""
    has = np.array([f is not None for f in frequency], dtype=bool)
    freq = np.array([f if f is not None else -1 for f in frequency], dtype=np.int64)
    n = int(has.sum())
    empty = np.zeros(len(frequency), dtype=bool)
    if n == 0:
        return {name: empty for name in FREQUENCY_SLICES}
    known = np.sort(freq[has])
    n_head = max(1, math.ceil(head_fraction * n))
    n_tail = max(1, math.floor(tail_fraction * n))
    head = has & (freq >= known[::-1][n_head - 1])
    tail = has & ~head & (freq <= known[n_tail - 1])
    return {"head": head, "torso": has & ~head & ~tail, "tail": tail}


def build_slices(
    query_ids: Sequence[str],
    query_texts: Sequence[str],
    tags: Sequence[Sequence[str]],
    frequency: Sequence[int | None],
    *,
    use_tags: bool = True,
    use_frequency: bool = True,
    head_fraction: float = 0.05,
    tail_fraction: float = 0.5,
    custom: Sequence[CustomSlice] = (),
) -> list[Slice]:
    """The slices of a set of queries (aligned sequences), ``all`` first."""
    n = len(query_ids)
    out = [Slice("all", "all", "every evaluated query", np.ones(n, dtype=bool))]
    if use_frequency and any(f is not None for f in frequency):
        masks = frequency_masks(frequency, head_fraction, tail_fraction)
        meaning = {
            "head": f"top {head_fraction:.0%} by frequency",
            "torso": "between head and tail by frequency",
            "tail": f"bottom {tail_fraction:.0%} by frequency",
        }
        out += [Slice(s, "frequency", meaning[s], masks[s]) for s in FREQUENCY_SLICES]
    if use_tags:
        for tag in sorted({t for ts in tags for t in ts}):
            name = tag if tag not in {"all", *FREQUENCY_SLICES} else f"tag:{tag}"
            mask = np.array([tag in ts for ts in tags], dtype=bool)
            out.append(Slice(name, "tag", f"queries tagged {tag!r}", mask))
    return out + _custom_slices(query_ids, query_texts, tags, custom, {s.name for s in out})


def _custom_slices(
    query_ids: Sequence[str],
    query_texts: Sequence[str],
    tags: Sequence[Sequence[str]],
    custom: Sequence[CustomSlice],
    taken: set[str],
) -> list[Slice]:
    """The custom slices, criteria ANDed; ConfigError naming every clashing name (with
    ``taken`` or an earlier one) and every unknown query id."""
    n = len(query_ids)
    out = []
    problems = []
    id_set = set(query_ids)
    for i, d in enumerate(custom):
        if d.name in taken:
            problems.append(Problem(f"slices.custom[{i}]: slice name {d.name!r} is already used"))
            continue
        mask = np.ones(n, dtype=bool)
        parts = []
        if d.tag is not None:
            mask &= np.array([d.tag in ts for ts in tags], dtype=bool)
            parts.append(f"tag {d.tag!r}")
        if d.query_ids is not None:
            unknown = sorted(set(d.query_ids) - id_set)
            if unknown:
                problems.append(
                    Problem(
                        f"slices.custom[{i}] ({d.name}): "
                        f"unknown query ids {', '.join(unknown[:10])}"
                    )
                )
            wanted = set(d.query_ids)
            mask &= np.array([q in wanted for q in query_ids], dtype=bool)
            parts.append(f"{len(wanted)} listed query ids")
        if d.pattern is not None:
            rx = re.compile(d.pattern)
            mask &= np.array([rx.search(t) is not None for t in query_texts], dtype=bool)
            parts.append(f"text matches /{d.pattern}/")
        taken.add(d.name)
        out.append(Slice(d.name, "custom", " and ".join(parts), mask))
    if problems:
        raise ConfigError("invalid slice definitions", problems)
    return out
