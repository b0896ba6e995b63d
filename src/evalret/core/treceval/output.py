"""trec_eval's run over a qrels and a run, and its text: the measures ``-m`` selects (with their
parameters), each qrels query scored in qid order, the per-query lines (``-q``) and the
``all`` lines, in trec_eval's measure order and number formats (``%-22s\\t%s\\t%6.4f``, counts as
integers). ``trec_eval_text`` is the whole output, byte for byte the one trec_eval 10 prints."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalret.core.relevance import is_judged
from evalret.core.treceval.measures import BY_NAME, MEASURES, MIN_GEO_MEAN, NICKNAMES, Measure
from evalret.core.treceval.ranking import (
    BOGUS_DOCNO,
    Ranking,
    RunColumns,
    Settings,
    form_ranking,
    graded_columns,
    ranking_of,
)


class MeasureError(ValueError):
    """A ``-m`` argument trec_eval would refuse (an unknown measure, bad parameters)."""


@dataclass(frozen=True)
class Selected:
    """A measure to compute, its parameters, and the names of the values it prints."""

    measure: Measure
    params: tuple[Any, ...]
    names: tuple[str, ...]


def _c_long(text: str) -> int:
    """C's atol: the leading integer, 0 when there is none."""
    text = text.lstrip(" \t\n\v\f\r")
    digits = ""
    for i, ch in enumerate(text):
        if (ch.isdigit() and ch.isascii()) or (i == 0 and ch in "+-"):
            digits += ch
        else:
            break
    try:
        return int(digits)
    except ValueError:
        return 0


def _c_float(text: str) -> float:
    """C's atof for the plain decimal forms a measure parameter takes."""
    text = text.lstrip(" \t\n\v\f\r")
    for end in range(len(text), 0, -1):
        try:
            return float(text[:end])
        except ValueError:
            continue
    return 0.0


def _parse_params(m: Measure, text: str) -> tuple[tuple[Any, ...], str]:
    """(parameters, printable suffix) of ``-m name.text`` for measure ``m``."""
    parts = text.split(",")
    if m.params == "cut_long":
        cuts = sorted(_c_long(p) for p in parts)
        if cuts[0] <= 0:
            raise MeasureError(f"{m.name}.{text}: a cutoff must be above 0")
        if len(set(cuts)) != len(cuts):
            raise MeasureError(f"{m.name}.{text}: a cutoff is given twice")
        return tuple(cuts), text
    if m.params == "cut_double":
        values = sorted(_c_float(p) for p in parts)
        if len(set(values)) != len(values):
            raise MeasureError(f"{m.name}.{text}: a cutoff is given twice")
        return tuple(values), text
    if m.params == "double":
        return tuple(_c_float(p) for p in parts), text
    if m.params == "pairs":
        pairs = []
        for p in parts:
            name, eq, value = p.partition("=")
            if not eq or "=" in value:
                raise MeasureError(f"{m.name}.{text}: parameters are name=value pairs")
            pairs.append((name, _c_float(value)))
        return tuple(pairs), text
    raise MeasureError(f"{m.name}.{text}: measure {m.name!r} takes no parameters")


def select_measures(specs: Sequence[str]) -> list[Selected]:
    """The measures ``-m`` arguments select (``official`` when none), in trec_eval's order: a
    nickname (``official``, ``all_trec``, ``set``) or a measure, ``name.params`` setting its
    parameters (the first given for a name counts). MeasureError for a name trec_eval's
    ``all_trec`` set does not hold, or parameters it would refuse."""
    marked: set[str] = set()
    given: dict[str, str] = {}
    for spec in specs or ["official"]:
        name, dot, text = spec.partition(".")
        if dot:
            given.setdefault(name, text)
        if name in NICKNAMES:
            marked.update(NICKNAMES[name])
        elif name in BY_NAME:
            marked.add(name)
        else:
            raise MeasureError(f"unknown measure {spec!r}")
    out = []
    for m in MEASURES:
        if m.name not in marked:
            continue
        params: tuple[Any, ...] = m.default
        suffix = ""
        if m.name in given:
            params, suffix = _parse_params(m, given[m.name])
        out.append(Selected(m, params, _names(m, params, suffix)))
    return out


def _names(m: Measure, params: tuple[Any, ...], suffix: str) -> tuple[str, ...]:
    if m.kind == "cuts":
        if m.params == "cut_long":
            return tuple(f"{m.name}_{k}" for k in params)
        return tuple(f"{m.name}_{x:3.2f}" for x in params)
    return (f"{m.name}_{suffix}" if suffix else m.name,)


def _number(value: float) -> str:
    if value - value == 0.0:  # finite
        return f"{value:6.4f}"
    if math.isnan(value):  # 0 / 0 on x86-64 is the negative NaN, which C prints as -nan
        return f"{'-nan':>6}"
    if math.isinf(value):
        return f"{'-inf' if value < 0 else 'inf':>6}"
    return f"{value:6.4f}"


def _line(name: str, qid: str, value: str) -> str:
    return f"{name:<22}\t{qid}\t{value}\n"


@dataclass
class _Totals:
    values: dict[str, float] = field(default_factory=dict)


