"""`evalret init`'s scaffold runs where it is meant to: the workflow names the action at the ref
given with --action-ref (never a placeholder), the action installs evalret from its own checkout
by default, and its install and gate steps, run here as GitHub runs them (act-like: the step's
`run:` script under `bash -eo pipefail`, its `env:` with the inputs and `github.action_path`
substituted), install evalret from the action's path into a fresh venv and gate init's scaffold.
The starter thresholds sit at the demo set's minimum detectable drop (commands/init.py)."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import REPO
from evalret.commands.init import ACTION_DIR, WORKFLOW
from evalret.core.stats import minimum_detectable_effect
from evalret.data.config import GoldenSetConfig, load_config
from evalret.data.goldenset import load_golden_set
from evalret.pipeline.validate import ALPHA, ASSUMED_NDCG_SD, POWER
from helpers import invoke

ACTIONLINT = str(Path(sys.executable).parent / "actionlint")
ACTION = REPO / ACTION_DIR / "action.yml"
REF = "acme/evalret@v0.1.0"
USES = f"acme/evalret/{ACTION_DIR}@v0.1.0"


def action_step(workflow: dict[str, Any]) -> dict[str, Any]:
    """The workflow's step that uses evalret's action."""
    steps = workflow["jobs"]["evalret"]["steps"]
    return next(s for s in steps if ACTION_DIR in s.get("uses", ""))


# --- the workflow init writes -------------------------------------------------------------------


@pytest.mark.parametrize("ref", [REF, USES])
def test_init_writes_the_workflow_naming_the_action_ref(tmp_path: Path, ref: str) -> None:
    """With --action-ref (either shape) the workflow's `uses:` is the action at that repository
    and ref, nothing of the template's markers or an old placeholder is left, no install input
    is set (the action installs from its own checkout), and actionlint passes it."""
    code, output = invoke("init", str(tmp_path), "--action-ref", ref)
    assert code == 0, output
    assert "no GitHub workflow written" not in output
    text = (tmp_path / WORKFLOW).read_text(encoding="utf-8")
    assert "EVALRET_" not in text and "evalret/evalret" not in text and "OWNER" not in text
    step = action_step(yaml.safe_load(text))
    assert step["uses"] == USES
    assert step["with"] == {"config": "evalret.yaml"}
    lint = subprocess.run([ACTIONLINT, str(tmp_path / WORKFLOW)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr


@pytest.mark.parametrize(
    "spec", ["evalret==0.1.0", "git+https://example.org/a/evalret@v1#egg=evalret", "./it's #1"]
)
def test_init_install_is_written_as_the_action_input(tmp_path: Path, spec: str) -> None:
    """--install becomes the step's `install:` input, read back as given (quotes and `#`)."""
    code, output = invoke("init", str(tmp_path), "--action-ref", REF, "--install", spec)
    assert code == 0, output
    step = action_step(yaml.safe_load((tmp_path / WORKFLOW).read_text(encoding="utf-8")))
    assert step["with"] == {"config": "evalret.yaml", "install": spec}


def test_init_without_action_ref_writes_no_workflow_and_says_how(tmp_path: Path) -> None:
    """Plain init writes the config, golden set and schema but no workflow (evalret cannot know
    where the user's copy of its action lives), and says how to add one; that command, run as
    printed with a ref, adds the workflow alone; run again it refuses to overwrite it."""
    code, output = invoke("init", str(tmp_path))
    assert code == 0, output
    assert not (tmp_path / ".github").exists()
    flat = output.replace("\n", "")
    assert "no GitHub workflow written" in flat
    assert "`evalret init --action-ref OWNER/REPO@REF --workflow-only`" in flat
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    code, output = invoke("init", str(tmp_path), "--action-ref", REF, "--workflow-only")
    assert code == 0, output
    assert WORKFLOW in output.replace("\n", "") and "next:" not in output
    assert {p: p.read_bytes() for p in before} == before
    assert action_step(yaml.safe_load((tmp_path / WORKFLOW).read_text()))["uses"] == USES
    code, output = invoke("init", str(tmp_path), "--action-ref", REF, "--workflow-only")
    assert code == 2 and "--force" in output, output


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--action-ref", "acme/evalret"], "has no @REF"),
        (["--action-ref", "acme/evalret@"], "--action-ref"),
        (["--action-ref", "acme@v1"], "--action-ref"),
        (["--action-ref", "acme/evalret/other/path@v1"], "--action-ref"),
        (["--action-ref", "-acme/evalret@v1"], "--action-ref"),
        (["--action-ref", "acme/evalret@v1..2"], "--action-ref"),
        (["--action-ref", "acme/evalret@main/"], "--action-ref"),
        (["--action-ref", "acme/evalret@v1 x"], "--action-ref"),
        (["--action-ref", REF, "--install", "a\nb"], "--install"),
        (["--action-ref", REF, "--install", " "], "--install"),
        (["--install", "evalret==0.1.0"], "--install needs --action-ref"),
        (["--workflow-only"], "--workflow-only needs --action-ref"),
        (["--pre-commit", "--action-ref", REF], "--pre-commit"),
    ],
)
def test_init_refuses_a_bad_action_ref_or_install(
    tmp_path: Path, args: list[str], named: str
) -> None:
    """A malformed ref or install spec, or an option without what it belongs to: exit 2 naming
    the option, before anything is written."""
    code, output = invoke("init", str(tmp_path), *args)
    assert code == 2, output
    assert named in output.replace("\n", " ")
    assert list(tmp_path.iterdir()) == []


