"""trec_eval's run over a qrels and a run, and its text: the measures ``-m`` selects (with their
parameters), each qrels query scored in qid order, the per-query lines (``-q``) and the
``all`` lines, in trec_eval's measure order and number formats (``%-22s\\t%s\\t%6.4f``, counts as
integers). ``trec_eval_text`` is the whole output, byte for byte the one trec_eval 10 prints."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalret.core.relevance import is_judged
from evalret.core.treceval.measures import BY_NAME, MEASURES, MIN_GEO_MEAN, NICKNAMES, Measure
from evalret.core.treceval.ranking import BOGUS_DOCNO, Settings, form_ranking


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

    def add(self, name: str, value: float) -> None:
        self.values[name] = self.values.get(name, 0.0) + value


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
    run: Mapping[str, Sequence[tuple[str, float]]],
    run_id: str,
    settings: Settings,
    specs: Sequence[str] = (),
) -> str:
    """What ``trec_eval [flags] -m specs...`` prints for ``qrels`` (qid -> docno -> grade) and
    ``run`` (qid -> (docno, score) lines, any order): every qrels query in qid byte order; one
    missing from the run is an error (MeasureError), or with ``-c`` scored as trec_eval scores
    it (a ranking of one unjudged document, its counts then zeroed)."""
    selected = select_measures(specs)
    out: list[str] = []
    totals = _Totals()
    evaluated = 0
    for qid in sorted(qrels, key=lambda s: s.encode("utf-8")):
        if not any(is_judged(g) for g in qrels[qid].values()):
            raise MeasureError(
                f"query {qid!r}: every judgment of the qrels is negative, where trec_eval's answer "
                "is undefined (it fails, or reads the previous query's grade counts)"
            )
        bogus = qid not in run
        if bogus and not settings.average_complete:
            raise MeasureError(f"query {qid!r} of the qrels has no line in the run (trec_eval -c)")
        lines = [(BOGUS_DOCNO, 1.0)] if bogus else run[qid]
        q = form_ranking(qrels[qid], lines, settings)
        for sel in selected:
            if sel.measure.kind in ("runid", "num_q"):
                continue
            values = _query_values(sel, q, settings, bogus)
            for name, value in zip(sel.names, values, strict=True):
                if sel.measure.kind != "relstring":
                    totals.add(name, value)
                if settings.per_query and sel.measure.kind != "gm":
                    out.append(_line(name, qid, _shown(sel, value)))
        evaluated += 1
    if evaluated == 0:
        raise MeasureError("no query has both results and relevance information")
    if settings.summary:
        out += _summary(selected, totals, qrels, run_id, settings, evaluated)
    return "".join(out)


def _shown(sel: Selected, value: Any) -> str:
    if sel.measure.kind == "relstring":
        return f"'{value}'"
    if sel.measure.kind == "long":
        return str(math.trunc(value))
    return _number(value)


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
