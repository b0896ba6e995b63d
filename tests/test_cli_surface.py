"""The command line as a whole: every command and subcommand has help text and is named in the
hand-written documentation (docs/); help names arguments and values in upper case; choice and
range options refuse bad values with exit 2 naming the option."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from evalret import choices, cli, cli_options
from evalret.core import judgments, stats
from evalret.data import config, training
from evalret.report import history_view
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


def test_cli_choices_are_the_librarys_one_statement() -> None:
    """The choices and defaults the CLI shows are the library's own objects, stated once in
    evalret.choices (never a copy), and that module loads nothing but the standard library."""
    assert cli.Correction is cli_options.Correction is stats.Correction is choices.Correction
    assert cli.TrainFormat is training.TrainFormat is choices.TrainFormat
    assert cli.GOLDEN_FORMATS is cli_options.GOLDEN_FORMATS is choices.GOLDEN_FORMATS
    assert get_args(config.GoldenSetConfig.model_fields["format"].annotation) == cli.GOLDEN_FORMATS
    assert cli_options.POOL_FORMATS is choices.POOL_FORMATS
    assert judgments.POLICIES is choices.POLICIES
    assert history_view.SHOWN_ENTRIES is choices.SHOWN_ENTRIES
    assert cli.MAX_SAMPLES is choices.MAX_SAMPLES
    heavy = ("numpy", "pydantic", "yaml", "typer", "rich")
    code = f"import sys, evalret.choices; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


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
