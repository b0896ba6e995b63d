"""Rankings made outside evalret (a run file, a Python function) as a ``SearchResult``.

Documents are named by strings; a name the corpus does not have gets an id past the corpus end
(``core.ranking``: ``extra_docs``). What did not line up with the golden set is counted: queries
of the golden set the ranking does not have (they score 0: an empty ranking), queries it has that
the evaluated golden set does not (ignored, a warning), and retrieved documents the corpus does
not have (unjudged).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evalret.core.ranking import SearchResult, empty_result


@dataclass(frozen=True)
class Alignment:
    """What an external ranking did not share with the golden set, counted."""

    queries_missing: int  # evaluated queries the ranking lacks (scored on an empty ranking)
    queries_unknown: int  # ranked queries that are not evaluated (ignored)
    documents_unknown: int  # (query, document) pairs kept whose document the corpus lacks

    def params(self) -> dict[str, int]:
        """The counts as the report's index params show them."""
        return {
            "queries_missing": self.queries_missing,
            "queries_unknown": self.queries_unknown,
            "documents_unknown": self.documents_unknown,
        }

    def warnings(self, name: str) -> list[str]:
        """One line per nonzero count, for the terminal and the Markdown report."""
        out = []
        if self.queries_missing:
            out.append(f"{name}: {self.queries_missing} queries not in the ranking (scored 0)")
        if self.queries_unknown:
            out.append(f"{name}: {self.queries_unknown} ranked queries not evaluated (ignored)")
        if self.documents_unknown:
            out.append(
                f"{name}: {self.documents_unknown} retrieved documents not in the corpus (unjudged)"
            )
        return out


def to_search_result(
    ranked: Mapping[str, Sequence[tuple[str, float]]],
    query_ids: Sequence[str],
    doc_ids: Sequence[str],
    depth: int,
) -> tuple[SearchResult, Alignment]:
    """``ranked`` (query id -> (document name, score) pairs, already in tie-rule order) as one
    row per query of ``query_ids``, the first ``depth`` ranks; unknown documents as extra ids."""
    index = {d: i for i, d in enumerate(doc_ids)}
    extra: dict[str, int] = {}
    out = empty_result(len(query_ids), depth)
    missing = unknown_docs = 0
    for qi, qid in enumerate(query_ids):
        row = ranked.get(qid)
        if row is None:
            missing += 1
            continue
        for r, (doc, score) in enumerate(row[:depth]):
            di = index.get(doc)
            if di is None:
                unknown_docs += 1
                di = extra.setdefault(doc, len(doc_ids) + len(extra))
            out.ids[qi, r], out.scores[qi, r] = di, score
    evaluated = set(query_ids)
    alignment = Alignment(
        queries_missing=missing,
        queries_unknown=sum(1 for q in ranked if q not in evaluated),
        documents_unknown=unknown_docs,
    )
    result = SearchResult(ids=out.ids, scores=out.scores, extra_docs=tuple(extra))
    return result, alignment
