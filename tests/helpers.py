"""Builders and Hypothesis strategies shared by the tests."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st

from evalret.core.metrics import RankedJudgments, build_judgments


def judgments_from_lists(
    ranked_grades: list[list[int]], all_grades: list[list[int]]
) -> RankedJudgments:
    """RankedJudgments from per-query grade lists (ranked list; every judged grade of the query).

    Each ranked list holds the grades of the retrieved documents in rank order (0 = non-relevant
    or unjudged); ``all_grades`` lists every judged grade of the query, retrieved or not.
    """
    depth = max(len(r) for r in ranked_grades)
    grades = np.zeros((len(ranked_grades), depth), dtype=np.int64)
    ideal = np.zeros((len(ranked_grades), depth), dtype=np.int64)
    for i, r in enumerate(ranked_grades):
        grades[i, : len(r)] = r
        top = sorted(all_grades[i], reverse=True)[:depth]
        ideal[i, : len(top)] = top
    n_rel = np.array([sum(g >= 1 for g in a) for a in all_grades], dtype=np.int64)
    return RankedJudgments(grades=grades, judged=grades > 0, ideal=ideal, n_relevant=n_rel)


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


def case_judgments(case: dict) -> RankedJudgments:
    """RankedJudgments for a ``retrieval_cases`` example, through the production lookup."""
    qi, di, gr = [], [], []
    for i, judged in enumerate(case["qrels"]):
        for d, g in judged.items():
            qi.append(i)
            di.append(d)
            gr.append(g)
    return build_judgments(
        np.array(case["rankings"], dtype=np.int64),
        np.array(qi, dtype=np.int64),
        np.array(di, dtype=np.int64),
        np.array(gr, dtype=np.int64),
        n_docs=case["n_docs"],
    )


class HashEmbedder:
    """Bag-of-words vectors from hashed tokens: deterministic, lexical, good enough for plumbing."""

    dim = 64

    def identity(self) -> dict[str, Any]:
        return {"name": "hash-bow", "source": "test"}

    def embed(self, texts: Sequence[str], kind: str, progress: Any = None) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for tok in t.lower().split():
                out[i, int(hashlib.md5(tok.encode()).hexdigest(), 16) % self.dim] += 1
            if progress:
                progress(1)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1)


def make_set(tmp_path: Path) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    docs = [
        {"id": f"d{i}", "text": f"{words[i % 8]} {words[(i * 3) % 8]} item {i}"} for i in range(60)
    ]
    queries = []
    for q in range(24):
        relevant = {f"d{(q * 5 + j) % 60}": (3 - j) for j in range(3)}
        queries.append(
            {
                "id": f"q{q}",
                "text": f"{words[q % 8]} {words[(q * 5) % 8]}",
                "relevant": relevant,
                "tags": ["even" if q % 2 == 0 else "odd"],
                "frequency": 1000 - q * 40,
            }
        )
    queries.append({"id": "q-none", "text": "alpha", "relevant": {"d1": 0}})
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    return tmp_path


def cranfield_like(directory: Path) -> Path:
    """A tiny TREC golden set shaped like the classic Cranfield collection as it comes: two empty
    documents, -1 and -2 grades, ``#`` comments and blank lines in the qrels, decimal grades and a
    query judged only non-relevant. Returns the qrels file."""
    directory.mkdir(parents=True, exist_ok=True)
    texts = [
        "experimental investigation of the aerodynamics of a wing in a slipstream",
        "",
        "simple shear flow past a flat plate in an incompressible fluid",
        "boundary layer in simple shear flow past a flat plate",
        "the boundary layer on a flat plate at high mach number",
        "",
        "heat transfer in hypersonic flow over a blunt body",
        "buckling of thin cylindrical shells under axial compression",
        "supersonic flow past a cone at incidence",
        "transition of the laminar boundary layer to turbulence",
    ]
    rows = [{"_id": str(i + 1), "title": "", "text": t} for i, t in enumerate(texts)]
    (directory / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (directory / "queries.tsv").write_text(
        "1\tboundary layer on a flat plate\n"
        "2\tshear flow past a plate\n"
        "3\theat transfer at hypersonic speed\n"
        "4\twing aerodynamics in a slipstream\n"
        "5\tbuckling of shells\n"
    )
    qrels = directory / "qrels.txt"
    qrels.write_text(
        "# Cranfield-style judgments: -1 and -2 mean not relevant\n"
        "1 0 4 2\n"
        "1 0 5 1.5\n"
        "1 0 10 -1\n"
        "\n"
        "1 0 3 1\n"
        "2 0 3 2\n"
        "2 0 4 -2\n"
        "  # an indented comment\n"
        "2 0 2 0\n"
        "3 0 7 3\n"
        "3 0 9 -0.5\n"
        "4 0 1 2.\n"
        "4 0 6 1\n"
        "5 0 8 -1\n"
        "5 0 1 -2\n"
    )
    return qrels


def read_trec_run(path: Path) -> dict[str, dict[str, float]]:
    """A TREC run file (``qid Q0 docno rank score tag``) as trec_eval reads it: scores by query."""
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, {})[doc] = float(score)
    return run


TREC_MEASURES = {
    "ndcg": "ndcg_cut",
    "recall": "recall",
    "precision": "P",
    "map": "map_cut",
    "hit_rate": "success",
}


def assert_report_matches_trec_eval(
    per_query: dict[str, list[float]],
    query_ids: list[str],
    qrels: dict[str, dict[str, int]],
    run: dict[str, dict[str, float]],
    relevance_level: int,
) -> int:
    """Every metric of ``per_query`` (no mrr) equals trec_eval's on ``run`` for every qrels query
    (a query absent from the run scores 0, trec_eval -c); returns the number of values compared."""
    import pytest
    import pytrec_eval

    measures = {}
    for name in per_query:
        family, k = name.split("@")
        measures[name] = f"{TREC_MEASURES[family]}.{k}"
    full_run = {q: run.get(q) or {"__none__": 0.0} for q in qrels}
    got = pytrec_eval.RelevanceEvaluator(
        qrels, set(measures.values()), relevance_level=relevance_level
    ).evaluate(full_run)
    assert sorted(query_ids) == sorted(qrels)
    for name, measure in measures.items():
        key = measure.replace(".", "_")
        for i, q in enumerate(query_ids):
            assert per_query[name][i] == pytest.approx(got[q][key], abs=1e-9), (name, q)
    return len(measures) * len(query_ids)


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
