"""One meaning per option name (cli_options declares each once), and the config settings every
command that reads a config takes from the command line: --set KEY=VALUE, --model, --dimension."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from conftest import REPO
from evalret import cli_options
from evalret import cli_options as o  # the aliases, as cli.py spells them
from evalret.cli import app
from evalret.data.overrides import command_overrides
from evalret.errors import ConfigError
from evalret.pipeline.configs import golden_config, run_config
from helpers import command_tree, is_group

runner = CliRunner()
DEMO = REPO / "golden_sets" / "demo"


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def _options() -> list[tuple[str, Any]]:
    """(command name, click option) for every visible option of every command."""
    found = []
    for name, command in command_tree():
        if is_group(command):
            continue
        for p in command.params:
            if p.param_type_name == "option" and not p.hidden and p.name != "help":
                found.append((name, p))
    return found


def test_an_option_name_means_one_thing_in_every_command() -> None:
    """--baseline was a path in run and a flag in history add, --json a flag in validate and a
    path in judgments agreement, --format a golden set's format in validate and the pool file's
    in pool: each name has one kind of value (flag or not, its type, its short name, its help
    where the help is not worded per command) wherever it appears."""
    seen: dict[str, tuple[str, tuple[Any, ...]]] = {}
    worded = {"--out", "--config", "--baseline", "--index", "--metric", "--seed", "--set"}
    worded |= {"--dry-run", "--n", "--log"}
    for command, p in _options():
        long = next(n for n in p.opts if n.startswith("--"))
        kind = (p.is_flag, str(p.display_type), tuple(sorted(p.opts)))
        if long not in worded:
            kind += (p.help,)
        first = seen.setdefault(long, (command, kind))
        assert first[1] == kind, f"{long}: {first[0]} {first[1]} but {command} {kind}"


def test_every_option_is_declared_once_in_cli_options() -> None:
    """cli.py declares no option of its own: every long name is in cli_options.DECLARED."""
    for command, p in _options():
        long = next(n for n in p.opts if n.startswith("--"))
        assert long.split("/")[0] in cli_options.DECLARED, f"{command}: {long}"


def test_old_spellings_still_work_with_a_note(tmp_path: Path) -> None:
    """history add --baseline (now --mark-baseline) and judgments agreement --json PATH (now
    --out) still work, hidden from help, and say on stderr that they are deprecated."""
    files = []
    for name, grades in (("alice", (1, 0)), ("bob", (1, 1))):
        lines = [
            {"query_id": "q1", "doc_id": f"d{i}", "grade": g, "annotator": name}
            for i, g in enumerate(grades)
        ]
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        files.append(str(path))
    out = tmp_path / "agreement.json"
    result = CliRunner().invoke(app, ["judgments", "agreement", *files, "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "--json is deprecated here" in result.stderr and "use --out" in result.stderr
    assert json.loads(out.read_text())
    result = CliRunner().invoke(app, ["judgments", "agreement", *files, "-o", str(tmp_path / "n")])
    assert result.exit_code == 0 and "deprecated" not in result.stderr
    assert "--json PATH" not in invoke("judgments", "agreement", "--help")[1]
    assert "--mark-baseline" in invoke("history", "add", "--help")[1]
    for option in ("--output-format", "--format"):  # the old spelling is checked as the new
        code, out = invoke("pool", option, "xml", "-o", str(tmp_path / "p.jsonl"))
        assert code == 2 and "choose jsonl or label-studio" in out, out


# --- --set, --model, --dimension ------------------------------------------------------------------


def test_model_and_dimension_are_the_two_settings() -> None:
    cfg = run_config(None, overrides=command_overrides(model="voyage-3-large", dimension=64))
    assert (cfg.model.name, cfg.model.truncate_dim) == ("voyage-3-large", 64)
    assert cfg.overrides == {"model.name": "voyage-3-large", "model.truncate_dim": 64}
    assert run_config(None).overrides == {}
    said = re.escape("set by --set model.truncate_dim=8 and --dimension 64")
    with pytest.raises(ConfigError, match=said):
        command_overrides(["model.truncate_dim=8"], dimension=64)


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ("model.nmae=x", "--set model.nmae=x: model.nmae: unknown key"),
        ("model.truncate_dim=abc", "model.truncate_dim: Input should be a valid integer"),
        ("model.truncate_dim=8,16", "several values are a grid, which `evalret sweep` runs"),
        ("model", "write KEY=VALUE"),
    ],
)
@pytest.mark.parametrize(
    "command",
    [
        ["run", "--no-progress"],
        ["run", "--dry-run"],
        ["embed", "--no-progress"],
        ["pool", "--no-progress"],
        ["validate", str(DEMO)],
        ["leakage", "--train", str(REPO / "README.md"), "--no-progress"],
        ["hook", "-c", "{cfg}"],
        ["compare", "{cfg}", "{cfg}"],
        ["sweep", "-c", "{cfg}", "--dimension", "0", "-o", "s"],
    ],
)
def test_a_bad_set_is_exit_2_naming_the_option_and_the_key(
    command: list[str], option: str, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every command that reads a config validates its --set as the file, before anything
    runs (nothing is written)."""
    (tmp_path / "in").mkdir()
    cfg = tmp_path / "in" / "c.yaml"
    cfg.write_text(f"golden_set: {{path: {DEMO}}}\ngate: {{baseline: b.json}}\n")
    (tmp_path / "run").mkdir()
    monkeypatch.chdir(tmp_path / "run")
    if command[0] == "sweep":  # its --set is a grid: --dimension is checked as the others
        option, said = "x", "Invalid value for '--dimension'"
    code, out = invoke(*[a.format(cfg=cfg) for a in command], "--set", option)
    assert code == 2, out
    assert said in " ".join(out.split()), out
    assert list((tmp_path / "run").iterdir()) == []


