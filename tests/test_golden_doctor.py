"""`evalret golden doctor`: the statistics of core/coverage.py on known inputs, and the command on a
set whose every query is perfect, on the demo (which zoo pairs it separates) and with a log that
holds a topic the demo lacks (named, below gate.coverage.min, exit 1; personal data never shown)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import DEMO, REPO
from evalret.core.coverage import (
    cluster_coverage,
    covered,
    energy_test,
    headroom,
    nearest_similarity,
    perfect,
    queries_needed,
    shape_target,
    tag_counts,
)
from evalret.core.stats import minimum_detectable_effect
from helpers import invoke

DEFAULT = str(REPO / "configs" / "default.yaml")
PII = ("reset password for jane.doe@example.com", "call me at +1 415 555 0123 about billing")
DISHES = (
    "sourdough bread",
    "banana bread",
    "a whole chicken",
    "lasagna",
    "chocolate chip cookies",
    "pumpkin pie",
    "pork shoulder",
    "vegetable soup",
    "brownies",
    "focaccia",
)
COOKING = tuple(
    t.format(d)
    for t in ("how long to bake {}", "best recipe for {}", "what temperature to cook {}")
    for d in DISHES
)


# --- core statistics ----------------------------------------------------------------------------


def _energy_brute(x: np.ndarray, y: np.ndarray) -> float:
    """2 E|X-Y| - E|X-X'| - E|Y-Y'| over every pair, written out."""

    def mean_dist(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.mean([np.linalg.norm(u - v) for u in a for v in b]))

    return 2 * mean_dist(x, y) - mean_dist(x, x) - mean_dist(y, y)


def test_energy_distance_equals_its_definition() -> None:
    """The statistic from the pooled distance matrix equals the pairwise definition."""
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(7, 3)), rng.normal(size=(5, 3)) + 0.5
    test = energy_test(x, y, permutations=10, seed=0)
    assert test.statistic == pytest.approx(_energy_brute(x, y), rel=1e-9)
    assert (test.n_x, test.n_y) == (7, 5)


def test_energy_test_tells_a_shift_from_the_same_distribution() -> None:
    """Two samples of one normal: a large p; one shifted by 1 in every coordinate: p at its
    floor 1 / (permutations + 1), never 0; the same seed gives the same p."""
    rng = np.random.default_rng(7)
    x, y = rng.normal(size=(60, 5)), rng.normal(size=(50, 5))
    same = energy_test(x, y, permutations=199, seed=3)
    shifted = energy_test(x, y + 1.0, permutations=199, seed=3)
    assert same.p_value > 0.1
    assert shifted.p_value == pytest.approx(1 / 200)
    assert shifted.statistic > 10 * same.statistic
    assert energy_test(x, y, permutations=199, seed=3) == same
    assert energy_test(x, x.copy(), permutations=99, seed=0).statistic == pytest.approx(
        0.0, abs=1e-6
    )


def test_coverage_counts_and_uncovered_clusters() -> None:
    """Nearest golden cosine per logged query, covered at the level, and a cluster uncovered when
    more than half of its queries are."""
    golden = np.array([[1.0, 0.0], [0.0, 1.0]])
    log = np.array([[2.0, 0.0], [1.0, 1.0], [-1.0, 0.0], [-1.0, -0.1], [0.1, 1.0]])
    nearest, which = nearest_similarity(log, golden)
    assert nearest[0] == pytest.approx(1.0) and which[0] == 0
    assert nearest[1] == pytest.approx(np.sqrt(0.5))
    assert which[4] == 1
    is_covered = covered(nearest, 0.7)
    assert is_covered.tolist() == [True, True, False, False, True]
    clusters = cluster_coverage(np.array([0, 0, 1, 1, 0]), is_covered)
    assert [(c.cluster, c.size, c.n_covered, c.uncovered) for c in clusters] == [
        (0, 3, 3, False),
        (1, 2, 0, True),
    ]


def test_headroom_levels() -> None:
    """A query is perfect when nDCG@10 and recall@k are both 1; half perfect cannot show a gain,
    nine in ten cannot show a loss either."""
    ndcg = np.array([1.0, 1.0, 1.0, 0.5, 1.0 - 1e-12])
    recall = np.array([1.0, 0.5, 1.0, 1.0, 1.0])
    is_perfect = perfect(ndcg, recall)
    assert is_perfect.tolist() == [True, False, True, False, True]
    h = headroom("all", is_perfect, np.ones(5, dtype=bool))
    assert (h.n_perfect, h.share_perfect, h.can_show_gain, h.can_show_loss) == (3, 0.6, False, True)
    h = headroom("two", is_perfect, np.array([True, False, True, False, False]))
    assert (h.can_show_gain, h.can_show_loss) == (False, False)
    assert headroom("none", is_perfect, np.zeros(5, dtype=bool)).n_queries == 0


def test_queries_needed_inverts_the_minimum_detectable_effect() -> None:
    """At the queries needed the MDE is at most the difference; one query fewer, above it."""
    sd, delta = 0.3, 0.05
    n = queries_needed(sd, delta)
    assert n is not None
    assert minimum_detectable_effect(sd, n, two_sided=True) <= delta
    assert minimum_detectable_effect(sd, n - 1, two_sided=True) > delta
    assert queries_needed(sd, 0.0) is None


def test_shape_targets_and_tag_counts() -> None:
    """10% of the queries, at most 20; tags counted once per query by value."""
    assert (shape_target(244), shape_target(50), shape_target(3)) == (20, 5, 1)
    tags = [("shape:short", "origin:log", "shape:short"), ("shape:long",), ()]
    assert tag_counts(tags, "shape:") == {"long": 1, "short": 1}
    assert tag_counts(tags, "origin:") == {"log": 1}


# --- the command (the packaged model) -------------------------------------------------------


def _doctor(*args: str) -> tuple[int, str]:
    return invoke("golden", "doctor", "--no-progress", *args)


def _perfect_set(directory: Path) -> Path:
    """Twelve documents on twelve subjects, each the one relevant document of a query that
    repeats it word for word: every query is perfect for any sane model."""
    directory.mkdir(parents=True)
    subjects = (
        "volcanic eruptions reshape islands",
        "jazz improvisation over chord changes",
        "photosynthesis in desert plants",
        "medieval castle siege engines",
        "compound interest on savings accounts",
        "migration routes of arctic terns",
        "sourdough starter fermentation",
        "quantum tunnelling in semiconductors",
        "marathon training for beginners",
        "origami cranes from square paper",
        "tidal energy turbines in estuaries",
        "chess endgames with rook and king",
    )
    docs = [{"id": f"d{i}", "text": s} for i, s in enumerate(subjects)]
    queries = [{"id": f"q{i}", "text": s, "relevant": {f"d{i}": 1}} for i, s in enumerate(subjects)]
    (directory / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (directory / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    return directory


@pytest.mark.model
def test_a_set_of_perfect_queries_has_no_headroom(tmp_path: Path) -> None:
    """Every query perfect: every slice's share is 1, it can show neither gain nor loss, and the
    summary says there is no headroom."""
    golden = _perfect_set(tmp_path / "perfect")
    out = tmp_path / "out"
    code, output = _doctor("-c", DEFAULT, "--set", f"golden_set.path={golden}", "--out", str(out))
    assert code == 0, output
    data = json.loads((out / "doctor.json").read_text())
    assert data["format"] == "evalret-doctor/1"
    slices = data["headroom"]["slices"]
    assert slices and all(s["share_perfect"] == 1.0 for s in slices)
    assert not any(s["can_show_gain"] or s["can_show_loss"] for s in slices)
    assert "no headroom" in output
    assert (out / "doctor.html").read_text().count("no headroom") == 1


@pytest.mark.model
def test_the_demo_separates_the_zoo_but_not_bm25_from_the_model(tmp_path: Path) -> None:
    """On the demo: the model beats its quarter cut and the random ranking (separated), BM25 is
    as good as the model there (not separated: the set is named too weak, with the queries it
    would need); no log: not gated, exit 0."""
    code, output = _doctor("-c", DEFAULT, "--out", str(tmp_path), "--json")
    assert code == 0, output
    data = json.loads(output)
    disc = data["discrimination"]
    means = disc["systems"]
    assert means["model"] > means["quarter"] > means["random"]
    assert means["bm25"] > means["random"]
    pairs = {(p["a"], p["b"]): p for p in disc["pairs"]}
    assert len(pairs) == 6
    for pair in (("model", "quarter"), ("model", "random"), ("bm25", "random")):
        assert pairs[pair]["separated"], pair
        assert pairs[pair]["ci_high"] < 0  # b - a: the second system is worse
    weak = pairs[("model", "bm25")]
    assert not weak["separated"] and weak["ci_low"] < 0 < weak["ci_high"]
    assert weak["queries_needed"] > data["n_queries"]
    assert disc["too_weak"] and disc["not_separated"] == ["model vs bm25"]
    assert data["quarter_dimension"] == data["dimension"] // 4
    shapes = {s["shape"]: s for s in data["edge_cases"]["shapes"]}
    assert set(shapes) == {"short", "long", "identifier", "question", "rare-terms"}
    assert data["traffic"] is None and data["verdict"]["status"] == "not gated"
    assert json.loads((tmp_path / "doctor.json").read_text()) == data


@pytest.fixture(scope="module")
def foreign_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's queries, thirty cooking queries (a topic the demo lacks) and two queries with
    personal data."""
    texts = [json.loads(line)["text"] for line in (DEMO / "queries.jsonl").read_text().splitlines()]
    path = tmp_path_factory.mktemp("log") / "queries.txt"
    path.write_text("\n".join([*texts, *COOKING, *PII]) + "\n")
    return path


