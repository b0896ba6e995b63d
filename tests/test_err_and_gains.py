"""ERR@k against ir_measures itself (its gdeval provider), and nDCG with its own gains
(``ndcg@10(gains=0:0,1:1,2:3,3:7)``) against trec_eval's own gain parameters, through the
parser, the computation and ``evalret score`` (issue #40, item 3).

ir_measures' ERR comes from gdeval.pl, which prints 5 decimals: evalret's values are compared
with it to half a unit of the fifth decimal, and to the last bit with ``helpers.gdeval_err`` (its
``err`` subroutine line by line). trec_eval's ``ndcg_cut`` takes no gain parameters (its ``ndcg``
does: ``-m ndcg.0=0,1=1,2=3``), so the cut form is checked on remapped qrels (what ir_measures'
``nDCG(gains=...)`` does, test_trec_eval_conformance) and the uncut form against
``core.treceval``'s ``ndcg`` with those parameters, which equals trec_eval 10 byte for byte
(test_trec_eval_dropin)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from typer.testing import CliRunner

from evalret.cli import app
from evalret.core.metrics import Metric, build_judgments, compute, parse_metric
from evalret.core.treceval import Settings, form_ranking
from evalret.core.treceval.gains import ndcg as trec_eval_ndcg
from evalret.errors import MetricError
from helpers import (
    assert_report_matches_trec_eval,
    gdeval_err,
    ir_measures_err,
    read_trec_run,
    trec_ranked,
)
from strategies import graded_runs

GDEVAL_PRINTS = 0.5e-5 + 1e-12  # gdeval.pl prints %.5f


def _judgments(doc_ids: list[str], qrels: dict, run: dict, depth: int) -> tuple:
    """evalret's judgments of ``run`` ranked by trec_eval's order (its rankings, as a dict)."""
    ranked = trec_ranked(run)
    index = {d: i for i, d in enumerate(doc_ids)}
    ids = np.full((len(run), depth), -1, dtype=np.int64)
    for qi, q in enumerate(run):
        row = [index[d] for d, _ in ranked[q]][:depth]
        ids[qi, : len(row)] = row
    rows = [(qi, index[d], g) for qi, q in enumerate(run) for d, g in qrels[q].items()]
    q_, d_, g_ = (np.array(c) for c in zip(*rows, strict=True))
    return build_judgments(ids, q_, d_, g_, len(doc_ids)), ranked


@given(case=graded_runs(min_grade=-2, without_relevant=True))
@settings(max_examples=40, deadline=None)
def test_err_equals_ir_measures_per_query(case: tuple) -> None:
    """err@1, err@3, err@10 and err (the whole ranking: ERR at the run's depth) equal
    ir_measures' ERR per query on graded runs with ties, negative grades, unjudged documents
    and queries without a relevant document; and gdeval's own loop to the last bit."""
    doc_ids, qrels, run = case
    j, ranked = _judgments(doc_ids, qrels, run, len(doc_ids))
    got = compute([Metric("err", k) for k in (1, 3, 10, None)], j)
    for k in (1, 3, 10, None):
        theirs = ir_measures_err(qrels, ranked, k or len(doc_ids))
        for qi, q in enumerate(run):
            grades = [max(qrels[q].get(d, 0), 0) for d, _ in ranked[q]]
            ours = got[str(Metric("err", k))][qi]
            assert ours == pytest.approx(theirs[q], abs=GDEVAL_PRINTS), (k, q)
            assert ours == gdeval_err(grades, k), (k, q)


@given(case=graded_runs(min_grade=-2))
@settings(max_examples=30, deadline=None)
def test_judged_only_err_is_ir_measures_err_on_the_judged_documents(case: tuple) -> None:
    """err@3:judged is ir_measures' ERR@3 on the run with its unjudged documents (not in the
    qrels, or pooled with a negative grade) removed: the condensed list."""
    doc_ids, qrels, run = case
    j, _ = _judgments(doc_ids, qrels, run, len(doc_ids))
    got = compute([parse_metric("err@3:judged")], j)["err@3:judged"]
    judged_run = {
        q: {d: s for d, s in r.items() if qrels[q].get(d, -1) >= 0} for q, r in run.items()
    }
    theirs = ir_measures_err(qrels, trec_ranked(judged_run), 3)
    for qi, q in enumerate(run):
        assert got[qi] == pytest.approx(theirs[q], abs=GDEVAL_PRINTS), q


def test_err_by_hand_with_grade_4() -> None:
    """Grades 1, 2, 0, 4 ranked first to fourth: r = 1/16, 3/16, 0, 15/16 (gdeval's maximum
    grade 4, not the query's), each stop term r_i / i times the chance of reaching rank i; the
    relevance level and the run's exponential nDCG gain change nothing."""
    j = build_judgments(
        np.array([[0, 1, 2, 3]]), np.zeros(4), np.arange(4), np.array([1, 2, 0, 4]), 4
    )
    r = [1 / 16, 3 / 16, 0.0, 15 / 16]
    want = r[0] + (1 - r[0]) * r[1] / 2 + (1 - r[0]) * (1 - r[1]) * r[3] / 4
    for gain in ("linear", "exponential"):
        got = compute([parse_metric("err@4"), parse_metric("err@4(rel=3)")], j, gain)  # type: ignore[arg-type]
        assert got["err@4"][0] == pytest.approx(want, abs=1e-15) == got["err@4(rel=3)"][0]
    qrels = {"q": {"a": 1, "b": 2, "c": 0, "d": 4}}
    ranked = {"q": [("a", 4.0), ("b", 3.0), ("c", 2.0), ("d", 1.0)]}
    assert ir_measures_err(qrels, ranked, 4)["q"] == pytest.approx(want, abs=GDEVAL_PRINTS)


def test_err_refuses_a_grade_above_4_as_gdeval_does() -> None:
    """gdeval.pl (so ir_measures' ERR) refuses judgments above grade 4; evalret's err names the
    grade and what to do, and nDCG still scores the same judgments."""
    j = build_judgments(np.array([[0, 1]]), np.zeros(2), np.arange(2), np.array([5, 1]), 2)
    with pytest.raises(MetricError, match=r"grades from 0 to 4.*hold grade 5"):
        compute([parse_metric("err@10")], j)
    assert compute([parse_metric("ndcg@10")], j)["ndcg@10"][0] == 1.0


@given(case=graded_runs(min_grade=-2))
@settings(max_examples=60, deadline=None)
def test_uncut_ndcg_with_gains_equals_trec_eval_ndcg_with_gain_parameters(case: tuple) -> None:
    """``ndcg(gains=0:2,1:1,2:5)`` equals trec_eval's ``-m ndcg.0=2,1=1,2=5`` per query
    (core.treceval, trec_eval 10 to the last bit): listed grades gain their value, grade 3 its
    own, grade 0 now gains (in the ranking and in the ideal)."""
    doc_ids, qrels, run = case
    j, ranked = _judgments(doc_ids, qrels, run, len(doc_ids))
    gains = ((0, 2), (1, 1), (2, 5))
    metric = Metric("ndcg", gains=gains)
    assert str(metric) == "ndcg(gains=0:2,1:1,2:5)" and parse_metric(str(metric)) == metric
    got = compute([metric], j)[str(metric)]
    pairs = tuple((str(g), float(v)) for g, v in gains)
    for qi, q in enumerate(run):
        ranking = form_ranking(qrels[q], ranked[q], Settings())
        assert got[qi] == pytest.approx(trec_eval_ndcg(ranking, pairs), abs=1e-12), q


def test_gains_by_hand_and_the_run_gain_leaves_them_alone() -> None:
    """Grades 2, 0, 1 ranked, a grade 3 unretrieved: gains 0:0,1:1,2:3,3:7 give DCG@3 = 3 +
    1/2, ideal 7 + 3/log2(3) + 1/2; ``ndcg_gain: exponential`` maps the plain nDCG's grades but
    not a metric's own gains (they are final)."""
    j = build_judgments(np.array([[0, 1, 2]]), np.zeros(4), np.arange(4), np.array([2, 0, 1, 3]), 4)
    name = "ndcg@3(gains=0:0,1:1,2:3,3:7)"
    want = (3 + 1 / 2) / (7 + 3 / np.log2(3) + 1 / 2)
    for gain in ("linear", "exponential"):
        got = compute([parse_metric(name), parse_metric("ndcg@3")], j, gain)  # type: ignore[arg-type]
        assert got[name][0] == pytest.approx(want, abs=1e-15)
    exponential = compute([parse_metric("ndcg@3")], j, "exponential")["ndcg@3"][0]
    assert exponential == pytest.approx(want, abs=1e-15)  # 2^g - 1 is that very mapping


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("recall@10(gains=1:2)", "gains= applies to the families that read grades as gains (ndcg)"),
        ("err@10(gains=1:2)", "not to err"),
        ("ndcg@10(gain=1:2)", "unknown parameter 'gain' (did you mean 'gains'?)"),
        ("ndcg@10(gains=1=2)", "GRADE:GAIN pairs separated by commas, as in gains=0:0,1:1,2:3"),
        ("ndcg@10(gains=)", "'' is not one"),
        ("ndcg@10(gains=-1:2)", "grade -1 must be from 0 to 1000"),
        ("ndcg@10(gains=1:-2)", "gain -2 of grade 1 must be from 0 to 1,000,000"),
        ("ndcg@10(gains=1:2,1:3)", "gives grade 1 twice"),
        ("ndcg@10(rel=2,rel=3)", "rel= given twice"),
        ("ndcg@10(rel=0)", "rel= must be a grade from 1 to 1000"),
        ("ndcg@10(2)", "'2' is no parameter"),
        ("erf@10", "did you mean 'err@10'?"),
        ("ndgc@10(gains=1:2)", "did you mean 'ndcg@10(gains=1:2)'?"),
    ],
)
def test_bad_parameters_are_refused_naming_the_metric(name: str, message: str) -> None:
    with pytest.raises(MetricError) as e:
        parse_metric(name)
    assert f"{name!r}" in str(e.value) and message in str(e.value)


