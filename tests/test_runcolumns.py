"""The columnar TREC reader (data.runcolumns) against the line reader it must equal.

``read_run`` answers from the columnar reader when that reader proves it reads the file as
trec_eval does, else from the line reader (``read_run_lines``, the reference, itself checked
against trec_eval's C reader in test_fuzz_readers). Here: on any file, ``read_run`` equals the
line reader, result for result and refusal for refusal; the columnar reader does answer for the
plain files that are the common case, and declines each feature it cannot prove; a gzipped run
reads as its content and hashes as its bytes.
"""

from __future__ import annotations

import gzip
import hashlib
import tempfile
from itertools import pairwise
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalret.data import early_runs
from evalret.data.runcolumns import (
    _SPACE_OR_EMPTY,
    ArrowNames,
    _byte_ranks,
    _interned,
    _order_of,
    _repeats,
    _runs,
    _short_numbers,
    read_jsonl_columns,
    read_trec_columns,
)
from evalret.data.runfile import MAX_LINE_BYTES, RunFile, read_run, read_run_lines
from evalret.errors import InputError
from test_fuzz_readers import FUZZ, run_bytes

LIMIT = MAX_LINE_BYTES["trec"]


def _outcome(path: Path, depth: int, reader: object, fmt: str = "trec") -> object:
    """What ``reader`` makes of the file: its RunFile as plain values, or its refusal."""
    try:
        run: RunFile = reader(path, fmt, depth)  # type: ignore[operator]
    except InputError as e:
        return ("refused", e.summary, [(p.message, p.line, p.code) for p in e.problems])
    return (run.rankings, list(run.rankings), run.sha256, run.n_lines, run.scores_partial)


def _columns(data: bytes, depth: int = 1000, split: int | None = None) -> object:
    """The columnar reader on ``data`` given in two chunks cut at ``split``."""
    cut = len(data) // 2 if split is None else split
    return read_trec_columns([data[:cut], data[cut:]], depth, LIMIT)


@st.composite
def plain_run(draw: st.DrawFn) -> bytes:
    """A run as trec_eval-style tools write it: single spaces, many tied scores (-0.0 among
    them), queries in any order, sometimes interleaved, sometimes CRLF."""
    qids = draw(st.lists(st.sampled_from(["q1", "q2", "q10", "é"]), min_size=1, max_size=3))
    lines = []
    for qid in dict.fromkeys(qids):
        docs = draw(st.lists(st.sampled_from(["a", "b", "B", "ab", "d10", "d9", "é"]), unique=True))
        for rank, doc in enumerate(docs, 1):
            score = draw(st.sampled_from(["1", "0.5", "0.50", "-0", "0", "2e-1", ".5", "inf"]))
            lines.append(f"{qid} Q0 {doc} {rank} {score} tag")
    if draw(st.booleans()):
        lines = draw(st.permutations(lines))
    end = draw(st.sampled_from(["\n", "\r\n"]))
    data = "".join(line + end for line in lines).encode()
    return data[: -len(end)] if data and draw(st.booleans()) else data


@FUZZ
@given(data=run_bytes(), depth=st.integers(1, 4), gz=st.booleans(), early=st.booleans())
def test_read_run_equals_the_line_reader_on_any_file(
    data: bytes, depth: int, gz: bool, early: bool
) -> None:
    """Whatever the bytes (trec_eval's tolerated variations and hostile ones), read_run gives
    what the line reader gives: the same rankings, digest and counts, or the same refusal; the
    file read early (data.early_runs, as `evalret score` reads it) or not."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "r.trec"
        path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
        if early:
            early_runs.start([str(path)])
        assert _outcome(path, depth, read_run) == _outcome(path, depth, read_run_lines)


@FUZZ
@given(data=plain_run(), depth=st.integers(1, 8), split=st.integers(0, 400))
def test_the_columnar_reader_answers_for_plain_runs(data: bytes, depth: int, split: int) -> None:
    """A plain run is read by the columnar reader, wherever the chunks split it, and equals
    the line reader's reading: ties (-0.0 with 0.0) broken by docno descending in byte order."""
    got = _columns(data, depth, min(split, len(data)))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "r.trec"
        path.write_bytes(data)
        want = read_run_lines(path, "trec", depth) if data.strip() else None
    if want is None:
        assert got is None
        return
    assert got is not None
    rankings = RunFile(
        got.query_ids, got.doc_ids, got.offsets, got.docs, got.scores, "", got.n_lines
    ).rankings
    assert rankings == want.rankings and list(rankings) == list(want.rankings)
    assert got.n_lines == want.n_lines


