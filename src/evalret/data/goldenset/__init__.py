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

The package: ``model`` (the GoldenSet read), ``scan`` (what every reader collects, and the line
schemas), ``read`` (the three formats, detection, ``load_golden_set``), ``write`` (a golden set
written with merged grades: `evalret judgments merge`), ``draft`` (the drafts of `evalret golden`:
``evalret.data.goldenset.draft``, imported from there). Import from here: every name below is
re-exported.
"""

from __future__ import annotations

from evalret.data.goldenset.model import (
    Format,
    GoldenSet,
    nothing_to_evaluate,
    relevant_count,
    scored_query_ids,
)
from evalret.data.goldenset.read import (
    TREC_CORPUS_NAMES,
    TREC_QRELS_NAMES,
    TREC_QUERIES_NAMES,
    detect_format,
    load_golden_set,
    read_sources_file,
    scan_beir,
    scan_golden_set,
    scan_native,
    scan_trec,
)
from evalret.data.goldenset.scan import LINES_LISTED, SOURCES_FILE, GoldenSetScan, Where
from evalret.data.goldenset.write import MergePlan, write_merged

__all__ = [
    "LINES_LISTED",
    "SOURCES_FILE",
    "TREC_CORPUS_NAMES",
    "TREC_QRELS_NAMES",
    "TREC_QUERIES_NAMES",
    "Format",
    "GoldenSet",
    "GoldenSetScan",
    "MergePlan",
    "Where",
    "detect_format",
    "load_golden_set",
    "nothing_to_evaluate",
    "read_sources_file",
    "relevant_count",
    "scan_beir",
    "scan_golden_set",
    "scan_native",
    "scan_trec",
    "scored_query_ids",
    "write_merged",
]