def test_parameters_read_in_any_order_and_print_one_way() -> None:
    """Spaces, case and the order of the pairs and parameters do not matter; the name printed
    (reports, baselines) is the one canonical form, which parses back to the same metric."""
    a = parse_metric("NDCG @ 10 ( gains = 3:7 , 1:1 , rel = 2 )")
    b = parse_metric("ndcg@10(rel=2,gains=1:1,3:7)")
    assert a == b and str(a) == "ndcg@10(rel=2,gains=1:1,3:7)" and a.gains == ((1, 1), (3, 7))
    assert sorted([b, parse_metric("ndcg@10"), parse_metric("ndcg@10(gains=1:1)")]) == [
        parse_metric("ndcg@10"),
        parse_metric("ndcg@10(gains=1:1)"),
        b,
    ]


QRELS = "1 0 a 2\n1 0 b 1\n1 0 c 0\n1 0 d 3\n1 0 e -1\n2 0 a 1\n2 0 f 4\n2 0 g 0\n3 0 b 2\n"
RUN = (
    "1 Q0 c 1 9 t\n1 Q0 e 2 8 t\n1 Q0 b 3 8 t\n1 Q0 a 4 7 t\n1 Q0 x 5 6 t\n"
    "2 Q0 f 1 5 t\n2 Q0 g 2 4 t\n2 Q0 a 3 4 t\n3 Q0 y 1 3 t\n3 Q0 b 2 2 t\n"
)
SIDE_BY_SIDE = ["ndcg@10", "ndcg@10(rel=2)", "ndcg@10(gains=0:0,1:1,2:3,3:7)", "err@10", "ndcg"]


