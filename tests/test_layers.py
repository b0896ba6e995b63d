"""The layers hold: the core imports no validation, file-format, terminal, CLI or model library."""

from __future__ import annotations

import json
import subprocess
import sys

FORBIDDEN = ("pydantic", "yaml", "rich", "typer", "faiss", "torch", "sentence_transformers")

# imports every module under evalret.core in a fresh interpreter and reports what got loaded
SCRIPT = f"""
import importlib, json, pkgutil, sys
import evalret.core
names = sorted(m.name for m in pkgutil.walk_packages(evalret.core.__path__, "evalret.core."))
for name in names:
    importlib.import_module(name)
forbidden = {FORBIDDEN!r}
loaded = sorted(
    m for m in sys.modules if any(m == f or m.startswith(f + ".") for f in forbidden)
)
print(json.dumps({{"modules": names, "loaded": loaded}}))
"""


def _import_core() -> dict[str, list[str]]:
    """The core's modules and the forbidden modules loaded after importing them all."""
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=120
    )
    result: dict[str, list[str]] = json.loads(done.stdout)
    return result


def test_core_imports_no_forbidden_library() -> None:
    """Importing every core module in a fresh interpreter loads none of the forbidden libraries."""
    result = _import_core()
    assert {"evalret.core.gate", "evalret.core.comparison", "evalret.core.slices"} <= set(
        result["modules"]
    )
    assert result["loaded"] == []
