"""`evalret trec_eval` and `evalret score --trec-eval-output` as a drop-in for trec_eval 10: its
whole measure set (``-m all_trec``), its flags (-q -m -c -l -n -J -N -M) and its text, byte for
byte. Three references: the recorded outputs of the trec_eval 10 binary on hostile files
(tests/data/trec_eval, always checked); the binary itself where the environment names it
(tests/trec_eval_cases.py: a property test over random qrels and runs under every flag); and
pytrec_eval (trec_eval 9.0.8's measure code, from PyPI) per query, on every measure the two
versions define alike."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalret.core.treceval import Settings, form_ranking, select_measures, trec_eval_text
from helpers import invoke
from trec_eval_cases import CASES, DATA, QRELS, RUN, run_binary, trec_eval_binary, write_hostile


@pytest.mark.parametrize("case", sorted(CASES))
def test_output_is_trec_eval_10s_byte_for_byte(case: str) -> None:
    """Each flag set on the hostile files prints exactly what trec_eval 10 printed."""
    code, out = invoke("trec_eval", *CASES[case], str(QRELS), str(RUN))
    assert code == 0, out
    assert out == (DATA / f"{case}.out").read_text()


@pytest.mark.parametrize(("level", "case"), [(1, "all_trec_c"), (2, "all_trec_c_l2")])
def test_score_trec_eval_output_is_trec_eval_c_q_all_trec(level: int, case: str) -> None:
    """`score --trec-eval-output` prints trec_eval -c -q -m all_trec -l LEVEL's text."""
    args = ("score", str(QRELS), str(RUN), "--trec-eval-output", "--relevance-level", str(level))
    code, out = invoke(*args)
    assert code == 0, out
    assert out == (DATA / f"{case}.out").read_text()


def test_several_runs_print_one_after_the_other(tmp_path: Path) -> None:
    other = tmp_path / "other.run"
    other.write_text(RUN.read_text())
    code, out = invoke("score", str(QRELS), str(RUN), f"b={other}", "--trec-eval-output")
    assert code == 0, out
    assert out == 2 * (DATA / "all_trec_c.out").read_text()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("-Z", "z"), "No such option: -Z"),
        (("-D", "1"), "No such option: -D"),
        (("-m", "bogus"), "unknown measure 'bogus'"),
        (("-m", "P.0,5"), "a cutoff must be above 0"),
        (("-m", "P.5,5"), "a cutoff is given twice"),
        (("-m", "ndcg.2"), "name=value pairs"),
        (("-m", "map.5"), "takes no parameters"),
        (("-q",), "query 'q7' of the qrels has no line in the run (trec_eval -c)"),
    ],
)
def test_what_trec_eval_refuses_is_refused_with_exit_2(args: tuple[str, ...], said: str) -> None:
    """An unknown flag, a bad -m, and (without -c) a qrels query missing from the run, which
    trec_eval 10 refuses too (its exit 4)."""
    code, out = invoke("trec_eval", *args, str(QRELS), str(RUN))
    assert code == 2
    assert said in " ".join(out.split())


def test_a_query_judged_only_negatively_is_refused(tmp_path: Path) -> None:
    """trec_eval's answer is undefined there (it fails, or reads stale counts)."""
    qrels, run = tmp_path / "q", tmp_path / "r"
    qrels.write_text("1 0 a 1\n2 0 b -1\n")
    run.write_text("1 Q0 a 1 1.0 t\n2 Q0 b 1 1.0 t\n")
    code, out = invoke("trec_eval", "-c", str(qrels), str(run))
    assert code == 2 and "every judgment of the qrels is negative" in out


@pytest.mark.parametrize(
    "extra", [("--metric", "ndcg@10"), ("--out", "x"), ("--baseline", "b.json")]
)
def test_score_trec_eval_output_takes_no_report_option(extra: tuple[str, str]) -> None:
    code, out = invoke("score", str(QRELS), str(RUN), "--trec-eval-output", *extra)
    assert code == 2 and f"takes no {extra[0]}" in out


def test_score_trec_eval_output_wants_a_qrels_file() -> None:
    code, out = invoke("score", str(DATA), str(RUN), "--trec-eval-output")
    assert code == 2 and "is a directory" in out


