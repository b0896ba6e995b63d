"""A Python function as an index (``indexes.<name>: {type: python, callable: "pkg.module:fn"}``).

The function is called once per run::

    fn(query_ids: list[str], query_texts: list[str], query_vectors: numpy.ndarray | None,
       depth: int) -> Sequence[Sequence[tuple[str, float]]]

A function that also takes a ``filters`` keyword (a parameter of that name, or ``**kwargs``) is
called with ``filters=`` one entry per query when the golden set filters its queries: the
query's filter as a JSON object in the operator form (``core/filters.py``, written out: every
condition as ``{key: {op: operand}}``, numbers as floats), or None for a query without one. A
function without it is called as before. Either way, evalret then drops every corpus document a
query's filter excludes from that query's answer (a document the corpus lacks is kept), so only
eligible documents count.

``query_vectors`` is the float32 [n_queries, dim] matrix of the configured model when the run
embeds (a dense index is enabled), else None. It returns one entry per query, in the order of
``query_ids``: that query's (document id, score) pairs, any number, in any order. evalret orders
them by the tie rule (score descending in float64, then document id descending) and keeps the
first ``depth``; a document id the corpus does not have is kept, unjudged. A document twice for
one query, or another shape is the function's failure. A score is taken as it is, never
converted: an int or a float (numpy's included), finite and within float range; a string
(``"1.5"``), a bool, None or any other object is refused naming the callable and the value.

The import and the call run inside evalret's plug-in guard (``engines/plugins.py``), and the
answer (a generator, lazy rows or pairs) is materialised inside it too: an exception is a failure
of that callable (exit 3, its traceback under EVALRET_DEBUG=1), and so is a ``sys.exit`` with
any code; what the function prints goes to stderr marked ``[plugin pkg.module:fn]``. A
``callable`` that cannot be imported is a config error (exit 2).

Before ranking, the answer passes the checks every external ranking passes
(``engines/ranking_checks.py``): scores that rise along the returned lists are refused as
distances (exit 2, ``check_score_direction``: returning pairs best-first is what lets evalret
check; any other order is accepted), and rankings shorter than the depth while the corpus had more
eligible documents, and documents returned outside a query's filter (dropped), are counted into
the index's params (``RankingCounts``), which the terminal and report.md show as notes.

Setup and close hooks: ``setup: "pkg.module:fn"`` is called once, without arguments, before the
search, and what it returns (a client, a connection) is passed to the search function as the
keyword ``state=``; ``close: "pkg.module:fn"`` is called with that value (None without a setup)
after the search, also when the search failed. Both run inside the plug-in guard (a failure is exit
3 naming that callable; when the search failed or was refused, the search's failure is reported,
the close's appended; an interrupted run stays interrupted). The setup is timed on its own
(``setup_<name>`` in the report's timings), outside the search's time.

An index declared ``approximate: true`` also gets the single-query latency every approximate
index has: after the search and before the close hook, the function is called with one query at
a time (the first ``LATENCY_QUERIES``, without filters), timed as engines/search_cost.py times
every index.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from evalret.core.filters import canonical
from evalret.core.ranking import SearchResult
from evalret.data.config import Config, PythonIndexConfig
from evalret.engines.plugins import import_callable, materialised, plugin_call
from evalret.engines.ranking_checks import RankingCounts, check_score_direction
from evalret.engines.retrievers.base import BaseRetriever, SearchJob
from evalret.engines.retrievers.external import Alignment, to_search_result
from evalret.engines.search_cost import Latency, run_latency
from evalret.errors import ConfigError, InputError, PluginError, Problem


def load_callable(name: str, spec: str, code_dir: Path | None = None) -> Callable[..., Any]:
    """The function ``spec`` ("pkg.module:attr.path") names, its module looked for first in
    ``code_dir`` (``plugins.import_callable``); ConfigError at ``indexes.<name>.callable`` when
    it cannot be imported or is not callable."""
    return import_callable(f"indexes.{name}.callable", spec, code_dir)


def _score(spec: str, qid: str, doc: str, score: Any) -> float:
    """A pair's score as a float: an int or a float (numpy's too), finite; anything else (a
    string, a bool, None) is refused naming the value, never converted."""
    number = isinstance(score, (int, float, np.integer, np.floating))
    if not number or isinstance(score, (bool, np.bool_)):
        raise PluginError(
            f"{spec} returned score {score!r} ({type(score).__name__}) for document {doc!r} of "
            f"query {qid!r}: a score is an int or a float"
        )
    try:
        value = float(score)
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        raise PluginError(
            f"{spec} returned score {score!r} for document {doc!r} of query {qid!r}: a score is "
            "a finite float"
        )
    return value


@dataclass
class _Query:
    """One query's answer: its pairs in tie-rule order (the first ``depth``, without the
    documents its filter excludes), its scores as returned, and how many it dropped."""

    ranked: list[tuple[str, float]]
    returned: list[float]
    outside: int


def _ranked_query(
    spec: str, qid: str, pairs: Any, depth: int, excluded: Callable[[str], bool] | None = None
) -> _Query:
    """One query's (document id, score) pairs checked and ranked (see ``_Query``)."""
    seen: set[str] = set()
    out: list[tuple[float, str]] = []
    returned: list[float] = []
    for pair in pairs:
        doc, score = pair
        if not isinstance(doc, str) or not doc or doc.split() != [doc]:
            raise PluginError(f"{spec} returned document id {doc!r} for query {qid!r}")
        value = _score(spec, qid, doc, score)
        if doc in seen:
            raise PluginError(f"{spec} returned document {doc!r} twice for query {qid!r}")
        seen.add(doc)
        returned.append(value)
        if excluded is None or not excluded(doc):
            out.append((value, doc))
    out.sort(reverse=True)
    ranked = [(doc, value) for value, doc in out[:depth]]
    return _Query(ranked, returned, len(returned) - len(out))


