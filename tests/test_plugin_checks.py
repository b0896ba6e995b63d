"""A Python retriever's silent mistakes made loud (#38): scores that rise along the returned
lists refused as distances, short rankings, documents outside the filter and unknown ids counted
(report.json's index params, the terminal brief, report.md), and the setup and close hooks."""

from __future__ import annotations

import json
import random
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from evalret.data.config import parse_config
from evalret.engines.ranking_checks import (
    RISING_MIN_QUERIES,
    check_score_direction,
    rising_queries,
)
from evalret.errors import ConfigError, PluginError
from evalret.pipeline.evaluate import run_evaluation
from evalret.pipeline.outputs import write_outputs
from evalret.report.escape import markdown
from evalret.report.terminal_brief import brief_run
from helpers import HashEmbedder

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "golden_sets" / "demo"

PLUGIN = """
import random

MODE = "similarity"
RUN = None
CALLS = []


def _exact():
    out = {}
    with open(RUN, encoding="utf-8") as f:
        for line in f:
            qid, _, doc, _, score, _ = line.split()
            out.setdefault(qid, []).append((doc, float(score)))
    return out


def search(query_ids, query_texts, query_vectors, depth):
    exact = _exact()
    out = []
    for qid in query_ids:
        pairs = exact[qid]  # best first, as the TREC file holds them
        if MODE in ("distance", "refused-close-raises"):  # 1 - cosine: smaller is nearer
            pairs = [(doc, 1.0 - score) for doc, score in pairs]
        elif MODE == "shuffled":
            pairs = list(pairs)
            random.Random(qid).shuffle(pairs)
        elif MODE == "equal":
            pairs = [(doc, 1.0) for doc, _ in pairs]
        out.append(pairs)
    return out


def setup():
    CALLS.append("setup")
    if MODE == "setup-raises":
        raise RuntimeError("no connection")
    if MODE == "setup-exits":
        raise SystemExit(0)
    return {"client": "open"}


def with_state(query_ids, query_texts, query_vectors, depth, state):
    CALLS.append(("search", dict(state)))
    if MODE == "search-raises":
        raise RuntimeError("search failed")
    return search(query_ids, query_texts, query_vectors, depth)


def close(state):
    CALLS.append(("close", state))
    if MODE in ("close-raises", "search-raises", "refused-close-raises"):
        raise RuntimeError("close failed")
    if MODE == "close-exits":
        raise SystemExit(1)
"""


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``evalret_check_plugin``: a retriever answering the demo's exact rankings (read from
    the run.exact.trec of an exact run with the hashing model) as similarities, as distances
    (1 - cosine) best-first, shuffled or all equal, and setup / close hooks."""
    (tmp_path / "evalret_check_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("evalret_check_plugin", None)
    import evalret_check_plugin  # type: ignore[import-not-found]

    first = run_evaluation(_demo_config(tmp_path), embedder=HashEmbedder())
    write_outputs(first, tmp_path / "exact")
    evalret_check_plugin.RUN = str(tmp_path / "exact" / "run.exact.trec")
    evalret_check_plugin.EXACT = first.report.indexes["exact"]
    return evalret_check_plugin


def _demo_config(tmp_path: Path, index: str = "") -> Any:
    text = f"golden_set: {{path: {DEMO}}}\nindexes:\n  hnsw: {{enabled: false}}\n"
    text += "  bm25: {enabled: false}\n  hybrid: {enabled: false}\n"
    if index:
        text += f"  p: {{type: python, {index}}}\n"
    return parse_config(text, "c.yaml").resolve_paths(tmp_path)


SEARCH = "callable: 'evalret_check_plugin:search'"


def test_distances_best_first_are_refused_naming_the_fix(tmp_path: Path, plugin: Any) -> None:
    plugin.MODE = "distance"
    with pytest.raises(ConfigError) as e:
        run_evaluation(_demo_config(tmp_path, SEARCH), embedder=HashEmbedder())
    assert e.value.exit_code == 2
    text = str(e.value)
    assert "evalret_check_plugin:search (indexes.p)" in text and "distances" in text
    assert "return a similarity (higher is better), e.g. -distance or 1 - cosine distance" in text


@pytest.mark.parametrize("mode", ["similarity", "shuffled", "equal"])
def test_similarities_in_any_order_pass(tmp_path: Path, plugin: Any, mode: str) -> None:
    """Similarities best-first or shuffled score exactly as exact search; scores all equal
    tell nothing and are accepted (ranked by the tie rule)."""
    plugin.MODE = mode
    report = run_evaluation(_demo_config(tmp_path, SEARCH), embedder=HashEmbedder()).report
    got, exact = report.indexes["p"], report.indexes["exact"]
    if mode != "equal":
        assert got.slices == exact.slices and got.top_ids == exact.top_ids
    assert "queries_short" not in got.params and "documents_outside_filter" not in got.params


def test_the_rule_by_hand() -> None:
    """Rising lists count among the lists with two distinct scores; a share of 0.9 of at least
    RISING_MIN_QUERIES such queries is refused; one query, or scores all equal, never."""
    up, down, flat = [0.1, 0.2, 0.2, 0.5], [0.5, 0.2, 0.2, 0.1], [0.3, 0.3]
    assert rising_queries([up, down, flat, [0.4]]) == (1, 2)
    check_score_direction("f", [up])  # one query: too little evidence
    check_score_direction("f", [flat] * 50)  # nothing to tell
    check_score_direction("f", [up] * 8 + [down] * 2)  # 0.8 of them rise: accepted
    with pytest.raises(ConfigError, match="in 9 of 10 queries"):
        check_score_direction("f", [up] * 9 + [down] + [flat] * 5)
    check_score_direction("f", [up] * (RISING_MIN_QUERIES - 1))
    with pytest.raises(ConfigError):
        check_score_direction("f", [up] * RISING_MIN_QUERIES)
    shuffled = []
    rng = random.Random(0)
    for _ in range(200):
        row = [rng.random() for _ in range(10)]
        shuffled.append(row)
    check_score_direction("f", shuffled)


# --- counts ------------------------------------------------------------------------------------

DOCS = [
    {"id": "d1", "text": "alpha beta", "metadata": {"lang": "en"}},
    {"id": "d2", "text": "alpha gamma", "metadata": {"lang": "en"}},
    {"id": "d3", "text": "beta gamma", "metadata": {"lang": "en"}},
    {"id": "d4", "text": "alpha alpha", "metadata": {"lang": "fr"}},
    {"id": "d5", "text": "gamma delta", "metadata": {"lang": "fr"}},
    {"id": "d6", "text": "delta beta"},
]
COUNTING = """
ANSWER = {
    "q1": [("d4", 0.9), ("d2", 0.8), ("d1", 0.7), ("d6", 0.6), ("zz", 0.5)],
    "q2": [("d5", 0.9), ("d1", 0.4)],
    "q3": [("d3", 0.9), ("d2", 0.8), ("yy", 0.7)],
}
def plain(ids, texts, vectors, depth):
    return [list(ANSWER[q]) for q in ids]
