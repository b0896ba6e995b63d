"""The scan every golden-set reader fills (``GoldenSetScan``): every record checked and every
problem collected with its file and line, errors and warnings apart, then turned into a
``GoldenSet``; the line schemas of the native and BEIR files. The formats and rules:
evalret.data.goldenset."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from evalret.core.filters import (
    Filter,
    FilterError,
    MetadataColumns,
    Scalar,
    eligibility,
    parse_filter,
    value_type,
)
from evalret.core.metrics import MAX_GRADE
from evalret.core.provenance import (
    HUMAN_PREFIX,
    IMPORT,
    LLM_PREFIX,
    is_llm,
)
from evalret.core.relevance import DEFAULT_RELEVANCE_LEVEL, is_relevant
from evalret.data.textfile import TextProblem, decode, parse_json
from evalret.errors import GoldenSetError, Problem

if TYPE_CHECKING:
    pass
from evalret.data.goldenset.model import Format, GoldenSet

# integers a run holds in int64 arrays: a larger one is refused where it is read, with its line
Int64 = Annotated[StrictInt, Field(ge=-(2**63), le=2**63 - 1)]

# the line models below are each built (schema and validator) when first used, not at import
# (pydantic's defer_build): `evalret score` on a qrels file imports this module and reads no line
# with them


class _NativeDoc(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    id: str = Field(min_length=1)
    text: str
    title: str = ""
    metadata: dict[str, Any] = {}


class _LlmGrade(BaseModel):
    """An LLM judge's grade of a pair a person graded (native ``llm_relevant``)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    grade: StrictInt  # range checked with the line in add_llm_grade
    source: str


class _Generated(BaseModel):
    """How a synthetic query was made (native ``generated``, `evalret golden synth`)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    model: str = Field(min_length=1)  # the chat model that wrote it
    prompt_hash: str = Field(min_length=1)  # sha256 of the prompt template, 12 hex digits
    source_docs: list[str] = Field(min_length=1)  # the document(s) it was written from
    style: str | None = None  # keyword | question | identifier | multi-document


class _NativeQuery(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    id: str = Field(min_length=1)
    text: str
    relevant: dict[str, StrictInt] | list[str]  # range checked with the line in add_judgment
    tags: list[str] = []
    frequency: Int64 | None = Field(None, ge=0)
    metadata: dict[str, Any] = {}
    filter: Any = None  # read by core.filters.parse_filter, with the line
    sources: dict[str, str] = {}  # doc id -> source of its grade in relevant
    llm_relevant: dict[str, _LlmGrade] = {}
    origin: Literal["log", "synthetic", "human"] | None = None  # read as the tag origin:<value>
    generated: _Generated | None = None


class _SourceLine(BaseModel):
    """One line of ``judgments.sources.jsonl`` (BEIR and TREC sets)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    query_id: str = Field(min_length=1)
    doc_id: str = Field(min_length=1)
    source: str
    grade: StrictInt | None = None  # an LLM judge's grade of a pair a person graded


SOURCES_FILE = "judgments.sources.jsonl"


class _BeirDoc(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, defer_build=True)
    id: str = Field(alias="_id", min_length=1)
    text: str = ""
    title: str = ""
    metadata: Any = None  # an object: its filterable values (add_metadata)


class _BeirQuery(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, defer_build=True)
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
            record = self.record(raw, path, n, model)
            if record is not None:
                yield n, record

    def record(
        self, raw: str, path: Path, n: int, model: type[BaseModel] | None = None
    ) -> Any | None:
        """One JSON-object line read as ``model`` (as a dict without one); None, with the problem
        recorded at its line, when it is not one."""
        try:
            obj = parse_json(raw)
        except TextProblem as e:
            self.problems.append(e.at(path, n))
            return None
        if not isinstance(obj, dict):
            self.problem("each line must be a JSON object", path, n, code="invalid-json")
            return None
        if model is None:
            return obj
        try:
            return model.model_validate(obj)
        except ValidationError as e:
            self.problem(_first_pydantic_problem(e), path, n, code="schema")
            return None

    def fail_if_any(self, source: str) -> None:
        if self.problems:
            raise GoldenSetError(
                f"golden set {source}: {len(self.problems)} problem(s)", self.problems
            )


def _doc_text(title: str, text: str) -> str:
    return f"{title} {text}".strip()


LINES_LISTED = 10  # lines named in a per-file warning before "(+N more)"


def _lines_listed(lines: list[int]) -> str:
    shown = ", ".join(str(n) for n in lines[:LINES_LISTED])
    more = len(lines) - LINES_LISTED
    return shown + (f" (+{more} more)" if more > 0 else "")


Where = tuple[Path, int]


class GoldenSetScan(_Reader):
    """Everything read from a golden set's files, with where each record is, and every problem
    found on the way. ``load_golden_set`` turns it into a GoldenSet when there is no error;
    ``evalret validate`` reports it as it is (errors, warnings, counts)."""

    def __init__(
        self, relevance_level: int = DEFAULT_RELEVANCE_LEVEL, keep_metadata: bool = False
    ) -> None:
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
        # with ``keep_metadata``: document id -> its metadata as written, whatever its values
        # (`evalret embed --export` writes it); None: not kept
        self.raw_metadata: dict[str, Any] | None = {} if keep_metadata else None

    def check_id(self, kind: str, value: str, path: Path, line: int) -> None:
        """Refuse an id with whitespace or a control character: run files cannot hold it."""
        if value.isascii() and value.isprintable() and " " not in value:
            return  # printable ASCII but the space: neither whitespace nor a control character
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
        if self.raw_metadata is not None:
            self.raw_metadata[doc_id] = metadata
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
        level = self.relevance_level
        lacking = [
            q
            for q in self.evaluate
            if not any(is_relevant(g, level) for g in self.qrels.get(q, {}).values())
        ]
        first: dict[str, Where] = {}
        for q, _, path, line in self.qrel_where if lacking else ():
            first.setdefault(q, (path, line))
        for q in lacking:
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
