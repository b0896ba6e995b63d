"""`evalret golden doctor -c CONFIG [--log LOG]`: whether the config's golden set can catch a
regression and still describes the traffic (pipeline/doctor.py holds the diagnoses); writes
doctor.json and doctor.html into --out (default the config's output.dir)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evalret.data.atomic import atomic_write_text, check_writable_dir
from evalret.data.overrides import Override
from evalret.data.paths import (
    Declared,
    Input,
    Output,
    cache_output,
    clear_outputs,
    config_inputs,
    guard,
)
from evalret.errors import ExitCode, InputError
from evalret.pipeline.configs import run_config
from evalret.pipeline.doctor import DoctorResult, DoctorSettings, run_doctor
from evalret.pipeline.progress import ProgressBars, no_bars
from evalret.report.doctor_view import doctor_html
from evalret.report.escape import json_document

DOCTOR_FILES = ("doctor.json", "doctor.html")


@dataclass(frozen=True)
class DoctorOutcome:
    """The doctor's result, its JSON text and the files written."""

    result: DoctorResult
    json_text: str
    written: list[Path]

    @property
    def exit_code(self) -> ExitCode:
        """1 below gate.coverage.min, else 0."""
        return ExitCode.REGRESSION if self.result.failed else ExitCode.OK


def doctor_command(
    *,
    config: Path | None,
    settings: DoctorSettings,
    out: Path | None = None,
    progress: ProgressBars = no_bars,
    overrides: Sequence[Override] = (),
) -> DoctorOutcome:
    """`evalret golden doctor`: diagnose the golden set of ``config`` (with ``overrides``) and
    write doctor.json and doctor.html into ``out`` (default the config's output.dir)."""
    cfg = run_config(config, overrides=overrides)
    reads = config_inputs(cfg, config)
    if settings.log is not None:
        reads.append(Input("the query log (--log)", settings.log))
    out_dir = out if out is not None else cfg.output.dir
    target = Output("--out" if out is not None else "output.dir", out_dir, "dir", DOCTOR_FILES)
    guard(Declared("golden doctor", reads, [target, *cache_output(cfg)]))
    check_writable_dir(out_dir, "output directory")
    clear_outputs(target)
    with progress() as factory:
        result = run_doctor(cfg, settings, factory)
    text = json_document(json.dumps(result.data, indent=1, ensure_ascii=False))
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create output directory {out_dir}: {e.strerror or e}") from None
    written = [out_dir / name for name in DOCTOR_FILES]
    atomic_write_text(written[0], text + "\n", "doctor.json")
    atomic_write_text(written[1], doctor_html(result.data), "doctor.html")
    return DoctorOutcome(result, text, written)