@FUZZ
@given(data=plain_run(), size=st.integers(1, 40))
def test_blocks_are_the_same_lines_however_the_chunks_cut_them(data: bytes, size: int) -> None:
    """Chunks of any size, a line spread over several of them, read as two halves do; and a
    line cut by a chunk boundary is checked as a whole line (a comment, a leading space)."""
    chunks = [data[i : i + size] for i in range(0, len(data), size)]
    got, want = read_trec_columns(chunks, 8, LIMIT), _columns(data, 8)
    if want is None:
        assert got is None
        return
    assert got is not None
    assert got.doc_ids == want.doc_ids and got.query_ids == want.query_ids
    assert got.docs.tolist() == want.docs.tolist() and got.n_lines == want.n_lines
    for bad in (b"# x y z w v\n", b" q Q0 a 1 1 t\n", b"q Q0 a 1 1 t \n", b"q Q0\tb 1 1 t\n"):
        cut = data.rfind(b"\n", 0, len(data) - 1) + 1  # the last line's start
        if not cut:
            continue
        hostile = data[:cut] + bad + data[cut:]
        pieces = [hostile[i : i + size] for i in range(0, len(hostile), size)]
        assert read_trec_columns(pieces, 8, LIMIT) is None


@FUZZ
@given(
    names=st.lists(st.binary(min_size=0, max_size=10), unique=True),
    sliced=st.booleans(),
)
def test_docnos_are_ranked_in_byte_order(names: list[bytes], sliced: bool) -> None:
    """The docnos' byte-order ranks (pyarrow's sort, for names ``_short_numbers`` does not
    read) are the ranks of Python's bytes order, NUL bytes and long names too."""
    array = pa.array([b"x", *names], pa.binary())
    array = array.slice(1) if sliced else pa.array(names, pa.binary())
    want = {name: rank for rank, name in enumerate(sorted(names))}
    assert _byte_ranks(array, pc).tolist() == [want[name] for name in names]
    strings = [n for n in names if _is_utf8(n)]
    text = pa.array([n.decode() for n in strings], pa.string())
    order = {name: rank for rank, name in enumerate(sorted(strings))}
    assert _byte_ranks(text, pc).tolist() == [order[name] for name in strings]


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True


@FUZZ
@given(
    blocks=st.lists(
        st.tuples(st.sampled_from([b"q1", b"q2", b"q10", b"\xc3\xa9"]), st.integers(1, 4))
    ),
    cuts=st.lists(st.integers(0, 40), max_size=3),
)
def test_query_blocks_are_coded_as_dictionary_encode_codes_them(
    blocks: list[tuple[bytes, int]], cuts: list[int]
) -> None:
    """Queries each in one block of rows get the codes and names hashing gives them (in the
    order first met), however the column is chunked; a query in two blocks gets None."""
    rows = [name for name, size in blocks for _ in range(size)]
    edges = sorted({min(c, len(rows)) for c in cuts} | {0, len(rows)})
    column = pa.chunked_array(
        [pa.array(rows[a:b], pa.binary()) for a, b in pairwise(edges)]
        or [pa.array([], pa.binary())],
        pa.binary(),
    )
    got = _runs(column, pa, pc)
    heads = [name for i, name in enumerate(rows) if i == 0 or rows[i - 1] != name]
    if len(rows) < 2 or len(set(heads)) != len(heads) or 2 * (len(heads) - 1) > len(rows):
        assert got is None
        return
    assert got is not None
    codes, names = got
    assert names.to_pylist() == list(dict.fromkeys(rows))
    assert codes.tolist() == [heads.index(name) for name in rows]