def _answer(
    function: Callable[..., Any], job: SearchJob, vectors: Any, extra: dict[str, Any]
) -> list[Any]:
    """The function's answer with every lazy part run: rows and pairs listed (a generator
    raising half-way raises here, inside the caller's guard); ``extra``: keywords it is
    called with besides ``filters`` (``state``)."""
    extra = dict(extra)
    if job.filters and takes_filters(function):
        extra["filters"] = [None if f is None else canonical(f) for f in job.filters]
    answer = function(list(job.query_ids), list(job.query_texts), vectors, job.depth, **extra)
    rows = [materialised(row) for row in answer]
    return [[materialised(pair) for pair in row] if isinstance(row, list) else row for row in rows]


def takes_filters(function: Callable[..., Any]) -> bool:
    """Whether ``function`` takes a ``filters`` keyword (by name, or through ``**kwargs``)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # no signature to read (a builtin): called as before
        return False
    return any(
        p.kind is p.VAR_KEYWORD
        or (p.name == "filters" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
        for p in parameters
    )


def takes_state(function: Callable[..., Any]) -> bool:
    """Whether ``function`` takes a ``state`` keyword (by name, or through ``**kwargs``)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # no signature to read: assumed to take it
        return True
    return any(
        p.kind is p.VAR_KEYWORD
        or (p.name == "state" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
        for p in parameters
    )


def _eligible_counts(job: SearchJob) -> Callable[[int], int]:
    """Per query position, how many corpus documents it may retrieve."""
    eligible = job.eligibility
    n_docs = len(job.doc_ids)

    def of(qi: int) -> int:
        mask = None if eligible is None else eligible.mask(qi)
        return n_docs if mask is None else int(np.count_nonzero(mask))

    return of


def _exclusions(job: SearchJob) -> Callable[[int], Callable[[str], bool] | None]:
    """Per query position, what its filter excludes (a corpus document id test), or None."""
    eligible = job.eligibility
    if eligible is None:
        return lambda _qi: None
    index = {d: i for i, d in enumerate(job.doc_ids)}

    def of(qi: int) -> Callable[[str], bool] | None:
        mask = eligible.mask(qi)
        if mask is None:
            return None
        return lambda doc: doc in index and not mask[index[doc]]

    return of


class PythonRetriever(BaseRetriever):
    """Calls the configured function once with every query (see the module docstring)."""

    corpus_bound = False  # its documents may be unknown to the corpus: rankings go past it
    needs_vectors = False  # it gets the vectors when the run embeds anyway

    def __init__(self, name: str, settings: PythonIndexConfig, config: Config) -> None:
        self.name = name
        self.settings = settings
        self.enabled = settings.enabled
        self.approximate = settings.approximate  # declared: then measured against exact search
        code_dir = config.code_dir  # where the config file is: its modules import from there
        self.function = (
            load_callable(name, settings.callable, code_dir) if settings.enabled else None
        )
        self.setup: Callable[..., Any] | None = None
        self.close: Callable[..., Any] | None = None
        if settings.enabled and settings.setup is not None:
            self.setup = import_callable(f"indexes.{name}.setup", settings.setup, code_dir)
            if self.function is not None and not takes_state(self.function):
                raise ConfigError(
                    f"indexes.{name}.setup: {settings.callable!r} takes no 'state' keyword, "
                    "which is how it is handed what the setup returns"
                )
        if settings.enabled and settings.close is not None:
            self.close = import_callable(f"indexes.{name}.close", settings.close, code_dir)
        self.alignment: Alignment | None = None
        self.counts = RankingCounts()
        self.filters_to: str | None = None  # who applied the filters, once searched
        self.timed: Latency | None = None  # an approximate one's latency, once searched

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "python", "callable": self.settings.callable}
        for hook in ("setup", "close"):  # only when named: fingerprints stay
            if getattr(self.settings, hook) is not None:
                out[hook] = getattr(self.settings, hook)
        if self.filters_to is not None:  # only with filtered queries: fingerprints stay
            out["filters"] = self.filters_to
        if self.alignment is not None:
            out.update(self.alignment.params())
        out.update(self.counts.params())
        return out

    def _call(self, job: SearchJob, extra: dict[str, Any]) -> Sequence[Any]:
        """The function's answer for every query, checked to have one entry per query."""
        spec = self.settings.callable
        assert self.function is not None
        vectors = None
        if job.has_vectors:  # read-only: the function cannot change what other indexes get
            vectors = job.query_vectors.view()
            vectors.flags.writeable = False
        with plugin_call(spec):
            rows = _answer(self.function, job, vectors, extra)
        if len(rows) != len(job.query_ids):
            raise PluginError(
                f"{spec} returned {len(rows)} rankings for {len(job.query_ids)} queries"
            )
        return rows

    def retrieve(self, job: SearchJob) -> SearchResult:
        """The search between the setup and the close hooks, when named (module docstring)."""
        extra: dict[str, Any] = {}
        if self.setup is not None:
            with job.timed(f"setup_{self.name}"), plugin_call(str(self.settings.setup)):
                extra["state"] = self.setup()
        try:
            with job.timed(f"search_{self.name}"):
                result = self._ranked(job, extra)
        except PluginError as e:
            try:
                self._close(extra.get("state"))
            except PluginError as closing:
                raise PluginError(f"{e.message}; then {closing.message}") from e
            raise
        except BaseException as e:  # a refusal (exit 2), Ctrl-C, SIGTERM: they go on as they are
            try:
                self._close(extra.get("state"))
            except PluginError as closing:
                if isinstance(e, InputError):
                    e.problems.append(Problem(f"then {closing.message}"))
            raise
        try:
            if self.approximate:  # timed between the search and the close: the state is open
                with job.timed(f"latency_{self.name}"):
                    self.timed = self._time(job, extra)
        finally:
            self._close(extra.get("state"))
        return result

    def latency(self) -> Latency | None:
        return self.timed

    def _time(self, job: SearchJob, extra: dict[str, Any]) -> Latency | None:
        """Single-query latency of the function (an approximate index's figure, as every
        approximate index has it): called with one query at a time, without filters, and its
        answer materialised, as the search called it (``job.latency_repeats`` calls each)."""

        def one(rows: np.ndarray) -> object:
            picked = [int(r) for r in rows]
            sub = replace(
                job,
                query_ids=[job.query_ids[r] for r in picked],
                query_texts=[job.query_texts[r] for r in picked],
                query_vectors=job.query_vectors[picked],
                eligibility=None,
                filters=(),
            )
            return self._call(sub, extra)

        return run_latency(one, len(job.query_ids), job.latency_repeats)

    def _close(self, state: Any) -> None:
        """The close hook, when named, called with what the setup returned."""
        if self.close is not None:
            with plugin_call(str(self.settings.close)):
                self.close(state)

    def _ranked(self, job: SearchJob, extra: dict[str, Any]) -> SearchResult:
        """The function's answer checked, counted and ranked (module docstring)."""
        spec = self.settings.callable
        rows = self._call(job, extra)
        if job.eligibility is not None:
            passed = self.function is not None and takes_filters(self.function)
            self.filters_to = "callable, then evalret" if passed else "evalret"
        excluded = _exclusions(job)
        eligible = _eligible_counts(job)
        answers: list[_Query] = []
        for qi, (qid, pairs) in enumerate(zip(job.query_ids, rows, strict=True)):
            try:
                answers.append(_ranked_query(spec, qid, pairs, job.depth, excluded(qi)))
            except (TypeError, ValueError) as e:
                raise PluginError(
                    f"{spec} returned an unusable ranking for query {qid!r}: {e} (expected "
                    "(document id, score) pairs)"
                ) from e
        check_score_direction(f"{spec} (indexes.{self.name})", (a.returned for a in answers))
        self.counts = RankingCounts()
        for qi, (qid, a) in enumerate(zip(job.query_ids, answers, strict=True)):
            self.counts.add(qid, len(a.ranked), min(job.depth, eligible(qi)), a.outside)
        ranked = {qid: a.ranked for qid, a in zip(job.query_ids, answers, strict=True)}
        result, self.alignment = to_search_result(ranked, job.query_ids, job.doc_ids, job.depth)
        return result
