"""`evalret init`: a starter config, a tiny golden-set template and a GitHub workflow."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from evalret.data.atomic import atomic_write_text
from evalret.errors import InputError, Problem

# target path in the repository -> template file shipped in evalret/templates
FILES = {
    "evalret.yaml": "evalret.yaml",
    "golden_sets/example/corpus.jsonl": "corpus.jsonl",
    "golden_sets/example/queries.jsonl": "queries.jsonl",
    ".github/workflows/evalret.yml": "workflow.yml",
}
NEXT_STEPS = (
    "next: put your corpus and queries in golden_sets/example, then run "
    "`evalret run --config evalret.yaml --save-baseline baselines/evalret.json` once, "
    "on purpose, and commit the baseline."
)


def write_scaffold(root: Path, force: bool = False) -> list[Path]:
    """Write the starter files under ``root``; refuse to overwrite any unless ``force``."""
    if os.path.lexists(root) and not root.is_dir():
        raise InputError(f"cannot scaffold into {root}: it exists and is not a directory")
    targets = {root / target: template for target, template in FILES.items()}
    existing = [p for p in targets if p.exists()]
    if existing and not force:
        raise InputError(
            "evalret init would overwrite existing files (use --force to overwrite)",
            [Problem("exists", str(p)) for p in existing],
        )
    package = resources.files("evalret") / "templates"
    for path, template in targets.items():
        atomic_write_text(path, (package / template).read_text(encoding="utf-8"), "starter file")
    return list(targets)