@FUZZ
@given(
    values=st.lists(st.sampled_from([b"a", b"ab", b"d10", b"d9", b"12345678", b"\xc3\xa9", b"z"])),
    odd=st.sampled_from([None, b"", b"123456789", b"a\x00b"]),
    cuts=st.lists(st.integers(0, 40), max_size=3),
    string=st.booleans(),
    skip=st.integers(0, 2),
)
def test_short_ids_are_coded_by_their_rank_in_byte_order(
    values: list[bytes], odd: bytes | None, cuts: list[int], string: bool, skip: int
) -> None:
    """Ids of 1 to 8 bytes read as 64-bit numbers are coded by their rank among the distinct
    ids in byte order (Python's bytes order), and named in that order, however the column is
    chunked or sliced; an empty id, a longer one or one holding a NUL leaves them to pyarrow's
    dictionary_encode (None)."""
    if odd is not None:
        values = [*values, odd]
    kind = pa.string() if string else pa.binary()
    values = [v for v in values if not string or _is_utf8(v)]
    edges = sorted({min(c, len(values)) for c in cuts} | {0, len(values)})
    column = pa.chunked_array(
        [pa.array(values[a:b], pa.binary()).cast(kind) for a, b in pairwise(edges)], kind
    )
    column, values = column.slice(min(skip, len(values))), values[skip:]  # (chunks with offsets)
    numbers = _short_numbers(column)
    if not values or (odd is not None and odd in values):
        assert numbers is None
        return
    assert numbers is not None
    codes, names = _interned(numbers, kind, pa)
    distinct = sorted(set(values))
    assert names.type == kind and names.cast(pa.binary()).to_pylist() == distinct
    assert codes.dtype == np.int32 and codes.tolist() == [distinct.index(v) for v in values]


@FUZZ
@given(keys=st.lists(st.integers(0, 2**40), unique=True), wide=st.booleans())
def test_rows_are_ordered_by_their_keys(keys: list[int], wide: bool) -> None:
    """Distinct keys put the rows in argsort's order, whether the row indices fit beside the
    keys in 63 bits or not."""
    bound = 2**62 if wide else 2**40 + 1
    got = _order_of(np.array(keys, dtype=np.int64), bound)
    assert got.tolist() == np.argsort(np.array(keys, dtype=np.int64), kind="stable").tolist()


def test_ties_and_negative_zero_follow_the_tie_rule() -> None:
    """Equal scores (0.0 and -0.0 are equal in C) go docno descending, in byte order."""
    data = b"q Q0 a 1 0 t\nq Q0 b 2 -0 t\nq Q0 B 3 0.0 t\nq Q0 c 4 1 t\n"
    got = _columns(data)
    assert got is not None
    names = [got.doc_ids[d] for d in got.docs]
    assert names == ["c", "b", "a", "B"]
    assert [str(s) for s in got.scores] == ["1.0", "-0.0", "0.0", "0.0"]


@pytest.mark.parametrize(
    "data",
    [
        b"q Q0 a 1 1 t\tx\n",  # a tab: trec_eval splits on it
        b"q Q0  a 1 1 t\n",  # two spaces: an empty field to pyarrow
        b" q Q0 a 1 1 t\n",  # a leading space
        b"q Q0 a 1 1 t \n",  # a trailing space
        b"# comment a b c d\nq Q0 a 1 1 t\n",  # a comment line
        b"q Q0 a 1 1 t\rq Q0 b 2 1 t\n",  # a carriage return inside a line
        b"q Q0 a 1 0x1p0 t\n",  # hexadecimal: strtod reads it, pyarrow does not
        b"q Q0 a 1 1_0 t\n",  # read in part by atof
        b"q Q0 a 1 nan t\n",  # NaN: refused by the line reader
        b"q Q0 a 1 1 t\nq Q0 a 2 0 t\n",  # a repeated document
        b"q Q0 \xff 1 1 t\n",  # not UTF-8
        b"q Q0 a 1 1 t extra\n",  # a seventh column: trec_eval ignores it
        b"q Q0 a 1 1 t\0\n",  # NUL
        b"\n\n",  # no ranking line
    ],
)
def test_the_columnar_reader_declines_what_it_cannot_prove(data: bytes) -> None:
    """Each feature outside the plain form sends the file to the line reader."""
    assert _columns(data) is None


