"""The command line as a whole: every command and subcommand has help text and is named in the
hand-written documentation (docs/); help names arguments and values in upper case; choice and
range options refuse bad values with exit 2 naming the option."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest

from evalret import cli
from evalret.core import stats
from evalret.data import training
from helpers import command_tree, handwritten_docs, invoke


def test_every_command_has_help_and_is_documented() -> None:
    """Each command, subcommand and their arguments and options say what they do, and a
    hand-written page of docs/ names each command (a new command cannot ship undocumented; the
    generated command reference does not count)."""
    docs = handwritten_docs()
    found = command_tree()
    assert {"evalret run", "evalret init", "evalret cache info", "evalret baseline show"} <= dict(
        found
    ).keys()
    for name, command in found:
        assert (command.help or "").strip(), f"{name} has no help text"
        assert name in docs, f"no page of docs/ names `{name}`"
        for param in command.params:
            if param.name != "help":
                assert getattr(param, "help", None), f"{name}: {param.name} has no help"


def test_help_names_arguments_and_values_in_upper_case() -> None:
    """Usage reads `evalret compare [OPTIONS] A B`, option values PATH / FLOAT / [a|b]."""
    code, out = invoke("compare", "--help")
    assert code == 0
    assert "compare [OPTIONS] A B\n" in out
    assert "\n  A  A: a config" in out
    assert "-o, --out PATH" in out and "--alpha FLOAT" in out
    assert "--correction [holm|bonferroni|bh|none]" in out
    assert "{" not in out and "<path>" not in out
    code, out = invoke("pool", "--help")
    assert "pool [OPTIONS] [CONFIGS]...\n" in out and "--index TEXT" in out
    for name, _ in command_tree():
        code, out = invoke(*name.split()[1:], "--help")
        assert code == 0, name
        assert not re.search(r"<[a-z]|\{", out), f"{name} --help: {out}"


def test_cli_choices_match_the_library() -> None:
    """The choices spelled in the CLI (kept light: no library import) are the library's."""
    assert get_args(cli.Correction) == get_args(stats.Correction)
    assert get_args(cli.TrainFormat) == get_args(training.TrainFormat)


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--correction", "sidak"], "--correction"),
        (["--samples", str(cli.MAX_SAMPLES + 1)], "--samples"),
    ],
)
def test_compare_choice_and_bound_refused_before_anything_runs(
    tmp_path: Path, args: list[str], option: str
) -> None:
    """Refused while parsing the options: the reports are never read (they do not exist)."""
    path = tmp_path / "report.json"
    code, out = invoke("compare", str(path), str(path), "-o", str(tmp_path / "c"), *args)
    assert code == 2 and f"'{option}'" in out, out
    assert not (tmp_path / "c").exists()


def test_unknown_train_format_is_a_usage_error(tmp_path: Path) -> None:
    """`leakage --train-format csv`: exit 2 naming the option and the accepted values."""
    train = tmp_path / "train.txt"
    train.write_text("a query\n")
    code, out = invoke("leakage", "--train", str(train), "--train-format", "csv", "--no-embedding")
    assert code == 2 and "'--train-format'" in out and "'jsonl'" in out, out
