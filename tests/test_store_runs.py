"""Stores in whole runs (`evalret run` with `type: store`), through the LanceDB driver on the
demo golden set embedded by a hashed bag of words (no model is loaded; LanceDB is real):

- a flat scratch collection gives the exact index's metrics on every query, and is measured
  against exact search like every approximate index (recall 1.0);
- an IVF_PQ collection finds part of the exact top 10, and `gate.ann_min_recall` above its
  recall fails the gate (exit 1); below it, the gate passes;
- `embed --export`, the file loaded into LanceDB with its own API, then `mode: existing`: the
  exact index's metrics again;
- a config whose only index is the store still embeds the queries and runs;
- bad settings are exit 2 before anything is embedded: an unknown search key, a missing table,
  a missing package naming its extra.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from helpers import HASH_ENCODER, invoke

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "golden_sets" / "demo"
IVF = "{index_type: IVF_PQ, num_partitions: 8, num_sub_vectors: 8}"


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp_path with the hashing encoder importable as ``store_encoder``."""
    (tmp_path / "store_encoder.py").write_text(textwrap.dedent(HASH_ENCODER))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("store_encoder", None)
    return tmp_path


def _config(world: Path, store: str, *, exact: bool = True, gate: str = "") -> Path:
    path = world / "cfg.yaml"
    path.write_text(
        f"golden_set: {{path: {DEMO}}}\n"
        "metrics: [ndcg@10, recall@10, mrr@10]\n"
        f"cache: {{dir: {world / 'cache'}}}\n"
        "model: {provider: python, callable: 'store_encoder:make', options: {dim: 64}}\n"
        "indexes:\n"
        f"  exact: {{enabled: {str(exact).lower()}}}\n"
        "  hnsw: {enabled: false}\n  bm25: {enabled: false}\n  hybrid: {enabled: false}\n"
        f"  store: {store}\n" + (f"gate: {gate}\n" if gate else "")
    )
    return path


def _run(config: Path, out: Path, code: int = 0) -> dict[str, Any]:
    got, output = invoke("run", "-c", str(config), "--no-progress", "-o", str(out))
    assert got == code, output
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


def test_a_flat_scratch_store_equals_exact(world: Path) -> None:
    """Every query's metrics equal the exact index's; the ANN section says recall ~1.0; the
    params carry the store's description and no count (nothing was skipped or short); the
    latency was timed."""
    store = f"{{type: store, driver: lancedb, mode: scratch, connect: {{path: {world / 'l'}}}}}"
    report = _run(_config(world, store), world / "out")
    exact, got = (report["indexes"][n]["per_query"] for n in ("exact", "store"))
    assert exact == got
    ann = report["ann"]["store"]["slices"]["all"]
    # a bag of words ties many documents exactly; LanceDB's float32 sums, in another order than
    # faiss's, part a few ties at the 10th rank by a rounding error: recall counts those
    assert ann["recall"]["recall@10"] > 0.999
    params = report["indexes"]["store"]["params"]
    assert params["type"] == "store.lancedb" and params["store"]["rows"] == 338
    assert params["store"]["index"] == "flat"
    assert not {"queries_short", "ranks_unknown_id", "rows_folded"} & params.keys()
    assert report["latency"]["indexes"]["store"]["n_queries"] > 0
    assert not list((world / "l").glob("evalret_scratch_*"))


def test_an_ivf_pq_store_is_measured_and_held_to_the_floor(world: Path) -> None:
    """IVF_PQ with one probe: recall@10 against exact below 1; a floor above it fails the gate
    (exit 1), a floor below it passes."""
    store = (
        f"{{type: store, driver: lancedb, mode: scratch, connect: {{path: {world / 'l'}}}, "
        f"build: {IVF}, search: {{nprobes: 1}}}}"
    )
    report = _run(_config(world, store, gate="{ann_min_recall: 0.1}"), world / "out")
    recall = report["ann"]["store"]["slices"]["all"]["recall"]["recall@10"]
    assert 0.1 < recall < 0.9
    assert "IvfPq" in json.dumps(report["indexes"]["store"]["params"]["store"]["index"])
    failing = _config(world, store, gate=f"{{ann_min_recall: {recall + 0.05:.3f}}}")
    failed = _run(failing, world / "fail", code=1)
    assert any(c["status"] == "fail" and "store" in c["name"] for c in failed["gate"]["checks"])
    _run(_config(world, store, gate=f"{{ann_min_recall: {recall - 0.05:.3f}}}"), world / "pass")