def test_settings_apply_to_configs_only(tmp_path: Path) -> None:
    """compare of two saved reports has no config to set: exit 2; a sweep's --model and
    --dimension are settings of every point (a single-valued axis)."""
    from evalret.commands.sweep import sweep_configs

    saved = tmp_path / "a.json"
    code, out = invoke("compare", str(saved), str(saved), "--dimension", "8", "-o", "c")
    assert code == 2 and "--dimension 8: A and B are saved reports" in out, out
    fixed = command_overrides(model="m", dimension=16)
    axes, points, configs = sweep_configs(None, ["indexes.hnsw.ef_search=16,32"], fixed=fixed)
    assert len(points) == 2 and {a.path for a in axes} >= {"model.name", "model.truncate_dim"}
    assert {(c.model.name, c.model.truncate_dim) for c in configs} == {("m", 16)}


def test_a_path_set_on_the_command_line_is_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--set golden_set.path=gs reads ./gs (as any path on the command line), while the file's
    own relative paths stay relative to the file."""
    shutil.copytree(DEMO, tmp_path / "gs")
    (tmp_path / "conf").mkdir()
    config = tmp_path / "conf" / "c.yaml"
    config.write_text("golden_set: {path: nowhere}\noutput: {dir: out}\n")
    monkeypatch.chdir(tmp_path)
    cfg = run_config(config, overrides=command_overrides(["golden_set.path=gs"]))
    assert cfg.golden_set.path == (tmp_path / "gs").resolve()
    assert cfg.output.dir == (tmp_path / "conf" / "out").resolve()
    assert golden_config(Path("gs"), overrides=command_overrides(["ndcg_gain=exponential"]))
    code, out = invoke("validate", str(config), "--set", "golden_set.path=gs")
    assert code == 0, out


def test_a_golden_set_from_set_is_an_input_the_outputs_may_not_touch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The input guard sees the golden set a --set names: --out into it is refused (exit 2)
    before anything is read or written."""
    shutil.copytree(DEMO, tmp_path / "gs")
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in (tmp_path / "gs").iterdir())
    code, out = invoke("run", "--no-progress", "--set", "golden_set.path=gs", "--out", "gs")
    assert code == 2 and "golden" in out, out
    assert sorted(p.name for p in (tmp_path / "gs").iterdir()) == before


@pytest.mark.slow
@pytest.mark.model
def test_set_changes_the_run_and_is_recorded_in_report_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run --set model.truncate_dim=32` on the demo (the real model) embeds 32 dimensions, scores
    otherwise, and records the setting; `--dimension 32` is the same run; a run without a
    setting writes no `overrides` key."""
    monkeypatch.setenv("EVALRET_RUN_ID", "fixed")
    reports = {}
    for name, extra in (
        ("plain", []),
        ("set", ["--set", "model.truncate_dim=32"]),
        ("dim", ["--dimension", "32"]),
    ):
        out = tmp_path / name
        code, text = invoke("run", "--no-progress", "--out", str(out), *extra)
        assert code == 0, text
        reports[name] = json.loads((out / "report.json").read_text())
    plain, with_set, dim = reports["plain"], reports["set"], reports["dim"]
    assert "overrides" not in plain
    assert with_set["overrides"] == dim["overrides"] == {"model.truncate_dim": 32}
    assert with_set["config"]["model"]["truncate_dim"] == 32
    assert with_set["embedding"]["dim"] == 32 and plain["embedding"]["dim"] == 384
    ndcg = [r["indexes"]["exact"]["slices"]["all"]["metrics"]["ndcg@10"] for r in reports.values()]
    assert ndcg[1] == ndcg[2] and ndcg[0] != ndcg[1]


def test_an_option_group_is_its_options_in_place_and_one_value_in_the_function() -> None:
    """A command's ``Overrides`` parameter is --set, --model and --dimension on the command line,
    listed where the parameter stands, and one ConfigSettings in the function; ``Progress`` is
    --progress/--no-progress and the bars (a factory of a context manager)."""
    from evalret.cli_runtime import command

    group = typer.Typer()
    got: dict[str, Any] = {}

    @command(group, "probe")
    def probe(
        *,
        first: o.NoCache = False,
        settings: o.Overrides,
        progress: o.Progress,
        last: o.Force = False,
    ) -> None:
        got.update(settings=settings, progress=progress)

    group.command("other")(lambda: None)  # two commands: typer makes a group of them
    args = ["probe", "--set", "a.b=1", "--set", "c=2", "--model", "m", "--no-progress"]
    result = runner.invoke(group, args)
    assert result.exit_code == 0, result.output
    assert got["settings"] == o.ConfigSettings(("a.b=1", "c=2"), "m", None)
    with got["progress"]() as bars:
        assert bars is None
    names = [p.name for p in typer.main.get_command(group).commands["probe"].params]  # type: ignore[attr-defined]
    assert names == ["first", "set_", "model", "dimension", "progress", "last"]
    assert runner.invoke(group, ["probe"]).exit_code == 0
    assert got["settings"] == o.ConfigSettings() and got["settings"].overrides() == []
