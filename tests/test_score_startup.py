"""`evalret score` imports only what scoring a run file needs: no model, index, HTTP client or
judge machinery (they cost seconds of start-up, and score uses none of them), and none of
evalret's own parts that only other commands use (#40: the YAML loader, junit.xml's writer, the
vector-store drivers), nor pyarrow.compute (the run readers call their kernels without it). A
fresh interpreter runs the command on a tiny qrels file and run, then names the listed modules
that ended up loaded. No timing is asserted (the benchmarks measure time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# what a run that embeds, searches an index, calls an API or judges may import; score does none
HEAVY = (
    "torch",
    "faiss",
    "sentence_transformers",
    "transformers",
    "tokenizers",
    "safetensors",
    "huggingface_hub",
    "onnxruntime",
    "openvino",
    "sklearn",
    "ray",
    "openai",
    "httpx",
    "httpx2",
    "psycopg",
    "bm25s",
    "Stemmer",
    "numba",
    "pandas",
    "asyncio",
    "ssl",
    "sqlite3",
)

# what score has no use for, of what evalret itself would load: the config is built in code (no
# YAML: data.config's loading, the --set settings), no gate (no junit.xml), no store index
UNUSED = (
    "yaml",
    "evalret.data.config.loading",
    "evalret.data.overrides",
    "evalret.report.junit",
    "xml.etree.ElementTree",
    "evalret.engines.retrievers.store",
    "evalret.engines.stores",
    # its wrappers of every kernel: the readers call theirs by name (data/arrow_kernels.py)
    "pyarrow.compute",
)

# what was loaded is printed by an atexit handler: the process ends in main (cli_runtime._exit_now)
CODE = """
import atexit, json, sys
from evalret.cli import main
atexit.register(lambda: print(json.dumps(sorted(m for m in HEAVY if m in sys.modules))))
sys.argv = ["evalret", *sys.argv[1:]]
main()
"""


def _score(
    tmp_path: Path, code: str, env: dict[str, str] | None = None, trec_eval_output: bool = False
) -> str:
    """The last line ``code`` (a program that runs evalret's main and prints at exit) prints
    after a fresh `evalret score` of a tiny qrels file and run (a document the qrels lack),
    writing its files, or with ``trec_eval_output`` printing trec_eval's text."""
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.trec"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n")
    run.write_text("q1 Q0 d1 1 2.5 t\nq1 Q0 d9 2 1.0 t\nq2 Q0 d2 1 0.5 t\n")
    out = tmp_path / "out"
    args = ["score", str(qrels), str(run)]
    args += ["--trec-eval-output"] if trec_eval_output else ["--no-progress", "--out", str(out)]
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    if trec_eval_output:
        assert "runid                 \tall\tt\n" in done.stdout and not out.exists()
    else:
        assert (out / "run.run.trec").read_text().startswith("q1 Q0 d1 1 2.5 evalret-run")
    return done.stdout.strip().splitlines()[-1]


def _loaded(tmp_path: Path, names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` a fresh `evalret score` loaded."""
    loaded: list[str] = json.loads(_score(tmp_path, f"HEAVY = {names!r}\n{CODE}"))
    return loaded


def test_score_imports_nothing_heavy(tmp_path: Path) -> None:
    assert _loaded(tmp_path, HEAVY) == []


def test_score_imports_none_of_what_only_other_commands_use(tmp_path: Path) -> None:
    assert _loaded(tmp_path, UNUSED) == []


# what only score's own reports need: `score --trec-eval-output` prints trec_eval's text alone
REPORTS = ("evalret.pipeline.runner", "evalret.pipeline.evaluate", "evalret.report.html", "rich")


def test_score_trec_eval_output_imports_no_pipeline_or_report(tmp_path: Path) -> None:
    names = HEAVY + UNUSED + REPORTS
    assert json.loads(_score(tmp_path, f"HEAVY = {names!r}\n{CODE}", trec_eval_output=True)) == []


# what the environment holds at the end of the command: OpenBLAS's spin setting is there only
# while numpy loads (cli_runtime.BLAS_SPIN), so child processes get the environment as it was
ENVIRONMENT = """
import atexit, os, sys
from evalret.cli import main
atexit.register(lambda: print(os.environ.get("OPENBLAS_THREAD_TIMEOUT", "unset")))
sys.argv = ["evalret", *sys.argv[1:]]
main()
"""


def test_the_blas_spin_setting_is_not_left_behind_and_a_users_is_kept(tmp_path: Path) -> None:
    for users, left in ((None, "unset"), ("12", "12")):
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
        if users is not None:
            env["OPENBLAS_THREAD_TIMEOUT"] = users
        assert _score(tmp_path, ENVIRONMENT, env) == left


# which of report.json's package's models score's process built: those only compare.json and
# the dry run hold are built when first used (data/schema/base.py's BUILT_WHEN_USED), never here
MODELS = """
import atexit, sys
from evalret.cli import main
def built():
    from pydantic import BaseModel
    from evalret.data import schema
    models = [v for v in vars(schema).values() if isinstance(v, type) and issubclass(v, BaseModel)]
    print(" ".join(sorted(m.__name__ for m in models if m.__pydantic_complete__)))
atexit.register(built)
sys.argv = ["evalret", *sys.argv[1:]]
main()
"""


def test_score_builds_none_of_compare_jsons_or_the_dry_runs_models(tmp_path: Path) -> None:
    built = set(_score(tmp_path, MODELS).split())
    assert "RunReport" in built  # (report.json's)
    unbuilt = {"CompareReport", "CompareSide", "SliceComparison", "SettingsRecord", "EmbeddingPlan"}
    assert not built & unbuilt