def test_an_over_long_line_is_left_to_the_line_reader() -> None:
    """A line past the reader's bound declines, at the end of the file or inside it."""
    long = b"q Q0 a 1 1 " + b"t" * LIMIT + b"\n"
    assert _columns(long) is None
    assert _columns(b"q Q0 b 1 1 t\n" + long + b"q Q0 c 1 1 t\n") is None


@pytest.mark.parametrize("size", [1, 7, 64, 1000])
def test_a_line_at_the_bound_is_read_and_one_past_it_is_not(size: int) -> None:
    """The bound counts a line's newline; it holds wherever the chunks cut the file (the
    reader measures lines only where some stretch of half the bound holds no newline)."""
    lines = [f"q Q0 d{i} 1 1 t\n".encode() for i in range(10)]
    for extra, answers in ((0, True), (1, False)):
        line = b"q Q0 b 1 1 " + b"t" * (40 - 12 + extra) + b"\n"
        assert len(line) == 40 + extra
        data = b"".join(lines[:5]) + line + b"".join(lines[5:])
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        assert (read_trec_columns(chunks, 10, 40) is not None) is answers


def test_a_gzipped_run_reads_as_its_content_and_hashes_as_its_bytes(tmp_path: Path) -> None:
    """``.gz`` or not, a run starting with gzip's magic bytes is read through gzip (by both
    readers); its digest is of the file on disk."""
    rng = np.random.default_rng(0)
    lines = [
        f"q{q} Q0 d{d} 1 {rng.integers(0, 5) / 4} t\n"
        for q in range(5)
        for d in rng.choice(50, 20, replace=False)
    ]
    data = "".join(lines).encode()
    plain, packed = tmp_path / "r.trec", tmp_path / "r.trec.gz"
    plain.write_bytes(data)
    packed.write_bytes(gzip.compress(data, mtime=0))
    got, want = read_run(packed, "trec", 7), read_run(plain, "trec", 7)
    assert got.rankings == want.rankings == read_run_lines(packed, "trec", 7).rankings
    assert got.sha256 == hashlib.sha256(packed.read_bytes()).hexdigest() != want.sha256


def test_a_corrupt_gzip_file_is_an_input_error(tmp_path: Path) -> None:
    """A file that starts as gzip but is not one is refused with the file named."""
    path = tmp_path / "r.trec.gz"
    path.write_bytes(gzip.compress(b"q Q0 a 1 1 t\n" * 100)[:30])
    with pytest.raises(InputError, match=str(path)):
        read_run(path, "trec", 10)


