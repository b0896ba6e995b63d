"""Issue #17's Done-when on the demo: two annotators' files on the demo pool give the kappa the
textbook formula gives; merging them into the demo set gives a golden set that validates, whose
changed fingerprint makes the demo baseline refused (exit 2), and a run on it has a higher
judged@10 than a run on the demo set. Real model, real CLI, end to end."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import DEMO, REPO
from helpers import invoke
from test_judgments import cohen_by_hand

pytestmark = pytest.mark.model

DEFAULT = REPO / "configs" / "default.yaml"


def _grade_a(query_id: str, doc_id: str) -> int:
    """Annotator A: a fixed function of the pair (0..3, from a hash of the ids)."""
    return hashlib.sha256(f"{query_id}\t{doc_id}".encode()).digest()[0] % 4


def _grade_b(query_id: str, doc_id: str, a: int) -> int:
    """Annotator B: A's grade, but one pair in four one grade off (up, or down from 3) and one
    in twenty three grades off (disputed)."""
    h = hashlib.sha256(f"b\t{query_id}\t{doc_id}".encode()).digest()[0]
    if h % 20 == 0:
        return 3 - a if abs(3 - 2 * a) == 3 else a
    if h % 4 == 0:
        return a + 1 if a < 3 else 2
    return a


def _annotate(pool: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    a_lines, b_lines = [], []
    for rec in pool:
        q, d = rec["query_id"], rec["doc_id"]
        gold = rec.get("gold_grade")
        a = gold if gold is not None else _grade_a(q, d)
        b = _grade_b(q, d, a)
        stamp = {"graded_at": "2026-11-23T12:00:00Z"}
        a_lines.append({**rec, "grade": a, "annotator": "alice", **stamp})
        b_lines.append({**rec, "grade": b, "annotator": "bob", **stamp})
    return a_lines, b_lines


def _judged_at_10(report_dir: Path) -> float:
    report = json.loads((report_dir / "report.json").read_text())
    return float(report["indexes"]["exact"]["slices"]["all"]["judged"]["judged@10"])


def _config(tmp_path: Path, golden: Path, name: str) -> Path:
    text = DEFAULT.read_text().replace("path: ../golden_sets/demo", f"path: {golden}")
    text = text.replace("dir: ../reports", f"dir: {tmp_path / ('reports-' + name)}")
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


def test_demo_pool_agreement_merge_and_judged_at_10(tmp_path: Path) -> None:
    pool_path = tmp_path / "pool.jsonl"
    original = _config(tmp_path, DEMO, "original")
    code, out = invoke(
        "pool", str(original), "-o", str(pool_path), "--gold-fraction", "0.1", "--no-progress"
    )
    assert code == 0, out
    pool = [json.loads(x) for x in pool_path.read_text().splitlines()]
    gold = [r for r in pool if "gold_grade" in r]
    pooled = len(pool) - len(gold)
    assert len(gold) == round(0.1 * pooled) and all(r["best_rank"] is None for r in gold)

    a_lines, b_lines = _annotate(pool)
    files = [tmp_path / "alice.jsonl", tmp_path / "bob.jsonl"]
    for path, lines in zip(files, (a_lines, b_lines), strict=True):
        path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    agreement = tmp_path / "agreement.json"
    code, out = invoke("judgments", "agreement", *map(str, files), "--json", str(agreement))
    assert code == 0, out
    pair = json.loads(agreement.read_text())["pairs"][0]
    xs, ys = [r["grade"] for r in a_lines], [r["grade"] for r in b_lines]
    expected = cohen_by_hand(xs, ys, [0, 1, 2, 3])
    assert abs(pair["cohen_kappa"] - expected) < 1e-12 and 0.5 < expected < 0.95
    assert f"Cohen's kappa {expected:.4f}" in out

    merged = tmp_path / "merged"
    code, out = invoke(
        "judgments", "merge", *map(str, files), "--into", str(DEMO), "--out", str(merged)
    )
    assert code == 0, out
    disputed = (merged / "disputed.jsonl").read_text().splitlines()
    assert disputed and all(json.loads(x)["reason"].startswith("grades span") for x in disputed)
    code, out = invoke("validate", str(merged))
    assert code == 0, out

    # the demo baseline was made on the demo set: refused on the merged one, exit 2
    merged_cfg = _config(tmp_path, merged, "merged")
    baseline = str(REPO / "baselines" / "demo.json")
    code, out = invoke("run", "-c", str(merged_cfg), "-b", baseline, "--no-progress")
    assert code == 2 and "golden set" in out, out

    code, out = invoke("run", "-c", str(original), "--no-progress")
    assert code == 0, out
    code, out = invoke("run", "-c", str(merged_cfg), "--no-progress")
    assert code == 0, out
    before = _judged_at_10(tmp_path / "reports-original")
    after = _judged_at_10(tmp_path / "reports-merged")
    assert after > before
