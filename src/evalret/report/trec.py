"""The TREC run file of one index: ``qid Q0 docno rank score tag`` per retrieved document.

Ids are written as they are: the golden-set readers refuse an id with whitespace or a control
character (data.goldenset), so every id is one column. Scores are written with ``repr`` so that
they read back exactly.

A run file may hold millions of lines, so it is written column-wise: every distinct text (a query
prefix, a document name, a rank, a score, the tag) is encoded once into one byte buffer, and each
line is gathered from it by numpy, a block of lines at a time. A score's text is Python's ``repr``
of the float (made by ``repr`` of a list, one C loop), for each distinct score when many repeat.
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
    names = [ranking.doc_name(d, golden.doc_ids) for d in names_used.tolist()]
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
    """``repr`` of each float of ``values`` (the repr of a list is its items' reprs, ", "-joined)."""
    return repr(values.tolist())[1:-1].split(", ") if len(values) else []


def _encoded(texts: Sequence[str]) -> tuple[bytes, np.ndarray]:
    """``texts`` as one UTF-8 buffer and each text's byte length."""
    joined = "".join(texts)
    if joined.isascii():
        return joined.encode("ascii"), np.fromiter(map(len, texts), np.int64, len(texts))
    encoded = [t.encode("utf-8") for t in texts]
    return b"".join(encoded), np.fromiter(map(len, encoded), np.int64, len(encoded))


def _gather(columns: Sequence[tuple[Sequence[str], np.ndarray]]) -> bytes:
    """The bytes of every line: line i is, column after column, the text ``index[i]`` of that
    column's ``texts``. The distinct texts go into one buffer; each block of lines is gathered
    from it with one fancy index."""
    buffers, starts, lengths = [], [], []
    base = 0
    for texts, index in columns:
        data, sizes = _encoded(texts)
        offsets = np.cumsum(sizes) - sizes + base
        buffers.append(data)
        starts.append(offsets[index])
        lengths.append(sizes[index])
        base += len(data)
    source = np.frombuffer(b"".join(buffers), dtype=np.uint8)
    start = np.stack(starts, axis=1)  # [lines, columns]
    length = np.stack(lengths, axis=1)
    line_bytes = length.sum(axis=1)
    per_block = max(1, int(BLOCK_BYTES // max(1, int(line_bytes.max()))))
    out = []
    for a in range(0, len(start), per_block):
        size = length[a : a + per_block].reshape(-1)
        begin = start[a : a + per_block].reshape(-1)
        total = int(size.sum())
        position = np.cumsum(size) - size  # where each piece goes in the block
        step = np.repeat(begin - position, size)
        out.append(source[step + np.arange(total, dtype=np.int64)].tobytes())
    return b"".join(out)
