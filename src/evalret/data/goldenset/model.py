"""The golden set as read (``GoldenSet``): its queries, corpus, judgments and provenance, its
views (evaluated, scored, a subset, under gate.labels) and fingerprints; what counts as a scored
query. The formats and rules: evalret.data.goldenset."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from evalret.core.filters import (
    Eligibility,
    Filter,
    MetadataColumns,
    Scalar,
    canonical,
    eligibility,
)
from evalret.core.provenance import (
    IMPORT,
    has_llm_labels,
    human_view,
    is_llm,
)
from evalret.core.relevance import DEFAULT_RELEVANCE_LEVEL, is_judged, is_relevant
from evalret.data.config import (
    Labels,
    SlicesConfig,
    WithoutRelevant,
    configured_slices,
)
from evalret.errors import GoldenSetError, Problem

if TYPE_CHECKING:
    from evalret.core.slices import Slice


Format = Literal["native", "beir", "trec"]


@dataclass(frozen=True)
class GoldenSet:
    """A loaded golden set. Documents and queries keep their file order."""

    source: str
    format: Format
    doc_ids: list[str]
    doc_texts: list[str]  # what is embedded: (title + " " + text).strip()
    query_ids: list[str]  # the queries to evaluate
    query_texts: list[str]
    # query id -> {doc id: grade}; a grade below relevance_level is non-relevant (0: judged; a
    # negative grade: pooled but not judged, as in trec_eval: core.relevance.is_judged)
    qrels: dict[str, dict[str, int]]
    tags: dict[str, tuple[str, ...]] = field(default_factory=dict)
    frequency: dict[str, int] = field(default_factory=dict)
    relevance_level: int = DEFAULT_RELEVANCE_LEVEL  # trec_eval's -l (core.relevance.is_relevant)
    warnings: tuple[Problem, ...] = ()  # the readers' warnings (file:line)
    # provenance (core/provenance.py): query id -> {doc id: source} of the grades in qrels (a pair
    # without an entry: "import"), and every grade an LLM judge gave, human-graded pairs included
    sources: dict[str, dict[str, str]] = field(default_factory=dict)
    llm_qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    # the source (llm:<model>@<hash>) of each grade in llm_qrels, where the files record it
    llm_sources: dict[str, dict[str, str]] = field(default_factory=dict)
    # filtered search (core/filters.py): document id -> its filterable metadata, and query id ->
    # its filter (qrels already hold only the documents a query's filter keeps)
    doc_metadata: dict[str, dict[str, Scalar]] = field(default_factory=dict)
    filters: dict[str, Filter] = field(default_factory=dict)

    @cached_property
    def doc_index(self) -> dict[str, int]:
        return {d: i for i, d in enumerate(self.doc_ids)}

    def is_judged(self, query_id: str, doc_id: str) -> bool:
        """Whether the pair carries a judgment: a negative grade is trec_eval's "pooled but not
        judged" (core.relevance.is_judged), a pair without a grade is unjudged."""
        return is_judged(self.qrels.get(query_id, {}).get(doc_id, -1))

    def n_relevant(self, query_id: str) -> int:
        """Judged documents of the query with grade >= the relevance level."""
        return relevant_count(self.qrels.get(query_id, {}), self.relevance_level)

    @property
    def queries_without_relevant(self) -> list[str]:
        return [q for q in self.query_ids if self.n_relevant(q) == 0]

    def evaluated(self) -> GoldenSet:
        """The queries with at least one relevant document: the ones metrics are averaged over."""
        return self.subset(
            scored_query_ids(self.query_ids, self.qrels, self.relevance_level, "exclude")
        )

    def scored(self, queries_without_relevant: WithoutRelevant) -> GoldenSet:
        """The queries a run scores: those with a relevant document under ``exclude``, every
        judged query under ``zero``. GoldenSetError when none is left (nothing to gate on)."""
        ids = scored_query_ids(
            self.query_ids, self.qrels, self.relevance_level, queries_without_relevant
        )
        if not ids:
            raise GoldenSetError(
                nothing_to_evaluate(self.source, len(self.query_ids), self.relevance_level)
            )
        return self if queries_without_relevant == "zero" else self.subset(ids)

    def slices(self, cfg: SlicesConfig) -> list[Slice]:
        """This set's slices under the config's ``slices`` settings."""
        return configured_slices(
            self.query_ids,
            self.query_texts,
            [self.tags.get(q, ()) for q in self.query_ids],
            [self.frequency.get(q) for q in self.query_ids],
            cfg,
        )

    def subset(self, query_ids: list[str]) -> GoldenSet:
        """The same golden set restricted to ``query_ids`` (in that order)."""
        text = dict(zip(self.query_ids, self.query_texts, strict=True))
        return GoldenSet(
            source=self.source,
            format=self.format,
            doc_ids=self.doc_ids,
            doc_texts=self.doc_texts,
            query_ids=list(query_ids),
            query_texts=[text[q] for q in query_ids],
            qrels={q: self.qrels.get(q, {}) for q in query_ids},
            tags={q: self.tags[q] for q in query_ids if q in self.tags},
            frequency={q: self.frequency[q] for q in query_ids if q in self.frequency},
            relevance_level=self.relevance_level,
            warnings=self.warnings,
            sources={q: self.sources[q] for q in query_ids if q in self.sources},
            llm_qrels={q: self.llm_qrels[q] for q in query_ids if q in self.llm_qrels},
            llm_sources={q: self.llm_sources[q] for q in query_ids if q in self.llm_sources},
            doc_metadata=self.doc_metadata,
            filters={q: self.filters[q] for q in query_ids if q in self.filters},
        )

    @cached_property
    def _eligible_masks(self) -> dict[str, np.ndarray]:
        found = self.eligibility()
        if found is None:
            return {}
        masks = ((q, found.mask(qi)) for qi, q in enumerate(self.query_ids))
        return {q: m for q, m in masks if m is not None}

    def is_eligible(self, query_id: str, doc_id: str) -> bool:
        """Whether the query's filter keeps the document: always without a filter, and for a
        document the corpus lacks (it is unjudged anyway)."""
        mask = self._eligible_masks.get(query_id)
        i = self.doc_index.get(doc_id)
        return mask is None or i is None or bool(mask[i])

    def eligibility(self) -> Eligibility | None:
        """Which documents each query may retrieve (None when no query has a filter), over
        ``doc_ids`` as they are (a sample's too)."""
        if not self.filters:
            return None
        columns = MetadataColumns([self.doc_metadata.get(d) for d in self.doc_ids])
        return eligibility([self.filters.get(q) for q in self.query_ids], columns)

    def with_labels(self, labels: Labels) -> GoldenSet:
        """The set as a run under ``gate.labels`` sees it: itself for ``all``; for ``human``, its
        judgments without an LLM judge's grades (core.provenance.human_view), queries left with
        no judgment dropped (as a query that judges nothing is). ``llm_qrels`` stays whole."""
        if labels == "all" or not has_llm_labels(self.sources, self.llm_qrels):
            return self
        qrels = human_view(self.qrels, self.sources)
        kept = self.subset([q for q in self.query_ids if q in qrels])
        return replace(
            kept,
            qrels={q: qrels[q] for q in kept.query_ids},
            sources={
                q: {d: s for d, s in m.items() if not is_llm(s)} for q, m in kept.sources.items()
            },
        )

    def qrel_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Judgments of the evaluated queries as (query index, document index, grade) arrays."""
        sizes: list[int] = []
        docs: list[str] = []
        grades: list[int] = []
        for q in self.query_ids:
            judged = self.qrels.get(q, {})
            sizes.append(len(judged))
            docs.extend(judged)
            grades.extend(judged.values())
        return (
            np.repeat(np.arange(len(sizes), dtype=np.int64), sizes),
            np.fromiter(map(self.doc_index.__getitem__, docs), np.int64, len(docs)),
            np.array(grades, dtype=np.int64),
        )

    @cached_property
    def corpus_fingerprint(self) -> str:
        """sha256 of the documents (ids and embedded texts), independent of file order."""
        h = hashlib.sha256(b"evalret-corpus-1\n")
        docs = sorted(zip(self.doc_ids, self.doc_texts, strict=True))
        # _canonical(["d", d, t]) of every document, encoded at once: a hash of their
        # concatenation is the hash of each in turn
        h.update("".join([f'["d",{_string(d)},{_string(t)}]\n' for d, t in docs]).encode())
        return h.hexdigest()

    def _provenance_record(self, query_id: str) -> dict[str, Any] | None:
        """What a query's fingerprint adds for provenance: its recorded sources (``import``, the
        default, left out) and its LLM grades with their judges; None when there is neither,
        so a set without provenance keeps the fingerprint it always had."""
        sources = sorted((d, s) for d, s in self.sources.get(query_id, {}).items() if s != IMPORT)
        judge = self.llm_sources.get(query_id, {})
        llm = sorted((d, g, judge.get(d)) for d, g in self.llm_qrels.get(query_id, {}).items())
        return {"sources": sources, "llm": llm} if sources or llm else None

    @cached_property
    def query_fingerprints(self) -> dict[str, str]:
        """Per query, a short sha256 of its text, judgments, tags and frequency, and of the
        judgments' provenance when it records any."""
        out = {}
        for q, t in zip(self.query_ids, self.query_texts, strict=True):
            record: list[Any] = [
                q,
                t,
                sorted(self.qrels.get(q, {}).items()),
                list(self.tags.get(q, ())),
                self.frequency.get(q),
            ]
            provenance = self._provenance_record(q)
            if provenance is not None:
                record.append(provenance)
            if q in self.filters:  # only then: a set without filters keeps its fingerprints
                record.append({"filter": canonical(self.filters[q])})
            out[q] = hashlib.sha256(_canonical(record)).hexdigest()[:16]
        return out

    @cached_property
    def fingerprint(self) -> str:
        """sha256 of the content that decides the metrics: corpus, queries, judgments, tags,
        frequencies, and with filters the queries' filters and the documents' metadata; file
        order and formatting do not count."""
        h = hashlib.sha256(b"evalret-golden-set-1\n")
        h.update(self.corpus_fingerprint.encode())
        if self.filters:  # metadata decides the metrics only through filters
            for d, meta in sorted(self.doc_metadata.items()):
                h.update(_canonical(["m", d, sorted(meta.items())]))
        digests = sorted(self.query_fingerprints.items())  # _canonical([q, digest]) of each
        h.update("".join([f"[{_string(q)},{_string(d)}]\n" for q, d in digests]).encode())
        return h.hexdigest()