def test_the_action_installs_from_its_own_repository_by_default() -> None:
    """The action's install input defaults to nothing, and its install step then installs the
    repository three levels above the action (github.action_path/../../..): this repository,
    evalret, whose pyproject.toml names it. The project's own gate uses that default."""
    action = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    assert action["inputs"]["install"]["default"] == ""
    step = install_step(action)
    assert step["env"]["EVALRET_REQUIREMENT"] == "${{ inputs.install }}"
    assert step["env"]["EVALRET_SOURCE"] == "${{ github.action_path }}/../../.."
    lines = step["run"].splitlines()
    assert lines[0].startswith('python -m pip install --disable-pip-version-check "torch==')
    assert lines[1] == "spec=${EVALRET_REQUIREMENT:-$EVALRET_SOURCE}"
    assert lines[-1] == 'python -m pip install --disable-pip-version-check "$spec"'
    root = (ACTION.parent / "../../..").resolve()
    assert root == REPO and 'name = "evalret"' in (root / "pyproject.toml").read_text()
    ci = yaml.safe_load((REPO / ".github/workflows/ci.yml").read_text(encoding="utf-8"))
    gate = next(s for s in ci["jobs"]["gate"]["steps"] if s.get("uses") == f"./{ACTION_DIR}")
    assert "install" not in gate["with"]


# --- the starter thresholds ---------------------------------------------------------------------


def test_the_starter_thresholds_sit_at_the_demo_sets_minimum_detectable_drop(
    tmp_path: Path,
) -> None:
    """Every max_drop of init's config is the minimum detectable drop of a set the size of the
    packaged demo as `evalret validate` gives it (two-sided, alpha 0.05, power 0.8, the assumed
    per-query sd), rounded up to two decimals, so above the gate's own one-sided figure too;
    its comment gives the figure."""
    n = len(load_golden_set(GoldenSetConfig()).query_ids)
    mde = minimum_detectable_effect(ASSUMED_NDCG_SD, n, ALPHA, POWER, two_sided=True)
    gate_mde = minimum_detectable_effect(ASSUMED_NDCG_SD, n, ALPHA, POWER)
    assert (n, round(mde, 3), round(gate_mde, 3)) == (244, 0.072, 0.064)
    expected = math.ceil(mde * 100) / 100
    assert invoke("init", str(tmp_path))[0] == 0
    config = load_config(tmp_path / "evalret.yaml")
    assert config.gate.thresholds is not None
    drops = [t.max_drop for t in config.gate.thresholds.values() if t.max_drop is not None]
    assert drops and set(drops) == {expected} == {0.08}
    text = (tmp_path / "evalret.yaml").read_text(encoding="utf-8")
    assert f"max_drop {expected}: the smallest drop a set of {n} queries" in text
    assert f"gives it ({mde:.3f}:" in text


# --- the action's steps, run as GitHub runs them ------------------------------------------------


def install_step(action: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in action["runs"]["steps"] if s.get("name") == "Install evalret")


