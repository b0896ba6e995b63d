"""What a store index could not rank as stored, and what the store is, shown (#38 item 4): the
counts of engines/stores/search.py (ranks held by ids the corpus lacks or NULL ids, rows folded
into their document's better row) as one line each naming the index, on the terminal and in
report.md and report.html, like pgvector's table counts; the store's own description (driver
version, index, rows) beside the index's metrics in report.md and report.html. Ids a store
holds are untrusted text: escaped wherever shown.

An existing LanceDB table made here: every demo document twice (its vector and a shorter one,
two chunks of one document), three rows whose ids the corpus lacks and one with a NULL id, each
nearer to every query than any document. The expected counts are computed here from the
vectors with the documented rule (a skipped or folded row counts when strictly better than the
10th document kept).
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from conftest import DEMO
from evalret.data.config import GoldenSetConfig
from evalret.data.goldenset import load_golden_set
from evalret.data.schema import RunReport
from evalret.pipeline.pages import render_run_html
from helpers import HASH_ENCODER, invoke

lancedb = pytest.importorskip(
    "lancedb", reason="the lancedb extra (evalret[lancedb]) is not installed"
)

GHOSTS = ["ghost-1", "ghost\x1b[31m-red", "<b>ghost</b>|2"]  # ids the corpus lacks, hostile
# a document's second chunk: its vector times this (no integer similarity times it is an
# integer, so no chunk ties the cut, and float32 rounding cannot move one across it)
CHUNK = 0.618


@pytest.fixture
def table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[np.ndarray, np.ndarray]:
    """The encoder module importable, and the table ``docs`` in ``tmp_path/lance``; returns
    the encoder's (document vectors, query vectors). The table holds the documents' raw
    vectors (the run's exact index their normalized ones: the two rankings differ), the run
    searches it with normalized queries (each query's similarities scaled alike: the counts
    below do not change)."""
    (tmp_path / "store_notes_encoder.py").write_text(textwrap.dedent(HASH_ENCODER))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("store_notes_encoder", None)
    import pyarrow as pa
    import store_notes_encoder  # type: ignore[import-not-found]

    golden = load_golden_set(GoldenSetConfig(path=DEMO))
    encoder = store_notes_encoder.make()
    docs = encoder.encode(list(golden.doc_texts), "document")
    queries = encoder.encode(list(golden.query_texts), "query")
    assert docs.max() < 100  # so that a row of 100s is nearer to every query than any document
    ids: list[str | None] = [*golden.doc_ids, *golden.doc_ids, *GHOSTS, None]
    far = np.full((len(GHOSTS) + 1, docs.shape[1]), 100.0, dtype=np.float32)
    vectors = np.vstack([docs, docs * CHUNK, far]).astype(np.float32)
    rows = pa.table(
        {
            "doc_id": pa.array(ids, type=pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(vectors.ravel()), vectors.shape[1]
            ),
        }
    )
    lancedb.connect(str(tmp_path / "lance")).create_table("docs", rows)
    return docs, queries


def _expected(docs: np.ndarray, queries: np.ndarray) -> dict[str, int]:
    """The counts by the rule: per query, the cut is the 10th best document's similarity (its
    full vector: the second chunk is never better); a ghost or the NULL row (similarity 100 x
    the query's sum) counts when above it, a second chunk when its similarity is."""
    s = queries.astype(np.float64) @ docs.T.astype(np.float64)
    cut = -np.sort(-s, axis=1)[:, 9]
    near = (100.0 * queries.sum(axis=1) > cut).astype(int)
    return {
        "ranks_unknown_id": int(near.sum() * (len(GHOSTS) + 1)),
        "ranks_null_id": int(near.sum()),
        "rows_folded": int((CHUNK * s > cut[:, None]).sum()),
    }


def test_a_tables_counts_and_description_are_shown(
    tmp_path: Path, table: tuple[np.ndarray, np.ndarray]
) -> None:
    """`evalret run` on the table (existing mode, chunks folded): the index's params carry the
    counts as computed from the vectors and the store's description; the terminal and report.md
    say each count in one line naming the index, with the unknown ids escaped; report.md and
    report.html show the store's version, index and rows; no raw escape sequence or tag."""
    config = tmp_path / "c.yaml"
    config.write_text(
        f"golden_set: {{path: {DEMO}}}\ncache: {{dir: {tmp_path / 'cache'}}}\n"
        "model: {provider: python, callable: 'store_notes_encoder:make'}\n"
        "metrics: [ndcg@10, recall@10]\ngate: {ann_min_recall: null}\n"
        "indexes:\n  hnsw: {enabled: false}\n  bm25: {enabled: false}\n"
        "  hybrid: {enabled: false}\n"
        f"  prod: {{type: store, driver: lancedb, connect: {{path: {tmp_path / 'lance'}}}, "
        "collection: docs, id_field: doc_id, mode: existing, chunks: fold}\n"
    )
    out = tmp_path / "out"
    code, text = invoke("run", "-c", str(config), "--out", str(out), "--no-progress")
    assert code == 0, text
    report = RunReport.model_validate_json((out / "report.json").read_bytes())
    params = report.indexes["prod"].params
    expected = _expected(*table)
    assert expected["rows_folded"] > 0 and expected["ranks_null_id"] > 0
    assert {k: params.get(k) for k in expected} == expected
    assert params["ranks_unknown_id_examples"] == sorted(GHOSTS)
    rows = 2 * len(table[0]) + len(GHOSTS) + 1
    assert params["store"] == {"version": lancedb.__version__, "index": "flat", "rows": rows}
    shown = " ".join(text.split())
    unknown = f"prod: {expected['ranks_unknown_id']} ranks held by rows whose id is NULL or not in"
    assert unknown in shown
    assert "(e.g. stored ids <b>ghost</b>|2, ghost\\x1b[31m-red, ghost-1)" in shown
    assert (
        f"prod: {expected['ranks_null_id']} of those skipped ranks held by rows whose id" in shown
    )
    assert f"prod: {expected['rows_folded']} rows folded into a better row" in shown
    assert "\x1b[31m" not in text
    md = (out / "report.md").read_text()
    assert f"- ⚠️ prod: {expected['ranks_unknown_id']} ranks held by rows whose id is NULL" in md
    assert "&lt;b&gt;ghost&lt;/b&gt;\\|2, ghost\\\\x1b\\[31m-red, ghost-1\\)" in md
    assert f"- ⚠️ prod: {expected['rows_folded']} rows folded into a better row" in md
    assert f"The store lancedb {lancedb.__version__}, index flat; {rows} rows." in md
    assert "<b>" not in md and "\x1b" not in md
    html = render_run_html(report)
    assert f"The store lancedb {lancedb.__version__}, index flat; {rows} rows." in html
    assert f"prod: {expected['rows_folded']} rows folded into a better row" in html
    assert "&lt;b&gt;ghost&lt;/b&gt;|2" in html and "<b>ghost" not in html and "\x1b" not in html
