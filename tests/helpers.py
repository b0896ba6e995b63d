"""Builders and assertions shared by the tests (the Hypothesis strategies are in strategies.py)."""

from __future__ import annotations

import functools
import hashlib
import json
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

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
    n_all = np.array([len(a) for a in all_grades], dtype=np.int64)
    return RankedJudgments(
        grades=grades, judged=grades > 0, ideal=ideal, n_relevant=n_rel, n_nonrelevant=n_all - n_rel
    )


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


def gate_check(**fields: Any) -> Any:
    """A passing ``exact/all/recall@10 max_drop 0.01`` GateCheck on 244 queries (0.70 to 0.69,
    delta -0.005, no p-value), with ``fields`` changed."""
    from evalret.data.schema import GateCheck

    base: dict[str, Any] = {
        "name": "exact/all/recall@10 max_drop 0.01",
        "index": "exact",
        "slice": "all",
        "metric": "recall@10",
        "kind": "max_drop",
        "threshold": 0.01,
        "baseline": 0.70,
        "current": 0.69,
        "delta": -0.005,
        "n_queries": 244,
        "p_value": None,
        "p_adjusted": None,
        "mde": None,
        "underpowered": False,
        "passed": True,
        "message": "",
    }
    return GateCheck.model_validate({**base, **fields})


def demo_report() -> Any:
    """baselines/demo.json, the committed report of the demo run, as a RunReport (a fresh one
    each call)."""
    from evalret.data.schema import RunReport

    path = Path(__file__).resolve().parents[1] / "baselines" / "demo.json"
    return RunReport.model_validate_json(path.read_text())


MIB = 1 << 20
HOSTILE_BYTES = 256 * MIB  # a hostile body's size: on the wire (huge), or decoded (a bomb)
HOSTILE_MODES = ("huge", "huge-declared", "gzip", "deflate")


@functools.cache
def bomb(encoding: str) -> bytes:
    """HOSTILE_BYTES zero bytes compressed as ``encoding`` (gzip or deflate): about 260 KB, a
    thousand to one (made once per process, in a second)."""
    packer = zlib.compressobj(6, zlib.DEFLATED, 31 if encoding == "gzip" else 15)
    zeros = bytes(MIB)
    return b"".join(packer.compress(zeros) for _ in range(HOSTILE_BYTES // MIB)) + packer.flush()


def answer_body_fault(handler: Any, fault: tuple[Any, ...] | None, state: Any) -> bool:
    """Answer a loopback server's body fault, if ``fault`` is one (True: answered): ``("raw",
    bytes)`` those bytes as a status-200 JSON body, ``("hostile", mode)`` a body no client should
    read whole (send_hostile_body; what was sent is appended to ``state.sent``)."""
    if fault is not None and fault[0] == "raw":
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(fault[1])))
        handler.end_headers()
        handler.wfile.write(fault[1])
        return True
    if fault is not None and fault[0] == "hostile":
        sent = send_hostile_body(handler, fault[1])
        with state.lock:
            state.sent.append(sent)
        return True
    return False


def cut_short(sent: list[tuple[int, int]]) -> None:
    """One hostile body asked for, and the connection closed before it was all sent. The server's
    handler records what it sent when its write fails, which may be after the command ended: the
    record is waited for (a minute at most)."""
    deadline = time.monotonic() + 60
    while not sent and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(sent) == 1, sent
    done, size = sent[0]
    assert size == HOSTILE_BYTES and done < size, f"{done:,} of {size:,} bytes were sent"


