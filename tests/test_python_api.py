"""The Python API (`evalret.validate`, `merge`, `score`; docs/how-to/library.md): a library user
calls each on real files in a fresh interpreter, and no module of evalret.commands is imported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CODE = """
import json, sys
from pathlib import Path
import evalret

base = Path(sys.argv[1])
checked = evalret.validate(base / "golden")
merged = evalret.merge([base / "alice.jsonl"], base / "golden", base / "merged")
scored = evalret.score(base / "qrels.txt", [str(base / "run.trec")], metrics=["ndcg@10"])
again = evalret.validate(base / "merged")
print(json.dumps({
    "errors": len(checked.errors),
    "queries": checked.summary.n_queries,
    "merged": merged.merged,
    "judgments_after": again.summary.n_judgments,
    "ndcg": scored.report.indexes["run"].slices["all"].metrics["ndcg@10"].value,
    "commands": sorted(m for m in sys.modules if m.startswith("evalret.commands")),
}))
"""


def _files(base: Path) -> None:
    golden = base / "golden"
    golden.mkdir()
    docs = [{"id": f"d{i}", "text": f"document number {i} about topic {i}"} for i in range(4)]
    (golden / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    queries = [
        {"id": "q1", "text": "topic one", "relevant": {"d1": 1}},
        {"id": "q2", "text": "topic two", "relevant": {"d2": 2}},
    ]
    (golden / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    grade = {"query_id": "q1", "doc_id": "d3", "grade": 2, "query": "topic one"}
    grade |= {"document": "document number 3", "annotator": "alice"}
    (base / "alice.jsonl").write_text(json.dumps(grade) + "\n")
    (base / "qrels.txt").write_text("q1 0 d1 1\nq2 0 d2 1\n")
    (base / "run.trec").write_text("q1 Q0 d1 1 2.0 t\nq2 Q0 d3 1 1.0 t\nq2 Q0 d2 2 0.5 t\n")


def test_a_library_user_validates_merges_and_scores_without_the_commands(tmp_path: Path) -> None:
    _files(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", CODE, str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["commands"] == []
    assert got["errors"] == 0 and got["queries"] == 2
    assert got["merged"] == 1 and got["judgments_after"] == 3  # alice's grade of (q1, d3) added
    assert got["ndcg"] is not None and 0 < got["ndcg"] < 1  # q2's relevant document at rank 2
