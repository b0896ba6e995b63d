"""Metric names into ``Metric`` values: ``ndcg@10``, ``P@5``, ``map``, ``ndcg@10:judged``,
``P@5(rel=2)``, ``ndcg@10(gains=0:0,1:1,2:3)``, read through the registry's alias table, so the
error for an unknown name lists what is registered."""

from __future__ import annotations

import re
from collections.abc import Iterable

from evalret.core.metrics.metric import (
    JUDGED_SUFFIX,
    MAX_CUTOFF,
    MAX_GAIN,
    MAX_GRADE,
    GainMap,
    Metric,
)
from evalret.core.metrics.registry import REGISTRY, aliases
from evalret.core.suggest import suggestion
from evalret.errors import MetricError, Problem

_NAME_RE = re.compile(
    rf"^\s*([A-Za-z_]+)\s*(?:@\s*(\d+)\s*)?(:\s*{JUDGED_SUFFIX}\s*)?"
    r"(?:\((.*)\)\s*)?$",
    re.IGNORECASE,
)


def known_metrics() -> str:
    """Human-readable list of the metric names the registry accepts."""
    return ", ".join(f"{name}@k" for name in REGISTRY) + (
        f" (k >= 1; without @k: the whole ranking; :{JUDGED_SUFFIX} after either: unjudged "
        "documents dropped first; (rel=N) last: relevant from grade N for this metric; "
        f"(gains=G:V,...) last, {', '.join(f for f, fam in REGISTRY.items() if fam.takes_gains)} "
        "only: grade G gains V)"
    )


PARAMETERS = ("rel", "gains")  # what a metric's parentheses may set, in the order it is written
_PARAM_RE = re.compile(r"^\s*([A-Za-z_]+)\s*=\s*(.*?)\s*$", re.DOTALL)
_PAIR_RE = re.compile(r"^\s*([+-]?\d+)\s*:\s*([+-]?\d+)\s*$")


def _parameters(name: str, text: str) -> dict[str, str]:
    """``rel=2,gains=0:0,1:3`` -> {"rel": "2", "gains": "0:0,1:3"}: a comma followed by a
    ``word=`` starts the next parameter; an unknown or repeated name is a MetricError."""
    out: dict[str, str] = {}
    for part in re.split(r",(?=\s*[A-Za-z_]+\s*=)", text):
        m = _PARAM_RE.match(part)
        if m is None:
            raise MetricError(
                f"metric {name!r}: {part.strip()!r} is no parameter; write (rel=N) or "
                "(gains=G:V,...) after the name"
            )
        key = m.group(1).lower()
        if key not in PARAMETERS:
            meant = suggestion(key, PARAMETERS)
            hint = f" (did you mean {meant!r}?)" if meant else ""
            raise MetricError(
                f"metric {name!r}: unknown parameter {m.group(1)!r}{hint}; a metric takes "
                f"{', '.join(p + '=' for p in PARAMETERS)}"
            )
        if key in out:
            raise MetricError(f"metric {name!r}: {key}= given twice")
        out[key] = m.group(2)
    return out


def _level(name: str, text: str) -> int:
    """The ``rel=`` value: a grade from 1 to MAX_GRADE."""
    if re.fullmatch(r"[+-]?\d+", text) is None or not 1 <= int(text) <= MAX_GRADE:
        raise MetricError(f"metric {name!r}: rel= must be a grade from 1 to {MAX_GRADE}")
    return int(text)


def _gains(name: str, family: str, text: str) -> GainMap:
    """The ``gains=`` value, ``G:V`` pairs separated by commas: grade G (0 to MAX_GRADE; a
    negative grade is pooled, not judged, and gains nothing) gains V (0 to MAX_GAIN), each
    grade once; only a family that reads grades as gains (``Family.takes_gains``) takes it."""
    if not REGISTRY[family].takes_gains:
        takes = ", ".join(f for f, fam in REGISTRY.items() if fam.takes_gains)
        raise MetricError(
            f"metric {name!r}: gains= applies to the families that read grades as gains "
            f"({takes}), not to {family}"
        )
    pairs: dict[int, int] = {}
    for item in text.split(","):
        m = _PAIR_RE.match(item)
        if m is None:
            raise MetricError(
                f"metric {name!r}: gains= takes GRADE:GAIN pairs separated by commas, as in "
                f"gains=0:0,1:1,2:3; {item.strip()!r} is not one"
            )
        grade, gain = int(m.group(1)), int(m.group(2))
        if not 0 <= grade <= MAX_GRADE:
            raise MetricError(
                f"metric {name!r}: gains= grade {grade} must be from 0 to {MAX_GRADE} (a "
                "negative grade is pooled, not judged, and gains nothing)"
            )
        if not 0 <= gain <= MAX_GAIN:
            raise MetricError(
                f"metric {name!r}: gains= gain {gain} of grade {grade} must be from 0 to "
                f"{MAX_GAIN:,}"
            )
        if grade in pairs:
            raise MetricError(f"metric {name!r}: gains= gives grade {grade} twice")
        pairs[grade] = gain
    return tuple(sorted(pairs.items()))


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
    ``:judged`` (``ndcg@10:judged``, ``map:judged``) its judged-only variant; last, in
    parentheses, its parameters: ``rel=N`` (``P@5(rel=2)``) its own relevance level N, from 1 to
    MAX_GRADE, and ``gains=G:V,...`` (``ndcg@10(gains=0:0,1:1,2:3)``) its own gain per grade
    (``_gains``); both: ``(rel=2,gains=1:1,2:3)``."""
    m = _NAME_RE.match(name)
    family = aliases().get(m.group(1).lower()) if m else None
    if m is None or family is None:
        raise MetricError(
            f"unknown metric {name!r}{_metric_hint(name)}; known metrics: {known_metrics()}"
        )
    judged = m.group(3) is not None
    params = {} if m.group(4) is None else _parameters(name, m.group(4))
    rel = _level(name, params["rel"]) if "rel" in params else None
    gains = _gains(name, family, params["gains"]) if "gains" in params else None
    if m.group(2) is None:
        return Metric(family, judged=judged, rel=rel, gains=gains)
    k = int(m.group(2))
    if k < 1:
        raise MetricError(f"metric {name!r}: the cutoff k must be at least 1")
    if k > MAX_CUTOFF:
        raise MetricError(
            f"metric {name!r}: the cutoff k must be at most {MAX_CUTOFF:,} (rankings are cut at "
            "the corpus size anyway)"
        )
    return Metric(family, k, judged, rel, gains)


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
