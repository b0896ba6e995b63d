"""The columnar run readers: the fast path of ``data.runfile.read_run``.

A TREC run is read with pyarrow's CSV parser (columns split on one space, ids interned into
integer codes, scores parsed in C++), then every query is ordered with one sort. That parser
is stricter than trec_eval's reader, and the reader below only answers when it can prove the two
read the file the same way; otherwise it answers None and ``data.runfile``'s line reader, the
reference, reads the file and names the line of any problem. (A JSONL run is read the same way
with pyarrow's JSON reader, under the conditions ``read_jsonl_columns`` lists.) The proof for a
TREC run, per block of the file:

- no byte trec_eval splits on other than a single space between columns and ``\\n`` (or
  ``\\r\\n``) at line ends: no tab, vertical tab, form feed or lone carriage return, no two spaces
  in a row, no space at the start or end of a line; then pyarrow's six fields per line are
  exactly trec_eval's six columns (a line with more or fewer fails the parse);
- no NUL byte, no comment line (``#`` first), no line over the reader's bound;
- every score is a whole number to pyarrow: its parser accepts a subset of what C's ``strtod``
  reads whole (decimal, exponent, inf, nan; not hexadecimal), each correctly rounded as strtod
  rounds it, and a NaN score is left to the reference, which refuses it;
- ids are UTF-8 (checked once per distinct id), and no (query, document) pair repeats (checked
  over every line with one sort of integer keys; the reference names the repeated line).

Order: a query's documents by score descending (``-0.0`` equal to ``0.0``, as C compares them),
then docno descending in byte order, the queries in the order the file first names them. When
the file already lists each query contiguously by descending score, as trec_eval-style runs do,
one stable sort of (tie group, docno) keys only breaks the ties; any other order takes one sort
of (query, score, docno) keys. Memory holds the columns of every line (about 30 bytes a line),
never the file: blocks are read one at a time.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import io
import mmap
from codecs import BOM_UTF8
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from typing import Any, overload

import numpy as np

# the longest line read, newline included: a TREC line is six short columns; a JSONL line holds a
# query's whole ranking (100,000 results of ~60 bytes fit)
MAX_LINE_BYTES: dict[str, int] = {"trec": 1 << 20, "jsonl": 64 << 20}
CHUNK = 8 << 20  # the columnar reader's block of the file (pyarrow parses it in 2 MiB parts)
GZIP_MAGIC = b"\x1f\x8b"  # a run file starting with these bytes is read through gzip
_NAMES = ["qid", "q0", "docno", "rank", "score", "tag"]


@dataclass(frozen=True)
class Columns:
    """A run read as columns (see ``data.runfile.RunFile``, which this becomes)."""

    query_ids: list[str]
    doc_ids: Sequence[str]  # an ArrowNames of doc_names
    offsets: np.ndarray
    docs: np.ndarray
    scores: np.ndarray
    n_lines: int
    doc_names: Any = None  # doc_ids as a pyarrow string array


class ArrowNames(Sequence[str]):
    """Names held as a pyarrow string array (its ``rows``, in that order, when given), made
    Python strings all at once when one is first read: a run's documents are all counted, but
    most are never named (only a run copy or a listing names them)."""

    def __init__(self, names: Any, rows: np.ndarray | None = None) -> None:
        self._names, self._rows = names, rows

    def __len__(self) -> int:
        return len(self._names) if self._rows is None else len(self._rows)

    @cached_property
    def _strings(self) -> list[str]:
        return list(self._picked(self._rows).to_pylist())

    def _picked(self, rows: np.ndarray | None) -> Any:
        """The array of the names at ``rows`` of the held array (all of it for None)."""
        if rows is None:
            return self._names
        import pyarrow as pa

        from evalret.data import arrow_kernels as pc

        return pc.take(self._names, _int64_array(rows, pa))

    def pick(self, indices: Sequence[int]) -> list[str]:
        """The names at ``indices`` (into these names), made strings without making the rest."""
        if "_strings" in self.__dict__:  # (made already)
            return [self._strings[i] for i in indices]
        rows = np.asarray(indices, dtype=np.int64)
        return list(self._picked(rows if self._rows is None else self._rows[rows]).to_pylist())

    def utf8(self) -> tuple[np.ndarray, np.ndarray]:
        """The names' UTF-8 bytes one after another (uint8) and each name's length in bytes,
        read from the array's buffers: no string made."""
        names = self._picked(self._rows)
        wide = str(names.type) in ("large_string", "large_binary")
        _, offsets_buffer, data_buffer = names.buffers()
        offsets = np.frombuffer(
            offsets_buffer,
            np.int64 if wide else np.int32,
            len(names) + 1,
            names.offset * (8 if wide else 4),
        )
        start, end = int(offsets[0]), int(offsets[-1])
        data = (
            np.frombuffer(data_buffer, np.uint8, end - start, start)
            if end > start
            else np.empty(0, np.uint8)
        )
        return data, np.diff(offsets).astype(np.int64)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        return self._strings[i]

    def __iter__(self) -> Iterator[str]:
        return iter(self._strings)

    def __eq__(self, other: object) -> bool:  # equal to any sequence of the same names
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(self) == len(other) and self._strings == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # (a sequence compared by value: no hash)

    def __repr__(self) -> str:
        return f"ArrowNames({self._strings!r})"

    def rows(self, rows: np.ndarray) -> ArrowNames:
        """These names' ``rows`` (indices into them), in that order, not yet made strings."""
        return ArrowNames(self._names, rows if self._rows is None else self._rows[rows])


