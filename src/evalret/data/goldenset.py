"""Golden sets: queries, corpus, graded judgments, tags and frequencies, read from three formats.

* native: a directory with ``corpus.jsonl`` (``id``, ``text``, optional ``title``, ``metadata``) and
  ``queries.jsonl`` (``id``, ``text``, ``relevant`` as ``{doc_id: grade}`` or a list of doc ids
  meaning grade 1, optional ``tags``, optional ``frequency``);
* BEIR: ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``, ``text``),
  ``qrels/<split>.tsv`` with a header; only queries judged in the split are evaluated;
* TREC: a qrels file (``qid iter docno rel``) plus a queries file (``qid<TAB>text`` or JSONL) and a
  corpus file (JSONL, or ``docid<TAB>text``).

Every reader collects all problems (file and line) into a GoldenSetScan: errors, which make
``load_golden_set`` raise one GoldenSetError listing them all, and warnings (a query without a
relevant document, an empty document or query text, non-integer grades truncated), which
`evalret validate` and `evalret run` both report and a run does not stop for.

Provenance (core/provenance.py): a native query line may record ``sources`` (``{doc id: source}``
for grades of its ``relevant``; a document without one: ``import``) and ``llm_relevant``
(``{doc id: {"grade": g, "source": "llm:<model>@<hash>"}}``: an LLM judge's grade of a pair a
person graded). A BEIR or TREC set records them in ``judgments.sources.jsonl`` beside the qrels
(the BEIR directory, the TREC qrels file's directory): one object per line, ``query_id``,
``doc_id``, ``source``, and ``grade`` on the lines that hold an LLM judge's grade of a pair a
person graded. Every record names a judged pair, a known kind of source, once; a BEIR set's lines
for queries of another split are skipped. The readers fill ``GoldenSet.sources`` and
``llm_qrels`` (the LLM grades of every pair the judge graded, those whose golden grade is its own
included) and ``llm_sources`` (the judge behind each of them). A set that records no provenance
reads, and fingerprints, exactly as before.

Qrels files (TREC and BEIR) are read as trec_eval reads them: blank lines and lines starting with
``#`` are skipped, a negative grade is "pooled but not judged" (non-relevant, and unjudged in
judged@k, bpref and the judged-only metrics: core.relevance.is_judged), and a decimal grade
(``1.7``, ``-0.5``) is truncated toward zero. Every reader refuses a grade beyond +-MAX_GRADE
(file:line).
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from evalret.core.filters import (
    Eligibility,
    Filter,
    FilterError,
    MetadataColumns,
    Scalar,
    canonical,
    eligibility,
    parse_filter,
    value_type,
)
from evalret.core.metrics import MAX_GRADE
from evalret.core.provenance import (
    HUMAN_PREFIX,
    IMPORT,
    LLM_PREFIX,
    has_llm_labels,
    human_view,
    is_llm,
)
from evalret.core.relevance import DEFAULT_RELEVANCE_LEVEL, is_judged, is_relevant
from evalret.data.config import (
    GoldenSetConfig,
    Labels,
    SlicesConfig,
    WithoutRelevant,
    configured_slices,
)
from evalret.data.textfile import TextProblem, decode, parse_json
from evalret.errors import GoldenSetError, Problem

if TYPE_CHECKING:
    from evalret.core.slices import Slice

Format = Literal["native", "beir", "trec"]
_INT_GRADE = re.compile(r"^[+-]?\d+$")
_DECIMAL_GRADE = re.compile(r"^[+-]?(\d+\.\d*|\.\d+)$")
LINES_LISTED = 10  # lines named in a per-file warning before "(+N more)"


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
        qi: list[int] = []
        di: list[int] = []
        gr: list[int] = []
        for i, q in enumerate(self.query_ids):
            for d, g in self.qrels.get(q, {}).items():
                qi.append(i)
                di.append(self.doc_index[d])
                gr.append(g)
        return (
            np.array(qi, dtype=np.int64),
            np.array(di, dtype=np.int64),
            np.array(gr, dtype=np.int64),
        )

    @cached_property
    def corpus_fingerprint(self) -> str:
        """sha256 of the documents (ids and embedded texts), independent of file order."""
        h = hashlib.sha256(b"evalret-corpus-1\n")
        for d, t in sorted(zip(self.doc_ids, self.doc_texts, strict=True)):
            h.update(_canonical(["d", d, t]))
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
        for q, digest in sorted(self.query_fingerprints.items()):
            h.update(_canonical([q, digest]))
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


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


# --- record schemas -------------------------------------------------------------------------


# integers a run holds in int64 arrays: a larger one is refused where it is read, with its line
Int64 = Annotated[StrictInt, Field(ge=-(2**63), le=2**63 - 1)]


class _NativeDoc(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1)
    text: str
    title: str = ""
    metadata: dict[str, Any] = {}


class _LlmGrade(BaseModel):
    """An LLM judge's grade of a pair a person graded (native ``llm_relevant``)."""

    model_config = ConfigDict(extra="forbid")
    grade: StrictInt  # range checked with the line in add_llm_grade
    source: str


