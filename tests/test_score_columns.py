"""`evalret score`'s column-wise paths give what the row-by-row code they replaced gave.

Both references below are the earlier implementations, kept here verbatim in substance: a run's
rankings mapped to a SearchResult one (query, rank) at a time, and the TREC run file written one
f-string line at a time. Random data covers what the vectorised code must get right: documents
the corpus lacks (their extra ids numbered in the order first met), queries missing from the run
and queries the golden set does not evaluate, depth cuts, ties, -0.0, tiny and huge floats,
infinities, empty ranks (-1) and extra documents. Hypothesis draws it (the number of examples
is the profile's: tests/conftest.py).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalret.core.ranking import SearchResult, empty_result
from evalret.data.goldenset import GoldenSet
from evalret.data.runcolumns import ArrowNames
from evalret.data.runfile import RunFile, columns
from evalret.engines.retrievers.external import (
    Alignment,
    columns_search_result,
    to_search_result,
)
from evalret.report.trec import trec_run


def mapping_search_result(
    ranked: Mapping[str, Sequence[tuple[str, float]]],
    query_ids: Sequence[str],
    doc_ids: Sequence[str],
    depth: int,
) -> tuple[SearchResult, Alignment]:
    """The row-by-row mapping path (before #26)."""
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
    return SearchResult(ids=out.ids, scores=out.scores, extra_docs=tuple(extra)), alignment


def line_by_line_trec_run(golden: GoldenSet, ranking: SearchResult, tag: str) -> str:
    """The f-string writer (before #26)."""
    lines = []
    for qi, query_id in enumerate(golden.query_ids):
        for rank, (di, score) in enumerate(zip(ranking.ids[qi], ranking.scores[qi], strict=True)):
            if di < 0:
                break
            name = ranking.doc_name(di, golden.doc_ids)
            lines.append(f"{query_id} Q0 {name} {rank + 1} {float(score)!r} {tag}")
    return "\n".join(lines) + "\n"


def _random_run(rng: random.Random) -> tuple[dict[str, list[tuple[str, float]]], list[str]]:
    """Rankings over corpus documents and unknown ones (best first, each document once per
    query), and the evaluated queries (some not ranked; some ranked queries not among them)."""
    corpus = [f"d{i}" for i in range(rng.randint(1, 40))]
    unknown = [f"x{i}" for i in range(rng.randint(0, 30))]
    queries = [f"q{i}" for i in range(rng.randint(1, 25))]
    ranked = {}
    if rng.random() < 0.3:  # the evaluated queries in their order, some left out: the run's
        chosen = [q for q in queries if rng.random() < 0.9]  # rows are the kept rows in order
    else:
        chosen = rng.sample([*queries, "u1", "u2", "u3"], rng.randint(0, len(queries) + 3))
    for q in chosen:
        docs = rng.sample(corpus + unknown, rng.randint(0, min(30, len(corpus) + len(unknown))))
        ranked[q] = [(d, rng.choice([0.5, 1.0, rng.random()])) for d in docs]
    return ranked, queries


def _as_run_file(ranked: dict[str, list[tuple[str, float]]], arrow: bool = False) -> RunFile:
    """``ranked`` as the RunFile a reader gives: the line reader's, or with ``arrow`` the
    columnar reader's (its names as a pyarrow array too, which the alignment looks up)."""
    doc_ids, offsets, docs, scores = columns(ranked)
    if not arrow:
        return RunFile(list(ranked), doc_ids, offsets, docs, scores, "", 0)
    names = pa.array(doc_ids, pa.string())
    return RunFile(list(ranked), ArrowNames(names), offsets, docs, scores, "", 0, doc_names=names)


# a random.Random whose every draw Hypothesis makes (and shrinks): the random data below
RANDOMS = st.randoms(use_true_random=False)


@given(RANDOMS)
def test_columns_search_result_matches_the_mapping_path(rng: random.Random) -> None:
    ranked, queries = _random_run(rng)
    corpus = [f"d{i}" for i in range(40)][: rng.randint(1, 40)]
    depth = rng.randint(1, 35)
    want, want_alignment = mapping_search_result(ranked, queries, corpus, depth)
    runs = [_as_run_file(ranked), _as_run_file(ranked, arrow=True)]
    for (got, alignment), run in zip(
        (
            *(columns_search_result(run, queries, corpus, depth) for run in runs),
            to_search_result(ranked, queries, corpus, depth),  # the Python retriever's entry
        ),
        [*runs, None],
        strict=True,
    ):
        assert run is None or not np.shares_memory(got.scores, run.scores)  # never a view
        np.testing.assert_array_equal(got.ids, want.ids)
        np.testing.assert_array_equal(got.scores, want.scores)
        assert got.ids.dtype == want.ids.dtype and got.scores.dtype == want.scores.dtype
        assert got.extra_docs == want.extra_docs
        assert alignment == want_alignment


@pytest.mark.parametrize("arrow", [False, True])
def test_a_run_of_every_query_in_order_to_the_depth_is_kept_as_it_is(arrow: bool) -> None:
    """The evaluated queries in order, each ranked to the depth: the run's rows are the result's
    (read through a slice), its scores copied, never the run's own array."""
    ranked = {f"q{i}": [(f"d{(i + j) % 7}", 1.0 - j / 8) for j in range(4)] for i in range(5)}
    run = _as_run_file(ranked, arrow=arrow)
    corpus = ["d1", "d2", "d3"]
    got, alignment = columns_search_result(run, list(ranked), corpus, 4)
    want, want_alignment = mapping_search_result(ranked, list(ranked), corpus, 4)
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_array_equal(got.scores, want.scores)
    assert got.extra_docs == want.extra_docs and alignment == want_alignment
    assert not np.shares_memory(got.scores, run.scores)


@pytest.mark.parametrize(
    "corpus",
    [
        ["é", "d1", "日本", "a b"],  # not ASCII
        ["d1", "\ud800", "é"],  # a lone surrogate, which UTF-8 cannot hold: looked up in a dict
        [],
    ],
)
def test_the_alignment_in_pyarrow_matches_the_dict(corpus: list[str]) -> None:
    """A run carrying its names as a pyarrow array is aligned as one without: the same ids,
    extra documents (in the order first met) and counts, whatever the names."""
    ranked = {
        "q1": [("日本", 3.0), ("x", 2.0), ("é", 1.0), ("y", 0.5)],
        "q2": [("y", 1.0), ("d1", 0.5), ("z", 0.0)],
        "q9": [("d1", 1.0)],
    }
    queries = ["q2", "q1", "q3"]
    want = columns_search_result(_as_run_file(ranked), queries, corpus, 3)
    got = columns_search_result(_as_run_file(ranked, arrow=True), queries, corpus, 3)
    np.testing.assert_array_equal(got[0].ids, want[0].ids)
    np.testing.assert_array_equal(got[0].scores, want[0].scores)
    assert got[0].extra_docs == want[0].extra_docs and got[1] == want[1]


def _golden(doc_ids: list[str], query_ids: list[str]) -> GoldenSet:
    return GoldenSet(
        source="t",
        format="trec",
        doc_ids=doc_ids,
        doc_texts=[""] * len(doc_ids),
        query_ids=query_ids,
        query_texts=[""] * len(query_ids),
        qrels={},
    )


_ODD_SCORES = [
    0.0,
    -0.0,
    1e-300,
    -5e-324,
    1e300,
    1.7976931348623157e308,
    np.inf,
    -np.inf,
    1e16,
    1e-5,
    1e-4,
    2.5e15,
    0.1,
    1 / 3,
    3.0,
    -2.0,
    123456789.125,
]


def _random_ranking(rng: random.Random, n_docs: int, n_queries: int) -> SearchResult:
    depth = rng.randrange(12)
    n_extra = rng.randrange(6)

    def grid(draw: Callable[[], float]) -> np.ndarray:
        cells = [[draw() for _ in range(depth)] for _ in range(n_queries)]
        return np.array(cells, dtype=np.float64).reshape(n_queries, depth)

    ids = np.full((n_queries, depth), -1, dtype=np.int64)
    if n_docs + n_extra:
        ids = grid(lambda: rng.randrange(n_docs + n_extra)).astype(np.int64)
    kind = rng.randrange(3)
    with np.errstate(over="ignore"):  # Hypothesis's gauss draws extremes too: they become inf
        if kind == 0:  # ties and the odd floats
            scores = grid(lambda: rng.choice(_ODD_SCORES))
        elif kind == 1:  # mostly distinct
            scores = grid(lambda: rng.gauss(0, 1)) * 10.0 ** rng.randrange(-8, 8)
        else:  # float32 scores promoted, as a dense index makes them
            scores = grid(lambda: rng.gauss(0, 1)).astype(np.float32).astype(np.float64)
    for q in range(n_queries):  # -1 padding past a random length, and a stray -1 sometimes
        cut = rng.randrange(depth + 1)
        ids[q, cut:] = -1
        if depth and rng.random() < 0.1:
            ids[q, rng.randrange(depth)] = -1
    extra = tuple(f"extra-{i}" if i % 3 else f"éxtra-{i}" for i in range(n_extra))
    return SearchResult(ids=ids, scores=scores, extra_docs=_maybe_arrow(rng, extra))


def _maybe_arrow(rng: random.Random, names: tuple[str, ...]) -> Sequence[str]:
    """``names`` as they are, or as a run read as columns holds them (ArrowNames): the whole
    array, a slice of a longer one, or rows picked from a longer, sliced one."""
    kind = rng.randrange(4)
    if kind == 0:
        return names
    if kind == 1:
        return ArrowNames(pa.array(names, pa.string()))
    if kind == 2:  # a slice: its values start past the buffers' start
        return ArrowNames(pa.array(["x0", *names], pa.string()).slice(1))
    pool = ["x0", *reversed(names), "x1"]  # names[i] is pool[len(names) - i]
    rows = np.arange(len(names), 0, -1) - 1  # into the slice that drops "x0"
    return ArrowNames(pa.array(pool, pa.string()).slice(1)).rows(rows)


@given(RANDOMS)
def test_trec_run_is_byte_identical_to_the_line_by_line_writer(rng: random.Random) -> None:
    n_docs = rng.randrange(30)
    doc_ids = [f"doc-{i}" if i % 7 else f"dé{i}" for i in range(n_docs)]  # some non-ASCII
    query_ids = [f"q{i}" if i % 5 else f"qü{i}" for i in range(rng.randrange(9))]
    ranking = _random_ranking(rng, n_docs, len(query_ids))
    golden = _golden(doc_ids, query_ids)
    assert trec_run(golden, ranking, "evalret-x") == line_by_line_trec_run(
        golden, ranking, "evalret-x"
    )


@pytest.mark.parametrize(
    ("block_bytes", "cut"),
    [
        (1000, True),  # blocks shorter than a query: lines cut anywhere
        (4000, True),  # blocks of a few queries: whole rankings beside cut ones
        (4000, False),  # every query ranked to the full depth: every block whole
    ],
)
def test_trec_run_in_blocks_is_byte_identical(
    monkeypatch: pytest.MonkeyPatch, block_bytes: int, cut: bool
) -> None:
    """Many lines gathered in many blocks, and a sample of repeated scores (the distinct-score
    path) beside one of distinct scores."""
    import evalret.report.trec as trec

    monkeypatch.setattr(trec, "BLOCK_BYTES", block_bytes)
    rng = np.random.default_rng(7)
    doc_ids = [f"d{i}" for i in range(500)]
    query_ids = [f"q{i}" for i in range(300)]
    golden = _golden(doc_ids, query_ids)
    ids = rng.integers(0, 520, size=(300, 50))
    if cut:
        ids[::7, 30:] = -1
    extra = tuple(f"x{i}" for i in range(20))
    with_nul = tuple(f"x\0{i}" for i in range(20))  # a Python retriever's name may hold one
    for scores, names in (
        (np.round(rng.normal(size=(300, 50)), 1), extra),
        (rng.normal(size=(300, 50)), extra),
        (rng.normal(size=(300, 50)), with_nul),
    ):
        scores[0, :4] = [-0.0, 0.0, 1e-310, -np.inf]
        ranking = SearchResult(ids=ids, scores=scores, extra_docs=names)
        assert trec_run(golden, ranking, "t") == line_by_line_trec_run(golden, ranking, "t")


@pytest.mark.parametrize(
    ("low", "high"),
    [(0, 520), (0, 500), (500, 520), (100, 510), (490, 505)],  # every name used, or some
)
def test_trec_run_names_only_the_documents_it_retrieved(low: int, high: int) -> None:
    """The names column holds the corpus ids and extra documents a ranking retrieves: taken
    whole when it retrieves every one of them, picked when only some."""
    rng = np.random.default_rng(low + high)
    golden = _golden([f"d{i}" for i in range(500)], [f"q{i}" for i in range(40)])
    ids = rng.integers(low, high, size=(40, 30))
    ids[0, : high - low] = np.arange(low, high)[:30]
    extra = tuple(f"x{i}" for i in range(20))
    ranking = SearchResult(ids=ids, scores=rng.normal(size=(40, 30)), extra_docs=extra)
    assert trec_run(golden, ranking, "t") == line_by_line_trec_run(golden, ranking, "t")


@given(RANDOMS)
def test_names_by_row_are_each_rows_names(rng: random.Random) -> None:
    """The names of every row at once (the extra documents' made together, only those)
    are each row's names one by one."""
    n_docs = rng.randrange(30)
    doc_ids = [f"doc-{i}" for i in range(n_docs)]
    ranking = _random_ranking(rng, n_docs, rng.randrange(9))
    for depth in (3, None):  # (the first before anything made the names strings)
        got = ranking.names_by_row(doc_ids, depth)
        assert got == [ranking.names(row, doc_ids, depth) for row in range(len(ranking.ids))]