JSONL_LINES = [
    '{"query_id": "q1", "results": [{"doc_id": "a", "score": 1}, {"doc_id": "b", "score": 1.0}]}',
    '{"query_id": "q2", "results": [{"doc_id": "b", "score": -0.0}, {"doc_id": "a", "score": 0}]}',
    '{"query_id": "q3", "results": []}',
    '  {"results": [{"score": 2e-1, "doc_id": "é"}], "query_id": "q4"}  ',
    '{"query_id": "q1", "results": [{"doc_id": "c", "score": 3}]}',  # q1 again
    '{"query_id": "q5", "results": [{"doc_id": "a", "score": 1}, {"doc_id": "a", "score": 2}]}',
    '{"query_id": "q6", "results": [{"doc_id": "a", "score": NaN}]}',
    '{"query_id": "q6", "results": [{"doc_id": "a", "score": 1e400}]}',
    '{"query_id": "q6", "results": [{"doc_id": "a", "score": true}]}',
    '{"query_id": "q6", "results": [{"doc_id": "a", "score": "1"}]}',
    '{"query_id": "q6", "results": [{"doc_id": "a"}]}',
    '{"query_id": "q6", "results": [{"doc_id": "a", "score": 1, "extra": 1}]}',
    '{"query_id": "q6", "results": [{"doc_id": "a", "doc_id": "b", "score": 1}]}',
    '{"query_id": "q6", "results": [{"doc\\u005fid": "a", "doc_id": "b", "score": 1}]}',
    '{"query_id": "q6", "results": [{"doc_id": "\\ud800", "score": 1}]}',
    '{"query_id": "q 7", "results": []}',
    '{"query_id": "", "results": []}',
    '{"query_id": "q8", "results": [{"doc_id": "a\\u00a0b", "score": 1}]}',
    '{"query_id": "q8", "results": [{"doc_id": "a\u2003b", "score": 1}]}',
    '{"query_id": "q9", "results": null}',
    '{"query_id": "q9"}',
    '{"query_id": 9, "results": []}',
    '{"query_id": "q10", "results": []}{"query_id": "q11", "results": []}',
    "[1, 2]",
    '{"query_id": "q12", "results": [{"doc_id": "a", "score": 12345678901234567890123}]}',
    '{"query_id": "q13", "results": [{"doc_id": "a", "score": 1}],}',
    "",
    "   ",
    "\t",
    "\u00a0",
]


@st.composite
def jsonl_bytes(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(st.sampled_from(JSONL_LINES), max_size=6))
    ends = [draw(st.sampled_from(["\n", "\r\n"])) for _ in lines]
    data = "".join(line + end for line, end in zip(lines, ends, strict=True)).encode()
    if draw(st.booleans()):
        data = data.replace(b'"a"', b'"\xff"', 1)  # not UTF-8
    return data[:-1] if data and draw(st.booleans()) else data


