"""Every approximate index first-class (#38): report.json's ``ann`` is one mapping keyed by index
name (schema version 2); reports of version 1 (``ann`` the hnsw section, ``ann_others`` the
rest) still read, as baselines and in compare; a ``type: python`` index declared
``approximate: true`` gets the same section and is held to ``gate.ann_min_recall``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from evalret.data.baseline import load_baseline, save_baseline
from evalret.data.config import parse_config
from evalret.data.schema import SCHEMA_VERSION, RunReport
from evalret.errors import ConfigError, InputError
from evalret.pipeline.evaluate import run_evaluation
from helpers import HashEmbedder, invoke

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "golden_sets" / "demo"
DEMO_BASELINE = REPO / "baselines" / "demo.json"

PLUGIN = """
import hashlib

import numpy as np

RUN = None  # the exact run (TREC) the retriever degrades


class HashEncoder:
    dim = 48

    def identity(self):
        return {"kind": "hashed bag of words", "dim": self.dim}

    def encode(self, texts, kind):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for tok in t.lower().split():
                h = hashlib.sha256(tok.encode()).digest()
                out[i, int.from_bytes(h[:4], "little") % self.dim] += 1.0
        return out


def make():
    return HashEncoder()


def worse(query_ids, query_texts, query_vectors, depth):
    # exact search's ranking without its best document: 9 of the exact top 10 in the top 10
    exact = {}
    with open(RUN, encoding="utf-8") as f:
        for line in f:
            qid, _, doc, _, score, _ = line.split()
            exact.setdefault(qid, []).append((doc, float(score)))
    return [exact[q][1:] for q in query_ids]


def by_id(query_ids, query_texts, query_vectors, depth, filters=None):
    # every document, in one fixed order whatever the query (evalret drops the ineligible ones)
    return [[(f"d{i}", 1.0 - i / 1000) for i in range(60)] for _ in query_ids]
"""


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``evalret_ann_plugin`` importable (here and in the CLI run in this process), its RUN
    set to the exact run of the demo with its hashing encoder."""
    (tmp_path / "evalret_ann_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("evalret_ann_plugin", None)
    import evalret_ann_plugin  # type: ignore[import-not-found]

    config = _config(tmp_path, "exact.yaml", "")
    code, out = invoke("run", "-c", str(config), "--out", str(tmp_path / "exact"))
    assert code == 0, out
    evalret_ann_plugin.RUN = str(tmp_path / "exact" / "run.exact.trec")
    return evalret_ann_plugin


def _config(tmp_path: Path, name: str, extra: str) -> Path:
    path = tmp_path / name
    path.write_text(
        f"golden_set: {{path: {DEMO}}}\n"
        "model: {provider: python, callable: 'evalret_ann_plugin:make'}\n"
        "indexes:\n  hnsw: {enabled: false}\n  bm25: {enabled: false}\n"
        "  hybrid: {enabled: false}\n" + extra
    )
    return path


# --- the old layout ----------------------------------------------------------------------------


def test_the_committed_baseline_of_version_1_reads_as_the_mapping() -> None:
    """baselines/demo.json (written by version 1: ``ann`` the hnsw section, no ``ann_others``)
    reads into ``ann: {hnsw: ...}``, its figures unchanged, and writes out as version 2."""
    raw = json.loads(DEMO_BASELINE.read_text())
    assert raw["schema_version"] == 1 and raw["ann"]["index"] == "hnsw"
    report = load_baseline(DEMO_BASELINE)
    assert report.schema_version == SCHEMA_VERSION == 2
    assert list(report.ann) == ["hnsw"]
    assert report.ann["hnsw"].model_dump(mode="json") == raw["ann"]
    dumped = json.loads(report.model_dump_json())
    assert dumped["schema_version"] == 2 and dumped["ann"] == {"hnsw": raw["ann"]}
    assert "ann_others" not in dumped
    assert {k: v for k, v in dumped.items() if k not in ("ann", "schema_version")} == {
        k: v for k, v in raw.items() if k not in ("ann", "schema_version")
    }  # nothing else changed


def test_a_version_1_report_with_other_approximate_indexes_reads(tmp_path: Path) -> None:
    """``ann_others`` of version 1 join the mapping after hnsw, keyed by name; a version 1
    report without hnsw (``ann: null``) keeps only the others; the round trip is stable."""
    raw = json.loads(DEMO_BASELINE.read_text())
    ivf = {**raw["ann"], "index": "ivf", "index_bytes": 1234}
    old = tmp_path / "old.json"
    old.write_text(json.dumps({**raw, "ann_others": {"ivf": ivf}}))
    report = load_baseline(old)
    assert list(report.ann) == ["hnsw", "ivf"] and report.ann["ivf"].index_bytes == 1234
    assert [s.index for s in report.ann_sections()] == ["hnsw", "ivf"]
    again = tmp_path / "again.json"
    save_baseline(report, again)
    assert load_baseline(again).model_dump() == report.model_dump()
    old.write_text(json.dumps({**raw, "ann": None, "ann_others": {"ivf": ivf}}))
    assert list(load_baseline(old).ann) == ["ivf"]
    old.write_text(json.dumps({**raw, "ann": None}))
    assert load_baseline(old).ann == {}


def test_other_versions_and_misfiled_sections_are_refused(tmp_path: Path) -> None:
    """A version this evalret does not know, ``ann_others`` in version 2, and a section filed
    under another index's name are input errors naming the file and the key (exit 2)."""
    raw = json.loads(load_baseline(DEMO_BASELINE).model_dump_json())
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**raw, "schema_version": 3}))
    with pytest.raises(InputError, match="schema version 3, this evalret reads 1, 2"):
        load_baseline(bad)
    bad.write_text(json.dumps({**raw, "ann_others": {}}))
    with pytest.raises(InputError) as e:
        load_baseline(bad)
    assert e.value.exit_code == 2 and "ann_others" in str(e.value)
    bad.write_text(json.dumps({**raw, "ann": {"ivf": raw["ann"]["hnsw"]}}))
    with pytest.raises(InputError, match=r"ann\.ivf\.index: .hnsw., not the index"):
        load_baseline(bad)