# --- against the binary, where the environment names it --------------------------------------


@pytest.fixture(scope="session")
def binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = Path(tmp_path_factory.getbasetemp()).parent / "evalret-trec_eval-build"
    cache.mkdir(parents=True, exist_ok=True)
    found = trec_eval_binary(cache)
    if found is None:
        pytest.skip(
            "no trec_eval binary: set EVALRET_TREC_EVAL or EVALRET_TREC_EVAL_SRC (no PyPI "
            "package ships its sources); the recorded outputs stand for it"
        )
    return found


def test_the_recordings_are_the_binarys(binary: Path, tmp_path: Path) -> None:
    """The committed hostile files are write_hostile's, and each recording is what the binary
    prints on them now."""
    write_hostile(tmp_path / "q", tmp_path / "r")
    assert (tmp_path / "q").read_bytes() == QRELS.read_bytes()
    assert (tmp_path / "r").read_bytes() == RUN.read_bytes()
    for name, flags in CASES.items():
        assert run_binary(binary, flags, QRELS, RUN) == (DATA / f"{name}.out").read_bytes(), name


FLAG_SETS = [
    ("-c", "-q", "-m", "all_trec"),
    ("-c", "-q", "-J", "-m", "all_trec"),
    ("-c", "-q", "-l2", "-m", "all_trec"),
    ("-c", "-q", "-M4", "-J", "-l2", "-m", "all_trec"),
    ("-q", "-m", "all_trec"),
    ("-c", "-q", "-m", "ndcg.1=3,2=1", "-m", "relstring.5"),
    ("-c", "-q", "-J", "-m", "Rndcg.1=0,2=4", "-m", "ndcg_rel.2=7"),
    # below 0 a document not judged is relevant: the measures walk every rank, not the judged
    ("-c", "-q", "-l-1", "-m", "all_trec"),
    ("-c", "-q", "-l0", "-M3", "-m", "all_trec"),
    # gains that are not the grades, a gain for documents not judged, a whole-number cost
    ("-c", "-q", "-m", "G.1=0.5,2=2.5", "-m", "ndcg_rel.-1=2"),
    # a gain equal to its negative grade: the gain is not the positive grades' alone
    ("-c", "-q", "-m", "ndcg.-1=-1", "-m", "G.-1=-1,-2=-2", "-m", "Rndcg.-1=-1"),
    ("-c", "-q", "-m", "rbp.p=0.8,2=3"),  # alone: trec_eval's rbp reads another measure's gains
    ("-c", "-q", "-m", "Rndcg.-1=1,0=1", "-m", "G.2=3", "-m", "ndcg.0=-2,1=0.5"),
]


@st.composite
def hostile_inputs(draw: st.DrawFn) -> tuple[str, str]:
    """qrels and run text: grades -1..4 (each query one grade >= 0), all-zero queries, score
    ties, unjudged documents, queries missing from either side."""
    docs = [f"d{i}" for i in range(draw(st.integers(2, 30)))]
    qrels, run = [], []
    for n in range(draw(st.integers(1, 4))):
        judged = draw(st.lists(st.sampled_from(docs), min_size=1, unique=True))
        grades = draw(st.lists(st.sampled_from([-1, 0, 1, 2, 4]), min_size=len(judged)))
        grades = [max(grades[0], 0), *grades[1 : len(judged)]]
        grades += [0] * (len(judged) - len(grades))
        qrels += [f"q{n} 0 {d} {g}" for d, g in zip(judged, grades, strict=True)]
        if n and draw(st.booleans()) and draw(st.booleans()):
            continue  # judged, not retrieved
        ranked = draw(st.lists(st.sampled_from(docs), min_size=1, unique=True))
        scores = draw(st.lists(st.sampled_from([0.5, 1.0, 0.25, 0.125]), min_size=len(ranked)))
        run += [f"q{n} Q0 {d} 0 {s} t" for d, s in zip(ranked, scores, strict=False)]
    if draw(st.booleans()):
        run.append("qx Q0 d0 0 1 t")
    return "\n".join(qrels) + "\n", "\n".join(run) + "\n"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_inputs(), st.sampled_from(FLAG_SETS))