def test_export_then_load_then_existing_mode_equals_exact(world: Path) -> None:
    """`embed --export`, loaded into LanceDB by its own API (the how-to's way), searched in
    mode existing: the exact index's metrics on every query."""
    import lancedb
    import pyarrow.parquet as pq

    store = f"{{type: store, driver: lancedb, connect: {{path: {world / 'l'}}}, collection: docs}}"
    config = _config(world, store)
    code, output = invoke("embed", "-c", str(config), "--no-progress", "--export", "v.parquet")
    assert code == 0, output
    table = pq.read_table(Path.cwd() / "v.parquet")
    (Path.cwd() / "v.parquet").unlink()
    lancedb.connect(str(world / "l")).create_table("docs", data=table)
    report = _run(config, world / "out")
    exact, got = (report["indexes"][n]["per_query"] for n in ("exact", "store"))
    assert exact == got
    assert report["indexes"]["store"]["params"]["collection"] == "docs"


def test_a_config_with_only_a_store_embeds_the_queries(world: Path) -> None:
    """No dense index of evalret's own: the queries are still embedded and the store runs
    (without exact search there is nothing to measure its recall against: no ANN section, and
    an ann_min_recall written in the config is refused, as for any approximate index)."""
    store = f"{{type: store, driver: lancedb, mode: scratch, connect: {{path: {world / 'l'}}}}}"
    report = _run(_config(world, store, exact=False), world / "out")
    assert list(report["indexes"]) == ["store"] and report["ann"] == {}
    assert report["indexes"]["store"]["slices"]["all"]["metrics"]["ndcg@10"]["value"] > 0.05
    floor = _config(world, store, exact=False, gate="{ann_min_recall: 0.9}")
    code, output = invoke("run", "-c", str(floor), "--no-progress", "-o", str(world / "o2"))
    assert code == 2 and "indexes.exact is disabled" in output


@pytest.mark.parametrize(
    ("store", "said"),
    [
        (
            "{type: store, driver: lancedb, mode: scratch, search: {nprobe: 4}}",
            "indexes.store.search: 'nprobe' is no lancedb search setting",
        ),
        (
            "{type: store, driver: lancedb, connect: {path: nowhere}, collection: docs}",
            "indexes.store.connect.path: no store at",
        ),
        ("{type: store, driver: lancedb, mode: existing}", "set collection"),
        (
            "{type: store, driver: qdrant, mode: scratch, connect: {url: 'http://u:p@h:6333'}}",
            "without credentials",
        ),
    ],
)
def test_bad_store_settings_are_exit_2(world: Path, store: str, said: str) -> None:
    config = _config(world, store)
    code, output = invoke("run", "-c", str(config), "--no-progress", "-o", str(world / "out"))
    assert code == 2 and said in output, output
    assert "p@h" not in output


