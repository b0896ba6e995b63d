"""Filtered search (#27): the filter language (core/filters.py), metadata and filters in the
golden-set readers, the retrievers searching only eligible documents, the metrics counting only
eligible documents, and ANN recall by selectivity bucket in the report."""

from __future__ import annotations

import json
import random
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalret.core.filters import (
    FilterError,
    MetadataColumns,
    canonical,
    eligibility,
    parse_filter,
    selectivity_bucket,
)
from evalret.core.ranking import id_rank
from evalret.data.config import (
    Config,
    GoldenSetConfig,
    HnswIndexConfig,
    IndexesConfig,
    parse_config,
)
from evalret.data.goldenset import load_golden_set, scan_golden_set
from evalret.engines.faiss_index import build_hnsw, exact_search
from evalret.engines.filtered import filtered_exact, filtered_index_search
from evalret.errors import GoldenSetError
from evalret.pipeline.evaluate import run_evaluation
from evalret.pipeline.outputs import write_outputs
from evalret.report.terminal_brief import brief_run
from helpers import HashEmbedder, demo_report

# --- the filter language ---------------------------------------------------------------------

DOCS: list[dict[str, Any] | None] = [
    {"lang": "en", "year": 2020, "open": True},
    {"lang": "fr", "year": 2021.0, "open": False},
    {"lang": "en", "year": "2022"},  # year of another type
    {"year": 2019},  # no lang
    None,  # no metadata
    {"lang": "de", "year": 2024, "open": 1},  # open is a number, not a boolean
]


def _reference(f: Any, meta: dict[str, Any] | None) -> bool:
    """The semantics written out per document, as the module docstring states them."""
    meta = meta or {}
    if "$and" in f:
        return all(_reference(p, meta) for p in f["$and"])
    if "$or" in f:
        return any(_reference(p, meta) for p in f["$or"])
    ((key, spec),) = f.items()
    ((op, operand),) = spec.items()

    def kind(v: Any) -> str:
        return "boolean" if isinstance(v, bool) else "string" if isinstance(v, str) else "number"

    if op in ("$ne", "$nin"):  # the complements of $eq and $in
        return not _reference({key: {"$eq" if op == "$ne" else "$in": operand}}, meta)
    want = kind(operand[0] if isinstance(operand, list) else operand)
    if key not in meta or kind(meta[key]) != want:
        return False  # missing key or another type: $eq, $in and the ranges do not match
    v = meta[key]
    return {
        "$eq": lambda: v == operand,
        "$in": lambda: v in operand,
        "$gt": lambda: v > operand,
        "$gte": lambda: v >= operand,
        "$lt": lambda: v < operand,
        "$lte": lambda: v <= operand,
    }[op]()


FILTERS = [
    {"lang": "en"},
    {"lang": {"$ne": "en"}},
    {"lang": {"$nin": ["en", "fr"]}},
    {"lang": {"$in": ["fr", "de", "xx"]}},
    {"year": {"$gte": 2021}},
    {"year": 2021},
    {"year": {"$lt": 2021, "$gt": 2019}},
    {"open": True},
    {"open": {"$ne": False}},
    {"$or": [{"lang": "fr"}, {"year": {"$lte": 2019}}]},
    {"$and": [{"lang": {"$ne": "de"}}, {"year": {"$gt": 2000}}]},
    {"lang": "en", "year": {"$gt": 2000}},
    {"missing": {"$ne": 1}},
    {"missing": 1},
    {"year": {"$nin": [2020, 2021]}},
    {"open": {"$nin": [True]}},
]


@pytest.mark.parametrize("raw", FILTERS, ids=[json.dumps(f) for f in FILTERS])
def test_masks_follow_the_documented_semantics(raw: dict[str, Any]) -> None:
    """The vectorised mask equals the per-document reading: a missing key or a value of another
    type matches no $eq, $in or range, and every $ne and $nin (their complements), numbers
    compare as numbers (2021 == 2021.0), a boolean is not a number, several keys or operators
    all hold."""
    columns = MetadataColumns(DOCS)
    got = columns.mask(parse_filter(raw)).tolist()
    explicit = canonical(parse_filter(raw))
    assert got == [_reference(explicit, m) for m in DOCS]


