"""A vector database as an index (``indexes.<name>: {type: store, driver: ...}``): searched through
its driver (engines/stores/), measured against exact search like every approximate index.

What the driver does is in engines/stores/driver.py, what every store shares (id mapping,
folding, widening, the tie rule, counts) in engines/stores/search.py. This retriever adds the
run's side: the driver and every filter of the golden set are checked before anything is
embedded (``check_filters``: an operator the store cannot express is a config error); scratch
mode hands the store evalret's own document vectors and metadata; queries are searched one filter
group at a time (engines/filtered.py's ``by_filter``), each under the store's translation of its
filter; the scores, in the store's order, pass the score-direction check (a ``metric`` that is not
the collection's turns similarities into distances: refused, exit 2, naming the fix); the
single-query latency is timed while the session is open (``Timed``); and with
``stability.repeats`` the search (in scratch mode the load and build too) runs that many times,
the first ranking being the index's and every repeat's kept for the report's spread.

The index's params (its fingerprint) are its settings, the store's own description (version,
index as the store reports it, row count: a rebuilt index is a visible change) and the counts of
what could not be ranked as stored, each only when nonzero.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from evalret.core.filters import Filter, canonical
from evalret.core.ranking import SearchResult, empty_result
from evalret.data.config import Config, StoreIndexConfig
from evalret.engines.filtered import by_filter
from evalret.engines.ranking_checks import check_score_direction
from evalret.engines.retrievers.base import BaseRetriever, SearchJob
from evalret.engines.search_cost import Latency, run_latency
from evalret.engines.stores import ScratchRows, StoreDriver, StoreSession, driver_of
from evalret.engines.stores.search import IdMap, Query, StoreCounts, search_store


class StoreRetriever(BaseRetriever):
    """An index of the run searched in a vector database through its driver."""

    approximate = True

    def __init__(
        self,
        name: str,
        settings: StoreIndexConfig,
        config: Config,
        driver: StoreDriver | None = None,
    ) -> None:
        self.name = name
        self.settings = settings
        self.config = config
        self.enabled = settings.enabled
        self.driver = driver or driver_of(settings.driver)  # ``driver``: one set up otherwise
        if self.enabled:  # before anything is embedded: a missing extra fails fast
            self.driver.check(settings, name)
        self.description: dict[str, Any] = {}
        self.counts = StoreCounts()
        self.filtered = False
        self.timed: Latency | None = None
        self.swept = 0  # scratch leftovers of killed runs the driver dropped (stores/common.py)
        self.repeats: list[SearchResult] = []  # every repeat's ranking (the first is the index's)

    def check_ready(self) -> None:
        """The store is there (before a search's embedding; not for `evalret embed`)."""
        self.driver.check_store(self.settings, self.name)

    def check_filters(self, filters: Sequence[Filter]) -> None:
        """Every distinct filter checked by the driver, before anything is embedded."""
        seen: set[str] = set()
        for f in filters:
            key = repr(canonical(f))
            if key not in seen:
                seen.add(key)
                self.driver.check_filter(f, self.name)

    def params(self) -> dict[str, Any]:
        """The settings that decide its rankings (no secret), the store's description and the
        nonzero counts."""
        s = self.settings
        out: dict[str, Any] = {
            "type": f"store.{s.driver}",
            "mode": s.mode,
            "metric": s.metric,
            "search": dict(s.search),
            "chunks": s.chunks,
        }
        if s.mode == "scratch":
            out["build"] = dict(s.build)
        else:
            out |= {"collection": s.collection, "id_field": s.id_field}
            out["vector_field"] = s.vector_field
        if self.filtered and s.metadata_field is not None:
            out["metadata_field"] = s.metadata_field
        if s.stability.repeats > 1:
            out["repeats"] = s.stability.repeats
        if self.description:
            out["store"] = self.description
        return out | self.counts.params()

    def cache_notes(self) -> dict[str, str]:
        """One line on what the index did."""
        key = f"store.{self.name}"
        if not self.description:
            return {key: "not run"}
        what = (
            "scratch collection loaded, searched and dropped"
            if self.settings.mode == "scratch"
            else f"collection {self.settings.collection} searched"
        )
        if self.counts.unknown_ids:
            what += f"; {len(self.counts.unknown_ids)} ids unknown to the corpus skipped"
        if self.swept:
            what += f"; {self.swept} scratch collections of killed runs dropped"
        return {key: what}

    def latency(self) -> Latency | None:
        return self.timed

    def repeat_rankings(self) -> list[SearchResult]:
        """Every repeat's ranking under ``stability.repeats`` (empty when searched once)."""
        return list(self.repeats) if len(self.repeats) > 1 else []

    def retrieve(self, job: SearchJob) -> SearchResult:
        """The top ``job.depth`` documents of every query, searched in the store (every repeat
        of ``stability.repeats``; the first is returned)."""
        self.check_ready()  # a local store opened where none is would be created
        if len(job.query_vectors) == 0:
            return empty_result(0, job.depth)
        self.filtered = job.eligibility is not None
        self.counts = StoreCounts()
        self.swept = 0
        self.repeats = [self._once(job, n) for n in range(self.settings.stability.repeats)]
        check_score_direction(
            f"index {self.name} (driver {self.settings.driver})",
            self.counts.returned,
            fix=f"fix: set indexes.{self.name}.metric to the metric the collection was built "
            f"with (now {self.settings.metric}: the store's values read as "
            f"{self.settings.metric} similarities fall as they get nearer)",
        )
        self.counts.returned = []
        return self.repeats[0]

    def _scratch_rows(self, job: SearchJob, repeat: int) -> ScratchRows | None:
        if self.settings.mode != "scratch":
            return None
        metadata = job.doc_metadata if self.filtered else ()
        return ScratchRows(list(job.doc_ids), job.doc_vectors, metadata, seed=repeat)

    def _once(self, job: SearchJob, repeat: int) -> SearchResult:
        """One repeat: open (in scratch mode load and build), describe, search, time."""
        label = f"{self.name} ({self.settings.driver})"
        counts = self.counts if repeat == 0 else StoreCounts()
        with contextlib.ExitStack() as stack:
            with job.timed(f"open_{self.name}" if repeat == 0 else f"open_{self.name}_{repeat}"):
                scratch = self._scratch_rows(job, repeat)
                tick = job.progress(f"Loading {label}", len(job.doc_ids) if scratch else 0)
                session = stack.enter_context(
                    self.driver.open(self.settings, self.name, scratch, tick)
                )
            self.swept += getattr(session, "swept", 0)
            if repeat == 0:
                self.description = session.describe()
            with job.timed(
                f"search_{self.name}" if repeat == 0 else f"search_{self.name}_{repeat}"
            ):
                tick = job.progress(f"Searching {label}", len(job.query_vectors))
                result = self._search(session, job, counts, tick)
            if repeat == 0:
                self.timed = self._time(session, job)
        return result

    def _search(
        self, session: StoreSession, job: SearchJob, counts: StoreCounts, tick: Any
    ) -> SearchResult:
        """Every query, one filter group at a time, under the store's translation."""
        ids = IdMap(job.doc_ids)
        n_docs = len(job.doc_ids)
        qids = list(job.query_ids) or [str(i) for i in range(len(job.query_vectors))]
        metric = self.settings.metric

        def group(rows: np.ndarray, mask: np.ndarray | None) -> SearchResult:
            f = job.filters[int(rows[0])] if job.filters else None
            plan = self._plan([qids[int(r)] for r in rows], job.depth, n_docs, mask)
            where = None if f is None else session.where(f)
            return search_store(
                session, self.driver, metric, job.query_vectors[rows], plan, where,
                job.depth, job.rank, ids, counts, tick,
            )  # fmt: skip

        everything = np.arange(len(job.query_vectors))
        if job.eligibility is None:
            return group(everything, None)
        return by_filter(len(job.query_vectors), job.depth, job.eligibility, group)

    def _plan(
        self, qids: Sequence[str], depth: int, n_docs: int, mask: np.ndarray | None
    ) -> list[Query]:
        """The queries of one filter group: each wants the depth, or the documents its filter
        keeps when fewer, and its documents are checked against the filter (``mask``)."""
        wanted = min(depth, int(mask.sum()) if mask is not None else n_docs)
        return [Query(qid, wanted, mask) for qid in qids]

    def _time(self, session: StoreSession, job: SearchJob) -> Latency | None:
        """Single-query latency of the open session, unfiltered, as the report measures every
        index's."""
        vectors = np.ascontiguousarray(job.query_vectors, dtype=np.float32)
        limit = min(job.depth, session.limit)
        return run_latency(
            lambda rows: session.search(vectors[rows], limit, None),
            len(job.query_vectors),
            job.latency_repeats,
        )
