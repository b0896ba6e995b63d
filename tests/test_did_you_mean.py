"""Did you mean (#39): an unknown command, option, config key, metric name, index type or
provider is refused (exit 2) with the close name from the registry (``core.suggest``), and every
suggestion works as given: the command line printed for a typo runs as pasted, the config with
the suggested key or name validates."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from evalret.core.metrics.parsing import parse_metric
from evalret.core.suggest import did_you_mean, suggestion
from evalret.data.config.loading import parse_config
from evalret.errors import ConfigError, MetricError
from helpers import invoke

REPO = Path(__file__).resolve().parents[1]
BASELINE = str(REPO / "baselines" / "demo.json")
PASTE = re.compile(r"^Did you mean: (.+)$", re.MULTILINE)


def pasted(output: str) -> list[str]:
    """The command line a refusal suggests, split as a shell would (one, or the test fails)."""
    lines = PASTE.findall(output)
    assert len(lines) == 1, output
    return shlex.split(lines[0])


@pytest.mark.parametrize(
    ("typo", "fixed"),
    [
        (["rnu", "--help"], ["run", "--help"]),  # a command
        (["baseline", "shw", BASELINE], ["baseline", "show", BASELINE]),  # a sub-command
        (["golden", "doctr", "--help"], ["golden", "doctor", "--help"]),
        (["config", "schma"], ["config", "schema"]),
        (["--verison"], ["--version"]),  # an option of the root
        (["baseline", "show", "--hlp"], ["baseline", "show", "--help"]),  # of a command
        (["validate", "golden_sets/demo", "--formt", "native"], None),  # with its value
        (["validate", "golden_sets/demo", "--formt=native"], None),  # joined to its value
        (["validate", "golden_sets/demo", "--jsn"], None),  # a flag
    ],
)
def test_a_typo_prints_a_command_line_that_runs_as_pasted(
    typo: list[str], fixed: list[str] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refusal (exit 2) names the whole command line with the typo fixed; pasted, it runs
    (exit 0)."""
    monkeypatch.chdir(REPO)
    code, output = invoke(*typo)
    assert code == 2, output
    line = pasted(output)
    assert line[0] == "evalret", line
    assert line[1:] == (
        fixed or [t.replace("formt", "format").replace("jsn", "json") for t in typo]
    )
    code, output = invoke(*line[1:])
    assert code == 0, (line, output)


def test_nothing_close_suggests_nothing() -> None:
    """A name close to no command or option: click's refusal, no suggestion."""
    for args in (["xyzzy"], ["run", "--xyzzy-plugh"]):
        code, output = invoke(*args)
        assert code == 2 and "Did you mean" not in output, output


