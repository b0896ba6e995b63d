"""Config: defaults, unknown keys with their path and line, metric names, path resolution."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalret.commands.evaluate import metric_definitions
from evalret.data.config import DEFAULT_METRICS, Config, load_config, parse_config
from evalret.errors import ConfigError


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as e:
        parse_config(text, "cfg.yaml")
    return [str(p) for p in e.value.problems]


def test_every_field_has_a_default() -> None:
    """An empty file is a valid config equal to the defaults."""
    assert parse_config("", "cfg.yaml") == Config()
    assert Config().metrics == DEFAULT_METRICS
    assert Config().depth == 100


def test_unknown_keys_report_path_and_line() -> None:
    """Unknown keys anywhere are rejected with their dotted path and YAML line."""
    text = "model:\n  name: x\n  batchsize: 8\nindexes:\n  hnsw:\n    efsearch: 3\ncolour: red\n"
    got = problems(text)
    assert "cfg.yaml:3: model.batchsize: unknown key" in got
    assert "cfg.yaml:6: indexes.hnsw.efsearch: unknown key" in got
    assert "cfg.yaml:7: colour: unknown key" in got


def test_bad_values_and_metrics() -> None:
    """Wrong types and unknown metrics fail with their location."""
    got = problems("model:\n  batch_size: -1\nmetrics: [ndcg@10, bleu@4]\nndcg_gain: cubic\n")
    joined = "\n".join(got)
    assert "cfg.yaml:2: model.batch_size" in joined
    assert (
        "cfg.yaml:3: metrics: Value error, unknown metric 'bleu@4'; known metrics: ndcg@k" in joined
    )
    assert "cfg.yaml:4: ndcg_gain" in joined


@pytest.mark.parametrize("level", [0, 1001])
def test_relevance_level_out_of_range_is_refused_at_its_line(level: int) -> None:
    """relevance_level is 1..1000: below 1 a grade-0 judgment would count as relevant, above the
    grade bound no grade could ever reach it (every binary metric 0 without a word)."""
    got = problems(f"metrics: [ndcg@10]\nrelevance_level: {level}\n")
    assert any(p.startswith("cfg.yaml:2: relevance_level") for p in got), got


def test_invalid_yaml_has_line() -> None:
    """A YAML syntax error names its line."""
    got = problems("model:\n  name: [unclosed\n")
    assert got[0].startswith("cfg.yaml:")


def test_custom_slices_validated() -> None:
    """A custom slice needs a criterion and a valid regular expression."""
    joined = "\n".join(
        problems("slices:\n  custom:\n    - name: a\n    - name: b\n      pattern: '(['\n")
    )
    assert "slices.custom[0]" in joined and "at least one of" in joined
    assert "slices.custom[1].pattern" in joined


def test_relative_paths_resolve_against_the_config_file(tmp_path: Path) -> None:
    """Paths in a config file are relative to that file's directory."""
    cfg_dir = tmp_path / "configs"
    cfg_dir.mkdir()
    path = cfg_dir / "x.yaml"
    path.write_text("golden_set:\n  path: ../data/set\noutput:\n  dir: out\n")
    cfg = load_config(path)
    assert cfg.golden_set.path == (tmp_path / "data" / "set").resolve()
    assert cfg.output.dir == (cfg_dir / "out").resolve()


def test_missing_config_file() -> None:
    """A config path that does not exist is an input error naming it."""
    with pytest.raises(ConfigError, match=r"cannot read config nope\.yaml"):
        load_config(Path("nope.yaml"))


def test_non_finite_numbers_are_refused_at_their_key() -> None:
    """A NaN floor would pass every check (nothing is below NaN) and an infinite BM25 k1 or
    rrf_k makes every score the same: each is refused with its key and line."""
    got = "\n".join(
        problems(
            "gate:\n  thresholds:\n    ndcg@10: {min: .nan}\n"
            "  health:\n    collapsed: {max: .nan}\n"
            "indexes:\n  bm25: {k1: .inf}\n  hybrid: {rrf_k: .inf}\n"
        )
    )
    assert "cfg.yaml:3: gate.thresholds.ndcg@10.min: Input should be a finite number" in got
    assert "cfg.yaml:5: gate.health.collapsed.max: Input should be a finite number" in got
    assert "cfg.yaml:7: indexes.bm25.k1: Input should be a finite number" in got
    assert "cfg.yaml:8: indexes.hybrid.rrf_k: Input should be a finite number" in got


def test_negative_seeds_are_refused_at_their_key() -> None:
    """numpy seeds only non-negative integers: a negative seed was an internal error (exit 3)."""
    got = "\n".join(problems("bootstrap: {seed: -1}\ngate:\n  significance: {seed: -2}\n"))
    assert "cfg.yaml:1: bootstrap.seed: Input should be greater than or equal to 0" in got
    assert "cfg.yaml:3: gate.significance.seed: Input should be greater than or equal to 0" in got


def test_gate_naming_a_disabled_index_is_refused() -> None:
    """gate.indexes [bm25] with bm25 disabled gated nothing: no gate section, exit 0 despite a
    floor the run would fail. Refused with its key, as is an override for a disabled index."""
    got = "\n".join(
        problems(
            "indexes:\n  bm25: {enabled: false}\n  hybrid: {enabled: false}\n"
            "gate:\n  indexes: [exact, bm25]\n"
            "  overrides: [{metric: mrr@10, index: hybrid, min: 0.5}]\n"
        )
    )
    assert "gate names indexes that are disabled: bm25, hybrid" in got


def test_override_for_an_index_the_gate_does_not_check_is_refused() -> None:
    """An override for bm25 while gate.indexes keeps its default (exact and hnsw) never applied:
    its floor was silently not checked. Refused, naming gate.indexes."""
    got = "\n".join(problems("gate:\n  overrides: [{metric: mrr@10, index: bm25, min: 0.5}]\n"))
    assert "the gate overrides indexes it does not check: bm25 (add them to gate.indexes)" in got
    parse_config(
        "gate:\n  indexes: [exact, bm25]\n  overrides: [{metric: mrr@10, index: bm25, min: 0.5}]\n"
    )


def test_search_depth_in_the_config() -> None:
    """search_depth defaults to the largest cutoff (1000 with an uncut metric), is refused below
    a cutoff or below 1 naming the file and line, and is dumped only when set."""
    cut = parse_config("metrics: [ndcg@10, recall@100]\n")
    assert cut.depth == 100 and "search_depth" not in metric_definitions(cut)
    assert "search_depth" not in cut.model_dump(mode="json")
    uncut = parse_config("metrics: [ndcg@10, map]\n")
    assert uncut.depth == 1000 and metric_definitions(uncut)["search_depth"] == 1000
    set_ = parse_config("metrics: [ndcg@10]\nsearch_depth: 50\n")
    assert set_.depth == 50 and metric_definitions(set_)["search_depth"] == 50
    assert set_.model_dump(mode="json")["search_depth"] == 50
    with pytest.raises(ConfigError) as e:
        parse_config("metrics: [recall@100, map]\nsearch_depth: 20\n", "cfg.yaml")
    assert "cfg.yaml:2: search_depth: Value error, search_depth 20 is below the largest" in str(
        e.value
    )
    with pytest.raises(ConfigError) as e:
        parse_config("metrics: [map]\nsearch_depth: 0\n", "cfg.yaml")
    assert "cfg.yaml:2: search_depth" in str(e.value)