def send_hostile_body(handler: Any, mode: str) -> tuple[int, int]:
    """Answers status 200 with a body no client should read whole (``mode``, one of
    HOSTILE_MODES); returns (bytes sent, bytes in the body): fewer sent when the client closed
    the connection first, which, past what the kernels' buffers hold (tens of MB), only a
    client that stopped reading does.

    - ``huge``: HOSTILE_BYTES of JSON whitespace, the body ending with the connection (no
      Content-Length); ``huge-declared``: the same with its Content-Length;
    - ``gzip``, ``deflate``: a bomb (``bomb(mode)``, declared as the Content-Encoding) followed
      by padding up to HOSTILE_BYTES on the wire, which no decoder reads (it follows the end of
      the compressed stream) but a client reading the whole body receives; no Content-Length
      (the body ends with the connection), so that only what it decodes to can stop a client.
    """
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    head = b""
    if mode in ("gzip", "deflate"):
        head = bomb(mode)
        handler.send_header("Content-Encoding", mode)
    if mode == "huge-declared":
        handler.send_header("Content-Length", str(HOSTILE_BYTES))
    handler.end_headers()
    sent, filler = 0, b" " * MIB
    try:
        handler.wfile.write(head)
        sent = len(head)
        while sent < HOSTILE_BYTES:
            piece = filler[: HOSTILE_BYTES - sent]
            handler.wfile.write(piece)
            sent += len(piece)
        handler.wfile.flush()
    except OSError:  # the client closed the connection: what it should do
        pass
    return sent, HOSTILE_BYTES


def send_json(
    handler: Any,
    code: int,
    body: Any,
    headers: dict[str, str] | None = None,
    encoding: str | None = None,
) -> None:
    """Answer an http.server request with ``body`` as JSON (status ``code``, extra ``headers``;
    ``encoding``: gzip or deflate, the body compressed so)."""
    data = json.dumps(body).encode()
    handler.send_response(code)
    if encoding is not None:
        packer = zlib.compressobj(6, zlib.DEFLATED, 31 if encoding == "gzip" else 15)
        data = packer.compress(data) + packer.flush()
        handler.send_header("Content-Encoding", encoding)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(data)


def invoke(*args: str) -> tuple[int, str]:
    """``evalret ARGS`` in this process (Typer's CliRunner): the exit code and the output."""
    from typer.testing import CliRunner

    from evalret.cli import app

    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def command_tree(prefix: str = "evalret") -> list[tuple[str, Any]]:
    """Every command, group and sub-command of evalret's Typer app (the click objects Typer
    builds), each with its full name ("evalret cache info"), a group before its sub-commands;
    ``is_group`` tells them apart. The one walker of the command tree the tests share."""
    import typer.main

    from evalret.cli import app

    def walk(group: Any, name: str) -> list[tuple[str, Any]]:
        ctx = group.make_context(name, ["--help"], resilient_parsing=True)
        found = []
        for sub in group.list_commands(ctx):
            command = group.get_command(ctx, sub)
            assert command is not None, f"{name} {sub}"
            found.append((f"{name} {sub}", command))
            if is_group(command):
                found += walk(command, f"{name} {sub}")
        return found

    return walk(typer.main.get_command(app), prefix)


def is_group(command: Any) -> bool:
    """Whether a command of ``command_tree`` is a group (it has sub-commands)."""
    return hasattr(command, "list_commands")


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


