"""`evalret sweep`: the grid of --set values, its validation (exit 2 naming the --set), the
Pareto front, sweep.json on the demo, and on SciFact four efSearch values whose ANN recall and
search work rise, with the page opened in Chromium.

Latency is not asserted (timed assertions flake under load): the deterministic proxy is the
number of distance computations per query (faiss's hnsw_stats.ndis), which is what efSearch
buys; the measured latencies are in docs/how-to/sweep.md's figure.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from conftest import REPO
from evalret.commands.sweep import sweep_command, sweep_configs
from evalret.core.pareto import pareto_front
from evalret.data.config import Config, load_config
from evalret.data.overrides import grid, parse_axes
from evalret.data.sweep import SweepReport
from evalret.errors import ConfigError, InputError
from evalret.pipeline.evaluate import metric_definitions
from helpers import invoke, marks_its_users

DEFAULT = REPO / "configs" / "default.yaml"


# --- the grid and its validation ------------------------------------------------------------------


def test_set_values_are_yaml_scalars_and_the_grid_is_their_product_in_order() -> None:
    axes = parse_axes(["indexes.hnsw.ef_search=16,32", "model.truncate_dim=null,128,256"])
    assert axes[0].values == (16, 32) and axes[1].values == (None, 128, 256)
    points = grid(axes)
    assert len(points) == 6
    assert points[:3] == [
        {"indexes.hnsw.ef_search": 16, "model.truncate_dim": v} for v in (None, 128, 256)
    ]
    assert points[3]["indexes.hnsw.ef_search"] == 32
    assert parse_axes(["model.normalize=true,false"])[0].values == (True, False)


def test_every_point_is_validated_like_the_config_file() -> None:
    _, points, configs = sweep_configs(
        DEFAULT, ["indexes.hnsw.ef_search=8,64", "indexes.hnsw.m=4,16"]
    )
    assert [(c.indexes.hnsw.ef_search, c.indexes.hnsw.m) for c in configs] == [
        (8, 4),
        (8, 16),
        (64, 4),
        (64, 16),
    ]
    assert points[1] == {"indexes.hnsw.ef_search": 8, "indexes.hnsw.m": 16}
    # the config file's relative paths are still resolved against its directory
    assert configs[0].golden_set.path == (REPO / "golden_sets" / "demo").resolve()
    with pytest.raises(ConfigError, match="--set"):
        sweep_configs(DEFAULT, ["indexes.hnsw.ef_search=8,0"])


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ("unknown.key=1", "unknown key"),
        ("indexes.hnsw.ef_search=16,abc", "ef_search"),
        ("indexes.hnsw.ef_search=16,0", "greater than or equal to 1"),
        ("indexes.hnsw.ef_search", "KEY=V1,V2"),
        ("indexes.hnsw.ef_search=16,,32", "not a YAML scalar"),
        ("indexes.hnsw.ef_search=[1, 2]", "not a YAML scalar"),
        ("indexes.hnsw.ef_search=16,16", "repeated"),
        ("model.precision=fp32,int8", "needs backend onnx"),
        ("indexes..m=4", "dotted config path"),
    ],
)
def test_bad_set_exits_2_naming_it(option: str, said: str, tmp_path: Path) -> None:
    """Refused before anything is embedded; precision int8 alone is refused because it needs
    model.backend onnx (set both: --set model.backend=onnx --set model.precision=fp32,int8)."""
    code, out = invoke("sweep", "-c", str(DEFAULT), "--set", option, "--out", str(tmp_path / "s"))
    assert code == 2, out
    assert "--set" in out and said in out, out
    assert not (tmp_path / "s").exists()


def test_a_path_set_twice_exits_2(tmp_path: Path) -> None:
    code, out = invoke(
        "sweep", "--set", "indexes.hnsw.m=4", "--set", "indexes.hnsw.m=8", "-o", str(tmp_path)
    )
    assert code == 2 and "more than one --set" in out, out


def _values(n: int) -> str:
    return ",".join(str(v) for v in range(1, n + 1))


def test_a_grid_over_the_bound_needs_max_points(tmp_path: Path) -> None:
    """Each point is a whole evaluation: a grid of more than 1,000 points (here 1,001) is
    refused before any point is made unless --max-points allows it, and --max-points lowers the
    bound too. Nothing is built or written."""
    big = [f"indexes.hnsw.ef_search={_values(1001)}"]
    with pytest.raises(
        InputError,
        match=r"1001 points \(1001\), more than the bound of 1000: "
        r"pass --max-points 1001",
    ):
        sweep_configs(DEFAULT, big)
    assert len(sweep_configs(DEFAULT, big, max_points=1001)[2]) == 1001
    # a grid far too large to list is refused as fast (its size is a product, never built)
    huge = [f"indexes.hnsw.ef_search={_values(1000)}", f"indexes.hnsw.m={_values(1000)}"]
    with pytest.raises(InputError, match=r"1000000 points \(1000 x 1000\)"):
        sweep_configs(DEFAULT, huge, max_points=10_000)
    code, out = invoke(
        "sweep", "-c", str(DEFAULT), "--set", "indexes.hnsw.ef_search=16,32,64",
        "--max-points", "2", "--out", str(tmp_path / "s"),
    )  # fmt: skip
    assert code == 2 and "3 points (3), more than --max-points 2" in out, out
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize(
    "option",
    [
        "golden_set.path=../golden_sets/demo,elsewhere",
        "golden_set.split=test,dev",
        "golden_set.format=auto,native",
        "sample.queries=10,20",
        "relevance_level=1,2",
        "ndcg_gain=linear,exponential",
        "queries_without_relevant=exclude,zero",
        "search_depth=100,200",
        "metrics=ndcg@10",
    ],
)
def test_an_axis_over_what_is_measured_is_refused(option: str) -> None:
    """A sweep compares settings on one measurement: an axis over the golden set, its sample or
    the metric definitions would compare numbers that do not measure the same thing."""
    with pytest.raises(ConfigError, match="changes what is measured"):
        sweep_configs(DEFAULT, [option])


def test_the_refused_axes_cover_every_metric_definition() -> None:
    """Every config key in the run's metric definitions (pipeline/evaluate.py) is refused."""
    from evalret.data.overrides import MEASURED

    cfg = Config(metrics=["ndcg@10", "map"], search_depth=200)
    keys = {"metrics" if k == "names" else k for k in metric_definitions(cfg)} - {"tie_rule"}
    assert keys <= set(MEASURED) and keys <= set(Config.model_fields)
    assert {"golden_set", "sample"} <= set(MEASURED)


