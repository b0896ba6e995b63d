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

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from evalret.core.ranking import SearchResult
from evalret.data.goldenset import GoldenSet

BLOCK_BYTES = 1 << 23  # about how many bytes of the file one gather makes (bounds its memory)
_SAMPLE = 4096  # scores looked at to guess whether formatting each distinct one pays


def trec_run(golden: GoldenSet, ranking: SearchResult, tag: str) -> str:
    """TREC run lines ``qid Q0 docno rank score tag``; scores printed so they read back exactly.
    Each query's ranks up to its first empty one (a negative id) are written."""
    return b"".join(trec_run_blocks(golden, ranking, tag)).decode("utf-8")


def trec_run_blocks(golden: GoldenSet, ranking: SearchResult, tag: str) -> Iterator[bytes]:
    """``trec_run``'s text as UTF-8 bytes, in blocks of about BLOCK_BYTES (a file is written
    from them without the whole text in memory)."""
    n_rows = min(len(golden.query_ids), len(ranking.ids))
    ids = ranking.ids[:n_rows]
    kept = np.logical_and.accumulate(ids >= 0, axis=1) if ids.size else ids >= 0
    rows, ranks = np.nonzero(kept)  # query by query, best rank first
    del kept
    if not len(rows):
        yield b"\n"
        return
    docs = ids[rows, ranks]
    scores = np.ascontiguousarray(ranking.scores[:n_rows][rows, ranks], dtype=np.float64)
    used = np.zeros(int(docs.max()) + 1, dtype=bool)
    used[docs] = True
    names_used = np.flatnonzero(used)
    slot = (np.cumsum(used) - 1).astype(np.int32)  # document id -> its place among the names
    names = _names(names_used, golden.doc_ids, ranking.extra_docs)
    # int32 line indexes (and one shared 0 for the tag): a 10M-line file's columns stay small
    columns: list[_Table | _Packed] = [
        _table([f"{q} Q0 " for q in golden.query_ids[:n_rows]], rows.astype(np.int32)),
        _table(names, slot[docs]),
        _table([f" {r} " for r in range(1, ids.shape[1] + 1)], ranks.astype(np.int32)),
    ]
    del rows, ranks, docs, slot, used
    columns += [
        _scores(scores),
        _table([f" {tag}\n"], np.broadcast_to(np.int32(0), (len(scores),))),
    ]
    yield from _gather(columns)


@dataclass(frozen=True)
class _Table:
    """A column of few distinct texts: each encoded once in a fixed-width (NUL-padded) numpy bytes
    array, line i showing text ``index[i]``."""

    table: np.ndarray  # S<width>
    sizes: np.ndarray  # each text's length in bytes
    index: np.ndarray
    nul: bool  # whether a text holds a NUL itself

    @property
    def width(self) -> int:
        return int(self.table.dtype.itemsize)

    def block(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Lines a to b: their bytes (uint8 [lines, width], NUL-padded) and lengths."""
        rows = self.index[a:b]
        return self.table[rows].view(np.uint8).reshape(len(rows), self.width), self.sizes[rows]


@dataclass(frozen=True)
class _Packed:
    """A column of one text per line (mostly distinct scores), kept packed in one buffer."""

    data: np.ndarray  # uint8, the texts one after another, then ``width`` NUL bytes
    starts: np.ndarray
    sizes: np.ndarray
    nul: bool = False

    @property
    def width(self) -> int:
        return int(self.sizes.max(initial=1))

    def block(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Lines a to b: their bytes (uint8 [lines, width], NUL-padded) and lengths: a window
        of the buffer from each text's start (one contiguous copy per line), cut at its end."""
        width = self.width
        part = sliding_window_view(self.data, width)[self.starts[a:b]]
        sizes = self.sizes[a:b]
        part[np.arange(width) >= sizes[:, None]] = 0
        return part, sizes


def _table(texts: Sequence[str], index: np.ndarray) -> _Table:
    """``texts`` UTF-8 encoded as a ``_Table`` column."""
    joined = "".join(texts)
    raw: Sequence[str | bytes] = texts if joined.isascii() else [t.encode("utf-8") for t in texts]
    table = np.array(raw, dtype=np.bytes_) if len(raw) else np.zeros(0, dtype="S1")
    sizes = np.fromiter(map(len, raw), np.int64, len(raw))
    return _Table(table, sizes, index, "\0" in joined)


def _scores(scores: np.ndarray) -> _Table | _Packed:
    """The score column: each score's ``repr``, made once per distinct float (told apart by its
    bits, so -0.0 is not 0.0) when a sample shows many repeats; else made for every score by one
    ``repr`` of their list, whose items are ", "-separated (no repr holds a comma), and kept
    packed."""
    step = max(1, len(scores) // _SAMPLE)
    sample = scores[::step].view(np.int64)
    if len(np.unique(sample)) * 2 <= len(sample):  # many repeats
        bits = scores.view(np.int64)
        starts = np.ones(len(bits), dtype=bool)  # a run of equal scores starts (rows are sorted)
        starts[1:] = bits[1:] != bits[:-1]
        distinct, index = np.unique(bits[starts], return_inverse=True)
        texts = repr(distinct.view(np.float64).tolist())[1:-1].split(", ")
        return _table(texts, index.reshape(-1).astype(np.int32)[np.cumsum(starts) - 1])
    data = np.frombuffer(repr(scores.tolist())[1:-1].encode("ascii"), dtype=np.uint8)
    commas = np.flatnonzero(data == ord(","))
    starts = np.concatenate([[0], commas + 2])
    sizes = np.concatenate([commas, [len(data)]]) - starts
    padded = np.concatenate([data, np.zeros(int(sizes.max()), dtype=np.uint8)])
    return _Packed(padded, starts, sizes)


def _names(used: np.ndarray, doc_ids: Sequence[str], extra: Sequence[str]) -> list[str]:
    """The names of the documents ``used`` (ascending ids): corpus ids, then extra documents."""
    split = int(np.searchsorted(used, len(doc_ids)))
    corpus, beyond = used[:split].tolist(), (used[split:] - len(doc_ids)).tolist()
    return [*map(doc_ids.__getitem__, corpus), *map(extra.__getitem__, beyond)]


def _gather(columns: Sequence[_Table | _Packed]) -> Iterator[bytes]:
    """The bytes of every line, block by block: its texts, column after column. A block of
    lines is laid out as
    a byte matrix (each column at the width of its longest text, NUL-padded), and the padding
    dropped: with ``bytes.replace`` when no text holds a NUL (ids never do: the readers refuse
    control characters), else by a mask."""
    nul = any(c.nul for c in columns)
    n_lines = len(columns[0].index) if isinstance(columns[0], _Table) else len(columns[0].sizes)
    per_block = max(1, BLOCK_BYTES // sum(c.width for c in columns))
    for a in range(0, n_lines, per_block):
        parts, masks = [], []
        for column in columns:
            part, sizes = column.block(a, a + per_block)
            parts.append(part)
            if nul:
                masks.append(np.arange(part.shape[1]) < sizes[:, None])
        matrix = np.concatenate(parts, axis=1)
        if nul:
            yield matrix[np.concatenate(masks, axis=1)].tobytes()
        else:
            yield matrix.tobytes().replace(b"\0", b"")
