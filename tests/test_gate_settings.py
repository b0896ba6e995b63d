"""Every setting applies to something (#35): one rule says which indexes the gate checks
(``Config.gated_indexes``: ``gate.indexes``, else exact search and every approximate index), and
every check of an index (thresholds, overrides, ``ann_min_recall``, ``rerank_min_recall``,
budgets) applies to those alone. A setting written in the config, or given by ``--set``, that
would check nothing is a config error naming its key (exit 2), never a gate that passes on
nothing; a default that applies to nothing is no error. Slice settings are checked once the
golden set's slices are known (pipeline.gate.slice_setting_problems), by the run and by
``validate``.

The runs use the demo golden set with a hashed bag-of-words encoder (no model weights) and a
faiss IVF index whose recall of the exact top 10 is about 0.40.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import DEMO, REPO
from evalret.data.config import load_config, parse_config
from evalret.errors import ConfigError
from evalret.pipeline.evaluate import run_evaluation
from helpers import invoke
from test_faiss_indexes import ENCODER, IVF

PG = "{type: pgvector, dsn_env: EVALRET_TEST_UNSET_DSN}"
RERANK = "{type: rerank, of: exact, k: 20, reranker: {provider: python, callable: 'm:f'}}"


@pytest.fixture
def encoder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A module ``settings_encoder`` in tmp_path, importable (a hashed bag of words)."""
    (tmp_path / "settings_encoder.py").write_text(textwrap.dedent(ENCODER))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("settings_encoder", None)


def _config(tmp_path: Path, indexes: str = "", rest: str = "") -> Path:
    """A config of the demo set with exact search, the given ``indexes`` lines and ``rest``."""
    path = tmp_path / "c.yaml"
    path.write_text(
        f"golden_set: {{path: {DEMO}}}\ncache: {{dir: {tmp_path / 'cache'}}}\n"
        "model: {provider: python, callable: 'settings_encoder:make'}\n"
        "metrics: [ndcg@10, recall@10]\nbootstrap: {samples: 100}\n"
        "indexes:\n  hnsw: {enabled: false}\n  bm25: {enabled: false}\n"
        "  hybrid: {enabled: false}\n" + indexes + rest
    )
    return path


def _problems(text: str) -> str:
    with pytest.raises(ConfigError) as e:
        parse_config(text, "cfg.yaml")
    assert e.value.exit_code == 2
    return "\n".join(str(p) for p in e.value.problems)


HNSW_OFF = "indexes: {hnsw: {enabled: false}}\n"

# (config, where the error is: "file:line: key") for every setting that checks nothing
INERT = {
    "ann-floor-no-approximate-index": (
        HNSW_OFF + "gate: {ann_min_recall: 0.99}\n",
        "cfg.yaml:2: gate.ann_min_recall: no gated approximate index",
    ),
    "ann-floor-approximate-index-not-gated": (
        f"indexes:\n  ivf: {IVF}\ngate:\n  indexes: [exact]\n  ann_min_recall: 0.99\n",
        "cfg.yaml:5: gate.ann_min_recall: no gated approximate index to hold to this floor "
        "(gate.indexes: exact): add hnsw, ivf to gate.indexes",
    ),
    "ann-floor-without-exact-search": (
        "indexes: {exact: {enabled: false}, hybrid: {dense: hnsw}}\ngate: {ann_min_recall: 0.9}\n",
        "cfg.yaml:2: gate.ann_min_recall: an approximate index's recall is measured against "
        "exact search, and indexes.exact is disabled",
    ),
    "rerank-floor-no-rerank-index": (
        "gate: {rerank_min_recall: 0.8}\n",
        "cfg.yaml:1: gate.rerank_min_recall: no gated rerank index",
    ),
    "rerank-floor-rerank-index-not-gated": (
        f"indexes:\n  rr: {RERANK}\ngate:\n  rerank_min_recall: 0.8\n",
        "cfg.yaml:4: gate.rerank_min_recall: no gated rerank index to hold to this floor "
        "(gated: exact, hnsw): add rr to gate.indexes",
    ),
    "threshold-no-gated-index": (
        "gate:\n  indexes: []\n  thresholds: {recall@10: {max_drop: 0.1}}\n",
        "cfg.yaml:3: gate.thresholds: no gated index to check (gate.indexes: none)",
    ),
    "judged-floor-no-gated-index": (
        "gate:\n  indexes: []\n  unjudged: {min_judged: 0.05}\n",
        "cfg.yaml:3: gate.unjudged.min_judged: no gated index to check",
    ),
    "threshold-without-a-bound": (
        "gate:\n  thresholds:\n    recall@10: {}\n",
        "cfg.yaml:3: gate.thresholds.recall@10: sets no bound",
    ),
    "override-on-an-index-not-gated": (
        "gate:\n  overrides:\n    - {metric: recall@10, index: bm25, min: 0.1}\n",
        "cfg.yaml:3: gate.overrides[0].index: index bm25 is not gated (gated: exact, hnsw)",
    ),
    "override-no-gated-index": (
        "gate:\n  indexes: []\n  overrides:\n    - {metric: recall@10, min: 0.1}\n",
        "cfg.yaml:4: gate.overrides[0]: no gated index to check",
    ),
    "override-on-a-slice-not-gated": (
        "gate:\n  slices: [all]\n  overrides:\n    - {metric: recall@10, slice: tail, min: 0.1}\n",
        "cfg.yaml:4: gate.overrides[0].slice: slice tail is not gated (gate.slices: all)",
    ),
    "budget-on-an-index-not-gated": (
        "gate:\n  indexes: [exact]\n  budgets:\n    hnsw: {max_index_bytes: 100}\n",
        "cfg.yaml:4: gate.budgets.hnsw: index hnsw is not gated (gate.indexes: exact)",
    ),
    "budget-without-a-limit": (
        "gate:\n  budgets:\n    hnsw: {}\n",
        "cfg.yaml:3: gate.budgets.hnsw: sets no limit",
    ),
    "health-bound-without-min-or-max": (
        "gate:\n  health:\n    avg_cosine: {}\n",
        "cfg.yaml:3: gate.health.avg_cosine: sets no bound",
    ),
    "health-bound-health-disabled": (
        "health: {enabled: false}\ngate:\n  health:\n    avg_cosine: {max: 0.3}\n",
        "cfg.yaml:4: gate.health.avg_cosine: the health figures are not computed",
    ),
}