def test_one_score_run_reports_ndcg_its_level_and_gains_variants_and_err(tmp_path: Path) -> None:
    """``evalret score -m ndcg@10 -m 'ndcg@10(rel=2)' -m 'ndcg@10(gains=...)' -m err@10``
    reports the four side by side (terminal and report.json); the trec_eval ones equal trec_eval
    per query, err@10 ir_measures' ERR@10."""
    (tmp_path / "q.qrels").write_text(QRELS)
    (tmp_path / "r.trec").write_text(RUN)
    args = ["score", str(tmp_path / "q.qrels"), str(tmp_path / "r.trec"), "--no-progress"]
    for name in SIDE_BY_SIDE:
        args += ["-m", name]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    assert all(name in result.output for name in SIDE_BY_SIDE[:4])
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    per_query = report["indexes"]["r"]["per_query"]
    assert list(per_query) == SIDE_BY_SIDE
    qrels: dict[str, dict[str, int]] = {}
    for line in QRELS.splitlines():
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = int(g)
    run = read_trec_run(tmp_path / "r.trec")
    trec = {n: v for n, v in per_query.items() if n != "err@10"}
    assert assert_report_matches_trec_eval(trec, report["query_ids"], qrels, run, 1) == 12
    err = ir_measures_err(qrels, trec_ranked(run), 10)
    assert per_query["err@10"] == pytest.approx(
        [err[q] for q in report["query_ids"]], abs=GDEVAL_PRINTS
    )
    assert per_query["ndcg@10(gains=0:0,1:1,2:3,3:7)"] != per_query["ndcg@10"]