def trec_eval_values(
    qrels: dict[str, dict[str, int]],
    ranked: dict[str, list[tuple[str, float]]],
    metric: Any,
    relevance_level: int = 1,
) -> dict[str, float]:
    """trec_eval's (pytrec-eval-terrier's) per-query value of ``metric`` (a Metric) for runs given
    in rank order, computed as the registry says (``trec_eval_reference``): its measure, with
    ``-J`` for a judged-only metric, on each run cut at the metric's depth first when the measure
    takes no cutoff (MRR@k, bpref@k; for a judged-only one, cut after its k-th judged document),
    1 where a ``positive`` measure is above 0 (hit rate).

    Negative grades are left out of the qrels passed: trec_eval reads a negative grade as
    "pooled but not judged" (form_res_rels.c: RELVALUE_UNJUDGED), which every measure used here
    treats as it treats a document missing from the qrels (non-relevant, not judged, removed by
    -J, outside bpref's N); and pytrec-eval-terrier 0.5.11 corrupts its heap on negative grades
    (later calls hang). A query left with no grade keeps a placeholder grade 0 on a document that
    is never retrieved, so that trec_eval still scores it (0 on every measure: it has no
    relevant document). A metric with its own gains (``ndcg@10(gains=1:1,2:3)``) is scored on
    qrels whose grades are replaced by their gains, as ir_measures' ``nDCG(gains=...)`` does.
    """
    import pytrec_eval

    from evalret.core.metrics import trec_eval_reference

    ref = trec_eval_reference(metric)
    gains = dict(ref.gains or ())
    qrels = {
        q: {d: gains.get(g, g) for d, g in j.items() if g >= 0} or {"__never_retrieved__": 0}
        for q, j in qrels.items()
    }
    if ref.run_depth is not None:
        ranked = {q: _cut_run(r, qrels.get(q, {}), ref) for q, r in ranked.items()}
    run = {q: (dict(r) or {"__none__": 0.0}) for q, r in ranked.items()}
    got = pytrec_eval.RelevanceEvaluator(
        qrels,
        {ref.measure},
        relevance_level=relevance_level if ref.relevance_level is None else ref.relevance_level,
        judged_docs_only_flag=ref.judged_only,
    ).evaluate(run)
    key = ref.measure.replace(".", "_")  # pytrec_eval's key: ndcg_cut.10 -> ndcg_cut_10
    if ref.positive:
        return {q: float(got[q][key] > 0) for q in ranked}
    return {q: got[q][key] for q in ranked}


def ir_measures_err(
    qrels: dict[str, dict[str, int]], ranked: dict[str, list[tuple[str, float]]], k: int
) -> dict[str, float]:
    """ir_measures' ERR@k per query (its gdeval provider: perl runs gdeval.pl, which prints 5
    decimals), 0 for a query it leaves out (gdeval scores only queries with a grade > 0).
    gdeval reads numeric query ids only, so the queries are numbered for it."""
    import ir_measures

    number = {q: str(i + 1) for i, q in enumerate(ranked)}
    judged = {number[q]: qrels.get(q, {}) or {"__never_retrieved__": 0} for q in ranked}
    run = {number[q]: dict(r) or {"__none__": 0.0} for q, r in ranked.items()}
    got = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.ERR @ k], judged, run)}
    return {q: float(got.get(number[q], 0.0)) for q in ranked}


def gdeval_err(grades: list[int], k: int | None) -> float:
    """gdeval.pl's ``err`` subroutine line by line: the grades of a ranking (0 for an unjudged
    or pooled document), the first k of them (all for None)."""
    score, decay = 0.0, 1.0
    for i, g in enumerate(grades[:k]):
        r = (2**g - 1) / 2**4
        score += r * decay / (i + 1)
        decay *= 1 - r
    return score


def _cut_run(ranking: list[tuple[str, float]], judged: dict[str, int], ref: Any) -> list:
    """``ranking`` cut after its ``ref.run_depth``-th document, counting judged documents only
    when ``ref.judged_only`` (so that -J sees exactly the first k judged ones; a negative grade
    is trec_eval's "pooled but not judged")."""
    if not ref.judged_only:
        return ranking[: ref.run_depth]
    seen = 0
    for i, (doc, _) in enumerate(ranking):
        seen += judged.get(doc, -1) >= 0
        if seen == ref.run_depth:
            return ranking[: i + 1]
    return ranking


def trec_ranked(run: dict[str, dict[str, float]]) -> dict[str, list[tuple[str, float]]]:
    """A run's rankings in trec_eval's order: score descending, then document id descending."""
    return {q: sorted(r.items(), key=lambda x: (x[1], x[0]), reverse=True) for q, r in run.items()}


