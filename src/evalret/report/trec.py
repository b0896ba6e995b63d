"""The TREC run file of one index: ``qid Q0 docno rank score tag`` per retrieved document.

Ids are written as they are: the golden-set readers refuse an id with whitespace or a control
character (data.goldenset), so every id is one column. Scores are written with ``repr`` so that
they read back exactly.

A run file may hold millions of lines, so it is written column-wise: every distinct text (a query
prefix, a document name, a rank, a score, the tag) is encoded once, NUL-padded into a byte table,
and a block of lines is laid out by numpy as a byte matrix, one column after another, its padding
then dropped. A column that follows the query or the rank (the query prefix, the rank) or is the
same on every line (the tag) is broadcast into a block of whole rankings (every query ranked to
the full depth, as most runs are) instead of gathered line by line. A score's text is Python's
``repr`` of the float (made by ``repr`` of a list, one C loop), made once per distinct score when
many repeat.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.lib.stride_tricks import as_strided, sliding_window_view

from evalret.core.ranking import SearchResult, picked
from evalret.data.goldenset import GoldenSet
from evalret.data.runcolumns import ArrowNames

BLOCK_BYTES = 1 << 23  # about how many bytes of the file one gather makes (bounds its memory)
_SAMPLE = 4096  # scores looked at to guess whether formatting each distinct one pays
# what a column's text follows: each line's own, its query's, its rank's, or one for all lines
_By = Literal["line", "query", "rank", "all"]


def trec_run(golden: GoldenSet, ranking: SearchResult, tag: str) -> str:
    """TREC run lines ``qid Q0 docno rank score tag``; scores printed so they read back exactly.
    Each query's ranks up to its first empty one (a negative id) are written."""
    return b"".join(trec_run_blocks(golden, ranking, tag)).decode("utf-8")


def trec_run_blocks(
    golden: GoldenSet, ranking: SearchResult, tag: str
) -> Iterator[bytes | bytearray]:
    """``trec_run``'s text as UTF-8 bytes, in blocks of about BLOCK_BYTES (a file is written
    from them without the whole text in memory), each a new object the caller may keep."""
    n_rows = min(len(golden.query_ids), len(ranking.ids))
    ids = ranking.ids[:n_rows]
    kept = np.logical_and.accumulate(ids >= 0, axis=1) if ids.size else ids >= 0
    counts = kept.sum(axis=1)
    if not counts.any():
        yield b"\n"
        return
    if kept.all():  # every query ranked to the full depth: the rows as they are
        docs, scores = ids.reshape(-1), ranking.scores[:n_rows].reshape(-1)
    else:
        docs, scores = ids[kept], ranking.scores[:n_rows][kept]  # query by query, best first
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    del kept
    used = np.zeros(int(docs.max()) + 1, dtype=bool)
    used[docs] = True
    slot = (np.cumsum(used) - 1).astype(np.int32)  # document id -> its place among the names
    names = _names(np.flatnonzero(used), golden.doc_ids, ranking.extra_docs)
    columns = [
        _table([[f"{q} Q0 " for q in golden.query_ids[:n_rows]]], "query"),
        _table(names, "line", slot[docs]),
        _table([[f" {r} " for r in range(1, ids.shape[1] + 1)]], "rank"),
        _scores(scores),
        _table([[f" {tag}\n"]], "all"),
    ]
    del docs, slot, used
    yield from _gather(columns, counts, ids.shape[1])


@dataclass(frozen=True)
class _Lines:
    """A block of lines, ``a`` to ``b``: the queries ``qa`` to ``qb`` ranked to the full depth
    (``whole``), else each line's query row and rank (0-based)."""

    a: int
    b: int
    qa: int = 0
    qb: int = 0
    rows: np.ndarray | None = None
    ranks: np.ndarray | None = None

    @property
    def whole(self) -> bool:
        return self.rows is None