def test_a_setting_of_a_disabled_index_is_refused(tmp_path: Path) -> None:
    """`--set indexes.hnsw.ef_search=16,32` with hnsw disabled ran every point the same and
    reported them as different settings: refused, naming the index and the point, as is a
    setting swept at points where another axis disables its index. Sweeping `enabled` itself
    is fine."""
    off = tmp_path / "off.yaml"
    off.write_text(
        DEFAULT.read_text(encoding="utf-8").replace("ef_construction: 200", "enabled: false")
        .replace("  hnsw:\n    enabled: true\n", "  hnsw:\n")
    )  # fmt: skip
    assert load_config(off).indexes.hnsw.enabled is False
    with pytest.raises(ConfigError, match=r"index hnsw is disabled at indexes.hnsw.ef_search=16"):
        sweep_configs(off, ["indexes.hnsw.ef_search=16,32"])
    with pytest.raises(ConfigError, match=r"index hnsw is disabled at .*enabled=False"):
        sweep_configs(DEFAULT, ["indexes.hnsw.enabled=true,false", "indexes.hnsw.m=8,16"])
    assert len(sweep_configs(DEFAULT, ["indexes.hnsw.enabled=true,false"])[2]) == 2


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ("model.normalize=1,0", "model.normalize: Input should be a valid boolean"),
        ("indexes.hnsw.ef_search='16','32'", "indexes.hnsw.ef_search: Input should be a valid "
         "integer, not a string ('16')"),
        ("indexes.hnsw.ef_search=16.0", "not a number (16.0)"),
    ],
)  # fmt: skip
def test_set_values_are_not_converted(option: str, said: str) -> None:
    """A --set value is validated as strictly as the file: 1 is no boolean, '16' no integer."""
    with pytest.raises(ConfigError, match=re.escape(said)):
        sweep_configs(DEFAULT, [option])
    assert sweep_configs(DEFAULT, ["indexes.bm25.k1=1,2"])[2][0].indexes.bm25.k1 == 1.0