def _trec_bytes(data: bytes, start: int, end: int, b: np.ndarray, n_newlines: int) -> bool:
    """Whether the block ``data[start:end]`` (``b``: its bytes as numpy) splits into the same six
    fields for trec_eval and for pyarrow's CSV parser: no NUL, tab, vertical tab or form feed,
    no carriage return but before a newline, and no empty field (two spaces in a row, or one at
    a line's start or end); and no comment line (``#`` first)."""
    if any(data.find(byte, start, end) >= 0 for byte in (b"\0", b"\t", b"\x0b", b"\x0c")):
        return False
    # find looks for one byte fast, count does not
    n_cr = data.count(b"\r", start, end) if data.find(b"\r", start, end) >= 0 else 0
    if n_cr and n_cr != data.count(b"\r\n", start, end):
        return False
    if len(b) and (b[0] in (32, 35) or b[-1] == 32):  # the first line's start, the last's end
        return False
    return not _pairs(data, start, end, _EMPTY_FIELD_PAIRS)


# two bytes in a row that make an empty field or a comment line, as 16-bit little-endian
# words: two spaces, a newline then a space or "#" (a line's start), a space then a newline or
# a carriage return (a line's end: a carriage return is only ever before a newline here)
_EMPTY_FIELD_PAIRS = (0x2020, 0x200A, 0x230A, 0x0A20, 0x0D20)


