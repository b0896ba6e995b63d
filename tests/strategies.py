"""The suite's Hypothesis strategies live here, in one place."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

# --- retrieval cases (test_metrics) ------------------------------------------------------------


@st.composite
def retrieval_cases(draw: st.DrawFn, max_docs: int = 30, max_queries: int = 6) -> dict:
    """A random small collection: per query a ranking (doc indices) and graded judgments."""
    n_docs = draw(st.integers(2, max_docs))
    n_queries = draw(st.integers(1, max_queries))
    depth = draw(st.integers(1, n_docs))
    rankings, qrels = [], []
    for _ in range(n_queries):
        perm = draw(st.permutations(range(n_docs)))
        rankings.append(list(perm[:depth]))
        judged = draw(
            st.lists(st.integers(0, n_docs - 1), min_size=1, max_size=n_docs, unique=True)
        )
        grades = draw(st.lists(st.integers(0, 3), min_size=len(judged), max_size=len(judged)))
        if all(g == 0 for g in grades):
            grades[0] = draw(st.integers(1, 3))  # at least one relevant document
        qrels.append(dict(zip(judged, grades, strict=True)))
    return {"n_docs": n_docs, "rankings": rankings, "qrels": qrels}


# --- graded runs with ties (test_trec_eval_conformance) ----------------------------------------


@st.composite
def graded_runs(
    draw: st.DrawFn,
    min_grade: int = 0,
    without_relevant: bool = False,
    max_retrieved: int | None = None,
) -> tuple[list[str], dict, dict]:
    """Random graded runs with frequent score ties. Grades from ``min_grade`` to 3; unless
    ``without_relevant``, every query has a document of grade >= 1. ``max_retrieved`` caps each
    query's run length (short runs: most judged documents go unretrieved)."""
    n_docs = draw(st.integers(3, 25))
    # ids whose string order differs from numeric order ("d10" < "d9")
    doc_ids = [f"d{i}" for i in draw(st.permutations(range(n_docs)))]
    qrels, run = {}, {}
    for q in range(draw(st.integers(1, 5))):
        judged = draw(st.lists(st.sampled_from(doc_ids), min_size=1, max_size=n_docs, unique=True))
        grades = draw(
            st.lists(st.integers(min_grade, 3), min_size=len(judged), max_size=len(judged))
        )
        if max(grades) <= 0 and not without_relevant:
            grades[0] = 1
        retrieved = draw(
            st.lists(
                st.sampled_from(doc_ids),
                min_size=1,
                max_size=min(n_docs, max_retrieved or n_docs),
                unique=True,
            )
        )
        # few distinct score values, so ties are frequent
        scores = draw(
            st.lists(
                st.sampled_from([0.1, 0.25, 0.5, 0.75, 0.9]),
                min_size=len(retrieved),
                max_size=len(retrieved),
            )
        )
        qrels[f"q{q}"] = dict(zip(judged, grades, strict=True))
        run[f"q{q}"] = dict(zip(retrieved, scores, strict=True))
    return doc_ids, qrels, run


# --- rankings for beyond-accuracy figures (test_beyond) ---------------------------------------


@st.composite
def top_k_rankings(draw: st.DrawFn, max_docs: int = 12, max_queries: int = 6) -> tuple[Any, int]:
    """(ids int64 [Q, depth], n_docs): per query distinct documents, some outside the corpus
    (ids >= n_docs), then empty ranks (-1) at the end of some rows."""
    import numpy as np

    n_docs = draw(st.integers(1, max_docs))
    n_queries = draw(st.integers(1, max_queries))
    depth = draw(st.integers(1, 8))
    rows = []
    for _ in range(n_queries):
        docs = draw(st.lists(st.integers(0, n_docs + 3), max_size=depth, unique=True))
        rows.append(docs + [-1] * (depth - len(docs)))
    return np.array(rows, dtype=np.int64), n_docs


# --- fuzzing the readers: valid content with random mutations ----------------------------------