def test_a_missing_package_names_its_extra(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Exit 2 naming evalret[lancedb], before anything is embedded."""
    monkeypatch.setitem(sys.modules, "lancedb", None)
    store = "{type: store, driver: lancedb, mode: scratch}"
    code, output = invoke("run", "-c", str(_config(world, store)), "--no-progress")
    assert code == 2 and "pip install 'evalret[lancedb]'" in output, output
    assert not (world / "cache").exists()


def test_a_filtered_store_reports_recall_by_selectivity(world: Path) -> None:
    """test_filters' filtered demo (tenants of 0.5% to 65% of 3,000 documents), searched in
    an IVF_PQ scratch collection loaded with the documents' metadata: the ANN section has the
    four selectivity buckets of 30 queries each, and the store's translation of the filters let
    no other tenant's document through (no documents_outside_filter) while every query ranks
    only its tenant's documents."""
    from test_filters import filtered_set

    golden = filtered_set(world / "set")
    store = (
        f"{{type: store, driver: lancedb, mode: scratch, connect: {{path: {world / 'l'}}}, "
        "build: {index_type: IVF_PQ, num_partitions: 16, num_sub_vectors: 8}, "
        "search: {nprobes: 2}}"
    )
    config = _config(world, store, gate="{ann_min_recall: 0.0}")
    config.write_text(config.read_text().replace(str(DEMO), str(golden)))
    report = _run(config, world / "out")
    buckets = report["ann"]["store"]["selectivity"]
    assert [b["n_queries"] for b in buckets.values()] == [30, 30, 30, 30]
    assert all(b["recall"]["recall@10"] is not None for b in buckets.values())
    assert "documents_outside_filter" not in report["indexes"]["store"]["params"]
    tenant = {
        d["id"]: d["metadata"]["tenant"]
        for d in map(json.loads, (golden / "corpus.jsonl").read_text().splitlines())
    }
    top = report["indexes"]["store"]["top_ids"]
    assert all(
        {tenant[d] for d in ids} <= {q.split("-")[1]}
        for q, ids in zip(report["query_ids"], top, strict=True)
    )


def _blocks(page: str, heading: str) -> tuple[str, str]:
    """The first python block under ``heading`` of docs/how-to/``page`` and the yaml block
    after it."""
    text = (REPO / "docs" / "how-to" / page).read_text().split(heading, 1)[1]
    code, rest = text.split("```python\n", 1)[1].split("```", 1)
    return code, rest.split("```yaml\n", 1)[1].split("```", 1)[0]


@pytest.mark.parametrize("page", ["store-lancedb.md", "store-qdrant.md", "store-chroma.md"])
def test_each_store_page_loads_an_export_and_searches_it(
    page: str, world: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store page's loading example, run on an export (the hashed encoder's vectors), then the
    page's existing-mode config: the store is searched, measured against exact search and
    described."""
    import yaml

    code, config_text = _blocks(page, "## Your own")
    (name, index), *_ = yaml.safe_load(config_text)["indexes"].items()
    config = _config(world, json.dumps(index), gate="{ann_min_recall: 0.0}")
    monkeypatch.chdir(world)
    done, output = invoke(
        "embed", "-c", str(config), "--no-progress", "--export", "vectors.parquet"
    )
    assert done == 0, output
    exec(compile(code, page, "exec"), {})
    report = _run(config, world / "out")
    assert report["ann"]["store"]["slices"]["all"]["recall"]["recall@10"] > 0.5, name
    params = report["indexes"]["store"]["params"]
    assert params["collection"] == "docs" and params["store"]["rows"] == 338


def test_a_sweep_over_a_store_setting_times_each_point(world: Path) -> None:
    """`evalret sweep` over `search.nprobes` of a scratch IVF_PQ store: each point's store has
    its recall against exact and its latency (on the latency front's candidates), and no size
    (evalret cannot measure a store's index bytes): the memory front leaves it out."""
    config = _config(
        world,
        f"{{type: store, driver: lancedb, mode: scratch, connect: {{path: {world / 'l'}}}, "
        f"build: {IVF}}}",
        gate="{ann_min_recall: 0.0}",
    )
    code, output = invoke(
        "sweep", "-c", str(config), "--no-progress", "-o", str(world / "sw"),
        "--set", "indexes.store.search.nprobes=1,8",
    )  # fmt: skip
    assert code == 0, output
    sweep = json.loads((world / "sw" / "sweep.json").read_text())
    stores = [p["indexes"]["store"] for p in sweep["points"]]
    assert [s["params"]["search"] for s in stores] == [{"nprobes": 1}, {"nprobes": 8}]
    for s in stores:
        assert 0 < s["ann_recall"]["recall@10"] <= 1
        assert s["cost"]["p50_ms"] > 0 and s["cost"]["index_bytes"] is None
        assert s["pareto_memory"] is False
    assert any(s["pareto_latency"] for s in stores) or any(
        p["indexes"]["exact"]["pareto_latency"] for p in sweep["points"]
    )


def test_a_latency_budget_holds_a_store(world: Path) -> None:
    """`gate.budgets.<store>.max_p95_ms` reads the store's own timed latency: a budget below it
    fails the gate (exit 1) naming the index."""
    store = f"{{type: store, driver: lancedb, mode: scratch, connect: {{path: {world / 'l'}}}}}"
    gate = "{budgets: {store: {max_p95_ms: 0.000001}}}"
    report = _run(_config(world, store, gate=gate), world / "out", code=1)
    failed = [c for c in report["gate"]["checks"] if c["status"] == "fail"]
    assert [(c["index"], c["metric"]) for c in failed] == [("store", "p95_ms")]


def test_a_password_given_by_set_is_never_echoed(world: Path) -> None:
    """A URL with credentials given by `--set` is refused (exit 2) and the message quotes the
    option with the password masked, in `run` and in `sweep` alike."""
    config = _config(world, "{type: store, driver: lancedb, mode: scratch}")
    url = "indexes.store.connect.url=http://user:s3cretpw@127.0.0.1:1/"
    for command in ("run", "sweep"):
        out = str(world / command)
        code, output = invoke(command, "-c", str(config), "--no-progress", "-o", out, "--set", url)
        assert code == 2 and "user:***@127.0.0.1" in output, output
        assert "s3cretpw" not in output
