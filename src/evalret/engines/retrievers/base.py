"""What a retriever is: the Retriever protocols, and the SearchJob every retriever is handed.

A retriever turns a golden set's queries into a ``SearchResult`` (core.ranking) under the tie rule,
from the documents' texts or vectors, or from the rankings of the retrievers before it (a fusion).
It describes its own parameters: they go into the run's fingerprint and report as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from evalret.core.filters import Eligibility, Filter
from evalret.core.ranking import SearchResult
from evalret.engines.search_cost import Latency

ProgressFactory = Callable[[str, int], Callable[[int], None]]  # (label, total) -> tick(n)
Probe = Callable[[np.ndarray], object]  # search these query rows (engines/search_cost.run_latency)


@dataclass(frozen=True)
class SearchJob:
    """One run's search: what to search, how deep, and the run's services (timer, progress,
    cache)."""

    doc_ids: Sequence[str]
    doc_texts: Sequence[str]  # as embedded and indexed (title + " " + text)
    query_texts: Sequence[str]
    doc_vectors: np.ndarray  # float32 [n_docs, dim] ([n_docs, 0] when has_vectors is False)
    query_vectors: np.ndarray  # float32 [n_queries, dim] ([n_queries, 0] likewise)
    rank: np.ndarray  # core.ranking.id_rank(doc_ids): the tie-break key
    depth: int  # ranks to return per query (never more than the corpus)
    earlier: Mapping[str, SearchResult]  # rankings of the retrievers that ran before
    progress: ProgressFactory
    timed: Callable[[str], AbstractContextManager[None]]  # timed("build_x"): a timing entry
    cache_dir: Path | None = None  # where a retriever may keep what it builds (None: nowhere)
    cache_warnings: list[str] | None = None  # where to say what could not be kept
    query_ids: Sequence[str] = ()  # the queries' ids, aligned with query_texts
    has_vectors: bool = True  # False: nothing was embedded (no enabled retriever needs vectors)
    # filtered search (core/filters.py): which documents each query may retrieve, and each
    # query's filter (None: unfiltered); None / () when no query has a filter
    eligibility: Eligibility | None = None
    filters: Sequence[Filter | None] = ()
    doc_metadata: Sequence[Mapping[str, Any] | None] = ()  # aligned with doc_ids, when filtered
    latency_repeats: int = 1  # how often a ``Timed`` retriever searches each timed query


@runtime_checkable
class Retriever(Protocol):
    """One index of a run, as the registry builds it from the config. What else it tells is
    declared by the smaller protocols below, asked with ``isinstance``: ``CorpusChecked``,
    ``FiltersChecked`` and ``ReadyChecked`` (before embedding), ``Costed``, ``Probed``,
    ``Timed`` and ``Repeated`` (after ``retrieve``), ``Staged`` (a rerank stage).
    ``BaseRetriever`` is a ``Retriever``, ``Costed`` and ``Probed``, with defaults."""

    name: str  # its key in the report's indexes and the run file name
    enabled: bool  # whether this run searches with it
    needs_vectors: bool  # whether the run must embed for it (none does: nothing is embedded)
    corpus_bound: bool  # False: it may rank documents the corpus lacks, past the corpus size
    approximate: bool  # an approximate search: the report measures it against exact search

    def params(self) -> dict[str, Any]:
        """Everything that decides its rankings: the report's ``params`` and the fingerprint."""
        ...

    def input_depth(self) -> int:
        """How deep the earlier rankings it reads must go (0: it reads none)."""
        ...

    def cache_notes(self) -> dict[str, str]:
        """What it says under the report's ``embedding.cache`` (whether it ran or not)."""
        ...

    def retrieve(self, job: SearchJob) -> SearchResult:
        """The top ``job.depth`` documents of every query under the tie rule."""
        ...


@runtime_checkable
class CorpusChecked(Retriever, Protocol):
    """A retriever that can tell, before anything is embedded, that the corpus does not suit
    it (a faiss index the corpus cannot train)."""

    def check_corpus(self, n_docs: int) -> None:
        """ConfigError when ``n_docs`` documents cannot make its index."""
        ...


@runtime_checkable
class FiltersChecked(Retriever, Protocol):
    """A retriever that can tell, before anything is embedded, that it cannot express a filter
    of the golden set (a store whose filter language lacks an operator)."""

    def check_filters(self, filters: Sequence[Filter]) -> None:
        """ConfigError naming the first filter it cannot search exactly."""
        ...


@runtime_checkable
class ReadyChecked(Retriever, Protocol):
    """A retriever that can tell, before a search's embedding, that what it searches is not
    there (a store's directory)."""

    def check_ready(self) -> None:
        """ConfigError naming the setting when what it searches is missing."""
        ...


@runtime_checkable
class Timed(Retriever, Protocol):
    """A retriever that times its own search inside ``retrieve`` (its index lives only there:
    a store's session), instead of handing a ``Probe`` out."""

    def latency(self) -> Latency | None:
        """After ``retrieve``: its single-query latency, as ``run_latency`` measures it."""
        ...


@runtime_checkable
class Repeated(Retriever, Protocol):
    """A retriever that searched its index several times (a store's ``stability.repeats``; in
    scratch mode each repeat a new build): the report's ANN section shows the spread of recall
    and of every metric's change over the repeats."""

    def repeat_rankings(self) -> list[SearchResult]:
        """After ``retrieve``: every repeat's ranking in order, the first the one ``retrieve``
        returned; empty when the index was searched once."""
        ...


@runtime_checkable
class Costed(Retriever, Protocol):
    """A retriever that tells what its index costs."""

    def index_cost(self) -> dict[str, float] | None:
        """After ``retrieve``: the searched index's ``index_bytes`` (serialized),
        ``bytes_per_vector`` and ``distances_per_query`` (vectors compared), for the report's
        ANN section and the gate's budgets; None when it has none to tell."""
        ...


@runtime_checkable
class Probed(Retriever, Protocol):
    """A retriever whose search can be timed (the report's latency)."""

    def probe(self) -> Probe | None:
        """After ``retrieve``: its search of the query rows given, as ``retrieve`` searched them
        but without filters, for the report's latency; None when it is not timed. Handed over
        once: the retriever keeps no reference to it (nor to the index it searches)."""
        ...


@runtime_checkable
class Staged(Retriever, Protocol):
    """A rerank stage: the report's ``rerank`` section (pipeline/rerank_report.py) sets it
    beside its first stage."""

    stage: tuple[str, int]  # (its first stage's index name, how many of its documents it reads)


@runtime_checkable
class StagedSettings(Protocol):
    """A typed index's settings that name a first stage (a rerank index's ``of``): its
    retriever is built, and so runs, after that index's."""

    of: str


class BaseRetriever:
    """Defaults for a retriever that reads no earlier ranking and keeps nothing in the cache: a
    ``Costed`` and ``Probed`` one that tells nothing until its ``retrieve`` sets ``cost`` and
    ``searcher``."""

    name = ""
    enabled = True
    needs_vectors = True
    corpus_bound = True
    approximate = False  # an approximate nearest-neighbour search: measured against exact

    def input_depth(self) -> int:
        return 0

    def cache_notes(self) -> dict[str, str]:
        return {}

    cost: dict[str, float] | None = None  # what index_cost tells, set by retrieve
    searcher: Probe | None = None  # what probe gives, set by retrieve

    def index_cost(self) -> dict[str, float] | None:
        return self.cost

    def probe(self) -> Probe | None:
        searcher, self.searcher = self.searcher, None
        return searcher