def expand(value: str, values: dict[str, str]) -> str:
    """``value`` with each ``${{ NAME }}`` replaced from ``values`` (an expression the test does
    not know fails it: the step uses something the runner would give that this test does not)."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        assert name in values, f"the step uses ${{{{ {name} }}}}, unknown to this test"
        return values[name]

    return re.sub(r"\$\{\{\s*([\w.-]+)\s*\}\}", one, value)


def run_step(
    step: dict[str, Any], values: dict[str, str], env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    """A composite action's `shell: bash` step as the runner runs it: its script in a file, run
    by `bash --noprofile --norc -eo pipefail`, its env expanded."""
    assert step["shell"] == "bash"
    script = cwd.parent / f"step-{step.get('id') or step['name'].split()[0]}.sh"
    script.write_text(expand(step["run"], values))
    step_env = {k: expand(str(v), values) for k, v in step.get("env", {}).items()}
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        env={**env, **step_env},
        cwd=cwd,
        capture_output=True,
        text=True,
    )


def step_values(action: dict[str, Any], given: dict[str, str], action_path: Path) -> dict[str, str]:
    """The expressions a step may use: every input (its default, or the workflow's `with:`)
    and github.action_path."""
    values = {f"inputs.{k}": str(v.get("default", "")) for k, v in action["inputs"].items()}
    values.update({f"inputs.{k}": v for k, v in given.items()})
    values["github.action_path"] = str(action_path)
    return values


def checkout_copy(dest: Path) -> Path:
    """What the runner downloads for `uses: OWNER/REPO/.github/actions/evalret@REF`: the
    repository at that ref (here the files a build reads, and the action), outside the working
    tree so pip's in-tree build leaves this checkout alone; returns the action's path in it."""
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"):
        if (REPO / name).exists():
            shutil.copy2(REPO / name, dest / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    shutil.copytree(REPO / "src", dest / "src", ignore=ignore)
    shutil.copytree(REPO / ACTION_DIR, dest / ACTION_DIR)
    return dest / ACTION_DIR


def runner_env(venv: Path) -> dict[str, str]:
    """The runner's environment once setup-python ran: the fresh venv's python first on PATH,
    nothing of this checkout importable (no PYTHONPATH). pip reads no package index (so evalret
    can only come from the action's path) and builds without isolation (setuptools from the
    packages this venv sees)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    env.update(PIP_NO_INDEX="1", PIP_NO_BUILD_ISOLATION="0", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


@pytest.fixture(scope="module")
def action_install(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """The action's install step, with its default inputs, run into a fresh venv that sees this
    test environment's packages (torch and evalret's dependencies, through a .pth file: no
    download) but not evalret's source; returns the venv, the action's path and the step's
    output."""
    root = tmp_path_factory.mktemp("action")
    checkout = root / "_actions" / "acme" / "evalret" / "v0.1.0"
    checkout.mkdir(parents=True)
    action_path = checkout_copy(checkout)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = subprocess.run(
        [str(venv / "bin" / "python"), "-c", purelib],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    seen = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    (Path(site) / "test-environment.pth").write_text("\n".join(seen) + "\n")
    action = yaml.safe_load((action_path / "action.yml").read_text(encoding="utf-8"))
    workspace = root / "workspace"
    workspace.mkdir()
    done = run_step(
        install_step(action), step_values(action, {}, action_path), runner_env(venv), workspace
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return venv, action_path, done.stdout


def test_the_install_step_installs_evalret_from_the_actions_path(
    action_install: tuple[Path, Path, str],
) -> None:
    """Run as GitHub runs it, the install step puts evalret, built from the action's own
    checkout (no index can serve it), into the fresh venv: imported from there, at this
    version, with its package data (the demo set)."""
    venv, action_path, output = action_install
    assert f"evalret: installing from {action_path}/../../..\n" in output
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import evalret; print(evalret.__file__)"],
        env=runner_env(venv),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(venv), where
    assert (Path(where).parent / "demo" / "queries.jsonl").is_file()
    from evalret.version import __version__

    shown = subprocess.run(
        [str(venv / "bin" / "evalret"), "--version"], capture_output=True, text=True, check=True
    )
    assert shown.stdout == f"evalret {__version__}\n"


@pytest.mark.model
def test_the_workflow_init_writes_runs_the_gate(
    action_install: tuple[Path, Path, str], tmp_path: Path
) -> None:
    """act, locally: the venv's `evalret init --action-ref` scaffolds a repository; the
    workflow's `uses:` resolves to the action's checkout; a baseline is saved once; then the
    action's gate step (gate.sh with the workflow's `with:`) passes, exit-code 0, and its
    Verdict step exits 0."""
    venv, action_path, _ = action_install
    env = runner_env(venv)
    repo = tmp_path / "repo"
    bin_ = venv / "bin"
    init = subprocess.run(
        [str(bin_ / "evalret"), "init", str(repo), "--action-ref", REF],
        env=env,
        capture_output=True,
        text=True,
    )
    assert init.returncode == 0, init.stdout + init.stderr
    step = action_step(yaml.safe_load((repo / WORKFLOW).read_text(encoding="utf-8")))
    assert step["uses"] == USES  # the runner fetches acme/evalret at v0.1.0: action_path
    save = ["run", "--save-baseline", "baselines/evalret.json", "--no-progress"]
    saved = subprocess.run(
        [str(bin_ / "evalret"), *save],
        env=env,
        cwd=repo,
        capture_output=True,
        text=True,
    )
    assert saved.returncode == 0, saved.stdout + saved.stderr
    action = yaml.safe_load((action_path / "action.yml").read_text(encoding="utf-8"))
    steps = {s.get("id") or s.get("name"): s for s in action["runs"]["steps"]}
    values = step_values(action, {k: str(v) for k, v in step["with"].items()}, action_path)
    outputs = tmp_path / "github_output"
    outputs.write_text("")
    gate_env = {**env, "GITHUB_ACTION_PATH": str(action_path), "GITHUB_OUTPUT": str(outputs)}
    gate = run_step(steps["gate"], values, gate_env, repo)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    written = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    assert written["exit-code"] == "0", gate.stdout + gate.stderr
    assert (repo / "evalret-reports" / "report.json").is_file()
    values["steps.gate.outputs.exit-code"] = written["exit-code"]
    verdict = run_step(steps["Verdict"], values, env, repo)
    assert verdict.returncode == 0 and "evalret: all checks pass" in verdict.stdout