class _NativeQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1)
    text: str
    relevant: dict[str, StrictInt] | list[str]  # range checked with the line in add_judgment
    tags: list[str] = []
    frequency: Int64 | None = Field(None, ge=0)
    metadata: dict[str, Any] = {}
    filter: Any = None  # read by core.filters.parse_filter, with the line
    sources: dict[str, str] = {}  # doc id -> source of its grade in relevant
    llm_relevant: dict[str, _LlmGrade] = {}


class _SourceLine(BaseModel):
    """One line of ``judgments.sources.jsonl`` (BEIR and TREC sets)."""

    model_config = ConfigDict(extra="forbid")
    query_id: str = Field(min_length=1)
    doc_id: str = Field(min_length=1)
    source: str
    grade: StrictInt | None = None  # an LLM judge's grade of a pair a person graded


SOURCES_FILE = "judgments.sources.jsonl"


class _BeirDoc(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    id: str = Field(alias="_id", min_length=1)
    text: str = ""
    title: str = ""
    metadata: Any = None  # an object: its filterable values (add_metadata)


class _BeirQuery(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    id: str = Field(alias="_id", min_length=1)
    text: str  # metadata (and anything else) is ignored: it is never embedded
    filter: Any = None  # read by core.filters.parse_filter, with the line


def _first_pydantic_problem(e: ValidationError) -> str:
    parts = []
    for err in e.errors():
        loc = ".".join(str(p) for p in err["loc"])
        msg = "unknown field" if err["type"] == "extra_forbidden" else err["msg"]
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)


class _Reader:
    """Collects problems while reading the files of one golden set: errors, which stop a run,
    and warnings, which do not."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []  # errors
        self.warnings: list[Problem] = []

    def problem(
        self, message: str, file: Path | None = None, line: int | None = None, code: str = "error"
    ) -> None:
        self.problems.append(Problem(message, str(file) if file else None, line, code))

    def warn(self, message: str, file: Path | None, line: int | None, code: str) -> None:
        self.warnings.append(Problem(message, str(file) if file else None, line, code))

    def lines(self, path: Path) -> Iterator[tuple[int, str]]:
        """(line number, text) of the non-blank lines of ``path``; a line that is not UTF-8 is a
        problem at its line, and reading goes on."""
        try:
            with path.open("rb") as f:
                for n, raw in enumerate(f, start=1):
                    try:
                        text = decode(raw, n)
                    except TextProblem as e:
                        self.problems.append(e.at(path, n))
                        continue
                    if text.strip():
                        yield n, text
        except FileNotFoundError:
            self.problem("file not found", path, code="missing-file")
        except OSError as e:
            self.problem(f"cannot read: {e.strerror or e}", path, code="unreadable-file")

    def jsonl(self, path: Path, model: type[BaseModel]) -> Iterator[tuple[int, Any]]:
        for n, raw in self.lines(path):
            try:
                obj = parse_json(raw)
            except TextProblem as e:
                self.problems.append(e.at(path, n))
                continue
            if not isinstance(obj, dict):
                self.problem("each line must be a JSON object", path, n, code="invalid-json")
                continue
            try:
                yield n, model.model_validate(obj)
            except ValidationError as e:
                self.problem(_first_pydantic_problem(e), path, n, code="schema")

    def fail_if_any(self, source: str) -> None:
        if self.problems:
            raise GoldenSetError(
                f"golden set {source}: {len(self.problems)} problem(s)", self.problems
            )


def _doc_text(title: str, text: str) -> str:
    return f"{title} {text}".strip()


Where = tuple[Path, int]


class GoldenSetScan(_Reader):
    """Everything read from a golden set's files, with where each record is, and every problem
    found on the way. ``load_golden_set`` turns it into a GoldenSet when there is no error;
    ``evalret validate`` reports it as it is (errors, warnings, counts)."""

    def __init__(self, relevance_level: int = DEFAULT_RELEVANCE_LEVEL) -> None:
        super().__init__()
        self.relevance_level = relevance_level
        self.source = ""
        self.format: Format = "native"
        self.docs: dict[str, str] = {}
        self.doc_where: dict[str, Where] = {}
        self.queries: dict[str, str] = {}
        self.query_where: dict[str, Where] = {}
        self.qrels: dict[str, dict[str, int]] = {}
        self.qrel_where: list[tuple[str, str, Path, int]] = []
        self.tags: dict[str, tuple[str, ...]] = {}
        self.frequency: dict[str, int] = {}
        self.evaluate: list[str] = []  # the queries a run evaluates, in order
        # provenance, checked against the judgments once every file is read
        self.sources: dict[str, dict[str, str]] = {}
        self.llm_grades: dict[str, dict[str, tuple[int, str]]] = {}
        self.provenance_where: list[tuple[str, str, Path, int, bool]] = []  # (.., is LLM grade)
        # filtered search: documents' filterable metadata, queries' filters, and the lines of
        # metadata values no filter can read (warned about when a query filters)
        self.doc_metadata: dict[str, dict[str, Scalar]] = {}
        self.filters: dict[str, Filter] = {}
        self.filter_where: dict[str, Where] = {}
        self.unfilterable: dict[Path, list[int]] = {}

    def check_id(self, kind: str, value: str, path: Path, line: int) -> None:
        """Refuse an id with whitespace or a control character: run files cannot hold it."""
        if any(c.isspace() or unicodedata.category(c) == "Cc" for c in value):
            self.problem(
                f"{kind} id {value!r} contains whitespace or a control character: ids are "
                "written to TREC run files, whose columns are separated by whitespace",
                path,
                line,
                code="invalid-id",
            )

    def add_doc(self, doc_id: str, text: str, path: Path, line: int) -> None:
        self.check_id("document", doc_id, path, line)
        if doc_id in self.docs:
            first = self.doc_where[doc_id]
            self.problem(
                f"duplicate document id {doc_id!r} (first at line {first[1]})",
                path,
                line,
                code="duplicate-document-id",
            )
            return
        if not text:
            self.warn(
                f"document {doc_id!r} has no text: it is embedded as the empty string",
                path,
                line,
                "empty-document",
            )
        self.docs[doc_id] = text
        self.doc_where[doc_id] = (path, line)

    def add_metadata(self, doc_id: str, metadata: Any, path: Path, line: int) -> None:
        """A document's metadata (read after ``add_doc``): its string, number and boolean values
        are kept for filters; any other value (null, a list, an object, an integer beyond
        +-2**53), or metadata that is not an object, is left out, its line noted."""
        if metadata is None or doc_id not in self.docs or self.doc_where[doc_id] != (path, line):
            return
        if not isinstance(metadata, dict):
            self.unfilterable.setdefault(path, []).append(line)
            return
        kept: dict[str, Scalar] = {}
        for key, value in metadata.items():
            kind = value_type(value)
            if kind is None:
                self.unfilterable.setdefault(path, []).append(line)
            else:
                kept[key] = float(value) if kind == "number" else value
        if kept:
            self.doc_metadata[doc_id] = kept

    def add_filter(self, query_id: str, raw: Any, path: Path, line: int) -> None:
        """A query's filter, parsed strictly (core.filters): a problem at its line when it
        cannot be read."""
        try:
            self.filters[query_id] = parse_filter(raw)
        except FilterError as e:
            self.problem(str(e), path, line, code="invalid-filter")
            return
        self.filter_where[query_id] = (path, line)

    def add_query(self, query_id: str, text: str, path: Path, line: int) -> bool:
        self.check_id("query", query_id, path, line)
        if query_id in self.queries:
            first = self.query_where[query_id]
            self.problem(
                f"duplicate query id {query_id!r} (first at line {first[1]})",
                path,
                line,
                code="duplicate-query-id",
            )
            return False
        if not text.strip():
            self.warn(
                f"query {query_id!r} has no text: it is embedded as the empty string",
                path,
                line,
                "empty-query",
            )
        self.queries[query_id] = text
        self.query_where[query_id] = (path, line)
        return True

    def add_judgment(self, query_id: str, doc_id: str, grade: int, path: Path, line: int) -> None:
        if abs(grade) > MAX_GRADE:
            self.problem(
                f"grade {grade} for ({query_id!r}, {doc_id!r}) is out of range: grades are "
                f"integers from -{MAX_GRADE} to {MAX_GRADE}",
                path,
                line,
                code="grade-out-of-range",
            )
            return
        judged = self.qrels.setdefault(query_id, {})
        if doc_id in judged:
            self.problem(
                f"duplicate judgment for query {query_id!r}, document {doc_id!r}",
                path,
                line,
                code="duplicate-judgment",
            )
            return
        judged[doc_id] = grade
        self.qrel_where.append((query_id, doc_id, path, line))

    def add_source(self, query_id: str, doc_id: str, source: str, path: Path, line: int) -> None:
        """The source of one judgment's grade (checked against the judgments in ``finish``)."""
        if not self._valid_source(source, path, line):
            return
        recorded = self.sources.setdefault(query_id, {})
        if doc_id in recorded:
            self.problem(
                f"second source for query {query_id!r}, document {doc_id!r}",
                path,
                line,
                code="duplicate-source",
            )
            return
        recorded[doc_id] = source
        self.provenance_where.append((query_id, doc_id, path, line, False))

    def add_llm_grade(
        self, query_id: str, doc_id: str, grade: int, source: str, path: Path, line: int
    ) -> None:
        """An LLM judge's grade of a pair a person graded (checked in ``finish``)."""
        if not self._valid_source(source, path, line):
            return
        if not is_llm(source) or abs(grade) > MAX_GRADE:
            self.problem(
                f"LLM grade {grade} of ({query_id!r}, {doc_id!r}) from {source!r}: it must come "
                f"from an llm:<model>@<prompt hash> source and lie in -{MAX_GRADE}..{MAX_GRADE}",
                path,
                line,
                code="invalid-llm-grade",
            )
            return
        recorded = self.llm_grades.setdefault(query_id, {})
        if doc_id in recorded:
            self.problem(
                f"second LLM grade for query {query_id!r}, document {doc_id!r}",
                path,
                line,
                code="duplicate-llm-grade",
            )
            return
        recorded[doc_id] = (grade, source)
        self.provenance_where.append((query_id, doc_id, path, line, True))

    def _valid_source(self, source: str, path: Path, line: int) -> bool:
        kind, _, rest = source.partition(":")
        llm_ok = f"{kind}:" == LLM_PREFIX and "@" in rest.strip("@")
        known = source == IMPORT or (f"{kind}:" == HUMAN_PREFIX and bool(rest)) or llm_ok
        if known and not any(unicodedata.category(c) == "Cc" for c in source):
            return True
        self.problem(
            f"source {source!r}: expected 'import', 'human:<annotator>' or "
            "'llm:<model>@<prompt hash>'",
            path,
            line,
            code="invalid-source",
        )
        return False

    def _check_provenance(self) -> None:
        """Every recorded source names a judged pair; an LLM grade beside a person's names a
        pair whose golden grade is not itself an LLM's."""
        for q, d, path, line, llm in self.provenance_where:
            if d not in self.qrels.get(q, {}):
                self.problem(
                    f"{'LLM grade' if llm else 'source'} for ({q!r}, {d!r}), which has no judgment",
                    path,
                    line,
                    code="unjudged-source",
                )
            elif llm and is_llm(self.sources.get(q, {}).get(d)):
                self.problem(
                    f"LLM grade for ({q!r}, {d!r}) beside a judgment that is itself an LLM's: "
                    "llm grades are kept apart only for pairs a person graded",
                    path,
                    line,
                    code="llm-grade-of-llm-judgment",
                )

    def _apply_filters(self, evaluate: list[str]) -> None:
        """Restrict each filtered query's judgments to the documents its filter keeps: a
        document outside the filter is no answer to the query, so it counts neither as relevant
        nor as judged (and a ranking that returns it gains nothing). Warned with the lines."""
        if not self.filters or self.problems:
            return
        for path, lines in self.unfilterable.items():
            self.warn(
                "metadata values that are not a string, a number or a boolean (or not in an "
                f"object) are not filterable: left out at lines {_lines_listed(lines)}",
                path,
                lines[0],
                "unfilterable-metadata",
            )
        doc_ids = list(self.docs)
        position = {d: i for i, d in enumerate(doc_ids)}  # every judged document is one of them
        columns = MetadataColumns([self.doc_metadata.get(d) for d in doc_ids])
        wanted = [q for q in evaluate if q in self.filters]
        kept = eligibility([self.filters[q] for q in wanted], columns)
        outside: dict[Path, list[int]] = {}
        for qi, q in enumerate(wanted):
            mask = kept.mask(qi)
            assert mask is not None
            path, line = self.filter_where[q]
            if not mask.any():
                self.warn(f"query {q!r}: its filter keeps no document", path, line, "empty-filter")
            for d in [d for d in self.qrels.get(q, {}) if not mask[position[d]]]:
                del self.qrels[q][d]
                self.sources.get(q, {}).pop(d, None)
                self.llm_grades.get(q, {}).pop(d, None)
        for q, d, path, line in self.qrel_where:
            if q in self.filters and d not in self.qrels.get(q, {}):
                outside.setdefault(path, []).append(line)
        for path, lines in outside.items():
            self.warn(
                f"{len(lines)} judgment(s) name a document outside their query's filter: they "
                f"do not count (neither relevant nor judged), at lines {_lines_listed(lines)}",
                path,
                lines[0],
                "judgment-outside-filter",
            )

    def _check_references(self) -> None:
        for query_id, doc_id, path, line in self.qrel_where:
            if doc_id not in self.docs:
                self.problem(
                    f"judgment for unknown document {doc_id!r} (query {query_id!r})",
                    path,
                    line,
                    code="unknown-document",
                )
            if query_id not in self.queries:
                self.problem(
                    f"judgment for unknown query {query_id!r}", path, line, code="unknown-query"
                )

    def _check_relevant(self) -> None:
        first: dict[str, Where] = {}
        for q, _, path, line in self.qrel_where:
            first.setdefault(q, (path, line))
        level = self.relevance_level
        for q in self.evaluate:
            if relevant_count(self.qrels.get(q, {}), level):
                continue
            path, line = first.get(q) or self.query_where[q]
            self.warn(
                f"query {q!r} has no relevant document (no judgment with grade >= {level}): "
                "left out of the means under queries_without_relevant: exclude, scored as "
                "trec_eval scores it under zero",
                path,
                line,
                "no-relevant-document",
            )

    def finish(self, source: str, fmt: Format, evaluate: list[str]) -> GoldenSetScan:
        """Run the checks that need every file read; returns self."""
        self.source, self.format, self.evaluate = source, fmt, evaluate
        self._check_references()
        self._check_provenance()
        self._apply_filters(evaluate)
        if not self.docs and not self.problems:
            self.problem("the corpus is empty", code="empty-corpus")
        if not evaluate and not self.problems:
            self.problem("no query to evaluate", code="no-queries")
        self._check_relevant()
        return self

    def golden_set(self) -> GoldenSet:
        """The GoldenSet; raises GoldenSetError with every error when there is any."""
        self.fail_if_any(self.source)
        evaluate = self.evaluate
        return GoldenSet(
            source=self.source,
            format=self.format,
            doc_ids=list(self.docs),
            doc_texts=list(self.docs.values()),
            query_ids=evaluate,
            query_texts=[self.queries[q] for q in evaluate],
            qrels={q: self.qrels.get(q, {}) for q in evaluate},
            tags={q: self.tags[q] for q in evaluate if q in self.tags},
            frequency={q: self.frequency[q] for q in evaluate if q in self.frequency},
            relevance_level=self.relevance_level,
            warnings=tuple(self.warnings),
            **self._provenance(evaluate),
            doc_metadata=self.doc_metadata if self.filters else {},
            filters={q: self.filters[q] for q in evaluate if q in self.filters},
        )

    def _provenance(self, evaluate: list[str]) -> dict[str, Any]:
        """The GoldenSet's sources, llm_qrels and llm_sources of the evaluated queries: every
        LLM grade, those beside a person's and those that are the golden grade."""
        sources = {q: dict(self.sources[q]) for q in evaluate if self.sources.get(q)}
        llm_qrels: dict[str, dict[str, int]] = {}
        llm_sources: dict[str, dict[str, str]] = {}
        for q in evaluate:
            for d, src in sources.get(q, {}).items():
                if is_llm(src):
                    llm_qrels.setdefault(q, {})[d] = self.qrels[q][d]
                    llm_sources.setdefault(q, {})[d] = src
            for d, (grade, src) in self.llm_grades.get(q, {}).items():
                llm_qrels.setdefault(q, {})[d] = grade
                llm_sources.setdefault(q, {})[d] = src
        return {"sources": sources, "llm_qrels": llm_qrels, "llm_sources": llm_sources}


# --- the three formats ------------------------------------------------------------------------


def scan_native(directory: Path, relevance_level: int = DEFAULT_RELEVANCE_LEVEL) -> GoldenSetScan:
    b = GoldenSetScan(relevance_level)
    corpus, queries = directory / "corpus.jsonl", directory / "queries.jsonl"
    for n, doc in b.jsonl(corpus, _NativeDoc):
        b.add_doc(doc.id, _doc_text(doc.title, doc.text), corpus, n)
        b.add_metadata(doc.id, doc.metadata, corpus, n)
    order: list[str] = []
    for n, q in b.jsonl(queries, _NativeQuery):
        if not b.add_query(q.id, q.text, queries, n):
            continue
        relevant = q.relevant if isinstance(q.relevant, dict) else dict.fromkeys(q.relevant, 1)
        if relevant:
            order.append(q.id)
        else:  # judged nothing: as BEIR and TREC leave out their unjudged queries (trec_eval too)
            b.warn(
                f"query {q.id!r} judges no document: it is not evaluated",
                queries,
                n,
                "unjudged-query",
            )
        b.qrels.setdefault(q.id, {})
        for doc_id, grade in relevant.items():
            b.add_judgment(q.id, doc_id, grade, queries, n)
        if q.tags:
            b.tags[q.id] = tuple(dict.fromkeys(q.tags))
        if q.frequency is not None:
            b.frequency[q.id] = q.frequency
        if "filter" in q.model_fields_set:
            b.add_filter(q.id, q.filter, queries, n)
        for doc_id, source in q.sources.items():
            b.add_source(q.id, doc_id, source, queries, n)
        for doc_id, llm in q.llm_relevant.items():
            b.add_llm_grade(q.id, doc_id, llm.grade, llm.source, queries, n)
    return b.finish(str(directory), "native", order)


def _qrels_grade(text: str) -> tuple[int | None, bool]:
    """A qrels grade as trec_eval reads it: (value, truncated); value None when not a number.
    Decimals are truncated toward zero (``1.7`` -> 1, ``-0.5`` -> 0, ``2.`` -> 2)."""
    if _INT_GRADE.match(text):
        return int(text), False
    if _DECIMAL_GRADE.match(text):
        whole = text.split(".")[0]
        return (int(whole) if whole.strip("+-") else 0), True
    return None, False


def _lines_listed(lines: list[int]) -> str:
    shown = ", ".join(str(n) for n in lines[:LINES_LISTED])
    more = len(lines) - LINES_LISTED
    return shown + (f" (+{more} more)" if more > 0 else "")


def _read_qrels_rows(b: GoldenSetScan, path: Path, columns: int, header: bool) -> list[str]:
    """Judgments from a whitespace-separated qrels file; returns query ids in first-seen order.
    ``#`` comment lines are skipped; decimal grades are truncated with one warning per file."""
    order: dict[str, None] = {}
    truncated: list[int] = []
    for n, raw in b.lines(path):
        parts = raw.split()
        if parts[0].startswith("#"):
            continue
        value, was_decimal = _qrels_grade(parts[-1])
        if header and n == 1 and len(parts) == columns and value is None:
            continue
        if len(parts) != columns:
            b.problem(
                f"expected {columns} columns, found {len(parts)}", path, n, code="qrels-format"
            )
            continue
        if value is None:
            b.problem(f"grade {parts[-1]!r} is not a number", path, n, code="qrels-format")
            continue
        if was_decimal:
            truncated.append(n)
        b.add_judgment(parts[0], parts[-2], value, path, n)
        order.setdefault(parts[0], None)
    if truncated:
        b.warn(
            f"non-integer grades truncated toward zero, as trec_eval reads them, at lines "
            f"{_lines_listed(truncated)}",
            path,
            truncated[0],
            "non-integer-grade",
        )
    return list(order)


def scan_beir(
    directory: Path, split: str, relevance_level: int = DEFAULT_RELEVANCE_LEVEL
) -> GoldenSetScan:
    b = GoldenSetScan(relevance_level)
    corpus, queries = directory / "corpus.jsonl", directory / "queries.jsonl"
    qrels = directory / "qrels" / f"{split}.tsv"
    if not qrels.exists():
        available = sorted(p.stem for p in (directory / "qrels").glob("*.tsv"))
        raise GoldenSetError(
            f"golden set {directory}: no qrels for split {split!r} ({qrels}); "
            f"available splits: {', '.join(available) or 'none'}"
        )
    for n, doc in b.jsonl(corpus, _BeirDoc):
        b.add_doc(doc.id, _doc_text(doc.title, doc.text), corpus, n)
        b.add_metadata(doc.id, doc.metadata, corpus, n)
    for n, q in b.jsonl(queries, _BeirQuery):
        if b.add_query(q.id, q.text, queries, n) and "filter" in q.model_fields_set:
            b.add_filter(q.id, q.filter, queries, n)
    judged = _read_qrels_rows(b, qrels, columns=3, header=True)
    read_sources_file(b, directory / SOURCES_FILE, other_splits=True)
    return b.finish(str(directory), "beir", [q for q in judged if q in b.queries])


def read_sources_file(b: GoldenSetScan, path: Path, other_splits: bool = False) -> None:
    """``judgments.sources.jsonl`` into the scan, when there is one. ``other_splits`` (BEIR):
    a line for a query judged in none of the qrels read is another split's, and skipped."""
    if not path.is_file():
        return
    for n, rec in b.jsonl(path, _SourceLine):
        if other_splits and rec.query_id not in b.qrels and rec.query_id in b.queries:
            continue
        if rec.grade is None:
            b.add_source(rec.query_id, rec.doc_id, rec.source, path, n)
        else:
            b.add_llm_grade(rec.query_id, rec.doc_id, rec.grade, rec.source, path, n)


def _tsv_pairs(b: GoldenSetScan, path: Path, id_name: str) -> Iterator[tuple[int, str, str]]:
    """(line, id, text) from ``id<TAB>text`` lines; malformed lines become problems."""
    for n, raw in b.lines(path):
        key, sep, text = raw.rstrip("\n").partition("\t")
        if not sep:
            b.problem(f"expected '{id_name}<TAB>text'", path, n, code="tsv-format")
            continue
        yield n, key.strip(), text.strip()


def _read_trec_queries(b: GoldenSetScan, path: Path) -> None:
    if path.suffix == ".jsonl":
        for n, q in b.jsonl(path, _BeirQuery):
            if b.add_query(q.id, q.text, path, n) and "filter" in q.model_fields_set:
                b.add_filter(q.id, q.filter, path, n)
    else:
        for n, query_id, text in _tsv_pairs(b, path, "query_id"):
            b.add_query(query_id, text, path, n)


def _read_trec_corpus(b: GoldenSetScan, path: Path) -> None:
    if path.suffix == ".jsonl":
        for n, doc in b.jsonl(path, _BeirDoc):
            b.add_doc(doc.id, _doc_text(doc.title, doc.text), path, n)
            b.add_metadata(doc.id, doc.metadata, path, n)
    else:
        for n, doc_id, text in _tsv_pairs(b, path, "doc_id"):
            b.add_doc(doc_id, text, path, n)


def _find(directory: Path, names: tuple[str, ...]) -> Path | None:
    return next((directory / n for n in names if (directory / n).is_file()), None)


TREC_QRELS_NAMES = ("qrels.txt", "qrels.trec", "qrels.tsv", "qrels")
TREC_QUERIES_NAMES = ("queries.tsv", "topics.tsv", "queries.jsonl", "queries.txt")
TREC_CORPUS_NAMES = ("corpus.jsonl", "corpus.tsv", "collection.tsv")


def _scan_qrels_only(qrels: Path, relevance_level: int) -> GoldenSetScan:
    """A golden set of a qrels file alone: its documents and queries are the judged ones, in
    first-seen order, without text (``evalret score``: nothing is embedded)."""
    b = GoldenSetScan(relevance_level)
    judged = _read_qrels_rows(b, qrels, columns=4, header=False)
    for query_id, doc_id, path, line in b.qrel_where:
        if query_id not in b.queries:
            b.check_id("query", query_id, path, line)
            b.queries[query_id], b.query_where[query_id] = "", (path, line)
        if doc_id not in b.docs:
            b.check_id("document", doc_id, path, line)
            b.docs[doc_id], b.doc_where[doc_id] = "", (path, line)
    read_sources_file(b, qrels.parent / SOURCES_FILE)
    return b.finish(str(qrels), "trec", judged)


def scan_trec(
    qrels: Path,
    queries: Path | None,
    corpus: Path | None,
    relevance_level: int = DEFAULT_RELEVANCE_LEVEL,
    qrels_only: bool = False,
) -> GoldenSetScan:
    """A TREC golden set: qrels, queries and corpus (found beside the qrels when not given);
    with ``qrels_only``, the qrels alone when no queries or corpus file is there."""
    base = qrels.parent
    queries = queries or _find(base, TREC_QUERIES_NAMES)
    corpus = corpus or _find(base, TREC_CORPUS_NAMES)
    if qrels_only and (queries is None or corpus is None):
        return _scan_qrels_only(qrels, relevance_level)
    missing = [
        f"{what} (set golden_set.{what} or add one of {', '.join(names)} beside the qrels)"
        for what, found, names in (
            ("queries", queries, TREC_QUERIES_NAMES),
            ("corpus", corpus, TREC_CORPUS_NAMES),
        )
        if found is None
    ]
    if queries is None or corpus is None:
        raise GoldenSetError(f"TREC golden set {qrels}: missing " + "; ".join(missing))
    b = GoldenSetScan(relevance_level)
    _read_trec_corpus(b, corpus)
    _read_trec_queries(b, queries)
    judged = _read_qrels_rows(b, qrels, columns=4, header=False)
    read_sources_file(b, qrels.parent / SOURCES_FILE)
    return b.finish(str(qrels), "trec", [q for q in judged if q in b.queries])


def _first_record_keys(path: Path) -> set[str]:
    """The keys of the first JSON object in a JSONL file; empty when there is none to read (the
    reader then says what is wrong)."""
    try:
        with path.open("rb") as f:
            first = next((line for line in f if line.strip()), b"")
        record = parse_json(decode(first))
    except (OSError, TextProblem):
        return set()
    return set(record) if isinstance(record, dict) else set()


def detect_format(cfg: GoldenSetConfig) -> Format:
    """Which reader fits ``cfg.path``; an explicit ``format`` wins."""
    if cfg.format != "auto":
        return cfg.format
    path = cfg.path
    if cfg.qrels is not None or path.is_file():
        return "trec"
    if not path.is_dir():
        raise GoldenSetError(
            f"golden set not found: {path} (set golden_set.path in the config; relative paths "
            "are resolved against the config file, or the current directory without one)"
        )
    if (path / "qrels").is_dir():
        return "beir"
    if _find(path, TREC_QRELS_NAMES):
        return "trec"
    if (path / "corpus.jsonl").is_file() and (path / "queries.jsonl").is_file():
        if _first_record_keys(path / "corpus.jsonl") & {"_id", "id"} == {"_id"}:
            raise GoldenSetError(
                f"golden set {path}: BEIR layout without qrels/ directory: corpus.jsonl records "
                "use '_id' (BEIR style) but there is no qrels/<split>.tsv; add the qrels, or "
                "write native records (id, text, relevant) and set golden_set.format: native"
            )
        return "native"
    raise GoldenSetError(
        f"cannot tell the format of golden set {path}: expected corpus.jsonl + queries.jsonl "
        "(native), a qrels/ directory (BEIR) or a qrels file (TREC); set golden_set.format"
    )


def scan_golden_set(
    cfg: GoldenSetConfig, relevance_level: int = DEFAULT_RELEVANCE_LEVEL
) -> GoldenSetScan:
    """Read the files of the golden set the config points at, collecting every problem;
    ``relevance_level`` decides which queries have a relevant document.

    Raises GoldenSetError only when the files cannot be located (unknown format, missing split
    or TREC companion files); problems inside the files are in the scan's errors and warnings.
    """
    fmt = detect_format(cfg)
    if fmt == "native":
        return scan_native(cfg.path, relevance_level)
    if fmt == "beir":
        return scan_beir(cfg.path, cfg.split, relevance_level)
    qrels = cfg.qrels or (cfg.path if cfg.path.is_file() else _find(cfg.path, TREC_QRELS_NAMES))
    if qrels is None:
        raise GoldenSetError(f"TREC golden set {cfg.path}: no qrels file (set golden_set.qrels)")
    return scan_trec(qrels, cfg.queries, cfg.corpus, relevance_level, cfg.qrels_only)


def load_golden_set(
    cfg: GoldenSetConfig, relevance_level: int = DEFAULT_RELEVANCE_LEVEL
) -> GoldenSet:
    """Read the golden set the config points at, auto-detecting its format; raises
    GoldenSetError listing every error (warnings do not stop a run: the GoldenSet keeps them)."""
    return scan_golden_set(cfg, relevance_level).golden_set()