@dataclass(frozen=True)
class _Table:
    """A column of texts each encoded once, NUL-padded to one width (uint8 [texts, width]); line
    i shows text ``index[i]`` (``by`` "line"), the text of its query row ("query") or of its
    rank ("rank"), or the one text ("all")."""

    table: np.ndarray
    sizes: np.ndarray  # each text's length in bytes
    by: _By
    index: np.ndarray | None = None
    nul: bool = False  # whether a text holds a NUL itself

    @property
    def width(self) -> int:
        return int(self.table.shape[1])

    def _which(self, lines: _Lines) -> np.ndarray:
        """Each line's text, in a block of lines that are not whole rankings."""
        which = {"line": self.index, "query": lines.rows, "rank": lines.ranks}[self.by]
        assert which is not None
        return which[lines.a : lines.b] if self.by == "line" else which

    def place(self, cells: np.ndarray, lines: _Lines, depth: int) -> None:
        """Write the block's texts into ``cells`` (one element of the column's width a line,
        see _cells)."""
        texts = self.table.view(f"V{self.width}").reshape(-1)  # each text one element
        if self.by == "all":
            cells[...] = texts[0]
        elif lines.whole and self.by != "line":  # depth lines per query
            grid = _grid(cells, lines.qb - lines.qa, depth)
            grid[...] = texts[lines.qa : lines.qb, None] if self.by == "query" else texts
        else:
            cells[...] = np.take(texts, self._which(lines))

    def block_sizes(self, lines: _Lines, depth: int) -> np.ndarray:
        """Each line's text length."""
        if self.by == "all":
            return np.full(lines.b - lines.a, self.sizes[0])
        if lines.whole and self.by == "query":
            return np.repeat(self.sizes[lines.qa : lines.qb], depth)
        if lines.whole and self.by == "rank":
            return np.tile(self.sizes, lines.qb - lines.qa)
        return np.asarray(self.sizes[self._which(lines)])


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

    def place(self, cells: np.ndarray, lines: _Lines, depth: int) -> None:
        """Write the block's texts into ``cells``: a window of the buffer from each text's start
        (one contiguous copy per line), cut at its end."""
        width = self.width
        part = sliding_window_view(self.data, width)[self.starts[lines.a : lines.b]]
        part[np.arange(width) >= self.sizes[lines.a : lines.b, None]] = 0
        cells[...] = part.view(f"V{width}").reshape(-1)

    def block_sizes(self, lines: _Lines, depth: int) -> np.ndarray:
        return self.sizes[lines.a : lines.b]


def _table(parts: Sequence[Sequence[str]], by: _By, index: np.ndarray | None = None) -> _Table:
    """The texts of ``parts`` (one after another) UTF-8 encoded as a ``_Table`` column (see
    ``_utf8``); texts that hold a NUL themselves are encoded one by one."""
    encoded = [_utf8(part) for part in parts]
    if any(e is None for e in encoded):  # a text holds a NUL
        raw = [t.encode("utf-8") for part in parts for t in part]
        strings = np.array(raw, dtype=np.bytes_)
        table = strings.view(np.uint8).reshape(len(raw), strings.dtype.itemsize)
        return _Table(table, np.fromiter(map(len, raw), np.int64, len(raw)), by, index, True)
    data = np.concatenate([np.empty(0, np.uint8), *(e[0] for e in encoded if e is not None)])
    sizes = np.concatenate([np.empty(0, np.int64), *(e[1] for e in encoded if e is not None)])
    table = np.zeros((len(sizes), max(1, int(sizes.max(initial=1)))), dtype=np.uint8)
    table[np.arange(table.shape[1]) < sizes[:, None]] = data
    return _Table(table, sizes, by, index)


