"""The TREC run file of one index: ``qid Q0 docno rank score tag`` per retrieved document.

Ids are written as they are: the golden-set readers refuse an id with whitespace or a control
character (data.goldenset), so every id is one column. Scores are written with ``repr`` so that
they read back exactly.
"""

from __future__ import annotations

from evalret.core.ranking import SearchResult
from evalret.data.goldenset import GoldenSet


def trec_run(golden: GoldenSet, ranking: SearchResult, tag: str) -> str:
    """TREC run lines ``qid Q0 docno rank score tag``; scores printed so they read back exactly."""
    lines = []
    for qi, query_id in enumerate(golden.query_ids):
        for rank, (di, score) in enumerate(zip(ranking.ids[qi], ranking.scores[qi], strict=True)):
            if di < 0:
                break
            name = ranking.doc_name(di, golden.doc_ids)
            lines.append(f"{query_id} Q0 {name} {rank + 1} {float(score)!r} {tag}")
    return "\n".join(lines) + "\n"