def _query_values(sel: Selected, q: Any, settings: Settings, bogus: bool) -> list[Any]:
    """The values ``sel`` prints for one query; for a query missing from the run (-c), some
    zeroed after the fact, as trec_eval does."""
    m = sel.measure
    assert m.fn is not None
    value = m.fn(q, settings, list(sel.params) if m.params != "pairs" else sel.params)
    values = value if isinstance(value, list) else [value]
    if bogus:  # trec_eval zeroes these by their printed name (a name with parameters escapes)
        values = [
            ("" if name == "relstring" else 0.0) if _zeroed(name) else v
            for name, v in zip(sel.names, values, strict=True)
        ]
    return values


def _zeroed(name: str) -> bool:
    return name in ("num_ret", "utility", "relstring", "rbp_resid") or name.startswith("unj")


def trec_eval_text(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Sequence[tuple[str, float]]] | RunColumns,
    run_id: str,
    settings: Settings,
    specs: Sequence[str] = (),
) -> str:
    """What ``trec_eval [flags] -m specs...`` prints for ``qrels`` (qid -> docno -> grade) and
    ``run`` (qid -> (docno, score) lines, any order; or columns in trec_eval's order, as
    ``ranking.RunColumns`` says, looked up at once): every qrels query in qid byte order; one
    missing from the run is an error (MeasureError), or with ``-c`` scored as trec_eval scores
    it (a ranking of one unjudged document, its counts then zeroed)."""
    selected = select_measures(specs)
    out: list[str] = []
    totals = _Totals()
    evaluated = 0
    graded = None if isinstance(run, Mapping) else graded_columns(qrels, run, settings)
    scored = _scored(selected, settings)
    for qid in sorted(qrels, key=lambda s: s.encode("utf-8")):
        q, bogus = _query_ranking(qid, qrels, run, graded, settings)
        for sel, heads, show, sums in scored:
            values = _query_values(sel, q, settings, bogus)
            if sums is not None:
                for j, value in enumerate(values):
                    sums[j] += value
            if heads:
                tail = f"{qid}\t"
                out += [h + tail + show(v) + "\n" for h, v in zip(heads, values, strict=True)]
        evaluated += 1
    for sel, _, _, sums in scored:
        if sums is not None:
            totals.values.update(zip(sel.names, sums, strict=True))
    if evaluated == 0:
        raise MeasureError("no query has both results and relevance information")
    if settings.summary:
        out += _summary(selected, totals, qrels, run_id, settings, evaluated)
    return "".join(out)


_Scored = tuple[Selected, list[str], Callable[[Any], str], list[float] | None]


def _scored(selected: list[Selected], settings: Settings) -> list[_Scored]:
    """Each measure a query prints: the heads of its -q lines (none when not shown), how a
    value is shown, and its sums over the queries (none for relstring)."""
    out: list[_Scored] = []
    for sel in selected:
        kind = sel.measure.kind
        if kind in ("runid", "num_q"):
            continue
        heads = [f"{n:<22}\t" for n in sel.names] if settings.per_query and kind != "gm" else []
        sums = None if kind == "relstring" else [0.0] * len(sel.names)
        out.append((sel, heads, _shown(kind), sums))
    return out


def _query_ranking(
    qid: str,
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Sequence[tuple[str, float]]] | RunColumns,
    graded: Mapping[str, Any] | None,
    settings: Settings,
) -> tuple[Ranking, bool]:
    """Query ``qid``'s ranking, and whether the run lacks it (scored as ``-c`` says)."""
    if not any(is_judged(g) for g in qrels[qid].values()):
        raise MeasureError(
            f"query {qid!r}: every judgment of the qrels is negative, where trec_eval's answer "
            "is undefined (it fails, or reads the previous query's grade counts)"
        )
    bogus = qid not in (run if graded is None else graded)  # type: ignore[operator]
    if bogus and not settings.average_complete:
        raise MeasureError(f"query {qid!r} of the qrels has no line in the run (trec_eval -c)")
    if graded is None or bogus:
        lines = [(BOGUS_DOCNO, 1.0)] if bogus else run[qid]  # type: ignore[index]
        return form_ranking(qrels[qid], lines, settings), bogus
    return ranking_of(qrels[qid], graded[qid], settings), bogus


def _shown(kind: str) -> Callable[[Any], str]:
    """How a -q line shows a value of a measure of ``kind``."""
    if kind == "relstring":
        return lambda value: f"'{value}'"
    if kind == "long":
        return lambda value: str(math.trunc(value))
    return _number


def _summary(
    selected: list[Selected],
    totals: _Totals,
    qrels: Mapping[str, Mapping[str, int]],
    run_id: str,
    settings: Settings,
    evaluated: int,
) -> list[str]:
    """The ``all`` lines: means over the queries (over every qrels query with -c), sums for
    the counts, the geometric means of gm_map and gm_bpref."""
    n = len(qrels) if settings.average_complete else evaluated
    out = []
    for sel in selected:
        kind = sel.measure.kind
        if kind == "relstring":
            continue
        if kind == "runid":
            out.append(_line("runid", "all", run_id))
            continue
        if kind == "num_q":
            out.append(_line("num_q", "all", str(n)))
            continue
        for name in sel.names:
            total = totals.values.get(name, 0.0)
            if kind == "long":
                if name == "num_rel" and settings.average_complete:
                    total = sum(1 for judged in qrels.values() for g in judged.values() if g > 0)
                out.append(_line(name, "all", str(math.trunc(total))))
            elif kind == "gm":
                total += (n - evaluated) * math.log(MIN_GEO_MEAN)
                out.append(_line(name, "all", _number(math.exp(total / n))))
            else:
                out.append(_line(name, "all", _number(total / n)))
    return out