def test_the_config_file_own_problems_are_named_at_their_line(tmp_path: Path) -> None:
    """A repeated key in the swept config file (a second `indexes:` block dropped the first
    block's settings) is refused at the file's line, as is a value of the wrong type in it."""
    config = tmp_path / "cfg.yaml"
    config.write_text(
        "indexes:\n  hnsw: {threads: 1}\nmetrics: [ndcg@10]\nindexes:\n  bm25: {k1: 1}\n"
    )
    with pytest.raises(ConfigError) as e:
        sweep_configs(config, ["indexes.hnsw.ef_search=16,32"])
    assert f"{config}:4: indexes: duplicate key on lines 1 and 4" in str(e.value)
    config.write_text("bootstrap: {samples: '1000'}\n")
    with pytest.raises(ConfigError) as e:
        sweep_configs(config, ["indexes.hnsw.ef_search=16,32"])
    assert f"{config}:1: bootstrap.samples: Input should be a valid integer" in str(e.value)


# --- the Pareto front -----------------------------------------------------------------------------


def test_pareto_front_keeps_the_points_nothing_beats_on_both() -> None:
    quality = [0.5, 0.6, 0.6, 0.4, 0.7, float("nan")]
    cost = [1.0, 2.0, 3.0, 1.5, 5.0, 0.1]
    # 0.6@3 loses to 0.6@2, 0.4@1.5 to 0.5@1; NaN is never on the front
    assert pareto_front(quality, cost).tolist() == [True, True, False, False, True, False]
    # equal points do not dominate each other
    assert pareto_front([0.5, 0.5], [1.0, 1.0]).tolist() == [True, True]
    rng = np.random.default_rng(0)
    q, c = rng.random(200), rng.random(200)
    on = pareto_front(q, c)
    for i in np.flatnonzero(~on):  # every point off the front is beaten by one on it
        assert np.any((q[on] >= q[i]) & (c[on] <= c[i]))


HOSTILE = '<script>alert(1)</script><img src="http://example.invalid/x.png">[bold]x[/]\x1b[2J'


def test_settings_are_escaped_on_the_page_and_in_the_terminal() -> None:
    """A string value of a --set (a query prefix, say) reaches the page and the table as text."""
    from rich.console import Console

    from evalret.data.schema import MetricValue
    from evalret.data.sweep import IndexCost, SweepIndex, SweepPoint
    from evalret.report.sweep_view import sweep_html, sweep_table

    cost = IndexCost(
        p50_ms=0.1,
        p95_ms=0.2,
        qps=1000.0,
        fetch=26,
        ef_search=None,
        distances_per_query=10.0,
        build_s=0.0,
        index_bytes=100,
        vector_bytes=100,
    )
    index = SweepIndex(
        params={"type": HOSTILE},
        metrics={"ndcg@10": MetricValue(value=0.5, ci_low=0.4, ci_high=0.6)},
        cost=cost,
        pareto_latency=True,
        pareto_memory=True,
    )
    report = SweepReport(
        evalret_version="0",
        config=HOSTILE,
        axes={"model.query_prefix": [HOSTILE]},
        quality_metric="ndcg@10",
        n_queries=1,
        n_documents=10,
        repeats=1,
        machine={"cpu_count": 1},
        timing={"latency": "x"},
        points=[
            SweepPoint(
                id=0,
                settings={"model.query_prefix": HOSTILE},
                dim=4,
                indexes={HOSTILE: index},
                fingerprint="f",
            )
        ],
        pareto_latency=[[0, HOSTILE]],
        pareto_memory=[[0, HOSTILE]],
    )
    html = sweep_html(report)
    assert "<script" not in html and "<img" not in html and "\x1b" not in html
    assert "&lt;script&gt;" in html
    console = Console(width=400, record=True, force_terminal=False)
    console.print(sweep_table(report))
    text = console.export_text()
    assert "[bold]x[/]" in text and "\x1b" not in text


def test_judged_only_metrics_do_not_break_the_recall_columns() -> None:
    """A sweep whose quality metric is ``ndcg@10:judged`` and whose points hold
    ``recall@10:judged`` renders: the recall columns are the plain recall@k, in cutoff order
    (recall@5 before recall@100), and the judged-only quality metric heads its column."""
    from rich.console import Console

    from evalret.data.schema import MetricValue
    from evalret.data.sweep import SweepIndex, SweepPoint
    from evalret.report.sweep_view import sweep_html, sweep_table

    value = MetricValue(value=0.5, ci_low=0.4, ci_high=0.6)
    names = ["ndcg@10:judged", "recall@10:judged", "recall@100", "recall@5"]
    index = SweepIndex(params={"type": "exact"}, metrics=dict.fromkeys(names, value))
    report = SweepReport(
        evalret_version="0",
        config="c.yaml",
        axes={"indexes.hnsw.ef_search": [16]},
        quality_metric="ndcg@10:judged",
        n_queries=1,
        n_documents=10,
        repeats=1,
        machine={"cpu_count": 1},
        timing={"latency": "x"},
        points=[SweepPoint(id=0, settings={}, dim=4, indexes={"exact": index}, fingerprint="f")],
        pareto_latency=[],
        pareto_memory=[],
    )
    assert "ndcg@10:judged" in sweep_html(report)
    console = Console(width=400, record=True, force_terminal=False)
    console.print(sweep_table(report))
    header = console.export_text().splitlines()[2]
    assert header.index("ndcg@10:judged") < header.index("recall@5") < header.index("recall@100")
    assert "recall@10:judged" not in header