"""


def test_outside_filter_unknown_and_short_are_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """q1 (lang en: d1, d2, d3) gets d4 and d6 outside its filter (dropped, as before: its
    metrics are the hand-computed ones of test_filters) and zz unknown to the corpus (kept);
    q2 (lang fr: d4, d5) gets d1 outside it and is short (d5 alone of 2 eligible); q3
    (unfiltered, 6 documents) is short (3 ranks) and yy is unknown. Counted in the params of
    report.json, on the terminal and in report.md, with example query ids."""
    golden = tmp_path / "set"
    golden.mkdir()
    queries = [
        {"id": "q1", "text": "alpha", "relevant": {"d1": 1, "d4": 2}, "filter": {"lang": "en"}},
        {"id": "q2", "text": "gamma", "relevant": {"d5": 1}, "filter": {"lang": "fr"}},
        {"id": "q3", "text": "beta", "relevant": {"d3": 1}},
    ]
    for name, rows in (("corpus.jsonl", DOCS), ("queries.jsonl", queries)):
        (golden / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "evalret_count_plugin.py").write_text(textwrap.dedent(COUNTING))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("evalret_count_plugin", None)
    text = (
        f"golden_set: {{path: {golden}}}\nmetrics: [recall@10, ndcg@10]\nindexes:\n"
        "  exact: {enabled: false}\n  hnsw: {enabled: false}\n  bm25: {enabled: false}\n"
        "  hybrid: {enabled: false}\n  p: {type: python, callable: 'evalret_count_plugin:plain'}\n"
    )
    ev = run_evaluation(parse_config(text, "c.yaml"))
    result = ev.report.indexes["p"]
    assert result.top_ids == [["d2", "d1", "zz"], ["d5"], ["d3", "d2", "yy"]]
    recall = result.per_query["recall@10"]
    assert recall[0] == pytest.approx(1.0) and recall[1] == pytest.approx(1.0)
    p = result.params
    assert p["documents_outside_filter"] == 3
    assert p["documents_outside_filter_examples"] == ["q1", "q2"]
    assert p["queries_short"] == 2 and p["queries_short_examples"] == ["q2", "q3"]
    assert p["documents_unknown"] == 2
    written = write_outputs(ev, tmp_path / "out")
    saved = json.loads((tmp_path / "out" / "report.json").read_text())
    assert saved["indexes"]["p"]["params"]["documents_outside_filter"] == 3
    console = Console(width=250, record=True)
    console.print(brief_run(ev.report, written))
    shown = console.export_text()
    md = (tmp_path / "out" / "report.md").read_text()
    for line in (
        "p: 3 returned documents outside the query's filter (dropped) (e.g. queries q1, q2)",
        "p: 2 queries ranked fewer documents than the depth while the corpus had more eligible",
        "p: 2 retrieved documents not in the corpus (unjudged)",
    ):
        assert line in shown and markdown(line) in md, line


# --- setup and close -----------------------------------------------------------------------------

HOOKED = (
    "callable: 'evalret_check_plugin:with_state', setup: 'evalret_check_plugin:setup', "
    "close: 'evalret_check_plugin:close'"
)


def test_setup_state_and_close(tmp_path: Path, plugin: Any) -> None:
    """The setup runs once before the search, its value reaches the search as state= and the
    close after it; the metrics are exact search's; the setup is timed apart from the search;
    the hooks are in the params (the fingerprint)."""
    plugin.CALLS.clear()
    report = run_evaluation(_demo_config(tmp_path, HOOKED), embedder=HashEmbedder()).report
    state = {"client": "open"}
    assert ["setup", ("search", state), ("close", state)] == plugin.CALLS
    assert report.indexes["p"].slices == report.indexes["exact"].slices
    assert "setup_p" in report.timings and "search_p" in report.timings
    assert report.indexes["p"].params["setup"] == "evalret_check_plugin:setup"
    assert report.indexes["p"].params["close"] == "evalret_check_plugin:close"


@pytest.mark.parametrize(
    ("mode", "names", "calls"),
    [
        ("setup-raises", "evalret_check_plugin:setup failed", ["setup"]),
        ("setup-exits", "evalret_check_plugin:setup raised SystemExit", ["setup"]),
        ("close-raises", "evalret_check_plugin:close failed", None),
        ("close-exits", "evalret_check_plugin:close raised SystemExit", None),
        ("search-raises", "evalret_check_plugin:with_state failed", None),
    ],
)
def test_hook_failures_exit_3_naming_the_hook(
    tmp_path: Path, plugin: Any, mode: str, names: str, calls: list[Any] | None
) -> None:
    """A setup or close that raises or calls sys.exit is a plug-in failure naming it; a search
    that fails is still closed (and a close failing then is appended to the search's failure)."""
    plugin.CALLS.clear()
    plugin.MODE = mode
    with pytest.raises(PluginError) as e:
        run_evaluation(_demo_config(tmp_path, HOOKED), embedder=HashEmbedder())
    assert e.value.exit_code == 3 and names in str(e.value)
    if calls is not None:
        assert calls == plugin.CALLS
    else:
        assert plugin.CALLS[-1] == ("close", {"client": "open"})
    if mode == "search-raises":
        assert "then evalret_check_plugin:close failed" in str(e.value)


def test_a_refused_search_is_closed(tmp_path: Path, plugin: Any) -> None:
    """Distances refused (exit 2) still close the client; a close failing then is appended to
    the refusal, which keeps its exit code."""
    plugin.CALLS.clear()
    plugin.MODE = "refused-close-raises"
    with pytest.raises(ConfigError) as e:
        run_evaluation(_demo_config(tmp_path, HOOKED), embedder=HashEmbedder())
    assert e.value.exit_code == 2 and plugin.CALLS[-1] == ("close", {"client": "open"})
    assert "then evalret_check_plugin:close failed: RuntimeError: close failed" in str(e.value)


def test_setup_needs_a_state_keyword(tmp_path: Path, plugin: Any) -> None:
    """A setup whose value the search function cannot take is a config error (exit 2)."""
    cfg = _demo_config(tmp_path, SEARCH + ", setup: 'evalret_check_plugin:setup'")
    with pytest.raises(ConfigError, match=r"indexes\.p\.setup: .* takes no 'state' keyword"):
        run_evaluation(cfg, embedder=HashEmbedder())


def test_hooks_are_strict_config() -> None:
    with pytest.raises(ConfigError, match=r"indexes\.p\.setup"):
        parse_config("indexes:\n  p: {type: python, callable: 'a:b', setup: 'not a spec'}\n")
    with pytest.raises(ConfigError, match=r"indexes\.p\.open"):
        parse_config("indexes:\n  p: {type: python, callable: 'a:b', open: 'a:b'}\n")
