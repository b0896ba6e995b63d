"""Report files: report.json and one TREC run file per index."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from evalret.errors import InputError
from evalret.goldenset import GoldenSet
from evalret.index import SearchResult
from evalret.pipeline import Evaluation

RUN_TAG = "evalret"


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def trec_run(golden: GoldenSet, ranking: SearchResult, tag: str) -> str:
    """TREC run lines ``qid Q0 docno rank score tag``; scores printed so they read back exactly."""
    lines = []
    for qi, query_id in enumerate(golden.query_ids):
        for rank, (di, score) in enumerate(zip(ranking.ids[qi], ranking.scores[qi], strict=True)):
            if di < 0:
                break
            lines.append(f"{query_id} Q0 {golden.doc_ids[di]} {rank + 1} {float(score)!r} {tag}")
    return "\n".join(lines) + "\n"


def write_outputs(evaluation: Evaluation, out_dir: Path) -> list[Path]:
    """Write report.json and run.<index>.trec into ``out_dir``; returns the paths written."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create output directory {out_dir}: {e.strerror or e}") from None
    written = []
    report_path = out_dir / "report.json"
    _atomic_write(report_path, evaluation.report.model_dump_json(indent=2) + "\n")
    written.append(report_path)
    for name, ranking in evaluation.rankings.items():
        path = out_dir / f"run.{name}.trec"
        _atomic_write(path, trec_run(evaluation.golden_set, ranking, f"{RUN_TAG}-{name}"))
        written.append(path)
    return written