@FUZZ
@given(data=jsonl_bytes(), depth=st.integers(1, 3), gz=st.booleans())
def test_read_run_equals_the_line_reader_on_any_jsonl(data: bytes, depth: int, gz: bool) -> None:
    """A JSONL run of valid and hostile lines: read_run gives what the line reader gives."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "r.jsonl"
        path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
        got = _outcome(path, depth, read_run, "jsonl")
        assert got == _outcome(path, depth, read_run_lines, "jsonl")


def test_the_columnar_jsonl_reader_answers_for_a_plain_run() -> None:
    """A JSONL run written as json.dumps writes ASCII ids is read by the columnar reader,
    queries without results kept, ties broken by the tie rule."""
    lines = [JSONL_LINES[0], JSONL_LINES[2], JSONL_LINES[1]]
    data = "\n".join(lines).encode()
    got = read_jsonl_columns([data], 10, MAX_LINE_BYTES["jsonl"])
    assert got is not None
    assert got.query_ids == ["q1", "q3", "q2"]
    assert got.offsets.tolist() == [0, 2, 2, 4]
    assert [got.doc_ids[d] for d in got.docs] == ["b", "a", "b", "a"]


def test_the_id_pattern_is_what_str_split_splits_on() -> None:
    """The columnar JSONL reader refuses an id with a character str.isspace() names, as the
    line reader (``id.split() != [id]``) does, and no other."""
    import pyarrow as pa
    import pyarrow.compute as pc

    spaces = [chr(c) for c in range(0x110000) if chr(c).isspace()]
    others = [chr(c) for c in range(1, 0x3100) if not chr(c).isspace() and not 0xD800 <= c < 0xE000]
    assert all(
        pc.match_substring_regex(pa.array([f"a{c}b" for c in spaces]), _SPACE_OR_EMPTY).to_pylist()
    )
    assert not pc.any(pc.match_substring_regex(pa.array(others), _SPACE_OR_EMPTY)).as_py()
    assert pc.match_substring_regex(pa.array([""]), _SPACE_OR_EMPTY).to_pylist() == [True]


def test_a_jsonl_run_of_queries_without_results() -> None:
    """Queries given with no result at all: each kept, with an empty ranking."""
    data = b'{"query_id": "q3", "results": []}\n{"query_id": "q1", "results": []}\n'
    got = read_jsonl_columns([data], 10, MAX_LINE_BYTES["jsonl"])
    assert got is not None
    assert got.query_ids == ["q3", "q1"] and got.offsets.tolist() == [0, 0, 0]
    assert len(got.docs) == 0 and got.doc_ids == []


@pytest.mark.parametrize(
    "doc",
    [b'"\xff"', b'"\xed\xa0\x80"', b'"\xc3"'],  # a stray byte, an encoded surrogate, cut short
)
def test_jsonl_ids_that_are_not_utf8_go_to_the_line_reader(tmp_path: Path, doc: bytes) -> None:
    """pyarrow's JSON reader fills its strings without checking UTF-8: the columnar reader
    checks the ids and declines, and read_run refuses at the line as the line reader does."""
    data = b'{"query_id": "q", "results": [{"doc_id": ' + doc + b', "score": 1}]}\n'
    assert read_jsonl_columns([data], 10, MAX_LINE_BYTES["jsonl"]) is None
    path = tmp_path / "r.jsonl"
    path.write_bytes(data)
    assert _outcome(path, 10, read_run, "jsonl") == _outcome(path, 10, read_run_lines, "jsonl")
    with pytest.raises(InputError):
        read_run(path, "jsonl", 10)


def test_arrow_names_read_as_the_names_they_hold() -> None:
    names = ArrowNames(pa.array(["d3", "é", "d1", "x"], pa.string()))
    assert len(names) == 4 and names[1] == "é" and names[-1] == "x" and names[1:3] == ["é", "d1"]
    assert list(names) == ["d3", "é", "d1", "x"]
    picked = names.rows(np.array([3, 0, 0, 2]))
    assert len(picked) == 4 and list(picked) == ["x", "d3", "d3", "d1"]
    assert list(picked.rows(np.array([2, 0]))) == ["d3", "x"]  # rows of rows: still unmade
    for equal in (("x", "d3", "d3", "d1"), ["x", "d3", "d3", "d1"]):  # both ways round
        assert picked == equal and equal == picked
    for other in (("x", "d3", "d3"), ("x", "d3", "d3", "d2"), "xd3d3d1", None):
        assert picked != other and other != picked
    assert ArrowNames(pa.array([], pa.string())) == ()
    with pytest.raises(TypeError):
        hash(picked)


def test_arrow_names_pick_and_give_their_bytes_without_making_every_string() -> None:
    names = ArrowNames(pa.array(["d3", "é", "d1", "x"], pa.string()).slice(1))  # é d1 x
    picked = names.rows(np.array([2, 0]))  # x é
    assert picked.pick([1, 0, 1]) == ["é", "x", "é"] and "_strings" not in vars(picked)
    data, sizes = picked.utf8()
    assert data.tobytes() == "xé".encode() and sizes.tolist() == [1, 2]
    data, sizes = names.utf8()
    assert data.tobytes() == "éd1x".encode() and sizes.tolist() == [2, 2, 1]
    assert list(picked) == ["x", "é"] and picked.pick([1]) == ["é"]  # made: read from them
    empty = ArrowNames(pa.array([], pa.string()))
    assert empty.pick([]) == [] and [a.tolist() for a in empty.utf8()] == [[], []]


@FUZZ
@given(pairs=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 9))), wide=st.booleans())
def test_a_repeated_pair_is_found_with_keys_of_either_width(
    pairs: list[tuple[int, int]], wide: bool
) -> None:
    """(query, document) keys of 32 bits where they fit, 64 where not (``n_docs`` past 2^31 /
    queries): a pair on two lines is found either way."""
    q = np.array([p[0] for p in pairs], dtype=np.int32)
    d = np.array([p[1] for p in pairs], dtype=np.int32)
    assert _repeats(q, d, 2**30 if wide else 10) == (len(set(pairs)) < len(pairs))