def test_semantics_by_hand() -> None:
    """Three readings written out: $ne keeps the documents without the key (Chroma's current
    rule); a string year is not compared with numbers; true does not equal 1."""
    columns = MetadataColumns(DOCS)
    assert columns.mask(parse_filter({"lang": {"$ne": "en"}})).tolist() == [
        False, True, False, True, True, True,
    ]  # fmt: skip
    assert np.flatnonzero(columns.mask(parse_filter({"year": {"$gte": 2020}}))).tolist() == [
        0,
        1,
        5,
    ]
    assert np.flatnonzero(columns.mask(parse_filter({"open": True}))).tolist() == [0]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"lang": {"$like": "e%"}}, "filter.lang: unknown operator '$like'"),
        ({"$not": [{"a": 1}]}, "filter.$not: unknown operator '$not'"),
        ({"year": {"$gt": "2020"}}, "filter.year.$gt: $gt compares numbers"),
        ({"lang": {"$in": ["en", 1]}}, "filter.lang.$in: the values of $in are of one type"),
        ({"lang": {"$in": []}}, "filter.lang.$in: $in takes a non-empty list"),
        ({"lang": None}, "filter.lang: an equality's value is a string, a number or a boolean"),
        ({"lang": ["en"]}, "filter.lang: an equality's value is a string"),
        ({"a": {"b": 1}}, "filter.a: 'b' is not an operator"),
        ({"a": {}}, "filter.a: an empty operator object"),
        ({}, "filter: an empty filter"),
        ("lang=en", "filter: a filter is an object"),
        ({"$and": {"a": 1}}, "filter.$and: $and takes a non-empty list of filters"),
        ({"$or": [{"a": 1}, 3]}, "filter.$or[1]: a filter is an object"),
        ({"n": 2**60}, "integers beyond +-2**53"),
        ({"n": {"$eq": float("nan")}}, "filter.n.$eq: the operand of $eq is a string"),
    ],
)
def test_bad_filters_name_the_place(raw: Any, message: str) -> None:
    with pytest.raises(FilterError) as e:
        parse_filter(raw)
    assert message in str(e.value)


def test_eligibility_groups_and_selectivity() -> None:
    """Queries with the same filter share one mask; an unfiltered query is 100% eligible; the
    buckets split at 1%, 10% and 50%."""
    columns = MetadataColumns(DOCS)
    en = parse_filter({"lang": "en"})
    e = eligibility([en, None, parse_filter({"lang": {"$eq": "en"}}), en], columns)
    assert len(e.masks) == 1 and e.of_query.tolist() == [0, -1, 0, 0]
    assert e.selectivity().tolist() == [2 / 6, 1.0, 2 / 6, 2 / 6]
    assert [selectivity_bucket(x) for x in (0.0, 0.0099, 0.01, 0.0999, 0.1, 0.4999, 0.5, 1.0)] == [
        "<1%", "<1%", "1-10%", "1-10%", "10-50%", "10-50%", ">=50%", ">=50%",
    ]  # fmt: skip


# --- the readers -----------------------------------------------------------------------------


