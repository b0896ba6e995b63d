"""`evalret hook`: the gate as a `pre-commit` hook (id ``evalret-gate``, stage pre-push).

The hook is `evalret run` with the config and the baseline CI uses: the same ``run_configured``,
so the same sampling (a config's ``sample:`` section), the same checks and the same exit codes
(1 a regression, 2 a wrong input, 3 evalret failed). It differs only in what it demands and what
it prints: it needs a baseline (``--baseline`` or the config's ``gate.baseline``) and never saves
one, draws no progress bars, and prints a short verdict with the path of report.md
(``report/hook_view.py``). Which changed files trigger it is pre-commit's business: the hook's
``files:`` pattern, which ``evalret init --pre-commit`` derives from the config
(``commands/init.py``); the hook itself takes no file names.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalret.commands.configs import run_config
from evalret.commands.run import RunOutcome, run_configured
from evalret.data.paths import config_inputs
from evalret.errors import ConfigError, ExitCode

HOOK_ID = "evalret-gate"
DEFAULT_CONFIG = Path("evalret.yaml")
# what exit 3 adds: the failure is evalret's, not the change's, and how to push past it once
SKIP_HINT = (
    f"{HOOK_ID}: evalret itself failed (exit 3), so this is no verdict on your change. Fix the "
    f"cause above, or push once without the gate: SKIP={HOOK_ID} git push"
)
INPUT_HINT = f"{HOOK_ID}: an input is wrong (exit 2): fix what the error above names, then push"


@dataclass(frozen=True)
class HookOutcome:
    """A finished hook run: the run itself, the baseline gated against and report.md's path."""

    run: RunOutcome
    baseline: Path
    report_md: Path | None

    @property
    def exit_code(self) -> ExitCode:
        """The run's own exit code: 1 when the gate failed, else 0."""
        return self.run.exit_code


def hook_command(
    config: Path = DEFAULT_CONFIG, *, baseline: Path | None = None, out: Path | None = None
) -> HookOutcome:
    """Gate ``config`` against ``baseline`` (default: the config's gate.baseline) exactly as
    `evalret run --config CONFIG [--baseline B] [--out O]` does; a config without a baseline is
    a ConfigError (a hook that checks nothing against the baseline would pass every push)."""
    cfg = run_config(config)
    reference = baseline or cfg.gate.baseline
    if reference is None:
        raise ConfigError(
            f"{config}: gate.baseline is not set: the {HOOK_ID} hook gates against a saved "
            "baseline. Save one on purpose (evalret run --config "
            f"{config} --save-baseline baselines/evalret.json), name it in gate.baseline, and "
            "commit it"
        )
    outcome = run_configured(
        cfg, out=out, baseline=baseline, inputs=config_inputs(cfg, config), command="hook"
    )
    report_md = next((p for p in outcome.written if p.name == "report.md"), None)
    return HookOutcome(outcome, shown(reference), None if report_md is None else shown(report_md))


def shown(path: Path) -> Path:
    """``path`` relative to the working directory (the repository's root, where pre-commit runs
    hooks) when it lies inside it, else as it is."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except (ValueError, OSError):
        return path