# --- the demo -------------------------------------------------------------------------------------


@pytest.mark.model
def test_demo_sweep_json(tmp_path: Path) -> None:
    """Two efSearch values by two graph sizes on the demo: four points in grid order, each with
    its settings, every enabled index's quality, HNSW's ANN recall, each faiss index's cost and
    size, and both Pareto fronts marked consistently; the exact index is built and timed once."""
    code, out = invoke(
        "sweep",
        "-c",
        str(DEFAULT),
        "--set",
        "indexes.hnsw.ef_search=8,64",
        "--set",
        "indexes.hnsw.m=4,16",
        "--repeats",
        "2",
        "--no-progress",
        "--out",
        str(tmp_path),
    )
    assert code == 0, out
    assert "timings machine-dependent" in out and "sweep.html" in out
    raw = json.loads((tmp_path / "sweep.json").read_text(encoding="utf-8"))
    report = SweepReport.model_validate(raw)
    assert raw["machine_dependent"] is True
    assert raw["machine"]["cpu_count"] >= 1 and raw["machine"]["platform"]
    assert report.axes == {"indexes.hnsw.ef_search": [8, 64], "indexes.hnsw.m": [4, 16]}
    assert report.quality_metric == "ndcg@10" and report.repeats == 2
    assert [p.settings for p in report.points] == [
        {"indexes.hnsw.ef_search": ef, "indexes.hnsw.m": m} for ef in (8, 64) for m in (4, 16)
    ]
    # one model setting: embedded at most once (by the first point), read back by the others
    assert [p.embedded for p in report.points[1:]] == [{"documents": 0, "queries": 0}] * 3
    for p in report.points:
        assert set(p.indexes) == {"exact", "hnsw", "bm25", "hybrid"}
        hnsw, exact = p.indexes["hnsw"], p.indexes["exact"]
        assert hnsw.params["ef_search"] == p.settings["indexes.hnsw.ef_search"]
        assert hnsw.params["m"] == p.settings["indexes.hnsw.m"]
        assert {"ndcg@10", "recall@10", "recall@100"} <= set(hnsw.metrics)
        assert hnsw.ann_recall is not None and 0 < hnsw.ann_recall["recall@10"] <= 1
        assert exact.ann_recall is None and p.indexes["bm25"].cost is None
        for c in (hnsw.cost, exact.cost):
            assert c is not None
            assert 0 < c.p50_ms <= c.p95_ms and c.qps > 0 and c.build_s >= 0
            assert c.vector_bytes == 338 * 384 * 4 and c.index_bytes >= c.vector_bytes
        assert exact.cost is not None and exact.cost.distances_per_query == 338
        assert exact.cost == report.points[0].indexes["exact"].cost  # measured once
    # a bigger graph takes more bytes
    assert report.points[1].indexes["hnsw"].cost.index_bytes > (  # type: ignore[union-attr]
        report.points[0].indexes["hnsw"].cost.index_bytes  # type: ignore[union-attr]
    )
    for front, flag in (
        (report.pareto_latency, "pareto_latency"),
        (report.pareto_memory, "pareto_memory"),
    ):
        assert front, flag
        marked = [
            [p.id, n] for p in report.points for n, i in p.indexes.items() if getattr(i, flag)
        ]
        assert marked == front
    html = (tmp_path / "sweep.html").read_text(encoding="utf-8")
    assert "machine-dependent" in html and html.count('class="point pareto"') == len(
        report.pareto_latency
    ) + len(report.pareto_memory)


# --- SciFact --------------------------------------------------------------------------------------

EF_SEARCH = (32, 48, 96, 256)  # all above the fetch (depth 10 + tie margin 16 = 26)