def test_compare_reads_an_old_and_a_new_report(tmp_path: Path) -> None:
    """compare between the committed version 1 baseline and the same report written as version
    2: every metric identical, the verdict computed (no gain), exit 0."""
    new = tmp_path / "new.json"
    save_baseline(load_baseline(DEMO_BASELINE), new)
    assert json.loads(new.read_text())["schema_version"] == 2
    out = tmp_path / "cmp"
    code, text = invoke("compare", str(DEMO_BASELINE), str(new), "--out", str(out))
    assert code == 0, text
    compared = json.loads((out / "compare.json").read_text())
    assert compared["schema_version"] == 1  # compare.json's layout did not change
    deltas = [
        m["delta"]
        for slices in compared["indexes"].values()
        for s in slices.values()
        for m in s["metrics"].values()
    ]
    assert deltas and all(d == 0 for d in deltas)


# --- a new report ------------------------------------------------------------------------------


def test_a_new_report_keys_every_approximate_index_by_name(tmp_path: Path) -> None:
    """hnsw and a faiss index side by side: one mapping, in the config's order, each section
    naming its own index; no ``ann_others``; an empty mapping without an approximate index."""
    text = (
        f"golden_set: {{path: {DEMO}}}\nindexes:\n  bm25: {{enabled: false}}\n"
        "  hybrid: {enabled: false}\n  flat: {type: faiss, factory: Flat}\n"
    )
    report = run_evaluation(parse_config(text, "c.yaml"), embedder=HashEmbedder()).report
    assert report.schema_version == 2 and list(report.ann) == ["hnsw", "flat"]
    assert all(name == s.index and s.reference == "exact" for name, s in report.ann.items())
    assert report.ann["flat"].slices["all"].recall["recall@10"] == 1.0
    dumped = json.loads(report.model_dump_json())
    assert set(dumped["ann"]) == {"hnsw", "flat"} and "ann_others" not in dumped
    plain = text.replace("  flat: {type: faiss, factory: Flat}\n", "  hnsw: {enabled: false}\n")
    none = run_evaluation(parse_config(plain, "c.yaml"), embedder=HashEmbedder()).report
    assert none.ann == {} and json.loads(none.model_dump_json())["ann"] == {}


# --- a python index declared approximate -------------------------------------------------------