def relevant_count(grades: Mapping[str, int], relevance_level: int) -> int:
    """How many of one query's judgments (doc id -> grade) are relevant at ``relevance_level``."""
    return sum(1 for g in grades.values() if is_relevant(g, relevance_level))


def scored_query_ids(
    query_ids: Sequence[str],
    qrels: Mapping[str, Mapping[str, int]],
    relevance_level: int,
    queries_without_relevant: WithoutRelevant,
) -> list[str]:
    """The judged queries a run scores, in order: every one under ``zero``, those with a
    relevant document under ``exclude``. The one rule shared by runs and `evalret validate`."""
    if queries_without_relevant == "zero":
        return list(query_ids)
    return [q for q in query_ids if relevant_count(qrels.get(q, {}), relevance_level) > 0]


def nothing_to_evaluate(source: str, n_judged: int, relevance_level: int) -> str:
    """Why a golden set whose queries all lack a relevant document cannot gate, and the fix."""
    return (
        f"nothing to evaluate in {source}: none of its {n_judged} judged queries has a judgment "
        f"with grade >= {relevance_level} (relevance_level). Lower relevance_level, or set "
        "queries_without_relevant: zero to score them as trec_eval does"
    )


# json.dumps(obj, ensure_ascii=False, separators=(",", ":")), its encoder made once
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_string = json.encoder.encode_basestring  # a str as _ENCODER writes it (with its quotes)


def _canonical(obj: Any) -> bytes:
    """The bytes a fingerprint hashes for ``obj``: its compact JSON (UTF-8), then a newline."""
    return _ENCODER.encode(obj).encode() + b"\n"