@pytest.mark.parametrize(("text", "said"), INERT.values(), ids=INERT.keys())
def test_a_setting_that_checks_nothing_is_refused_at_its_key(text: str, said: str) -> None:
    assert said in _problems(text)


def test_a_default_that_applies_to_nothing_is_no_error() -> None:
    """ann_min_recall's default 0.95 without an approximate index, the default health bound with
    health disabled, an explicit null floor, an empty thresholds map: nothing written checks
    nothing, so nothing is refused."""
    assert parse_config(HNSW_OFF).gated_indexes() == ["exact"]
    parse_config("gate: {indexes: [exact]}\n")
    parse_config("health: {enabled: false}\n")
    parse_config("gate: {indexes: [exact], ann_min_recall: null}\n")
    parse_config("gate: {indexes: [], thresholds: {}}\n")
    parse_config("gate: {health: {}}\nhealth: {enabled: false}\n")


def test_the_shipped_configs_check_what_they_set() -> None:
    """configs/ and the config `evalret init` writes set nothing that checks nothing."""
    for path in sorted((REPO / "configs").glob("*.yaml")):
        assert load_config(path).gated_indexes() == ["exact", "hnsw"], path
    template = (REPO / "src" / "evalret" / "templates" / "evalret.yaml").read_text()
    assert parse_config(template).gated_indexes() == ["exact", "hnsw"]


def test_the_default_gated_set_is_exact_and_every_approximate_index() -> None:
    """By default the gate checks exact search and every enabled approximate index (hnsw, faiss,
    quantized, pgvector); bm25, hybrid and rerank indexes only when gate.indexes names them."""
    indexes = (
        f"indexes:\n  ivf: {IVF}\n  q: {{type: quantized, precision: binary}}\n  pg: {PG}\n"
        f"  rr: {RERANK}\n  unused: {{type: quantized, precision: int8, enabled: false}}\n"
    )
    assert parse_config(indexes).gated_indexes() == ["exact", "hnsw", "ivf", "q", "pg"]
    named = parse_config(indexes + "gate: {indexes: [bm25, rr]}\n")
    assert named.gated_indexes() == ["bm25", "rr"]


def test_an_approximate_index_below_the_floor_fails_the_gate(tmp_path: Path, encoder: None) -> None:
    """#35's case: ann_min_recall 0.99 with a faiss index (recall 0.40) and no gate.indexes
    printed "no gate configured" and exited 0, while a budget on the same index applied. Now
    the index is gated by default: its floor fails the gate (exit 1) beside its budget; with
    gate.indexes leaving it out, the floor holds nothing and the config is refused (exit 2)."""
    out = tmp_path / "out"
    budget = "    ivf: {max_bytes_per_vector: 1000}\n"
    config = _config(
        tmp_path, f"  ivf: {IVF}\n", f"gate:\n  ann_min_recall: 0.99\n  budgets:\n{budget}"
    )
    code, said = invoke("run", "-c", str(config), "--out", str(out), "--no-progress")
    assert code == 1, said
    checks = {c["name"]: c for c in json.loads((out / "report.json").read_text())["gate"]["checks"]}
    floor = checks["ivf/all/ann_recall@10 min 0.99"]
    assert floor["status"] == "fail" and floor["current"] < 0.5
    assert checks["ivf/budget/bytes_per_vector max 1,000"]["status"] == "pass"
    alone = _config(tmp_path, f"  ivf: {IVF}\n", "gate: {ann_min_recall: 0.99}\n")
    code, said = invoke("run", "-c", str(alone), "--out", str(out), "--no-progress")
    assert code == 1, said
    ungated = _config(
        tmp_path, f"  ivf: {IVF}\n", "gate:\n  indexes: [exact]\n  ann_min_recall: 0.99\n"
    )
    code, said = invoke("run", "-c", str(ungated), "--out", str(out), "--no-progress")
    assert code == 2, said
    assert "c.yaml:13: gate.ann_min_recall: no gated approximate index" in said
    assert "add ivf to gate.indexes" in said


