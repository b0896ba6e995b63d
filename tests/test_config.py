"""Config: defaults, unknown keys with their path and line, metric names, path resolution."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO
from evalret.data.config import (
    DEFAULT_METRICS,
    Config,
    GoldenSetConfig,
    load_config,
    parse_config,
)
from evalret.errors import ConfigError
from evalret.pipeline.evaluate import metric_definitions


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
    # with the close key of the same model (#39; test_did_you_mean.py validates each)
    assert "cfg.yaml:3: model.batchsize: unknown key (did you mean 'batch_size'?)" in got
    assert "cfg.yaml:6: indexes.hnsw.efsearch: unknown key (did you mean 'ef_search'?)" in got
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
    assert (
        "cfg.yaml:2: gate.overrides[0].index: index bm25 is not gated (gated: exact, hnsw): add "
        "it to gate.indexes" in got
    )
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
    # a judged-only metric reads past its cutoff: its value depends on the depth too
    judged = parse_config("metrics: [ndcg@10, 'NDCG@10:Judged', bpref@10]\n")
    assert judged.metrics == ["ndcg@10", "ndcg@10:judged", "bpref@10"]
    assert judged.depth == 1000 and metric_definitions(judged)["search_depth"] == 1000
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


# --- strict config: a repeated key, a value of another type, a port out of range ----------------


def test_a_repeated_key_names_the_file_the_key_and_both_lines(tmp_path: Path) -> None:
    """YAML keeps the last of two equal keys without a word: a second `gate:` block dropped
    every floor of the first and the gate passed. Refused with the key's path and both lines,
    at every depth, inside a list item and in a flow mapping."""
    path = tmp_path / "cfg.yaml"
    path.write_text(
        "gate:\n  thresholds:\n    ndcg@10: {min: 0.9}\nmetrics: [ndcg@10]\ngate:\n  ann_k: 5\n"
    )
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert e.value.exit_code == 2
    assert [str(p) for p in e.value.problems] == [
        f"{path}:5: gate: duplicate key on lines 1 and 5 (the second would silently replace "
        "the first)"
    ]
    assert problems("model:\n  name: a\n  batch_size: 8\n  name: b\n") == [
        "cfg.yaml:4: model.name: duplicate key on lines 2 and 4 (the second would silently "
        "replace the first)"
    ]
    nested = problems("slices:\n  custom:\n    - name: a\n      tag: x\n      tag: y\n")
    assert nested[0].startswith("cfg.yaml:5: slices.custom[0].tag: duplicate key on lines 4 and 5")
    flow = problems("gate:\n  thresholds: {ndcg@10: {min: 0.5}, ndcg@10: {min: 0.1}}\n")
    assert flow[0].startswith("cfg.yaml:2: gate.thresholds.ndcg@10: duplicate key on lines 2 and 2")


def test_a_merge_key_may_still_be_overridden() -> None:
    """YAML's merge (`<<: *anchor`) brings in keys that the mapping may override: no repeat."""
    cfg = parse_config(
        "indexes:\n  hnsw: &graph {m: 8, ef_construction: 64, ef_search: 32}\n"
        "  hybrid: {enabled: false}\n  bm25:\n    <<: {k1: 1.2, b: 0.5}\n    b: 0.7\n"
    )
    assert (cfg.indexes.bm25.k1, cfg.indexes.bm25.b) == (1.2, 0.7)


LAUGHS = "".join(
    f"    {name}: &{name} [{', '.join([f'*{prev}' if prev else '1'] * 9)}]\n"
    for prev, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)


def test_an_alias_bomb_is_refused_at_its_line_before_it_expands() -> None:
    """Nine anchors of nine aliases each: 9**9 values once expanded. Under model.options
    (free-form) it was taken and serialised for the report (MemoryError, exit 3, after eating
    the machine's memory); a collection that holds itself likewise. Refused at the alias."""
    bomb = problems(f"model:\n  options:\n{LAUGHS}")
    assert bomb[0].startswith("cfg.yaml:7: aliases expand this document past 100,000 values")
    loop = problems("model:\n  options:\n    x: &x [1, *x]\n")
    assert loop == ["cfg.yaml:3: an alias refers to a collection that holds it"]
    # an alias or a merge of modest size is still YAML
    cfg = parse_config("golden_set: {path: &p gs}\noutput: {dir: *p}\n")
    assert str(cfg.output.dir) == str(cfg.golden_set.path) == "gs"