def test_the_process_prints_its_own_name() -> None:
    """Run as `python -m evalret`, the suggestion starts as typed (``python -m evalret``) and
    runs with the same Python first on PATH (as in an activated virtual environment)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    typed = [sys.executable, "-m", "evalret", "config", "schma"]
    done = subprocess.run(typed, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 2, done.stderr
    line = pasted(done.stderr)
    assert line[1:] == ["-m", "evalret", "config", "schema"], line
    rerun = subprocess.run(line, capture_output=True, text=True, env=env, check=False)
    assert rerun.returncode == 0, rerun.stderr


RERANK = (
    "indexes:\n  rr:\n    type: rerank\n    of: exact\n    reranker:\n"
    "      provider: {provider}\n      {key}: ms-marco\n"
)
# a config with one typo, and the name the refusal must suggest for it
CONFIGS = {
    "indexes:\n  hnsw:\n    ef_serch: 64\n": "ef_search",
    "model:\n  nme: all-MiniLM-L6-v2\n": "name",
    "metrcs: [ndcg@10]\n": "metrics",
    "slices:\n  tgs: true\n": "tags",
    "gate:\n  thresholds:\n    recall@10: {max_drp: 0.02}\n": "max_drop",
    "metrics: [ndcg@1O, recall@10]\n": "ndcg@10",  # a metric name
    "metrics: [ndcg@10, recall@10]\ngate:\n  thresholds:\n    recal@10: {max_drop: 0.02}\n": (
        "recall@10"
    ),
    "indexes:\n  flat:\n    type: fais\n    factory: Flat\n": "faiss",  # an index type
    "gate:\n  indexes: [exat]\n": "exact",  # an index the gate names
    "model:\n  provider: opnai\n  name: text-embedding-3-small\n": "openai",  # a provider
    RERANK.format(provider="cross-encodr", key="path"): "cross-encoder",  # a reranker's provider
    RERANK.format(provider="cross-encoder", key="pth"): "path",  # a key of a union's member
}
HINT = re.compile(
    r"(?:unknown key|unknown (?:metric|index) '([^']+)'|'([^']+)' is no [a-z ]+) "
    r"\(did you mean '([^']+)'\?\)"
)


@pytest.mark.parametrize("text", list(CONFIGS))
def test_a_config_typo_suggests_a_name_that_validates(text: str) -> None:
    """The refusal names the key and the close name; the config with it validates."""
    with pytest.raises(ConfigError) as caught:
        parse_config(text)
    messages = [p.message for p in caught.value.problems]
    hinted = [(m, h) for m in messages if (h := HINT.search(m)) is not None]
    assert len(hinted) == 1, messages
    message, hint = hinted[0]
    suggested = hint.group(3)
    assert suggested == CONFIGS[text]
    typo = hint.group(1) or hint.group(2) or message.split(":")[0].split(".")[-1]
    parse_config(text.replace(typo, suggested, 1))  # validates: no ConfigError


def test_metric_names_suggest_a_parsable_name() -> None:
    """A metric name's suggestion parses; digits typed as letters after the @ are read as
    digits; nothing close, no suggestion."""
    for typo, meant in [
        ("recal@10", "recall@10"),
        ("ndgc@10", "ndcg@10"),
        ("ndcg@1O", "ndcg@10"),
        ("hitrate@5", "hit_rate@5"),
        ("mapp", "map"),
        ("ndcg@10:juged", "ndcg@10:judged"),
    ]:
        with pytest.raises(MetricError, match=re.escape(f"(did you mean {meant!r}?)")):
            parse_metric(typo)
        parse_metric(meant)
    with pytest.raises(MetricError) as caught:
        parse_metric("xyzzy@3")
    assert "did you mean" not in str(caught.value)


def test_suggestion_is_a_name_of_the_registry_or_none() -> None:
    assert suggestion("ef_serch", ["ef_search", "m"]) == "ef_search"
    assert suggestion("x", ["ef_search", "m"]) is None
    assert suggestion("ef_search", ["ef_search", "ef_searches"]) == "ef_searches"  # not itself
    assert did_you_mean("x", ["ef_search"]) == ""


@pytest.mark.parametrize(
    ("typo", "fixed"),
    [
        (["validate", "golden_sets/demo", "--format", "natvie"], "native"),  # a callback's choices
        (["validate", "golden_sets/demo", "--format=natve"], "--format=native"),  # joined
        (["leakage", "--train", "{train}", "--no-embedding", "--train-format", "txet"], "text"),
        (
            [
                "compare",
                BASELINE,
                BASELINE,
                "-o",
                "{out}",
                "--samples",
                "100",
                "--correction",
                "hlm",
            ],
            "holm",
        ),
    ],
)
def test_a_value_none_of_the_choices_suggests_one_that_runs(
    typo: list[str], fixed: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An option's value that is none of its choices is refused (exit 2) with the command line
    holding the close choice instead; pasted, it runs (exit 0)."""
    monkeypatch.chdir(REPO)
    train = tmp_path / "train.txt"
    train.write_text("what is a golden set\n")
    args = [a.format(train=train, out=tmp_path / "out") for a in typo]
    code, output = invoke(*args)
    assert code == 2, output
    line = pasted(output)
    assert line[1:] == [fixed if a == typo[-1] else a for a in args], line
    code, output = invoke(*line[1:])
    assert code == 0, (line, output)


def test_a_value_close_to_no_choice_suggests_nothing() -> None:
    code, output = invoke("validate", "golden_sets/demo", "--format", "xyzzy")
    assert code == 2 and "Did you mean" not in output, output
