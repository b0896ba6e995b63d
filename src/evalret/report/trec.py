"""The TREC run file of one index: ``qid Q0 docno rank score tag`` per retrieved document.

Ids are written as they are: the golden-set readers refuse an id with whitespace or a control
character (data.goldenset), so every id is one column. Scores are written with ``repr`` so that
they read back exactly.

A run file may hold millions of lines, so it is written column-wise: every distinct text (a query
prefix, a document name, a rank, a score, the tag) is encoded once, and a block of lines is laid
out by numpy as a byte matrix, one column after another, its padding then dropped. A score's text
is Python's ``repr`` of the float (made by ``repr`` of a list, one C loop), made once per distinct
score when many repeat.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from evalret.core.ranking import SearchResult
from evalret.data.goldenset import GoldenSet

BLOCK_BYTES = 1 << 23  # about how many bytes of the file one gather makes (bounds its memory)
_SAMPLE = 4096  # scores looked at to guess whether formatting each distinct one pays


def trec_run(golden: GoldenSet, ranking: SearchResult, tag: str) -> str:
    """TREC run lines ``qid Q0 docno rank score tag``; scores printed so they read back exactly.
    Each query's ranks up to its first empty one (a negative id) are written."""
    n_rows = min(len(golden.query_ids), len(ranking.ids))
    ids = ranking.ids[:n_rows]
    kept = np.logical_and.accumulate(ids >= 0, axis=1) if ids.size else ids >= 0
    rows, ranks = np.nonzero(kept)  # query by query, best rank first
    if not len(rows):
        return "\n"
    docs = ids[rows, ranks]
    scores = np.ascontiguousarray(ranking.scores[:n_rows][rows, ranks], dtype=np.float64)
    used = np.zeros(int(docs.max()) + 1, dtype=bool)
    used[docs] = True
    names_used = np.flatnonzero(used)
    slot = np.cumsum(used) - 1  # document id -> its place among the used names
    names = _names(names_used, golden.doc_ids, ranking.extra_docs)
    score_texts, score_index = _score_texts(scores)
    columns = [
        ([f"{q} Q0 " for q in golden.query_ids[:n_rows]], rows),
        (names, slot[docs]),
        ([f" {r} " for r in range(1, ids.shape[1] + 1)], ranks),
        (score_texts, score_index),
        ([f" {tag}\n"], np.zeros(len(rows), dtype=np.int64)),
    ]
    return _gather(columns).decode("utf-8")


def _score_texts(scores: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Each score's ``repr`` as (texts, the index of each score's text): one text per distinct
    float (told apart by its bits, so -0.0 is not 0.0) when a sample shows many repeats, else
    one per score."""
    step = max(1, len(scores) // _SAMPLE)
    sample = scores[::step].view(np.int64)
    if len(np.unique(sample)) * 2 > len(sample):  # mostly distinct: format each
        return _reprs(scores), np.arange(len(scores), dtype=np.int64)
    distinct, index = np.unique(scores.view(np.int64), return_inverse=True)
    return _reprs(distinct.view(np.float64)), index.reshape(-1)


def _reprs(values: np.ndarray) -> list[str]:
    """``repr`` of each float of ``values`` (a list's repr is its items' reprs, ", "-joined)."""
    return repr(values.tolist())[1:-1].split(", ") if len(values) else []


def _names(used: np.ndarray, doc_ids: Sequence[str], extra: Sequence[str]) -> list[str]:
    """The names of the documents ``used`` (ascending ids): corpus ids, then extra documents."""
    split = int(np.searchsorted(used, len(doc_ids)))
    corpus, beyond = used[:split].tolist(), (used[split:] - len(doc_ids)).tolist()
    return [*map(doc_ids.__getitem__, corpus), *map(extra.__getitem__, beyond)]


def _fixed(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, bool]:
    """``texts`` UTF-8 encoded as a numpy bytes array (fixed width, NUL-padded), each text's
    byte length, and whether some text holds a NUL itself."""
    joined = "".join(texts)
    if joined.isascii():
        raw: Sequence[str | bytes] = texts
    else:
        raw = [t.encode("utf-8") for t in texts]
    table = np.array(raw, dtype=np.bytes_) if len(raw) else np.zeros(0, dtype="S1")
    return table, np.fromiter(map(len, raw), np.int64, len(raw)), "\0" in joined


def _gather(columns: Sequence[tuple[Sequence[str], np.ndarray]]) -> bytes:
    """The bytes of every line: line i is, column after column, the text ``index[i]`` of that
    column's ``texts``. A block of lines is laid out as a byte matrix (each column at the width of
    its longest text, NUL-padded), and the padding dropped: with ``bytes.replace`` when no text
    holds a NUL (ids never do: the readers refuse control characters), else by a mask."""
    fixed = [(*_fixed(texts), index) for texts, index in columns]
    nul = any(has_nul for _, _, has_nul, _ in fixed)
    width = sum(table.dtype.itemsize for table, _, _, _ in fixed)
    n_lines = len(columns[0][1])
    per_block = max(1, BLOCK_BYTES // width)
    out = []
    for a in range(0, n_lines, per_block):
        parts, masks = [], []
        for table, sizes, _, index in fixed:
            rows = index[a : a + per_block]
            w = table.dtype.itemsize
            parts.append(table[rows].view(np.uint8).reshape(len(rows), w))
            if nul:
                masks.append(np.arange(w) < sizes[rows][:, None])
        matrix = np.concatenate(parts, axis=1)
        if nul:
            out.append(matrix[np.concatenate(masks, axis=1)].tobytes())
        else:
            out.append(matrix.tobytes().replace(b"\0", b""))
    return b"".join(out)