def test_every_yaml_reader_refuses_a_repeated_key(tmp_path: Path) -> None:
    """The sweep's reading of the config file and the pre-commit config of `evalret init
    --pre-commit` go through the same loader as the config (src has no other yaml.load /
    yaml.safe_load: --set values use it too)."""
    from evalret.commands.init import add_pre_commit_hook
    from evalret.data.overrides import raw_config
    from evalret.errors import InputError

    config = tmp_path / "evalret.yaml"
    config.write_text("indexes:\n  hnsw: {ef_search: 8}\nindexes:\n  bm25: {enabled: false}\n")
    with pytest.raises(ConfigError) as e:
        raw_config(config)
    assert f"{config}:3: indexes: duplicate key on lines 1 and 3" in str(e.value)
    config.write_text("gate: {baseline: base.json}\n")
    (tmp_path / ".pre-commit-config.yaml").write_text("repos: []\nrepos: []\n")
    with pytest.raises(InputError, match="duplicate key 'repos' on lines 1 and 2"):
        add_pre_commit_hook(root=tmp_path, config=config, extra=[])
    # an integer too long to convert was an internal error there (the config already refused it)
    (tmp_path / ".pre-commit-config.yaml").write_text("repos: []\nx: " + "9" * 5000 + "\n")
    with pytest.raises(InputError, match="invalid YAML: Exceeds the limit"):
        add_pre_commit_hook(root=tmp_path, config=config, extra=[])
    src = REPO / "src" / "evalret"
    readers = sorted(
        str(p.relative_to(src))
        for p in src.rglob("*.py")
        if re.search(r"yaml\.(safe_)?load\(|yaml\.load_all|yaml\.full_load", p.read_text())
    )
    assert readers == [], f"YAML read without evalret.data.yamltext: {readers}"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "sample: {queries: true}",
            "sample.queries: Input should be a valid integer, not a boolean",
        ),
        (
            "sample: {queries: '10'}",
            "sample.queries: Input should be a valid integer, not a string",
        ),
        (
            "sample: {queries: 10.0}",
            "sample.queries: Input should be a valid integer, not a number",
        ),
        ("leakage: {threshold: '0.5'}", "leakage.threshold: Input should be a valid number"),
        ("gate: {ann_min_recall: true}", "gate.ann_min_recall: Input should be a valid number"),
        ("gate:\n  thresholds:\n    ndcg@10: {min: '0.5'}", "gate.thresholds.ndcg@10.min"),
        (
            "model: {normalize: 1}",
            "model.normalize: Input should be a valid boolean, not an integer",
        ),
        ("health: {enabled: 'false'}", "health.enabled: Input should be a valid boolean"),
        ("bootstrap: {samples: '1000'}", "bootstrap.samples: Input should be a valid integer"),
        ("indexes:\n  hnsw: {ef_search: 12.0}", "indexes.hnsw.ef_search: Input should be a valid"),
        ("indexes:\n  r: {type: run, path: r.tsv, enabled: 0}", "indexes.r.enabled: Input should"),
    ],
)
def test_no_value_is_converted_to_another_type(text: str, said: str) -> None:
    """`queries: true` ran as 1 query, `'10'` as 10, `"0.5"` as a float, 1 as true: each is
    refused at its key and line, saying what was given."""
    got = "\n".join(problems(text + "\n"))
    assert f"cfg.yaml:{text.count(chr(10)) + 1}: {said}" in got, got


def test_integers_still_read_as_floats_and_strings_as_paths_and_choices() -> None:
    """Strictness keeps what YAML means: an integer is a number (k1: 2, min: 0), a path and a
    choice are strings."""
    cfg = parse_config(
        "golden_set: {path: sets/x, format: beir}\nindexes:\n  bm25: {k1: 2, b: 1}\n"
        "  r: {type: run, path: runs/r.tsv}\nmetrics: [ndcg@10]\n"
        "gate:\n  thresholds:\n    ndcg@10: {min: 0, max_drop: 1}\nleakage: {threshold: 1}\n"
    )
    assert cfg.indexes.bm25.k1 == 2.0 and isinstance(cfg.indexes.bm25.k1, float)
    assert cfg.golden_set.path == Path("sets/x") and cfg.golden_set.format == "beir"
    assert cfg.gate.thresholds is not None and cfg.gate.thresholds["ndcg@10"].min == 0.0
    assert cfg.indexes.typed["r"].path == Path("runs/r.tsv")  # type: ignore[union-attr]


def test_the_shipped_configs_golden_set_and_baseline_still_load() -> None:
    """configs/*.yaml, init's template, the demo golden set and the baselines' golden-set
    sections (read back from JSON) pass the strict models."""
    from evalret.data.baseline import golden_set_of, load_baseline
    from evalret.data.goldenset import load_golden_set

    configs = sorted((REPO / "configs").glob("*.yaml"))
    for path in [*configs, REPO / "src" / "evalret" / "templates" / "evalret.yaml"]:
        load_config(path)
    assert load_golden_set(load_config(REPO / "configs" / "default.yaml").golden_set).doc_ids
    baselines = sorted((REPO / "baselines").glob("*.json"))
    assert baselines
    for path in baselines:
        report = load_baseline(path)
        GoldenSetConfig.model_validate(report.config["golden_set"])
        assert golden_set_of(report) is not None


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("model: {provider: openai, name: m, base_url: 'http://localhost:99999/v1'}", "base_url"),
        ("model: {provider: openai, name: m, base_url: 'http://localhost:0/v1'}", "base_url"),
        ("model: {provider: openai, name: m, base_url: 'http://localhost:8o/v1'}", "base_url"),
        ("embedding: {engine: ray, address: 'ray://head:70000'}", "address"),
    ],
)
def test_a_port_out_of_range_is_a_config_error(text: str, key: str) -> None:
    """A port that is no number from 1 to 65535 was taken, and failed at the first request
    (exit 3, after loading the model): refused at its key."""
    got = "\n".join(problems(text + "\n"))
    assert f"cfg.yaml:1: {'model' if key == 'base_url' else 'embedding'}.{key}" in got
    assert "the port is" in got
    assert parse_config("model: {provider: openai, name: m, base_url: 'http://[::1]:8080/v1'}")
