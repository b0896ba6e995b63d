"""Metric names into ``Metric`` values: ``ndcg@10``, ``P@5``, ``map``, ``ndcg@10:judged``, read
through the registry's alias table, so the error for an unknown name lists what is registered."""

from __future__ import annotations

import re
from collections.abc import Iterable

from evalret.core.metrics.metric import JUDGED_SUFFIX, MAX_CUTOFF, MAX_GRADE, Metric
from evalret.core.metrics.registry import REGISTRY, aliases
from evalret.core.suggest import suggestion
from evalret.errors import MetricError, Problem

_NAME_RE = re.compile(
    rf"^\s*([A-Za-z_]+)\s*(?:@\s*(\d+)\s*)?(:\s*{JUDGED_SUFFIX}\s*)?"
    r"(?:\(\s*rel\s*=\s*([+-]?\d+)\s*\)\s*)?$",
    re.IGNORECASE,
)


def known_metrics() -> str:
    """Human-readable list of the metric names the registry accepts."""
    return ", ".join(f"{name}@k" for name in REGISTRY) + (
        f" (k >= 1; without @k: the whole ranking; :{JUDGED_SUFFIX} after either: unjudged "
        "documents dropped first; (rel=N) last: relevant from grade N for this metric)"
    )


DIGIT_LOOKALIKES = str.maketrans("OoIl", "0011")  # letters typed for digits after the @
_PARTS_RE = re.compile(r"^\s*([A-Za-z_]+)\s*(@[^:(]*)?(:[^(]*)?(\(.*)?$")


def _metric_hint(name: str) -> str:
    """`` (did you mean 'recall@10'?)`` for a mistyped metric name, or "": the one family the
    typed one begins, else the closest (``core.suggest``); letters that look like digits after
    the @ read as digits (``ndcg@1O``); a mistyped ``:judged`` spelled out. Only a name that
    parses is suggested."""
    parts = _PARTS_RE.match(name)
    if parts is None:
        return ""
    family, cutoff, suffix = parts.group(1), parts.group(2) or "", parts.group(3) or ""
    level = parts.group(4) or ""
    if family.lower() not in aliases():  # a family it begins (prec), else the closest one
        begun = [f for f in REGISTRY if f.startswith(family.lower())]
        family = begun[0] if len(begun) == 1 else suggestion(family.lower(), REGISTRY) or family
    if suffix:
        suffix = ":" + (suggestion(suffix[1:].strip().lower(), [JUDGED_SUFFIX]) or suffix[1:])
    meant = family + cutoff.translate(DIGIT_LOOKALIKES) + suffix + level
    read = _NAME_RE.match(meant)
    known = read is not None and read.group(1).lower() in aliases()
    return f" (did you mean {meant!r}?)" if known and meant != name else ""


def parse_metric(name: str) -> Metric:
    """Parse ``ndcg@10`` into a Metric; case-insensitive, with aliases (``P@5``, ``success@1``).
    A name without ``@k`` (``map``, ``RR``) is the metric over the whole ranking; a trailing
    ``:judged`` (``ndcg@10:judged``, ``map:judged``) its judged-only variant; a last ``(rel=N)``
    (``P@5(rel=2)``) its own relevance level N, from 1 to MAX_GRADE."""
    m = _NAME_RE.match(name)
    family = aliases().get(m.group(1).lower()) if m else None
    if m is None or family is None:
        raise MetricError(
            f"unknown metric {name!r}{_metric_hint(name)}; known metrics: {known_metrics()}"
        )
    judged = m.group(3) is not None
    rel = None if m.group(4) is None else int(m.group(4))
    if rel is not None and not 1 <= rel <= MAX_GRADE:
        raise MetricError(f"metric {name!r}: rel= must be a grade from 1 to {MAX_GRADE}")
    if m.group(2) is None:
        return Metric(family, judged=judged, rel=rel)
    k = int(m.group(2))
    if k < 1:
        raise MetricError(f"metric {name!r}: the cutoff k must be at least 1")
    if k > MAX_CUTOFF:
        raise MetricError(
            f"metric {name!r}: the cutoff k must be at most {MAX_CUTOFF:,} (rankings are cut at "
            "the corpus size anyway)"
        )
    return Metric(family, k, judged, rel)


def parse_metrics(names: Iterable[str]) -> list[Metric]:
    """Parse several names, reporting every bad one at once; duplicates are dropped, order kept."""
    out: list[Metric] = []
    problems: list[Problem] = []
    for name in names:
        try:
            metric = parse_metric(name)
        except MetricError as e:
            problems.append(Problem(e.summary))
            continue
        if metric not in out:
            out.append(metric)
    if problems:
        raise MetricError("invalid metric names", problems)
    return out