def test_a_bad_metric_on_the_command_line_exits_2_with_the_hint(tmp_path: Path) -> None:
    (tmp_path / "q.qrels").write_text(QRELS)
    (tmp_path / "r.trec").write_text(RUN)
    result = CliRunner().invoke(
        app,
        ["score", str(tmp_path / "q.qrels"), str(tmp_path / "r.trec"), "--no-progress",
         "-m", "ndcg@10(gain=1:3)", "--out", str(tmp_path / "o")],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "did you mean 'gains'?" in " ".join(result.output.split())


def test_a_run_refuses_err_on_grades_above_4_before_embedding(tmp_path: Path) -> None:
    """`evalret run` with err among the metrics and a grade 5 in the golden set: exit 2 naming
    the grade, and the encoder (a module beside the config that records each call) is never
    called: the refusal comes before any work is paid for."""
    golden = tmp_path / "golden"
    golden.mkdir()
    docs = [{"id": f"d{i}", "text": f"document {i} about topic {i % 3}"} for i in range(6)]
    queries = [
        {"id": "q1", "text": "topic 1", "relevant": {"d1": 5, "d4": 1}},
        {"id": "q2", "text": "topic 2", "relevant": {"d2": 2}},
    ]
    for name, rows in (("corpus.jsonl", docs), ("queries.jsonl", queries)):
        (golden / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "calls_encoder.py").write_text(
        "import numpy as np\n"
        "from pathlib import Path\n\n"
        "class Encoder:\n"
        "    def identity(self):\n"
        "        return {'kind': 'records its calls', 'dim': 4}\n\n"
        "    def encode(self, texts, kind):\n"
        "        with open(Path(__file__).with_name('calls.txt'), 'a') as f:\n"
        "            f.write(f'{kind} {len(texts)}\\n')\n"
        "        return np.ones((len(texts), 4), dtype=np.float32)\n\n"
        "def make():\n"
        "    return Encoder()\n"
    )
    config = tmp_path / "cfg.yaml"
    config.write_text(
        f"golden_set: {{path: {golden}}}\n"
        "metrics: [ndcg@10, err@10]\n"
        f"cache: {{dir: {tmp_path / 'cache'}}}\n"
        "model: {provider: python, callable: 'calls_encoder:make'}\n"
        "indexes: {hnsw: {enabled: false}, bm25: {enabled: false}, hybrid: {enabled: false}}\n"
    )
    result = CliRunner().invoke(app, ["run", "-c", str(config), "--no-progress"])
    assert result.exit_code == 2, result.output
    assert "hold grade 5" in result.output
    assert not (tmp_path / "calls.txt").exists(), "the encoder was called before the refusal"