def _utf8(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """The UTF-8 bytes of ``texts`` one after another and each one's length; None when a text
    holds a NUL. A sequence that holds its texts encoded already gives them (``utf8()``: a run's
    names, ``data.runcolumns.ArrowNames``); others are joined by NULs, encoded at once, and cut
    at the NULs (UTF-8 never encodes another character with a 0 byte)."""
    if isinstance(texts, ArrowNames):
        data, sizes = texts.utf8()
        return (data, sizes) if bool(data.all()) else None
    data = np.frombuffer("\0".join(texts).encode("utf-8"), dtype=np.uint8)
    cuts = np.flatnonzero(data == 0)
    if len(cuts) != max(len(texts) - 1, 0):
        return None
    sizes = np.diff(cuts, prepend=-1, append=len(data)) - 1 if len(texts) else cuts
    return data[data != 0], sizes.astype(np.int64)


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
        return _table([texts], "line", index.reshape(-1).astype(np.int32)[np.cumsum(starts) - 1])
    data = np.frombuffer(repr(scores.tolist())[1:-1].encode("ascii"), dtype=np.uint8)
    commas = np.flatnonzero(data == ord(","))
    starts = np.concatenate([[0], commas + 2])
    sizes = np.concatenate([commas, [len(data)]]) - starts
    padded = np.concatenate([data, np.zeros(int(sizes.max()), dtype=np.uint8)])
    return _Packed(padded, starts, sizes)


def _names(
    used: np.ndarray, doc_ids: Sequence[str], extra: Sequence[str]
) -> tuple[Sequence[str], Sequence[str]]:
    """The names of the documents ``used`` (ascending ids): the corpus ids, then the extra
    documents; either sequence as it is when every one of it is used (a run's extra documents
    are: they are the ones it retrieved)."""
    split = int(np.searchsorted(used, len(doc_ids)))
    corpus, beyond = used[:split], used[split:] - len(doc_ids)
    return _picked(doc_ids, corpus), _picked(extra, beyond)


def _picked(texts: Sequence[str], which: np.ndarray) -> Sequence[str]:
    """``texts[i]`` for each of the ascending distinct indexes ``which``: ``texts`` itself when
    that is all of them (else ``core.ranking.picked``)."""
    return texts if len(which) == len(texts) else picked(texts, which.tolist())


def _blocks(counts: np.ndarray, depth: int, per_block: int) -> Iterator[_Lines]:
    """The lines in blocks of at most ``per_block`` (or one query's), given each query's
    ``counts`` of lines: whole queries at a time, marked whole when each holds ``depth``."""
    ends = np.cumsum(counts)
    starts = ends - counts
    total = int(ends[-1])
    step = per_block // depth if depth else 0
    if not step:  # a query longer than a block: the lines cut anywhere
        for a in range(0, total, per_block):
            yield _ragged(min(a + per_block, total), a, starts)
        return
    for qa in range(0, len(counts), step):
        qb = min(qa + step, len(counts))
        a, b = int(starts[qa]), int(ends[qb - 1])
        if a == b:
            continue
        if (counts[qa:qb] == depth).all():
            yield _Lines(a, b, qa, qb)
        else:
            yield _ragged(b, a, starts)


def _ragged(b: int, a: int, starts: np.ndarray) -> _Lines:
    """Lines ``a`` to ``b`` with each one's query row and rank."""
    line = np.arange(a, b)
    rows = np.searchsorted(starts, line, side="right") - 1
    return _Lines(a, b, rows=rows.astype(np.int32), ranks=(line - starts[rows]).astype(np.int32))


def _cells(out: np.ndarray, at: int, width: int) -> np.ndarray:
    """The column of ``out`` (uint8 [lines, total width]) from byte ``at``, ``width`` wide, as
    one element a line (numpy copies a whole element at once, not byte by byte)."""
    return np.ndarray(
        (out.shape[0],), dtype=f"V{width}", buffer=out, offset=at, strides=(out.shape[1],)
    )


def _grid(cells: np.ndarray, n_queries: int, depth: int) -> np.ndarray:
    """``cells`` of whole rankings as [query, rank] (a view: written through)."""
    (stride,) = cells.strides
    return as_strided(cells, (n_queries, depth), (stride * depth, stride), writeable=True)


def _gather(
    columns: Sequence[_Table | _Packed], counts: np.ndarray, depth: int
) -> Iterator[bytes | bytearray]:
    """The bytes of every line, block by block: its texts, column after column. A block of
    lines is laid out as a byte matrix (each column at the width of its longest text,
    NUL-padded; one buffer for every block), and the padding dropped: with ``translate`` of
    that buffer itself (a bytearray: no copy of it first, one fresh block of memory a block)
    when no text holds a NUL (ids never do: the readers refuse control characters), else by a
    mask."""
    nul = any(c.nul for c in columns)
    widths = [c.width for c in columns]
    width = sum(widths)
    starts = np.cumsum([0, *widths[:-1]]).tolist()
    per_block = max(1, BLOCK_BYTES // width)
    buffer = bytearray(min(per_block, int(counts.sum())) * width)
    matrix = np.frombuffer(buffer, dtype=np.uint8)
    for lines in _blocks(counts, depth, per_block):
        size = (lines.b - lines.a) * width
        out = matrix[:size].reshape(-1, width)
        for column, at, w in zip(columns, starts, widths, strict=True):
            column.place(_cells(out, at, w), lines, depth)
        if nul:
            masks = [np.arange(c.width) < c.block_sizes(lines, depth)[:, None] for c in columns]
            mask = np.concatenate(masks, axis=1)
            yield out[mask].tobytes()
        else:
            yield (buffer if size == len(buffer) else buffer[:size]).translate(None, b"\0")
