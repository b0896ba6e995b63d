"""trec_eval's run over a qrels and a run, and its text: the measures ``-m`` selects (with their
parameters), each qrels query scored in qid order, the per-query lines (``-q``) and the
``all`` lines, in trec_eval's measure order and number formats (``%-22s\\t%s\\t%6.4f``, counts as
integers). ``trec_eval_text`` is the whole output, byte for byte the one trec_eval 10 prints."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

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
    plan = _Plan.of(selected, settings)
    out: list[str] = []
    rows: list[list[Any]] = []
    graded = None if isinstance(run, Mapping) else graded_columns(qrels, run, settings)
    for qid in sorted(qrels, key=lambda s: s.encode("utf-8")):
        q, bogus = _query_ranking(qid, qrels, run, graded, settings)
        row: list[Any] = []
        for fn, params, many in plan.calls:
            if many:
                row += fn(q, settings, params)
            else:
                row.append(fn(q, settings, params))
        if bogus:  # trec_eval zeroes these by their printed name (a name with parameters escapes)
            for i, value in plan.zeroes:
                row[i] = value
        rows.append(row)
        if plan.shown is not None:
            out.append(plan.lines(qid, row))
    if not rows:
        raise MeasureError("no query has both results and relevance information")
    if settings.summary:
        totals = _Totals(dict(zip(plan.summed_names, plan.sums(rows), strict=True)))
        out += _summary(selected, totals, qrels, run_id, settings, len(rows))
    return "".join(out)


@dataclass(frozen=True)
class _Plan:
    """How each query is scored and printed: the measure calls (function, parameters, whether
    it gives a list) whose values, in order, make a query's row; the row's entries a query
    missing from the run (-c) zeroes; the -q lines' template (one ``%``-format for the whole
    query, each line's qid then its value) and the entries it shows (none without -q); and the
    entries summed over the queries (all but relstring), with their names."""

    calls: list[tuple[Callable[..., Any], Any, bool]]
    zeroes: list[tuple[int, Any]]
    template: str
    shown: Callable[[list[Any]], Any] | None
    n_shown: int
    summed: Callable[[list[Any]], Any]
    summed_names: list[str]

    @classmethod
    def of(cls, selected: list[Selected], settings: Settings) -> _Plan:
        calls: list[tuple[Callable[..., Any], Any, bool]] = []
        zeroes: list[tuple[int, Any]] = []
        template: list[str] = []
        shown: list[int] = []
        summed: list[int] = []
        names: list[str] = []
        for sel in selected:
            m = sel.measure
            if m.kind in ("runid", "num_q"):
                continue
            assert m.fn is not None
            calls.append(
                (m.fn, list(sel.params) if m.params != "pairs" else sel.params, m.kind == "cuts")
            )
            for name in sel.names:
                i = len(names)
                names.append(name)
                if _zeroed(name):
                    zeroes.append((i, "" if name == "relstring" else 0.0))
                if m.kind != "relstring":
                    summed.append(i)
                if settings.per_query and m.kind != "gm":
                    shown.append(i)
                    head = f"{name:<22}\t".replace("%", "%%")
                    template.append(f"{head}%s\t{_FORMATS.get(m.kind, '%6.4f')}\n")
        return cls(
            calls,
            zeroes,
            "".join(template),
            _getter(shown) if shown else None,
            len(shown),
            _getter(summed),
            [names[i] for i in summed],
        )

    def lines(self, qid: str, row: list[Any]) -> str:
        """The -q lines of one query, its values as trec_eval prints them (NaN as ``-nan``,
        what 0 / 0 gives on x86-64)."""
        assert self.shown is not None
        args = [qid] * (2 * self.n_shown)
        args[1::2] = self.shown(row)
        text = self.template % tuple(args)
        return text.replace("\t   nan\n", "\t  -nan\n") if "nan" in text else text

    def sums(self, rows: list[list[Any]]) -> list[float]:
        """Each summed entry's sum over the queries, added in query order from 0.0, as
        trec_eval adds them (``accumulate`` adds one row at a time)."""
        values = np.zeros((len(rows) + 1, len(self.summed_names)), dtype=np.float64)
        values[1:] = [self.summed(row) for row in rows]
        total: list[float] = np.add.accumulate(values, axis=0)[-1].tolist()
        return total


_FORMATS = {"relstring": "'%s'", "long": "%d"}


def _getter(indices: list[int]) -> Callable[[list[Any]], tuple[Any, ...]]:
    """The entries of a row at ``indices``, as a tuple."""
    if len(indices) == 1:
        return lambda row: (row[indices[0]],)
    return operator.itemgetter(*indices)


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