@pytest.mark.model
def test_a_foreign_topic_is_named_and_fails_the_coverage_gate(
    foreign_log: Path, tmp_path: Path
) -> None:
    """The cooking queries form the uncovered clusters (their examples shown), coverage falls
    below gate.coverage.min (exit 1, the verdict line names it), and the personal data is in
    no output."""
    out = tmp_path / "out"
    code, output = _doctor(
        "-c",
        DEFAULT,
        "--log",
        str(foreign_log),
        "--set",
        "gate.coverage.min=0.95",
        "--out",
        str(out),
    )
    assert code == 1, output
    assert "below gate.coverage.min 0.95" in output
    data = json.loads((out / "doctor.json").read_text())
    t = data["traffic"]
    assert t["log"]["n_with_personal_data"] == 2
    assert t["log"]["n_sampled"] == 244 + len(COOKING)
    assert t["coverage"] == pytest.approx(244 / (244 + len(COOKING)), abs=0.02)
    assert t["coverage"] < t["min"] == 0.95
    examples = [x for c in t["clusters"]["uncovered"] for x in c["examples"]]
    assert examples and all(x in COOKING for x in examples)
    assert sum(c["size"] for c in t["clusters"]["uncovered"]) == len(COOKING)
    assert examples[0] in output
    assert data["verdict"]["status"] == "fail"
    assert 0 <= t["drift"]["p_value"] <= 1 and t["drift"]["statistic"] > 0
    written = output + "".join((out / name).read_text() for name in ("doctor.json", "doctor.html"))
    for secret in ("jane.doe", "example.com", "415 555", "555 0123"):
        assert secret not in written


