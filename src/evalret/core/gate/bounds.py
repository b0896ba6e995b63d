"""Fixed bounds: an approximate index's recall floor, cost budgets and ceilings, and the
intrinsic-health bounds of the vectors; each one check, with no baseline needed."""

from __future__ import annotations

from collections.abc import Mapping

from evalret.core.gate.model import (
    EPS,
    NOT_FINITE,
    Check,
    CheckKind,
    HealthBounds,
    _finite,
    _fmt,
)


def ann_check(index: str, recall: float, floor: float, k: int, n_all: int, over: str = "") -> Check:
    """The recall floor of approximate index ``index`` against exact search's top k: one check
    on slice ``all``; ``over`` says which of its repeated searches the recall is of (" (worst
    of 3 repeats)"), empty for an index searched once."""
    who = "HNSW" if index == "hnsw" else index
    return _at_least(
        (index, "all", f"ann_recall@{k}", "ann_min_recall"),
        floor,
        recall,
        n_all,
        f"{who} keeps {_fmt(recall)} of the exact top-{k}",
        over,
    )


def _at_least(
    where: tuple[str, str, str, CheckKind],
    floor: float,
    value: float,
    n: int,
    found: str,
    qualifier: str = "",
) -> Check:
    """``value`` at least ``floor`` (``where``: index, slice, metric, kind), the message
    ``found`` followed by ``qualifier`` and the floor, or by why the value cannot be read."""
    index, slice_name, metric, _ = where
    passed = _finite(value) and value >= floor - EPS
    tail = (
        f"{qualifier}{'' if passed else ', below'} the floor {floor:g}"
        if _finite(value)
        else f": {NOT_FINITE}"
    )
    return _bound_check(
        f"{index}/{slice_name}/{metric} min {floor:g}",
        where,
        floor,
        value,
        n,
        passed,
        found + tail,
    )


def amount(v: float) -> str:
    """A budget's figure or limit as a reader counts it: whole numbers with thousands
    separators (bytes, distances), others to 4 significant digits (ms, cost)."""
    if float(v).is_integer():
        return f"{v:,.0f}"
    return f"{v:,.1f}" if abs(v) >= 100 else f"{v:.4g}"


def budget_check(
    index: str, figure: str, limit: float, value: float | None, n: int, note: str = ""
) -> Check:
    """A budget: ``figure`` of ``index`` (``run`` for the run's own cost) at most ``limit``.
    A figure the run did not measure (``value`` None) fails: a budget never passes on nothing.
    ``note`` follows the message (the latency budget says it depends on the machine)."""
    passed = value is not None and _finite(value) and value <= limit + EPS
    if value is None:
        found = f"{figure} of {index} was not measured in this run"
    elif not _finite(value):
        found = f"{figure} of {index}: {NOT_FINITE}"
    else:
        found = f"{figure} of {index} = {amount(value)}" + (
            f", within the budget {amount(limit)}"
            if passed
            else f", over the budget {amount(limit)}"
        )
    return _bound_check(
        f"{index}/budget/{figure} max {amount(limit)}",
        (index, "all", figure, "budget_max"),
        limit,
        float("nan") if value is None else value,
        n,
        passed,
        found + note,
    )


def ceiling_check(
    index: str, first_stage: str, k: int, recall: float, floor: float, n: int
) -> Check:
    """The floor on a rerank index's candidate ceiling (its first stage's recall@k, slice
    ``all``): one check per rerank index."""
    return _at_least(
        (index, "all", f"candidate_recall@{k}", "rerank_min_recall"),
        floor,
        recall,
        n,
        f"{first_stage} puts {_fmt(recall)} of the relevant documents in {index}'s top-{k}",
        " candidates",
    )


def _bound_check(
    name: str,
    where: tuple[str, str, str, CheckKind],
    threshold: float,
    current: float,
    n: int,
    passed: bool,
    message: str,
) -> Check:
    """A check of one value against a fixed bound: no baseline, no test. ``where`` is
    (index, slice, metric, kind)."""
    index, slice_name, metric, kind = where
    return Check(
        name=name,
        index=index,
        slice=slice_name,
        metric=metric,
        kind=kind,
        threshold=threshold,
        baseline=None,
        current=current,
        delta=None,
        n_queries=n,
        p_value=None,
        p_adjusted=None,
        mde=None,
        underpowered=False,
        passed=passed,
        message=message,
        status="pass" if passed else "fail",
    )


def health_checks(
    figures: Mapping[str, Mapping[str, float | int | bool] | None],
    thresholds: Mapping[str, HealthBounds],
) -> list[Check]:
    """Checks of intrinsic-health figures. ``figures`` maps "documents" / "queries" to their
    figures (None: not computed); a threshold key names a figure for both, or one of them as
    "documents.<figure>" / "queries.<figure>". Booleans compare as 0 / 1."""
    checks = []
    for key, t in thresholds.items():
        which, _, figure = key.rpartition(".")
        for matrix in (which,) if which else ("documents", "queries"):
            values = figures.get(matrix)
            if values is None or figure not in values:
                continue
            bounds: tuple[tuple[CheckKind, float | None], ...] = (
                ("health_min", t.min),
                ("health_max", t.max),
            )
            for kind, limit in bounds:
                if limit is not None:
                    checks.append(_health_check(matrix, figure, values, kind, limit))
    return checks


def _health_check(
    matrix: str,
    figure: str,
    values: Mapping[str, float | int | bool],
    kind: CheckKind,
    limit: float,
) -> Check:
    """One bound (``health_min`` or ``health_max``) on one figure of one matrix."""
    current = float(values[figure])
    n = int(values.get("n_vectors", 0))
    within = current >= limit - EPS if kind == "health_min" else current <= limit + EPS
    passed = _finite(current) and within
    bound = f"{'>=' if kind == 'health_min' else '<='} {limit:g}"
    shown = str(bool(current)).lower() if isinstance(values[figure], bool) else _fmt(current)
    outcome = (
        NOT_FINITE if not _finite(current) else f"within {bound}" if passed else f"outside {bound}"
    )
    return _bound_check(
        f"embedding/{matrix}/{figure} {kind.split('_')[1]} {limit:g}",
        ("embedding", matrix, figure, kind),
        limit,
        current,
        n,
        passed,
        f"{matrix} {figure} = {shown}: {outcome}",
    )