def _write(directory: Path, name: str, records: list[Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


NATIVE_DOCS = [
    {"id": "d1", "text": "alpha beta", "metadata": {"lang": "en"}},
    {"id": "d2", "text": "alpha gamma", "metadata": {"lang": "en"}},
    {"id": "d3", "text": "beta gamma", "metadata": {"lang": "en"}},
    {"id": "d4", "text": "alpha alpha", "metadata": {"lang": "fr", "tags": ["x"]}},
    {"id": "d5", "text": "gamma delta", "metadata": {"lang": "fr"}},
    {"id": "d6", "text": "delta beta"},
]


def _native(directory: Path, queries: list[dict[str, Any]]) -> Path:
    _write(directory, "corpus.jsonl", NATIVE_DOCS)
    _write(directory, "queries.jsonl", queries)
    return directory


def test_native_reader_refuses_a_bad_filter_at_its_line(tmp_path: Path) -> None:
    _native(
        tmp_path,
        [
            {"id": "q1", "text": "alpha", "relevant": {"d1": 1}, "filter": {"lang": "en"}},
            {"id": "q2", "text": "beta", "relevant": {"d3": 1}, "filter": {"lang": {"$re": "e"}}},
            {"id": "q3", "text": "beta", "relevant": {"d3": 1}, "filter": None},
        ],
    )
    with pytest.raises(GoldenSetError) as e:
        load_golden_set(GoldenSetConfig(path=tmp_path))
    problems = {(p.line, p.code): p.message for p in e.value.problems}
    assert problems.keys() == {(2, "invalid-filter"), (3, "invalid-filter")}
    assert "unknown operator '$re'" in problems[(2, "invalid-filter")]
    assert all(p.file.endswith("queries.jsonl") for p in e.value.problems if p.file)


def test_beir_reader_takes_metadata_and_filters(tmp_path: Path) -> None:
    """BEIR: ``metadata`` objects in corpus.jsonl, ``filter`` in queries.jsonl; a bad filter is
    refused at its line, as in the native format."""
    _write(
        tmp_path, "corpus.jsonl", [{"_id": d["id"], "text": d["text"], **d} for d in NATIVE_DOCS]
    )
    qrels = tmp_path / "qrels"
    qrels.mkdir()
    (qrels / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n1\td4\t1\n2\td5\t1\n")
    _write(
        tmp_path,
        "queries.jsonl",
        [{"_id": "1", "text": "alpha", "filter": {"lang": "en"}}, {"_id": "2", "text": "gamma"}],
    )
    golden = load_golden_set(GoldenSetConfig(path=tmp_path))
    assert golden.qrels["1"] == {"d1": 1} and golden.qrels["2"] == {"d5": 1}
    assert canonical(golden.filters["1"]) == {"lang": {"$eq": "en"}} and "2" not in golden.filters
    assert golden.doc_metadata["d4"] == {"lang": "fr"}  # the list value is not filterable
    bad = [{"_id": "1", "text": "a", "filter": {"lang": {"$gt": "a"}}}, {"_id": "2", "text": "g"}]
    _write(tmp_path, "queries.jsonl", bad)
    with pytest.raises(GoldenSetError) as e:
        load_golden_set(GoldenSetConfig(path=tmp_path))
    assert [(p.line, p.code) for p in e.value.problems] == [(1, "invalid-filter")]


def test_judgments_outside_the_filter_do_not_count(tmp_path: Path) -> None:
    """A judged document the query's filter excludes is dropped from its judgments (warned with
    the line); a filter that keeps nothing is warned; unfilterable metadata is warned."""
    _native(
        tmp_path,
        [
            {"id": "q1", "text": "alpha", "relevant": {"d1": 1, "d4": 2}, "filter": {"lang": "en"}},
            {"id": "q2", "text": "beta", "relevant": {"d4": 1}, "filter": {"lang": "xx"}},
        ],
    )
    scan = scan_golden_set(GoldenSetConfig(path=tmp_path))
    codes = {w.code: w for w in scan.warnings}
    assert {"judgment-outside-filter", "empty-filter", "unfilterable-metadata"} <= codes.keys()
    assert "at lines 1, 2" in codes["judgment-outside-filter"].message
    golden = scan.golden_set()
    assert golden.qrels["q1"] == {"d1": 1} and golden.qrels["q2"] == {}


def test_fingerprint_covers_filters_and_metadata(tmp_path: Path) -> None:
    """A filter and, with filters, the documents' metadata change the golden-set fingerprint; a
    set without filters keeps the fingerprint it had (the committed demo baseline's)."""
    from conftest import DEMO

    demo = load_golden_set(GoldenSetConfig(path=DEMO))
    assert demo.fingerprint == demo_report().golden_set.fingerprint

    def fingerprint(filt: Any, lang4: str = "fr") -> str:
        docs = [dict(d) for d in NATIVE_DOCS]
        docs[3] = {**docs[3], "metadata": {"lang": lang4}}
        _write(tmp_path, "corpus.jsonl", docs)
        q: dict[str, Any] = {"id": "q1", "text": "alpha", "relevant": {"d1": 1}}
        _write(tmp_path, "queries.jsonl", [q if filt is None else {**q, "filter": filt}])
        return load_golden_set(GoldenSetConfig(path=tmp_path)).fingerprint

    plain = fingerprint(None)
    assert plain == fingerprint(None, lang4="de")  # metadata alone decides nothing
    en = fingerprint({"lang": "en"})
    assert len({plain, en, fingerprint({"lang": "fr"})}) == 3
    assert en != fingerprint({"lang": "en"}, lang4="de")
    assert en == fingerprint({"lang": {"$eq": "en"}})  # the same filter, written out


# --- the retrievers --------------------------------------------------------------------------


def _vectors(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_filtered_exact_and_hnsw_search_only_eligible_documents() -> None:
    """Exact search under a filter equals exact search over the eligible rows alone (ids mapped
    back); HNSW with an efSearch past the corpus finds the same; unfiltered queries are searched
    as before."""
    docs, queries = _vectors(500, 16, 0), _vectors(12, 16, 1)
    meta = [{"t": "a" if i % 50 == 0 else "b" if i % 3 == 0 else "c"} for i in range(500)]
    columns = MetadataColumns(meta)
    filters = [parse_filter({"t": "a"}), None, parse_filter({"t": {"$ne": "c"}})] * 4
    filters[-1] = parse_filter({"t": "none"})  # keeps nothing: an empty ranking
    e = eligibility(filters, columns)
    rank = id_rank([f"d{i:03d}" for i in range(500)])
    got = filtered_exact(docs, queries, 20, rank, e)
    for qi in range(len(queries)):
        mask = e.mask(qi)
        keep = np.arange(500) if mask is None else np.flatnonzero(mask)
        alone = exact_search(docs[keep], queries[qi : qi + 1], 20, rank[keep])
        expected = np.array([keep[d] if d >= 0 else -1 for d in alone.ids[0]])
        assert got.ids[qi].tolist() == expected.tolist()
        assert (got.ids[qi] >= 0).sum() == min(20, len(keep))
    index = build_hnsw(docs, HnswIndexConfig(m=16, ef_construction=200, ef_search=600, threads=1))
    ann = filtered_index_search(index, queries, 20, rank, e)
    assert ann.ids.tolist() == got.ids.tolist()


def _config(golden: Path, indexes: str = "", metrics: str = "[recall@10, ndcg@10]") -> Config:
    text = f"golden_set: {{path: {golden}}}\nmetrics: {metrics}\n"
    if indexes:
        text += "indexes:\n" + textwrap.indent(textwrap.dedent(indexes), "  ")
    return parse_config(text, "c.yaml")


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A module ``evalret_filter_plugin`` in tmp_path with two retrievers that answer fixed
    rankings: ``plain`` (the old signature) and ``filtering`` (takes ``filters``)."""
    (tmp_path / "evalret_filter_plugin.py").write_text(
        textwrap.dedent(
            """
            CALLS = []
            ANSWER = [("d4", 0.9), ("d2", 0.8), ("d1", 0.7), ("d6", 0.6), ("zz", 0.5)]
            def plain(ids, texts, vectors, depth):
                CALLS.append(None)
                return [list(ANSWER) for _ in ids]
            def filtering(ids, texts, vectors, depth, filters):
                CALLS.append(filters)
                return [list(ANSWER) for _ in ids]
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("evalret_filter_plugin", None)
    import evalret_filter_plugin  # type: ignore[import-not-found]

    return evalret_filter_plugin


def test_one_query_computed_by_hand(tmp_path: Path, plugin: Any) -> None:
    """q1 filters lang = en (d1, d2, d3 eligible) and judges d1 (1) and d4 (2, French). The
    retriever answers d4 0.9, d2 0.8, d1 0.7, d6 0.6, zz 0.5: evalret drops d4 and d6 (outside
    the filter; zz, unknown to the corpus, stays, unjudged), so the ranking is d2, d1, zz. d4
    does not count: recall@10 = 1/1 (not 1/2), ndcg@10 = (1/log2(3)) / 1, precision@2 = 1/2."""
    golden = _native(
        tmp_path / "set",
        [{"id": "q1", "text": "alpha", "relevant": {"d1": 1, "d4": 2}, "filter": {"lang": "en"}}],
    )
    off = "exact: {enabled: false}\nhnsw: {enabled: false}\nbm25: {enabled: false}\n"
    off += "hybrid: {enabled: false}\n"
    for fn, passed in (("plain", None), ("filtering", [{"lang": {"$eq": "en"}}])):
        config = _config(
            golden,
            off + f"p: {{type: python, callable: 'evalret_filter_plugin:{fn}'}}\n",
            "[recall@10, ndcg@10, precision@2]",
        )
        ev = run_evaluation(config)
        assert plugin.CALLS[-1] == passed
        result = ev.report.indexes["p"]
        assert result.top_ids[0] == ["d2", "d1", "zz"]
        values = {m: v.value for m, v in result.slices["all"].metrics.items()}
        assert values["recall@10"] == pytest.approx(1.0)
        assert values["ndcg@10"] == pytest.approx(1 / np.log2(3))
        assert values["precision@2"] == pytest.approx(0.5)
        assert result.params["filters"] == (
            "evalret" if passed is None else "callable, then evalret"
        )


def test_bm25_exact_and_hybrid_keep_to_the_filter(tmp_path: Path) -> None:
    """Every document BM25, exact, HNSW and the hybrid rank for a filtered query is eligible;
    an unfiltered query may rank any."""
    golden = _native(
        tmp_path / "set",
        [
            {"id": "q1", "text": "alpha gamma", "relevant": {"d4": 1}, "filter": {"lang": "fr"}},
            {"id": "q2", "text": "alpha gamma", "relevant": {"d2": 1}},
        ],
    )
    ev = run_evaluation(_config(golden, "hnsw: {m: 4, ef_search: 4}\n"), embedder=HashEmbedder())
    for name in ("exact", "hnsw", "bm25", "hybrid"):
        top = ev.report.indexes[name].top_ids
        assert set(top[0]) <= {"d4", "d5"} and top[0], name
    assert {"d1", "d2"} <= set(ev.report.indexes["bm25"].top_ids[1])


# --- the filtered demo -----------------------------------------------------------------------

TENANTS = (("small", 0.005), ("mid", 0.05), ("big", 0.30), ("main", 1.0))


def filtered_set(directory: Path, n_docs: int = 3000, per_tenant: int = 30) -> Path:
    """A golden set whose documents carry ``tenant`` (0.5%, 5%, 30% and the rest of the corpus)
    and whose queries are each filtered to one tenant; each judges one document of its tenant
    and one of another tenant (which must not count)."""
    rng = random.Random(0)
    vocabulary = [f"w{i}" for i in range(300)]
    docs, edges, start = [], [], 0.0
    for name, share in TENANTS:
        edges.append((name, start, start + share))
        start += share
    for i in range(n_docs):
        tenant = next(name for name, low, high in edges if low <= i / n_docs < high)
        text = " ".join(rng.sample(vocabulary, 6))
        docs.append({"id": f"d{i:05d}", "text": text, "metadata": {"tenant": tenant}})
    by_tenant: dict[str, list[dict[str, Any]]] = {}
    for d in docs:
        by_tenant.setdefault(d["metadata"]["tenant"], []).append(d)
    queries = []
    for name, _ in TENANTS:
        other = by_tenant["main" if name != "main" else "small"]
        for j in range(per_tenant):
            target = rng.choice(by_tenant[name])
            relevant = {target["id"]: 2, rng.choice(other)["id"]: 1}
            text = " ".join(target["text"].split()[:3])
            queries.append(
                {
                    "id": f"q-{name}-{j}",
                    "text": text,
                    "relevant": relevant,
                    "filter": {"tenant": name},
                }
            )
    _write(directory, "corpus.jsonl", docs)
    _write(directory, "queries.jsonl", queries)
    return directory


def test_filtered_demo_shows_the_hnsw_drop_at_low_selectivity(tmp_path: Path) -> None:
    """The filtered demo: a small HNSW graph (m 4, efSearch 8) searched with an ID selector
    finds few of the exact top 10 when 0.5% of the corpus is eligible, most of it at 30% and
    more; the report says so per bucket (report.json, the terminal line, report.md, report.html),
    and the judgment of another tenant's document counts for no query."""
    config = Config(
        golden_set=GoldenSetConfig(path=filtered_set(tmp_path / "set")),
        indexes=IndexesConfig(
            hnsw=HnswIndexConfig(m=4, ef_construction=40, ef_search=8, threads=1)
        ),
        metrics=["recall@10", "ndcg@10"],
    )
    ev = run_evaluation(config, embedder=HashEmbedder())
    assert "hnsw" in ev.report.ann and ev.report.ann["hnsw"].selectivity is not None
    buckets = ev.report.ann["hnsw"].selectivity
    assert [b.n_queries for b in buckets.values()] == [30, 30, 30, 30]
    recall = {name: b.recall["recall@10"] for name, b in buckets.items()}
    assert recall["<1%"] is not None and recall[">=50%"] is not None
    assert recall["<1%"] < 0.5 < 0.75 < recall["10-50%"] and recall["<1%"] < recall[">=50%"] - 0.3
    assert all(len(j) == 1 for j in ev.golden_set.qrels.values())  # the other tenant's: dropped
    golden = ev.golden_set
    tenant = {d: golden.doc_metadata[d]["tenant"] for d in golden.doc_ids}
    for q, top in zip(golden.query_ids, ev.report.indexes["exact"].top_ids, strict=True):
        assert {tenant[d] for d in top} == {q.split("-")[1]}
    written = write_outputs(ev, tmp_path / "out")
    from rich.console import Console

    console = Console(width=250, record=True)
    console.print(brief_run(ev.report, written))
    line = next(x for x in console.export_text().splitlines() if "by filter selectivity" in x)
    assert line.startswith("ANN hnsw recall@10 by filter selectivity: <1% ")
    assert "(n 30)" in line and ">=50%" in line
    md = (tmp_path / "out" / "report.md").read_text()
    assert "### hnsw by filter selectivity" in md and "| &lt;1% | 30 |" in md
    html = (tmp_path / "out" / "report.html").read_text()
    assert "By filter selectivity" in html and "&lt;1%" in html
    saved = json.loads((tmp_path / "out" / "report.json").read_text())
    assert saved["ann"]["hnsw"]["selectivity"]["<1%"]["n_queries"] == 30


def test_a_run_without_filters_reports_no_selectivity(tmp_path: Path) -> None:
    """Without filters the ANN section has no selectivity key: report.json stays as it was."""
    from helpers import make_set

    ev = run_evaluation(_config(make_set(tmp_path / "set")), embedder=HashEmbedder())
    assert "hnsw" in ev.report.ann
    assert "selectivity" not in ev.report.ann["hnsw"].model_dump()


def test_run_judge_grades_no_document_outside_the_filter(tmp_path: Path) -> None:
    """`run --judge` asks the LLM judge only about eligible documents: a run file's document
    that the query's filter excludes is not graded (its label would count)."""
    from evalret.core.ranking import SearchResult
    from evalret.pipeline.judge import _unjudged_pairs

    golden = load_golden_set(
        GoldenSetConfig(
            path=_native(
                tmp_path,
                [{"id": "q1", "text": "a", "relevant": {"d1": 1}, "filter": {"lang": "en"}}],
            )
        )
    )
    assert golden.is_eligible("q1", "d2") and not golden.is_eligible("q1", "d4")
    ranked = SearchResult(ids=np.array([[3, 1, 0, 4]]), scores=np.array([[4.0, 3.0, 2.0, 1.0]]))
    pairs = _unjudged_pairs(golden, {"run": ranked}, 10)
    assert [p.doc_id for p in pairs] == ["d2"]  # d4, d5: French; d1: judged


@pytest.mark.parametrize("factory", ["IVF8,Flat", "PCA8,IVF8,Flat", "HNSW8,SQ8", "Flat"])
def test_factory_indexes_search_through_the_selector(factory: str) -> None:
    """Any faiss index gets the selector in parameters of its kind (IVF behind a transform
    too): only eligible documents come back, and an IVF index probing every list (or a flat
    one) ranks as filtered exact search."""
    import faiss

    docs, queries = _vectors(400, 16, 2), _vectors(6, 16, 3)
    meta = [{"t": "a" if i % 20 == 0 else "b"} for i in range(400)]
    e = eligibility([parse_filter({"t": "a"}), None] * 3, MetadataColumns(meta))
    index = faiss.index_factory(16, factory, faiss.METRIC_INNER_PRODUCT)
    index.train(docs)
    index.add(docs)
    ivf = faiss.try_extract_index_ivf(index)
    if ivf is not None:
        ivf.nprobe = ivf.nlist
    rank = id_rank([f"d{i:03d}" for i in range(400)])
    got = filtered_index_search(index, queries, 10, rank, e)
    for qi in range(0, 6, 2):
        assert {int(d) for d in got.ids[qi] if d >= 0} <= set(range(0, 400, 20))
    if factory in ("IVF8,Flat", "Flat"):
        exact = filtered_exact(docs, queries, 10, rank, e)
        assert got.ids.tolist() == exact.ids.tolist()


@pytest.mark.parametrize(
    "indexes",
    [
        'ivf: {type: faiss, factory: "IVF4,Flat", params: {nprobe: 4}}\n',
        # quantize_embeddings comes with sentence-transformers (torch): the model lane
        pytest.param(
            "bits: {type: quantized, precision: binary, rescore: 2}\n", marks=pytest.mark.model
        ),
        pytest.param("bytes: {type: quantized, precision: int8}\n", marks=pytest.mark.model),
    ],
)
def test_factory_and_quantized_indexes_keep_to_the_filter(tmp_path: Path, indexes: str) -> None:
    """A faiss factory index and a quantized one (with and without rescoring) rank only the
    documents a filtered query may retrieve; an unfiltered query may rank any."""
    golden = _native(
        tmp_path / "set",
        [
            {"id": "q1", "text": "alpha gamma", "relevant": {"d4": 1}, "filter": {"lang": "fr"}},
            {"id": "q2", "text": "alpha gamma", "relevant": {"d2": 1}},
        ],
    )
    ev = run_evaluation(_config(golden, indexes), embedder=HashEmbedder())
    name = indexes.split(":")[0]
    top = ev.report.indexes[name].top_ids
    assert set(top[0]) <= {"d4", "d5"} and top[0], top
    assert len(top[1]) > 2