@pytest.mark.model
def test_without_a_minimum_coverage_is_reported_not_gated(
    foreign_log: Path, tmp_path: Path
) -> None:
    """gate.coverage unset: coverage at the default similarity, exit 0."""
    code, output = _doctor(
        "-c", DEFAULT, "--log", str(foreign_log), "--out", str(tmp_path), "--json"
    )
    assert code == 0, output
    data = json.loads(output)
    assert data["traffic"]["similarity"] == 0.5 and data["traffic"]["min"] is None
    assert data["verdict"]["status"] == "not gated"


def _hostile(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with a markup-laden example query in its first uncovered cluster."""
    hostile = json.loads(json.dumps(data))
    hostile["traffic"]["clusters"]["uncovered"][0]["examples"][0] = (
        "<script>alert(1)</script> [bold red]x[/bold red] \x1b[31m"
    )
    return hostile


@pytest.mark.model
def test_example_queries_are_escaped(foreign_log: Path, tmp_path: Path) -> None:
    """An example query with HTML, rich markup and an escape sequence: escaped in doctor.html,
    shown as text on the terminal."""
    from rich.console import Console

    from evalret.report.doctor_view import doctor_html, render_doctor

    code, output = _doctor(
        "-c", DEFAULT, "--log", str(foreign_log), "--out", str(tmp_path), "--json"
    )
    assert code == 0, output
    data = _hostile(json.loads(output))
    html = doctor_html(data)
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<svg" in html and "coverage of the logged queries" in html  # the coverage plot
    console = Console(record=True, width=200, color_system=None)
    console.print(render_doctor(data, []))
    text = console.export_text()
    assert "[bold red]x[/bold red]" in text and "\x1b" not in text


def test_a_bad_log_fails_before_anything_is_embedded(tmp_path: Path) -> None:
    """An unreadable log line: exit 2 naming file and line, before the model is loaded (the lane
    check of conftest fails this unmarked test otherwise); nothing written."""
    log = tmp_path / "log.jsonl"
    log.write_text('{"query": "upload speed is terrible"}\nnot json\n')
    code, output = _doctor("-c", DEFAULT, "--log", str(log), "--out", str(tmp_path / "out"))
    assert code == 2, output
    assert f"{log}:2" in output
    assert not (tmp_path / "out" / "doctor.json").exists()


def test_a_log_of_personal_data_only_is_refused_unshown(tmp_path: Path) -> None:
    """Every logged query holds personal data: nothing left to sample (exit 2), none of it
    printed."""
    log = tmp_path / "log.txt"
    log.write_text("\n".join(PII) + "\n")
    code, output = _doctor("-c", DEFAULT, "--log", str(log), "--out", str(tmp_path / "out"))
    assert code == 2, output
    assert "no query left" in output
    assert "jane" not in output and "555" not in output