def test_random_qrels_and_runs_print_as_the_binary(
    binary: Path, tmp_path_factory: pytest.TempPathFactory, files: tuple[str, str], flags: tuple
) -> None:
    """Per query and in the 'all' lines, byte for byte, on random hostile inputs; where trec_eval
    fails (a query missing without -c), evalret refuses with exit 2."""
    import subprocess

    where = tmp_path_factory.mktemp("hostile")
    qrels, run = where / "q", where / "r"
    qrels.write_text(files[0])
    run.write_text(files[1])
    theirs = subprocess.run([str(binary), *flags, str(qrels), str(run)], capture_output=True)
    code, out = invoke("trec_eval", *flags, str(qrels), str(run))
    if theirs.returncode:
        assert code == 2, out
    else:
        assert (code, out) == (0, theirs.stdout.decode())


# --- against pytrec_eval (trec_eval 9.0.8's measures), per query ------------------------------

# defined alike in 9.0.8 and 10 (10 rounds the recall levels of iprec_at_recall and 11pt_avg
# where 9.0.8 added 0.9 and truncated; rbp, rbp_resid and unj are new in 10)
ALIKE = [
    *("num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank"),
    *("P", "recall", "infAP", "gm_bpref", "Rprec_mult", "utility", "binG", "G", "ndcg"),
    *("ndcg_rel", "Rndcg", "ndcg_cut", "map_cut", "relative_P", "success", "set_P"),
    *("set_relative_P", "set_recall", "set_map", "set_F", "num_nonrel_judged_ret"),
]


@st.composite
def graded(draw: st.DrawFn) -> tuple[dict, dict]:
    docs = [f"d{i}" for i in range(draw(st.integers(2, 25)))]
    qrels, run = {}, {}
    for n in range(draw(st.integers(1, 4))):
        judged = draw(st.lists(st.sampled_from(docs), min_size=1, unique=True))
        qrels[f"q{n}"] = {d: draw(st.integers(0, 3)) for d in judged}
        ranked = draw(st.lists(st.sampled_from(docs), min_size=1, unique=True))
        run[f"q{n}"] = [(d, draw(st.sampled_from([0.5, 1.0, 0.25]))) for d in ranked]
    return qrels, run


@settings(max_examples=150, deadline=None)
@given(graded(), st.sampled_from([1, 2]), st.booleans())
def test_every_measure_equals_pytrec_eval_per_query(
    data: tuple[dict, dict], level: int, judged_only: bool
) -> None:
    """Every value of every measure both define alike equals pytrec_eval's exactly, under -l
    and -J (pytrec-eval-terrier takes no negative grade: it corrupts its heap on one)."""
    import pytrec_eval

    qrels, run = data
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, set(ALIKE), relevance_level=level, judged_docs_only_flag=judged_only
    )
    theirs = evaluator.evaluate({q: dict(lines) for q, lines in run.items()})
    s = Settings(relevance_level=level, judged_only=judged_only)
    for sel in select_measures(ALIKE):
        for qid in qrels:
            values = sel.measure.fn(form_ranking(qrels[qid], run[qid], s), s, sel.params)  # type: ignore[misc]
            values = values if isinstance(values, list) else [values]
            for name, value in zip(sel.names, values, strict=True):
                want = theirs[qid][name]
                assert value == want or (math.isnan(value) and math.isnan(want)), (name, qid)


def test_the_text_of_one_query_by_hand() -> None:
    """A query of three documents: P_5 is 2/5, map (1 + 2/3) / 2, recip_rank 1; 'all' lines
    after the per-query ones, the counts as integers."""
    text = trec_eval_text(
        {"q": {"a": 1, "b": 0, "c": 2}},
        {"q": [("a", 3.0), ("b", 2.0), ("c", 1.0)]},
        "run",
        Settings(per_query=True),
        ["num_ret", "map", "P.5", "recip_rank"],
    )
    assert text.splitlines() == [
        "num_ret               \tq\t3",
        "map                   \tq\t0.8333",
        "recip_rank            \tq\t1.0000",
        "P_5                   \tq\t0.4000",
        "num_ret               \tall\t3",
        "map                   \tall\t0.8333",
        "recip_rank            \tall\t1.0000",
        "P_5                   \tall\t0.4000",
    ]