# values a mutated field may take: wrong types, numbers no reader should choke on, nested junk
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.sampled_from([10**30, -1, 0, 2**63, -(2**63) - 1, 1e309, -1e309]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.lists(st.integers(0, 3), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(-2, 3), max_size=3),
    st.just([[[{"a": [[]]}]]]),
)
# raw JSON text no dumps() writes: non-standard numbers, huge integers, deep nesting, a key twice
RAW_JSON = st.sampled_from(
    [
        "NaN",
        "-Infinity",
        "1e309",
        "9" * 5000,
        "[" * 3000 + "]" * 3000,
        '{"a": 1, "a": 2}',
        '"\\ud800"',
        "00",
        "",
    ]
)
# byte sequences that are not UTF-8 (a lone continuation, a truncated sequence, a surrogate,
# an overlong encoding), control characters, a BOM
BAD_BYTES = st.sampled_from(
    [
        b"\xff",
        b"\x80",
        b"\xc3",
        b"\xe2\x82",
        b"\xed\xa0\x80",
        b"\xc0\xaf",
        b"\x00",
        b"\x1b",
        b"\xef\xbb\xbf",
        b"\r",
    ]
)


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path (keys and indices) into nested dicts and lists, the root included."""
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:4]):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def mutated_json(draw: st.DrawFn, obj: Any) -> str:
    """``obj`` as JSON after a few random changes deep inside: a value replaced by junk or by
    raw JSON text, a key removed or added."""
    obj = json.loads(json.dumps(obj))
    raw: dict[str, str] = {}
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(_paths(obj)))
        if not path:
            continue
        parent = obj
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["junk", "raw", "delete", "add"]))
        key = path[-1]
        if action == "junk":
            parent[key] = copy.deepcopy(draw(JUNK))  # later changes must not touch JUNK
        elif action == "raw":
            marker = f"@@raw{len(raw)}@@"
            raw[json.dumps(marker)] = draw(RAW_JSON)
            parent[key] = marker
        elif action == "delete":
            del parent[key]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=4))] = copy.deepcopy(draw(JUNK))
    text = json.dumps(obj, ensure_ascii=draw(st.booleans()), allow_nan=True)
    for marker, replacement in raw.items():
        text = text.replace(marker, replacement)
    return text


@st.composite
def mutated_lines(draw: st.DrawFn, lines: list[str]) -> bytes:
    """``lines`` as a file after a few byte-level changes: bad UTF-8 or control bytes inserted,
    a line dropped, doubled, truncated or replaced by random bytes, a very long line; LF or CRLF,
    maybe a byte-order mark."""
    rows = [line.encode() for line in lines]
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, max(len(rows) - 1, 0)))
        if not rows:
            rows.append(b"")
        row = rows[i]
        action = draw(st.sampled_from(["bytes", "drop", "double", "cut", "random", "long"]))
        if action == "bytes":
            at = draw(st.integers(0, len(row)))
            rows[i] = row[:at] + draw(BAD_BYTES) + row[at:]
        elif action == "drop":
            del rows[i]
        elif action == "double":
            rows.insert(i, row)
        elif action == "cut":
            rows[i] = row[: draw(st.integers(0, len(row)))]
        elif action == "random":
            rows[i] = draw(st.binary(max_size=40))
        else:
            rows.insert(i, b'{"id": "' + b"x" * 200_000 + b'"}')
    newline = draw(st.sampled_from([b"\n", b"\r\n"]))
    bom = draw(st.sampled_from([b"", b"", b"\xef\xbb\xbf"]))
    return bom + newline.join(rows) + draw(st.sampled_from([newline, b""]))


@st.composite
def fuzzed_file(
    draw: st.DrawFn, records: list[Any] | None, lines: list[str] | None = None
) -> bytes:
    """A reader's input: arbitrary bytes, or valid JSONL ``records`` (or text ``lines``) with
    records mutated and then bytes mutated."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=300))
    if records is not None:
        lines = [draw(mutated_json(r)) if draw(st.booleans()) else json.dumps(r) for r in records]
    return draw(mutated_lines(lines or []))


# the packaged config template, the valid content config_text mutates
CONFIG = (Path(__file__).parent.parent / "src/evalret/templates/evalret.yaml").read_text()


@st.composite
def config_text(draw: st.DrawFn) -> bytes:
    """The packaged config template mutated line by line, or as YAML of mutated JSON (JSON is
    YAML), or arbitrary bytes."""
    kind = draw(st.integers(0, 2))
    if kind == 0:
        return draw(fuzzed_file(None, CONFIG.splitlines()))
    data = {"golden_set": {"path": "gs", "format": "auto"}, "metrics": ["ndcg@10"]}
    data.update({"bootstrap": {"samples": 100}, "gate": {"thresholds": {"ndcg@10": {"min": 0}}}})
    return draw(mutated_lines([draw(mutated_json(data))]))


@st.composite
def report_bytes(draw: st.DrawFn, data: dict[str, Any]) -> bytes:
    """A report.json mutated: as JSON (fields replaced, removed, added), then maybe as bytes
    (truncated, bad UTF-8 inserted), or arbitrary bytes."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=300))
    text = draw(mutated_json(data))
    if draw(st.booleans()):
        return draw(mutated_lines(text.split("\n")))
    return text.encode()


# --- stratified samples (test_sampling) ---------------------------------------------------------


@st.composite
def sliced_queries(draw: st.DrawFn, max_queries: int = 60, max_slices: int = 5) -> tuple[Any, ...]:
    """Query ids and overlapping slices over them (name, boolean mask), with a sample size, a
    seed and a floor."""
    import numpy as np

    n = draw(st.integers(1, max_queries))
    ids = [f"q{i}" for i in range(n)]
    slices = [("all", np.ones(n, dtype=bool))]
    for k in range(draw(st.integers(0, max_slices))):
        members = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        slices.append((f"s{k}", np.array(members, dtype=bool)))
    size = draw(st.integers(1, n + 5))
    return ids, slices, size, draw(st.integers(0, 2**32)), draw(st.integers(0, 12))
