"""Non-inferiority and equivalence on the demo with the packaged MiniLM (#40): cutting it to 128
dimensions passes a margin on nDCG@10 only when the bound proves it, and cutting it to 32 fails
every margin tried."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import DEMO
from helpers import invoke

pytestmark = pytest.mark.model


def config(tmp_path: Path, name: str, rule: str) -> Path:
    """A config on the demo (exact search, nDCG@10 on slice all, one cache) whose nDCG@10
    threshold is ``rule``."""
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        f"golden_set: {{path: {DEMO}}}\n"
        f"cache: {{dir: {tmp_path / 'cache'}}}\n"
        "indexes: {hnsw: {enabled: false}, hybrid: {enabled: false}}\n"
        "health: {enabled: false}\n"
        "metrics: [ndcg@10]\n"
        "gate:\n"
        f"  baseline: {tmp_path / 'base.json'}\n"
        "  slices: [all]\n"
        "  unjudged: null\n"
        f"  thresholds: {{ndcg@10: {rule}}}\n"
    )
    return path


def margin_check(tmp_path: Path, name: str, dimension: int) -> tuple[int, str, dict[str, Any]]:
    """Run config ``name`` at ``dimension`` against the full model's baseline; its one margin
    check, the exit code and the terminal."""
    out = tmp_path / f"{name}-{dimension}"
    code, text = invoke(
        "run",
        "-c",
        str(tmp_path / f"{name}.yaml"),
        "--no-progress",
        "--out",
        str(out),
        "--dimension",
        str(dimension),
    )
    [check] = json.loads((out / "report.json").read_text())["gate"]["checks"]
    return code, text, check


def test_a_cut_model_passes_a_margin_only_when_the_bound_proves_it(tmp_path: Path) -> None:
    """Baseline: the full 384 dimensions. 128 dimensions lose about 0.07 nDCG@10 over 244
    queries: non-inferiority at 0.05 fails (the loss itself is past it: not proven), at 0.10
    passes (the 95% lower bound lies above -0.10), and so does equivalence at ±0.10; 32
    dimensions lose about 0.3 and fail both. Every check passes exactly when its bound clears
    the margin, and exits 1 when it does not."""
    rules = {
        "ni05": "{mode: non_inferiority, margin: 0.05}",
        "ni10": "{mode: non_inferiority, margin: 0.10}",
        "eq10": "{mode: equivalence, margin: 0.10}",
    }
    for name, rule in rules.items():
        config(tmp_path, name, rule)
    code, text = invoke(
        "run",
        "-c",
        str(tmp_path / "ni05.yaml"),
        "--no-progress",
        "--out",
        str(tmp_path / "full"),
        "--save-baseline",
        str(tmp_path / "base.json"),
    )
    assert code == 0, text
    outcomes = {}
    for name in rules:
        for dimension in (128, 32):
            code, text, c = margin_check(tmp_path, name, dimension)
            margin = c["threshold"]
            clears = c["interval_low"] > -margin
            if c["kind"] == "equivalence":
                clears = clears and c["interval_high"] < margin
            assert c["passed"] == clears, (name, dimension, c["message"])
            assert code == (0 if clears else 1), text
            assert c["interval_method"] == "bootstrap" and c["interval_confidence"] == 0.95
            word = {"proven": "proven", "not_proven": "not proven"}[c["evidence"]]
            assert f"margin {margin:g}: {word};" in text
            outcomes[(name, dimension)] = c
    loss = outcomes[("ni05", 128)]["delta"]
    assert -0.10 < loss < -0.05  # the demo's figure: about -0.072
    assert outcomes[("ni05", 128)]["evidence"] == "not_proven"
    assert outcomes[("ni10", 128)]["passed"] and outcomes[("eq10", 128)]["passed"]
    for name in rules:
        assert not outcomes[(name, 32)]["passed"], name
        assert outcomes[(name, 32)]["evidence"] == "not_proven"