def test_a_python_index_declared_approximate_is_measured_and_gated(
    tmp_path: Path, plugin: Any
) -> None:
    """A python retriever returning exact search's ranking without its best document, declared
    ``approximate: true``: its section holds recall@10 0.9 against exact and a negative nDCG
    change; ann_min_recall 0.95 fails the gate (exit 1, on the terminal and in report.json),
    0.85 passes it (exit 0)."""
    index = "  p: {type: python, callable: 'evalret_ann_plugin:worse', approximate: true}\n"
    config = _config(tmp_path, "strict.yaml", index + "gate: {ann_min_recall: 0.95}\n")
    code, out = invoke("run", "-c", str(config), "--out", str(tmp_path / "strict"))
    assert code == 1, out
    report = RunReport.model_validate_json((tmp_path / "strict" / "report.json").read_bytes())
    section = report.ann["p"]
    assert list(report.ann) == ["p"] and section.reference == "exact"
    assert section.slices["all"].recall["recall@10"] == pytest.approx(0.9)
    assert (section.slices["all"].metric_deltas["ndcg@10"] or 0) < 0
    assert report.gate is not None and report.gate.verdict == "fail"
    failed = [c for c in report.gate.checks if not c.passed]
    assert [(c.kind, c.index) for c in failed] == [("ann_min_recall", "p")]
    assert failed[0].current == pytest.approx(0.9)
    said = "p keeps 0.9000 of the exact top-10, below the floor 0.95"
    assert said in (tmp_path / "strict" / "report.md").read_text()
    assert said in (tmp_path / "strict" / "junit.xml").read_text()
    assert "- `p`: recall@10 0.9000" in (tmp_path / "strict" / "report.md").read_text()
    # the single-query latency every approximate index has: one query per call, timed
    assert report.latency is not None and report.latency.indexes["p"].n_queries > 0
    loose = _config(tmp_path, "loose.yaml", index + "gate: {ann_min_recall: 0.85}\n")
    code, out = invoke("run", "-c", str(loose), "--out", str(tmp_path / "loose"))
    assert code == 0, out


def test_without_the_declaration_a_python_index_has_no_section(tmp_path: Path, plugin: Any) -> None:
    """The same retriever not declared approximate: no section, not gated by default, and an
    ann_min_recall written in the config is refused as holding no index (exit 2)."""
    index = "  p: {type: python, callable: 'evalret_ann_plugin:worse'}\n"
    config = _config(tmp_path, "plain.yaml", index)
    code, out = invoke("run", "-c", str(config), "--out", str(tmp_path / "plain"))
    assert code == 0, out
    report = json.loads((tmp_path / "plain" / "report.json").read_text())
    assert report["ann"] == {} and "p" not in report["latency"]["indexes"]
    floor = _config(tmp_path, "floor.yaml", index + "gate: {ann_min_recall: 0.95}\n")
    code, out = invoke("run", "-c", str(floor), "--out", str(tmp_path / "floor"))
    assert code == 2 and "no gated approximate index" in out, out
    with pytest.raises(ConfigError, match="approximate"):
        parse_config(
            f"golden_set: {{path: {DEMO}}}\nindexes:\n"
            "  p: {type: python, callable: 'm:f', approximate: 'yes'}\n",
            "c.yaml",
        )


def test_a_python_approximate_index_gets_selectivity_buckets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a golden set whose queries filter, the python index's section has selectivity
    buckets like hnsw's: the filtered queries by the share of the corpus they leave eligible."""
    (tmp_path / "evalret_ann_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("evalret_ann_plugin", None)
    golden = tmp_path / "set"
    golden.mkdir()
    docs = [
        {"id": f"d{i}", "text": f"w{i % 7} w{i % 5}", "metadata": {"g": i % 4}} for i in range(60)
    ]
    queries = [
        {"id": f"q{q}", "text": f"w{q % 7}", "relevant": {f"d{q}": 1}}
        | ({"filter": {"g": q % 4}} if q % 2 else {})
        for q in range(20)
    ]
    for name, rows in (("corpus.jsonl", docs), ("queries.jsonl", queries)):
        (golden / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = (
        f"golden_set: {{path: {golden}}}\nindexes:\n  hnsw: {{enabled: false}}\n"
        "  bm25: {enabled: false}\n  hybrid: {enabled: false}\n"
        "  p: {type: python, callable: 'evalret_ann_plugin:by_id', approximate: true}\n"
        "metrics: [recall@10, ndcg@10]\n"
    )
    report = run_evaluation(
        parse_config(text, "c.yaml").resolve_paths(tmp_path), embedder=HashEmbedder()
    ).report
    section = report.ann["p"]
    assert section.selectivity is not None
    buckets = {name: b.n_queries for name, b in section.selectivity.items()}
    assert buckets["10-50%"] == 10  # each filter leaves 25% of the corpus eligible
    assert buckets[">=50%"] == 10  # a query without a filter counts as 100%
    recall = section.slices["all"].recall["recall@10"]
    assert recall is not None and recall < 1.0
