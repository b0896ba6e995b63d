"""evalret as a package: one version everywhere (evalret.version, the metadata, `--version`), the
checks scripts/check_package.sh makes on the built archives (scripts/check_dist.py), and shell
completion through Typer (docs/how-to/shell-completion.md). Building and installing the wheel
itself runs in .ci/run (scripts/check_package.sh), not here."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import io
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
import tomllib

from conftest import REPO
from evalret.version import __version__
from helpers import invoke


def test_the_version_is_single_sourced() -> None:
    """pyproject.toml reads the version from evalret.version (no second copy to forget), and the
    installed metadata and `evalret --version` say the same."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    project = pyproject["project"]
    assert "version" not in project and "version" in project["dynamic"]
    dynamic = pyproject["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "evalret.version.__version__"}
    assert importlib.metadata.version("evalret") == __version__
    assert invoke("--version") == (0, f"evalret {__version__}\n")


def test_the_metadata_name_the_licence_and_every_extra() -> None:
    """The licence file exists and is the one the metadata name; every optional extra of
    pyproject.toml is in the installed metadata."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    project = pyproject["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert (REPO / "LICENSE").read_text(encoding="utf-8").startswith("MIT License\n")
    assert {"Homepage", "Documentation", "Source", "Changelog"} <= project["urls"].keys()
    provided = importlib.metadata.metadata("evalret").get_all("Provides-Extra") or []
    assert set(project["optional-dependencies"]) <= set(provided)


# --- what the archives hold (scripts/check_dist.py) ---------------------------------------------


def check_dist() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_dist", REPO / "scripts" / "check_dist.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_wheel(path: Path, names: list[str]) -> Path:
    with zipfile.ZipFile(path, "w") as wheel:
        for name in names:
            wheel.writestr(name, "x")
    return path


def write_sdist(path: Path, names: list[str]) -> Path:
    with tarfile.open(path, "w:gz") as sdist:
        for name in names:
            info = tarfile.TarInfo(name)
            info.size = 1
            sdist.addfile(info, io.BytesIO(b"x"))
    return path


def test_check_dist_names_what_is_missing_or_stray(tmp_path: Path) -> None:
    """A wheel without a template or with tests is refused, naming the file; one with the
    package's tracked files and its dist-info passes. The sdist likewise."""
    cd = check_dist()
    expected = cd.package_files()
    assert {"evalret/cli.py", "evalret/templates/evalret.yaml", "evalret/py.typed"} <= expected
    v = __version__
    info = [f"evalret-{v}.dist-info/{n}" for n in cd.DIST_INFO]
    good = write_wheel(tmp_path / "good.whl", [*sorted(expected), *info])
    assert cd.wheel_problems(good, v, expected) == []
    bad_names = [n for n in expected if n != "evalret/templates/evalret.yaml"]
    bad = write_wheel(tmp_path / "bad.whl", [*bad_names, *info, "tests/test_cli.py"])
    assert cd.wheel_problems(bad, v, expected) == [
        "missing evalret/templates/evalret.yaml",
        "stray tests/test_cli.py",
    ]
    root = f"evalret-{v}/"
    top = [root + n for n in (*sorted(cd.SDIST_TOP), "PKG-INFO")]
    sources = [f"{root}src/{n}" for n in expected]
    sdist = write_sdist(tmp_path / "good.tar.gz", [*top, *sources])
    assert cd.sdist_problems(sdist, v, expected) == []
    sdist = write_sdist(tmp_path / "bad.tar.gz", [*top[1:], *sources, f"{root}tests/helpers.py"])
    assert cd.sdist_problems(sdist, v, expected) == [
        f"missing {sorted(cd.SDIST_TOP)[0]}",
        "stray tests/helpers.py",
    ]


# --- shell completion ---------------------------------------------------------------------------


@pytest.fixture
def on_path(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH has an `evalret` launcher of this checkout (as the console
    script is: a file named evalret calling evalret.cli:main), so completion scripts call it."""
    launcher = tmp_path / "bin" / "evalret"
    launcher.parent.mkdir()
    launcher.write_text(f"#!{sys.executable}\nfrom evalret.cli import main\nmain()\n")
    launcher.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{launcher.parent}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    return env


def test_help_offers_completion() -> None:
    code, out = invoke("--help")
    assert code == 0 and "--install-completion" in out and "--show-completion" in out


BASH = """
eval "$(evalret --show-completion)"
complete_line() {  # the candidates bash offers for the words of $1 ("" ends on a new word)
  read -r -a COMP_WORDS <<< "$1"
  [ "${1: -1}" = " " ] && COMP_WORDS+=("")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  _evalret_completion evalret
  echo "${COMPREPLY[*]}"
}
complete_line "evalret ca"
complete_line "evalret cache "
complete_line "evalret run --no-p"
complete_line "evalret compare --correction "
"""


def test_bash_completes_commands_options_and_choices(on_path: dict[str, str]) -> None:
    """The script `evalret --show-completion` prints in bash, loaded into bash, completes a
    command, a subcommand, an option and an option's choices."""
    out = subprocess.run(
        ["bash", "-c", BASH], env=on_path, capture_output=True, text=True, check=True
    ).stdout
    assert out.splitlines() == [
        "cache",
        "info clear prune",
        "--no-progress",
        "holm bonferroni bh none",
    ]


@pytest.mark.parametrize(
    ("shell", "extra", "expected"),
    [
        ("zsh", {}, '"cache":"Inspect and manage the embedding cache."'),
        ("fish", {"_TYPER_COMPLETE_FISH_ACTION": "get-args"}, "cache\tInspect and manage"),
    ],
)
def test_zsh_and_fish_are_answered(
    on_path: dict[str, str], shell: str, extra: dict[str, str], expected: str
) -> None:
    """What the zsh and fish scripts ask evalret (the words so far in _TYPER_COMPLETE_ARGS) is
    answered with the commands and their help, as those shells show them."""
    env = {**on_path, **extra, "_EVALRET_COMPLETE": f"complete_{shell}"}
    env["_TYPER_COMPLETE_ARGS"] = "evalret ca"
    out = subprocess.run(["evalret"], env=env, capture_output=True, text=True, check=True)
    assert expected in out.stdout
