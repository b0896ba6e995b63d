"""trec_eval's measures read from a run's columns (``ranking.graded_columns``, what `evalret
trec_eval` and `score --trec-eval-output` use) print exactly what they print from the run's
lines sorted and looked up one query at a time (``form_ranking``), under every setting the
columns path handles itself (-M, -J, -l, -c); and ``run_tag``, read from the file's end, is the
tag the forward reading finds. The binary comparisons of test_trec_eval_dropin.py check both
against trec_eval 10 itself."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalret.core.treceval import Settings, trec_eval_text
from evalret.data.runfile import read_run, run_tag

SPECS = [
    ["all_trec"],
    ["G.1=0.5,2=2.5", "rbp.p=0.8,2=3", "ndcg_rel.-1=2", "Rndcg.-1=1,0=1", "ndcg.0=-2,1=0.5"],
]


@st.composite
def qrels_and_run(draw: st.DrawFn) -> tuple[dict[str, dict[str, int]], list[str]]:
    """Grades -1..4 (each query one >= 0), ties, unjudged documents, queries on one side only."""
    docs = [f"d{i}" for i in range(draw(st.integers(2, 40)))]
    qrels: dict[str, dict[str, int]] = {}
    lines: list[str] = []
    for n in range(draw(st.integers(1, 5))):
        judged = draw(st.lists(st.sampled_from(docs), min_size=1, unique=True))
        grades = [draw(st.sampled_from([-1, 0, 1, 2, 4])) for _ in judged]
        grades[0] = max(grades[0], 0)
        qrels[f"q{n}"] = dict(zip(judged, grades, strict=True))
        if n and draw(st.booleans()):
            continue  # judged, not retrieved
        ranked = draw(st.lists(st.sampled_from(docs), min_size=1, unique=True))
        for d in ranked:
            lines.append(f"q{n} Q0 {d} 0 {draw(st.sampled_from(['0.5', '1', '0.25']))} t")
    if draw(st.booleans()):
        lines.append("qx Q0 d0 0 1 t")
    order = draw(st.permutations(range(len(lines))))
    return qrels, [lines[i] for i in order]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    qrels_and_run(),
    st.sampled_from([-2, -1, 0, 1, 2]),
    st.booleans(),
    st.sampled_from([2147483647, 1, 3]),
    st.sampled_from(SPECS),
)
def test_columns_print_what_lines_print(
    tmp_path_factory: pytest.TempPathFactory,
    data: tuple[dict[str, dict[str, int]], list[str]],
    level: int,
    judged_only: bool,
    max_docs: int,
    specs: list[str],
) -> None:
    qrels, lines = data
    path = tmp_path_factory.mktemp("columns") / "run"
    path.write_text("\n".join(lines) + "\n")
    s = Settings(
        relevance_level=level,
        judged_only=judged_only,
        max_docs=max_docs,
        average_complete=True,
        per_query=True,
    )
    by_lines: dict[str, list[tuple[str, float]]] = {}
    for line in lines:
        qid, _, docno, _, score, _ = line.split()
        by_lines.setdefault(qid, []).append((docno, float(score)))
    columns = read_run(path, "trec", max_docs)
    assert trec_eval_text(qrels, columns, "t", s, specs) == trec_eval_text(
        qrels, by_lines, "t", s, specs
    )


def forward_tag(path: Path) -> str:
    """The tag of the last ranking line, reading every line from the first."""
    tag = ""
    for line in path.read_bytes().removeprefix(b"\xef\xbb\xbf").split(b"\n"):
        columns = line.split(None, 6)
        if len(columns) >= 6 and not columns[0].startswith(b"#"):
            tag = columns[5].decode()
    return tag


@pytest.mark.parametrize(
    "text",
    [
        "q1 Q0 d1 1 0.5 first\nq1 Q0 d2 2 0.4 last\n",
        "q1 Q0 d1 1 0.5 first\nq1 Q0 d2 2 0.4 last",  # no final newline
        "q1 Q0 d1 1 0.5 a\r\nq1 Q0 d2 2 0.4 crlf\r\n\r\n\n",
        "q1 Q0 d1 1 0.5 a\nq1 Q0 d2 2 0.4 b extra columns\n# a comment\n\n",
        "\ufeffq1 Q0 d1 1 0.5 only\n",  # the one line, after a byte-order mark
        "q1 Q0 d1 1 0.5 early\n" + "# padding past one block\n" * 5000,
        "q1\tQ0\td1\t1\t0.5\ttabs\n#q1 Q0 d2 2 0.4 commented\n",
    ],
)
def test_run_tag_from_the_end_is_the_forward_one(tmp_path: Path, text: str) -> None:
    path = tmp_path / "run"
    path.write_bytes(text.encode("utf-8"))
    assert run_tag(path) == forward_tag(path)
    assert run_tag(path) != ""
