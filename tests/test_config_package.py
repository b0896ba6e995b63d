"""data/config/ is a package by section whose names are all imported from ``evalret.data.config``:
every public name a section module defines is re-exported there, and is the same object."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from evalret.data import config


def _defined(path: Path) -> list[str]:
    """The names a module's own top-level statements define (not those it imports)."""
    names = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return names


def test_every_public_name_of_a_section_is_re_exported() -> None:
    """A name added to a section module is importable from ``evalret.data.config`` (and in its
    ``__all__``), as every importer expects, and is that module's own object."""
    found = {}
    for path in sorted(Path(config.__file__).parent.glob("*.py")):
        if path.stem == "__init__":
            continue
        module = importlib.import_module(f"evalret.data.config.{path.stem}")
        found.update({n: getattr(module, n) for n in _defined(path) if not n.startswith("_")})
    assert {"Config", "parse_config", "ModelConfigBase", "IndexesConfig"} <= set(found)
    assert sorted(set(found) - set(config.__all__)) == []
    assert all(getattr(config, n) is v for n, v in found.items())