def test_the_ann_floor_reads_its_own_cutoff(tmp_path: Path, encoder: None) -> None:
    """With metrics at 5 and 20 and ann_k 10, recall@10 against exact search was never
    computed, so the floor silently checked nothing; it is now measured for the floor."""
    config = _config(tmp_path, "", "gate: {ann_min_recall: 0.5}\n").read_text()
    config = config.replace("[ndcg@10, recall@10]", "[ndcg@5, recall@20]")
    config = config.replace("hnsw: {enabled: false}", "hnsw: {m: 8, threads: 1}")
    report = run_evaluation(parse_config(config, "c.yaml")).report
    assert "hnsw" in report.ann and "recall@10" in report.ann["hnsw"].slices["all"].recall
    assert report.gate is not None
    assert [c.name for c in report.gate.checks if c.kind == "ann_min_recall"] == [
        "hnsw/all/ann_recall@10 min 0.5"
    ]


def test_a_slice_setting_without_queries_is_refused(tmp_path: Path, encoder: None) -> None:
    """A custom slice rule that matches no query, and gate.slices naming a slice the set lacks:
    refused by the run (before anything is embedded) and by validate, naming each key."""
    rest = (
        "slices:\n  custom:\n    - {name: codes, tag: exact-match}\n"
        "    - {name: nothing, pattern: '^no query reads like this$'}\n"
    )
    config = _config(tmp_path, "", rest)
    code, said = invoke("run", "-c", str(config), "--out", str(tmp_path / "o"), "--no-progress")
    assert code == 2, said
    assert "slices.custom[1]: nothing: no query of the run is in it" in said
    assert "slices.custom[0]" not in said
    assert not (tmp_path / "cache").exists()  # refused before embedding
    code, said = invoke("validate", str(config))
    assert code == 2 and "slices.custom[1]: nothing: no query of the run is in it" in said
    typo = _config(tmp_path, "", "gate: {slices: [tial]}\n")
    code, said = invoke("validate", str(typo))
    assert code == 2 and "gate.slices: tial: no query of the run is in it" in said
    code, said = invoke("validate", str(_config(tmp_path, "", "gate: {slices: [tail]}\n")))
    assert code == 0, said


SETS = {
    "disabled-index": ("indexes.hnsw.ef_search=64", "index hnsw is disabled"),
    "disabled-typed-index": ("indexes.q.precision=int8", "index q is disabled"),
    "disabled-health": ("health.sample=100", "health is disabled"),
    "disabled-cache": ("cache.dir=elsewhere", "cache is disabled"),
    "local-engine": ("embedding.workers=4", "embedding.engine is local"),
    "gate-floor": ("gate.rerank_min_recall=0.5", "gate.rerank_min_recall: no gated rerank"),
}


@pytest.mark.parametrize(("option", "said"), SETS.values(), ids=SETS.keys())
def test_a_set_that_changes_nothing_is_refused(tmp_path: Path, option: str, said: str) -> None:
    """`--set indexes.hnsw.ef_search=64` with hnsw disabled ran as if it was not given. Every
    command that takes --set refuses a setting that changes nothing, naming the option."""
    config = tmp_path / "c.yaml"
    config.write_text(
        f"golden_set: {{path: {DEMO}}}\nindexes:\n  hnsw: {{enabled: false}}\n"
        "  q: {type: quantized, precision: binary, enabled: false}\n"
        "health: {enabled: false}\ncache: {enabled: false}\n"
    )
    code, out = invoke("validate", str(config), "--set", option)
    assert code == 2, out
    assert f"--set {option}" in out and said in out


def test_a_set_that_enables_what_it_sets_is_taken(tmp_path: Path) -> None:
    """A setting of a section another --set enables counts: the order of the options does not
    matter."""
    config = tmp_path / "c.yaml"
    config.write_text(f"golden_set: {{path: {DEMO}}}\nindexes:\n  hnsw: {{enabled: false}}\n")
    sets = ["--set", "indexes.hnsw.ef_search=64", "--set", "indexes.hnsw.enabled=true"]
    code, out = invoke("validate", str(config), *sets)
    assert code == 0, out