def scifact_config(tmp_path: Path, scifact_path: Path) -> Path:
    """SciFact as configs/scifact.yaml reads it (same model settings: the session's cached
    vectors serve it), scored at depth 10, with a small HNSW graph whose recall efSearch moves."""
    base = yaml.safe_load((REPO / "configs" / "scifact.yaml").read_text(encoding="utf-8"))
    cfg: dict[str, Any] = {
        "golden_set": {**base["golden_set"], "path": str(scifact_path)},
        "model": base["model"],
        "metrics": ["ndcg@10", "recall@10"],
        "indexes": {
            "hnsw": {"m": 4, "ef_construction": 16},
            "bm25": {"enabled": False},
            "hybrid": {"enabled": False},
        },
    }
    path = tmp_path / "scifact-sweep.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
@marks_its_users("model")
def scifact_sweep(tmp_path_factory: pytest.TempPathFactory, scifact_path: Path) -> Path:
    out = tmp_path_factory.mktemp("scifact-sweep")
    config = scifact_config(out, scifact_path)
    values = ",".join(map(str, EF_SEARCH))
    sweep_command(
        config=config,
        sets=[f"indexes.hnsw.ef_search={values}"],
        out=out / "sweep",
        repeats=3,
    )
    return out / "sweep"


@pytest.mark.slow
def test_scifact_ann_recall_and_search_work_rise_with_ef_search(scifact_sweep: Path) -> None:
    report = SweepReport.model_validate_json((scifact_sweep / "sweep.json").read_text("utf-8"))
    hnsw = [p.indexes["hnsw"] for p in report.points]
    assert [i.params["ef_search"] for i in hnsw] == list(EF_SEARCH)
    recall = [i.ann_recall["recall@10"] for i in hnsw if i.ann_recall is not None]
    assert len(recall) == 4
    assert all(b >= a for a, b in itertools.pairwise(recall)), recall
    assert recall[-1] > recall[0], recall
    work = [i.cost.distances_per_query for i in hnsw if i.cost is not None]
    assert all(b > a for a, b in itertools.pairwise(work)), work
    exact = report.points[0].indexes["exact"].cost
    assert exact is not None and exact.distances_per_query == report.n_documents == 5183
    assert work[-1] < exact.distances_per_query
    assert report.n_queries == 300
    assert report.pareto_latency and report.pareto_memory


@pytest.mark.slow
def test_scifact_sweep_page_in_chromium(scifact_sweep: Path) -> None:
    """sweep.html loads clean in headless Chromium (no console error, nothing fetched, no
    script), with both scatter plots, a dot per point and faiss index, the Pareto points
    ringed and the machine-dependence said."""
    from conftest import CHROMIUM, CHROMIUM_ARGS
    from test_report_html import assert_clean, open_page

    if not Path(CHROMIUM).is_file():
        pytest.fail(f"Chromium not found at {CHROMIUM}: `bash scripts/setup.sh --test` installs it")
    from playwright.sync_api import sync_playwright

    report = SweepReport.model_validate_json((scifact_sweep / "sweep.json").read_text("utf-8"))
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS, chromium_sandbox=False
        )
        loaded = open_page(browser, scifact_sweep / "sweep.html", "sweep")
        assert_clean(loaded)
        page = browser.new_page()
        page.goto((scifact_sweep / "sweep.html").resolve().as_uri(), wait_until="load")
        facts = page.evaluate(
            """() => ({
              plots: document.querySelectorAll('svg.scatter-chart').length,
              latencyDots: document.querySelectorAll('.pareto-latency svg g.point').length,
              latencyFront: document.querySelectorAll('.pareto-latency svg g.point.pareto').length,
              memoryFront: document.querySelectorAll('.pareto-memory svg g.point.pareto').length,
              visibleDots: [...document.querySelectorAll('svg g.point circle')].filter((c) => {
                const r = c.getBoundingClientRect(); return r.width > 0 && r.height > 0; }).length,
            })"""
        )
        page.close()
        browser.close()
    assert loaded.dom["verdict"] == "4 POINTS"
    assert "machine-dependent" in loaded.dom["text"]
    assert facts["plots"] == 2
    assert facts["latencyDots"] == 2 * len(report.points)  # exact and hnsw at every point
    assert facts["latencyFront"] == len(report.pareto_latency) >= 1
    assert facts["memoryFront"] == len(report.pareto_memory) >= 1
    assert facts["visibleDots"] > 0