def assert_report_matches_trec_eval(
    per_query: dict[str, list[float]],
    query_ids: list[str],
    qrels: dict[str, dict[str, int]],
    run: dict[str, dict[str, float]],
    relevance_level: int,
) -> int:
    """Every metric of ``per_query`` equals trec_eval's on ``run`` for every qrels query (a query
    absent from the run scores 0, trec_eval -c); returns the number of values compared."""
    import pytest

    from evalret.core.metrics import parse_metric

    assert sorted(query_ids) == sorted(qrels)
    ranked = trec_ranked({q: run.get(q, {}) for q in qrels})
    for name in per_query:
        theirs = trec_eval_values(qrels, ranked, parse_metric(name), relevance_level)
        for i, q in enumerate(query_ids):
            assert per_query[name][i] == pytest.approx(theirs[q], abs=1e-9), (name, q)
    return len(per_query) * len(query_ids)


def metric_table(report: Any) -> dict[tuple[str, str, str], float]:
    """Every mean (index, slice, metric) and every per-query value (index, query, metric)."""
    table = {}
    for index, section in report.indexes.items():
        for name, s in section.slices.items():
            for metric, value in s.metrics.items():
                if value.value is not None:
                    table[(index, name, metric)] = value.value
        for metric, values in section.per_query.items():
            for query, v in zip(report.query_ids, values, strict=True):
                table[(index, f"query {query}", metric)] = v
    return table


LANE_MARKS = "__evalret_lane_marks__"


def marks_its_users(*marks: str) -> Any:
    """Put under ``@pytest.fixture``: every test that uses the fixture, directly or through
    another fixture, carries ``marks`` (tests/conftest.py adds them before ``-m`` selects), so a
    file whose slow part is one fixture (a Postgres server, a warm model) marks only that part."""

    def declare(function: Any) -> Any:
        setattr(function, LANE_MARKS, marks)
        return function

    return declare


# the reference pages generated from the code (tests/test_docs_generated.py keeps them fresh):
# that they name a command proves nothing about the hand-written documentation
GENERATED_DOCS = frozenset(
    {"reference/cli.md", "reference/config.md", "reference/metrics.md", "reference/report-json.md"}
)


def handwritten_docs() -> str:
    """The text of every hand-written page of the documentation site (docs/, generated pages
    left out), where a user-visible feature is documented."""
    docs = Path(__file__).resolve().parents[1] / "docs"
    return "\n".join(
        page.read_text(encoding="utf-8")
        for page in sorted(docs.rglob("*.md"))
        if page.relative_to(docs).as_posix() not in GENERATED_DOCS
    )


# a plug-in encoder module (`model: {provider: python, encoder: "module:make"}`): a hashed bag of
# words, 64 dimensions by default; fast, deterministic, no model to load
HASH_ENCODER = """
import hashlib
import numpy as np

class HashEncoder:
    def __init__(self, dim):
        self.dim = dim

    def identity(self):
        return {"kind": "hashed bag of words", "dim": self.dim}

    def encode(self, texts, kind):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for tok in t.lower().split():
                h = hashlib.sha256(tok.encode()).digest()
                out[i, int.from_bytes(h[:4], "little") % self.dim] += 1.0
        return out

def make(dim=64):
    return HashEncoder(dim)
"""


# a plug-in encoder module like HASH_ENCODER whose scores are continuous: each word adds a vector
# drawn from a generator seeded by its hash (a bag of word counts ties documents by the dozen, and
# ties are broken by rounding: two equal ways of computing a vector may then rank them apart)
SEEDED_WORD_ENCODER = """
import hashlib
import numpy as np

class SeededWordEncoder:
    def __init__(self, dim):
        self.dim = dim

    def identity(self):
        return {"kind": "seeded word vectors", "dim": self.dim}

    def encode(self, texts, kind):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for tok in t.lower().split():
                seed = int.from_bytes(hashlib.sha256(tok.encode()).digest()[:8], "little")
                out[i] += np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return out

def make(dim=64):
    return SeededWordEncoder(dim)
"""


def build_site(site_dir: Path) -> None:
    """``mkdocs build --strict`` of the repository's docs into ``site_dir`` (never into the
    repository); a warning or a broken link fails the calling test with mkdocs' own output."""
    import os
    import subprocess
    import sys

    mkdocs = Path(sys.executable).parent / "mkdocs"
    done = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(site_dir)],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