def _pairs(data: bytes, start: int, end: int, words: tuple[int, ...]) -> bool:
    """Whether ``data[start:end]`` holds one of ``words`` (two bytes each, little-endian) at an
    even or an odd offset (numpy compares half as many words as bytes)."""
    n = end - start
    for skip in (0, 1):
        if n - skip >= 2:
            pairs = np.frombuffer(data, "<u2", (n - skip) // 2, start + skip)
            if any(bool((pairs == word).any()) for word in words):
                return True
    return False


def _jsonl_bytes(data: bytes, start: int, end: int, b: np.ndarray, n_newlines: int) -> bool:
    """Whether the block ``data[start:end]`` has no backslash, no control byte but JSON's
    whitespace, and no carriage return but before a newline."""
    n_cr = data.count(b"\r", start, end)
    return not (
        data.find(b"\\", start, end) >= 0
        or int(np.count_nonzero(b < 32)) != n_newlines + n_cr + data.count(b"\t", start, end)
        or (n_cr > 0 and n_cr != data.count(b"\r\n", start, end))
    )


# what str.split() splits on (str.isspace; tests check the list), or an empty id
_SPACE_OR_EMPTY = (
    r"^$|[\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}"
    r"\x{202f}\x{205f}\x{3000}]"
)


Block = tuple[bytes, int, int]  # the lines data[start:end]


class _Blocks:
    """Whole lines of the file in blocks, each a range of one chunk, not a copy (but for the
    line a chunk boundary cuts, a small block of its own); ``plain`` turns False, and the blocks
    stop, at the first one that is not plain: ``bytes_plain`` says no, or a line is over
    ``limit``."""

    def __init__(
        self,
        chunks: Iterable[bytes],
        limit: int,
        bytes_plain: Callable[[bytes, int, int, np.ndarray, int], bool],
    ) -> None:
        self.chunks, self.limit, self.bytes_plain = chunks, limit, bytes_plain
        self.n_lines = 0
        self.plain = True

    def __iter__(self) -> Iterator[Block]:
        carry = b""
        for chunk in self.chunks:
            start = 0
            if carry:  # the line cut at the chunk's start, whole
                start = chunk.find(b"\n") + 1
                if start:
                    head, carry = carry + chunk[:start], b""
                    if not self._plain(head, 0, len(head)):
                        return
                    yield head, 0, len(head)
            end = max(chunk.rfind(b"\n", start) + 1, start)
            carry += chunk[end:]
            if len(carry) > self.limit:
                self.plain = False
            if not self._plain(chunk, start, end):
                return
            if end > start:
                yield chunk, start, end
        if carry and self._plain(carry, 0, len(carry)):
            self.n_lines += 1  # the last line, without a newline
            yield carry, 0, len(carry)

    def _plain(self, data: bytes, start: int, end: int) -> bool:
        if self.plain and end > start:
            b = np.frombuffer(data, dtype=np.uint8, count=end - start, offset=start)
            n_newlines = int(np.count_nonzero(b == 10))
            self.n_lines += n_newlines
            self.plain = self._short_lines(data, start, end, b) and self.bytes_plain(
                data, start, end, b, n_newlines
            )
        return self.plain

    def _short_lines(self, data: bytes, start: int, end: int, b: np.ndarray) -> bool:
        """Whether no line of the block, its newline too, is over ``limit``: so when every
        stretch of ``limit // 2`` bytes holds a newline (a few searches); else measured."""
        step = max(self.limit // 2, 1)
        if all(data.find(b"\n", p, min(p + step, end)) >= 0 for p in range(start, end, step)):
            return True
        ends = np.flatnonzero(b == 10)
        return int(np.diff(ends, prepend=-1).max(initial=0)) <= self.limit


def read_trec_columns(
    chunks: Iterable[bytes], depth: int, limit: int, early: EarlyRun | None = None
) -> Columns | None:
    """The TREC run in ``chunks`` (the file's bytes in order, any split), each query's best
    ``depth`` documents kept; None when the file is not one this reader proves it reads as
    trec_eval does (the caller then reads it line by line). ``early``: this file as
    ``read_early`` read it: its bytes are checked here as ever and its parse taken (``chunks``
    is then not read)."""
    blocks = _Blocks(chunks if early is None else early.chunks(), limit, _trec_bytes)
    if early is None:
        table = _trec_table(blocks)
    else:
        for _ in blocks:  # (checked: the parse is made)
            pass
        table = early.parsed()
    if table is None or not blocks.plain or not table.num_rows:
        return None
    parts = [table.column("qid"), table.column("docno"), table.column("score")]
    del table  # (_finish holds the only reference to the columns)
    return _finish(parts, None, depth, blocks.n_lines)


def _trec_table(blocks: _Blocks) -> Any:
    """pyarrow's table of the TREC run in ``blocks``, parsed block by block; None where pyarrow
    refuses a block. The parse stops at a block that is not plain (``blocks.plain`` is then
    False)."""
    import pyarrow as pa
    import pyarrow.csv as csv

    options = _trec_csv_options()
    tables = []
    pool = pa.system_memory_pool()  # gives freed memory back: the peak stays near what is kept
    parsed = 0
    try:
        for data, start, end in blocks:
            block = pa.py_buffer(data).slice(start, end - start)
            tables.append(csv.read_csv(block, **options, memory_pool=pool))
            del data, block  # (the last chunk is not kept while the columns are made)
            parsed += end - start
            if parsed >= 64 << 20:  # every 64 MiB read: the other columns' memory back
                _give_back(pool)
                parsed = 0
    except pa.ArrowInvalid:
        return None
    return pa.concat_tables(tables) if tables else None


def _trec_csv_options() -> dict[str, Any]:
    """pyarrow's CSV options for a TREC run: six columns split at one space, no quoting, the
    query, document and score converted (bytes, bytes, float64; ``_trec_bytes`` stands for the
    other three)."""
    import pyarrow as pa
    import pyarrow.csv as csv

    return {
        "read_options": csv.ReadOptions(column_names=_NAMES, block_size=2 << 20),
        "parse_options": csv.ParseOptions(
            delimiter=" ", quote_char=False, escape_char=False, double_quote=False
        ),
        "convert_options": csv.ConvertOptions(
            column_types={name: pa.binary() for name in _NAMES} | {"score": pa.float64()},
            include_columns=["qid", "docno", "score"],
            null_values=[],
            strings_can_be_null=False,
        ),
    }


class EarlyRun:
    """A TREC run file as ``read_early`` read it, each part handed over once so that its memory
    goes as soon as the reader is done with it: the file's bytes (``chunks``), their sha256, and
    pyarrow's table of them (``parsed``; None where pyarrow refused them)."""

    def __init__(self, data: mmap.mmap, start: int, table: Any, sha256: str) -> None:
        self._data: mmap.mmap | None = data
        self._start, self._table, self.sha256 = start, table, sha256

    def chunks(self) -> Iterator[bytes]:
        """The bytes after the byte-order mark, in blocks of CHUNK."""
        data, self._data = self._data, None
        assert data is not None
        for at in range(self._start, len(data), CHUNK):
            yield data[at : at + CHUNK]

    def parsed(self) -> Any:
        """pyarrow's table of the bytes, or None."""
        table, self._table = self._table, None
        return table


def read_early(file: io.RawIOBase, size: int) -> EarlyRun | None:
    """The open regular ``file`` of ``size`` bytes read whole and parsed as ``read_trec_columns``
    parses a TREC run, in the calling thread (``data.early_runs``' own, while the command's
    modules import: reading, hashing and parsing leave the GIL, and pyarrow parses in this
    thread alone); None for a gzipped file (``data.runfile`` reads it), or one that was not
    ``size`` bytes (it changed). The bytes are held in an anonymous mapping, not on the heap
    (where a freed block of their size would stay the process's, and raise its peak)."""
    import pyarrow as pa
    import pyarrow.csv as csv

    data = mmap.mmap(-1, size)
    view = memoryview(data)
    got = 0
    while got < size and (n := file.readinto(view[got:])):
        got += n
    view.release()
    if got != size or file.read(1) or data[:2] == GZIP_MAGIC:
        return None
    sha256 = hashlib.sha256(data).hexdigest()
    start = len(BOM_UTF8) if data[: len(BOM_UTF8)] == BOM_UTF8 else 0
    options = _trec_csv_options()
    options["read_options"].use_threads = False  # this thread alone: the imports have the other
    try:
        table = csv.read_csv(
            pa.py_buffer(data).slice(start), **options, memory_pool=pa.system_memory_pool()
        )
    except pa.ArrowInvalid:  # (read_trec_columns answers None)
        table = None
    return EarlyRun(data, start, table, sha256)


def read_jsonl_columns(chunks: Iterable[bytes], depth: int, limit: int) -> Columns | None:
    """The JSONL run in ``chunks``, as ``read_trec_columns`` reads a TREC one; None when the
    file is not one this reader proves it reads as ``data.runfile``'s line reader does: one
    object per non-blank line holding ``query_id`` and ``results`` and nothing else, each result
    a ``doc_id`` and a number ``score``; no backslash (so no escape can hide a repeated key or a
    lone surrogate) and no control byte; ids of one word; no query on two lines."""
    import pyarrow as pa
    import pyarrow.json as pj

    from evalret.data import arrow_kernels as pc

    result = pa.struct([("doc_id", pa.string()), ("score", pa.float64())])
    schema = pa.schema([("query_id", pa.string()), ("results", pa.list_(result))])
    parse = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error")
    blocks = _Blocks(chunks, limit, _jsonl_bytes)
    tables = []
    pool = pa.system_memory_pool()
    try:
        for data, start, end in blocks:
            block = data[start:end]
            table = pj.read_json(pa.py_buffer(block), parse_options=parse, memory_pool=pool)
            objects = sum(1 for line in block.split(b"\n") if line.strip(b" \t\r"))
            if table.num_rows != objects or table.column("results").null_count:
                return None
            tables.append(table)
    except pa.ArrowInvalid:
        return None
    if not blocks.plain or not sum(t.num_rows for t in tables):
        return None
    table = pa.concat_tables(tables)
    results = pa.concat_arrays(table.column("results").chunks)
    flat = pc.list_flatten(results)
    rows = arrow_numbers(pc.list_parent_indices(results)).astype(np.int64)
    docs, scores = flat.field("doc_id"), flat.field("score")
    queries = table.column("query_id").combine_chunks()
    if queries.null_count or docs.null_count or scores.null_count:
        return None
    parts = [queries, docs, scores]
    del table, tables, results, flat, queries, docs, scores
    return _finish(parts, rows, depth, blocks.n_lines, jsonl=True)


def _finish(
    parts: list[Any], rows: np.ndarray | None, depth: int, n_lines: int, jsonl: bool = False
) -> Columns | None:
    """Columns from the parsed file: ``parts`` holds its queries, documents and scores, the
    only reference to them (emptied here, so their memory goes as soon as they are encoded).
    The queries are named per line: TREC per row (``rows`` None), JSONL per query, each once,
    ``rows`` the line of each (document, score) row."""
    import pyarrow as pa

    from evalret.data import arrow_kernels as pc

    pool = pa.system_memory_pool()
    queries, held, scores_column = parts[0], [parts[1]], parts[2]
    parts.clear()
    chunks = scores_column.chunks if hasattr(scores_column, "chunks") else [scores_column]
    scores = np.concatenate([arrow_numbers(c) for c in chunks]).astype(np.float64, copy=False)
    del chunks
    del scores_column
    if np.isnan(scores).any() or (jsonl and not np.isfinite(scores).all()):
        return None
    short, doc_names, doc = _encoded(held, pa, pc, pool)
    with ThreadPoolExecutor(1) as sorting:  # long docnos' byte order, sorted beside the rest
        ranks = None if short is not None else sorting.submit(_byte_ranks, doc_names, pc).result
        runs = None if jsonl else _runs(queries, pa, pc)
        if runs is None:
            query = pc.dictionary_encode(queries, memory_pool=pool)
            q, query_names = _codes(query), _dictionary(query)
            q = q if rows is None else q[rows]
            del query
        else:
            q, query_names = runs
        n_query_lines = len(queries)
        del queries
        _give_back(pool)
        if jsonl and (
            len(query_names) != n_query_lines  # a query on two lines
            or any(
                pc.any(pc.match_substring_regex(n, _SPACE_OR_EMPTY)).as_py()
                for n in (query_names, doc_names)
            )
        ):
            return None  # the reference names the line
        try:  # ids not UTF-8 (pyarrow's JSON reader does not check): the reference names the line
            query_ids = _utf8(query_names, pa).to_pylist()
            doc_names = _utf8(doc_names, pa)
        except pa.ArrowInvalid:
            return None
        doc_ids = ArrowNames(doc_names)
        d = _codes(doc) if short is None else short
        del doc, short
        if _repeats(q, d, len(doc_ids)):
            return None
        order = _tie_rule_order(q, scores, d, ranks)
    q, d, scores = q[order], d[order], scores[order]
    offsets = np.searchsorted(q, np.arange(len(query_ids) + 1))
    if int(np.diff(offsets).max(initial=0)) > depth:  # some query past the depth: cut
        keep = np.arange(len(q)) - offsets[q] < depth
        q, d, scores = q[keep], d[keep], scores[keep]
        offsets = np.searchsorted(q, np.arange(len(query_ids) + 1))
    return Columns(query_ids, doc_ids, offsets.astype(np.int64), d, scores, n_lines, doc_names)


def _runs(values: Any, pa: Any, pc: Any) -> tuple[np.ndarray, Any] | None:
    """The code of each of ``values`` (the queries of a TREC run, one per row) and the distinct
    values in the order first met, as ``dictionary_encode`` gives them, when each value's rows
    are together (trec_eval-style runs list each query in one block): found by comparing each
    row with the one before, not by hashing every row. None when some value is in two blocks
    (or there are too many blocks for the comparison to pay)."""
    n = len(values)
    chunks = [c for c in (values.chunks if hasattr(values, "chunks") else [values]) if len(c)]
    if n < 2:
        return None
    bits: list[np.ndarray] = []  # whether each row but the first differs from the one before
    for i, chunk in enumerate(chunks):  # chunk by chunk: comparing shifted columns copies them
        if i:
            bits.append(np.array([chunks[i - 1][-1].as_py() != chunk[0].as_py()], np.uint8))
        differs = pc.not_equal(chunk.slice(1), chunk.slice(0, len(chunk) - 1))
        if len(differs):
            words = np.frombuffer(differs.buffers()[1], np.uint8)
            count = differs.offset + len(differs)
            bits.append(np.unpackbits(words, count=count, bitorder="little")[differs.offset :])
    heads = np.flatnonzero(np.concatenate(bits)) + 1
    if len(heads) * 2 > n:
        return None
    heads = np.concatenate(([0], heads))
    starts = np.cumsum([0, *(len(c) for c in chunks)])
    where = np.searchsorted(starts, heads, side="right") - 1  # each head's chunk
    names = pa.concat_arrays(
        [
            pc.take(chunks[i], _int64_array(heads[where == i] - starts[i], pa))
            for i in np.unique(where).tolist()
        ]
    )
    if len(pc.unique(names)) != len(names):  # a value in two blocks
        return None
    sizes = np.diff(heads, append=n)
    return np.repeat(np.arange(len(heads), dtype=np.int32), sizes), names


def _int64_array(numbers: np.ndarray, pa: Any) -> Any:
    """``numbers`` as a pyarrow int64 array, from its buffer (``pyarrow.array`` imports
    pandas)."""
    numbers = np.ascontiguousarray(numbers, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(numbers), [None, pa.py_buffer(numbers)])


# the low k bytes of a 64-bit number, k = 0 to 8
_LOW_BYTES = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)


def _encoded(held: list[Any], pa: Any, pc: Any, pool: Any) -> tuple[np.ndarray | None, Any, Any]:
    """The column in ``held`` (its only reference, emptied here) interned: (its codes, its
    distinct values in byte order, None) through ``_short_numbers`` where that applies (a code
    is then its value's byte-order rank), the column's bytes let go before its numbers are
    sorted; else (None, its distinct values in the order first met, the column
    dictionary-encoded, whose codes ``_codes`` reads)."""
    column = held.pop()
    numbers = _short_numbers(column)
    if numbers is None:
        encoded = pc.dictionary_encode(column, memory_pool=pool)
        return None, _dictionary(encoded), encoded
    kind = column.type
    del column
    codes, names = _interned(numbers, kind, pa)
    return codes, names, None


def _short_numbers(values: Any) -> np.ndarray | None:
    """``values`` (a binary or string column, chunked or not) as 64-bit numbers, when every
    value is 1 to 8 bytes without a NUL: its bytes, zero-padded, read little-endian (distinct
    values, distinct numbers); None otherwise."""
    chunks = values.chunks if hasattr(values, "chunks") else [values]
    total = sum(len(chunk) for chunk in chunks)
    if not total:
        return None
    keys = np.empty(total, dtype="<u8")
    at = 0
    for chunk in chunks:
        if str(chunk.type) not in ("binary", "string") or chunk.null_count:
            return None
        if not len(chunk):
            continue
        _, offsets_buffer, data_buffer = chunk.buffers()
        offsets = np.frombuffer(offsets_buffer, np.int32, len(chunk) + 1, chunk.offset * 4)
        lengths = np.diff(offsets)
        if int(lengths.min()) < 1 or int(lengths.max()) > 8:
            return None
        raw = np.frombuffer(data_buffer, np.uint8)
        if not bool(raw[offsets[0] : offsets[-1]].all()):  # a NUL byte
            return None
        part = keys[at : at + len(chunk)]
        starts = offsets[:-1]
        # 8 bytes read at every start: in the buffer itself, but for the values that start in
        # its last 7 bytes, read from a zero-padded copy of them
        inside = int(np.searchsorted(starts, len(raw) - 8, side="right"))
        if inside:
            np.take(_words(raw), starts[:inside], out=part[:inside])
        if inside < len(starts):
            first = int(starts[inside])
            tail = np.zeros(len(raw) - first + 8, dtype=np.uint8)
            tail[: len(raw) - first] = raw[first:]
            part[inside:] = _words(tail)[starts[inside:] - first]
        part &= _LOW_BYTES[lengths]
        at += len(chunk)
    return keys


def _words(data: np.ndarray) -> np.ndarray:
    """The 64-bit little-endian number at every byte of ``data`` (uint8, 8 bytes or more) but
    its last 7: a view, not a copy."""
    return np.ndarray((len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))


def _interned(numbers: np.ndarray, kind: Any, pa: Any) -> tuple[np.ndarray, Any]:
    """The code of each of ``numbers`` (``_short_numbers`` of a column of type ``kind``,
    changed here) and the column's distinct values in byte order, the code of a value its rank
    among them: one sort of the numbers byte-swapped, whose first byte is then the most
    significant and whose zero padding sorts a shorter value first, as memcmp order does (no
    value holds a NUL byte). Equal numbers are the same value, so the sort need not be stable."""
    keys = numbers.byteswap(inplace=True)
    order = np.argsort(keys)
    ordered = keys[order]
    new = np.empty(len(ordered), dtype=bool)  # where a value's run of sorted rows begins
    new[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    ranks = np.cumsum(new, dtype=np.int32)
    ranks -= 1
    codes = np.empty(len(keys), dtype=np.int32)
    codes[order] = ranks
    del order, ranks
    return codes, _names_of(ordered[new].byteswap(), kind, pa)


def _names_of(numbers: np.ndarray, kind: Any, pa: Any) -> Any:
    """The values ``_short_numbers`` read as ``numbers``, as an array of type ``kind`` (binary or
    string): each number's low bytes up to its highest byte that is not zero (a value holds no
    NUL)."""
    lengths = np.zeros(len(numbers), dtype=np.int32)
    for k in range(8):
        lengths += numbers > _LOW_BYTES[k]
    table = numbers.astype("<u8").view(np.uint8).reshape(-1, 8)
    data = table[np.arange(8) < lengths[:, None]]
    offsets = np.zeros(len(numbers) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.Array.from_buffers(kind, len(numbers), buffers)


def _give_back(pool: Any) -> None:
    """Return freed memory to the system: pyarrow's pool, and glibc's heap (whose growing mmap
    threshold keeps freed arrays of a few MB; ``malloc_trim``, where there is one)."""
    pool.release_unused()
    with contextlib.suppress(OSError, AttributeError):  # not glibc
        ctypes.CDLL(None).malloc_trim(0)


_NUMPY = {"double": np.float64, "int32": np.int32, "int64": np.int64, "uint64": np.uint64}


def arrow_numbers(array: Any) -> np.ndarray:
    """A pyarrow array of numbers without nulls as numpy, read from its buffer (pyarrow's own
    ``to_numpy`` imports pandas, a good part of a second at start-up)."""
    dtype = np.dtype(_NUMPY[str(array.type)])
    if not len(array):
        return np.empty(0, dtype=dtype)
    offset = array.offset * dtype.itemsize
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array), offset=offset)


def _utf8(names: Any, pa: Any) -> Any:
    """``names`` as a string array whose every value is checked to be UTF-8 (ArrowInvalid if
    not): a binary array is cast, a string array (which pyarrow's JSON reader fills unchecked)
    validated."""
    from evalret.data import arrow_kernels as pc

    strings = pc.cast(names, pa.string())
    strings.validate(full=True)
    return strings


def _dictionary(encoded: Any) -> Any:
    """The distinct values of a dictionary-encoded array or chunked array."""
    return (encoded.chunk(0) if hasattr(encoded, "chunk") else encoded).dictionary


def _codes(encoded: Any) -> np.ndarray:
    """The int32 codes of a dictionary-encoded array or chunked array."""
    chunks = encoded.chunks if hasattr(encoded, "chunks") else [encoded]
    return np.concatenate([arrow_numbers(c.indices) for c in chunks]).astype(np.int32, copy=False)


def _repeats(q: np.ndarray, d: np.ndarray, n_docs: int) -> bool:
    """Whether some (query, document) pair is on two lines: one sort of (query, document) keys,
    32-bit where every key fits (numpy sorts those faster)."""
    if not len(q):
        return False
    fits = (int(q.max()) + 1) * max(n_docs, 1) < 1 << 31
    keys = q.astype(np.int32 if fits else np.int64)
    np.multiply(keys, n_docs, out=keys)
    np.add(keys, d, out=keys)
    keys.sort()
    return bool((keys[1:] == keys[:-1]).any())


def _byte_ranks(names: Any, pc: Any) -> np.ndarray:
    """Each distinct docno's rank in byte order, sorted by pyarrow (which sorts binary values
    as memcmp)."""
    order = arrow_numbers(pc.array_sort_indices(names))
    ranks = np.empty(len(order), dtype=np.int32)
    ranks[order] = np.arange(len(order), dtype=np.int32)
    return ranks


def _tie_rule_order(
    q: np.ndarray, scores: np.ndarray, d: np.ndarray, ranks: Callable[[], np.ndarray] | None
) -> np.ndarray:
    """The rows in tie-rule order: query (codes are in first-appearance order), score
    descending, docno descending; ``ranks()`` gives the docnos' byte-order ranks, read only
    when two rows of one query tie on score (None: the codes ``d`` are those ranks). Scores
    compare as C compares them (``-0.0`` equals ``0.0``): numpy's comparisons and sorts do the
    same."""
    if not len(q):  # queries without a result only
        return np.arange(0)
    new_query = q[1:] != q[:-1]
    heads = q[np.concatenate(([0], np.flatnonzero(new_query) + 1))]  # each run of rows' query
    descending = scores[1:] <= scores[:-1]
    descending |= new_query
    if len(np.unique(heads)) == len(heads) and bool(descending.all()):
        # each query's rows together, by descending score: only ties to break
        new_group = np.not_equal(scores[1:], scores[:-1], out=descending)
        new_group |= new_query
        if new_group.all():
            return np.arange(len(q))  # already in order
        group = np.zeros(len(q), dtype=np.int64)
        np.cumsum(new_group, out=group[1:])
        del new_group, new_query, descending
        n_docs = int(d.max()) + 1
        group *= n_docs
        group += n_docs - 1
        group -= d if ranks is None else ranks()[d]  # distinct: a query has each document once
        return _order_of(group, len(q) * n_docs)
    # any other order: one sort of (query, score's rank, docno's rank descending) keys
    _, level_rank = np.unique(-scores, return_inverse=True)
    n_levels, n_docs = int(level_rank.max()) + 1, int(d.max()) + 1
    doc_rank = d if ranks is None else ranks()[d]
    if (int(q.max()) + 1) * n_levels * n_docs >= 1 << 62:  # too many for one int64 key
        return np.lexsort((-doc_rank, -scores, q))
    key = q.astype(np.int64)
    key *= n_levels
    key += level_rank.reshape(-1)
    key *= n_docs
    key += n_docs - 1 - doc_rank
    return _order_of(key, (int(q.max()) + 1) * n_levels * n_docs)


def _order_of(keys: np.ndarray, bound: int) -> np.ndarray:
    """The rows in order of ``keys`` (distinct, from 0 to ``bound`` - 1; changed here): the
    keys sorted with each row's index in their low bits, which numpy sorts faster than it
    sorts indices by keys; ``argsort`` where the two do not fit in 63 bits."""
    bits = max(len(keys) - 1, 1).bit_length()
    if (bound - 1).bit_length() + bits > 63:
        return np.argsort(keys)
    keys <<= bits
    keys |= np.arange(len(keys), dtype=np.int64)
    keys.sort()
    keys &= (1 << bits) - 1
    return keys
