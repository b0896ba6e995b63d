"""The shape of the source tree: short functions (the layer contracts are `lint-imports`'s job)."""

from __future__ import annotations

import ast
from pathlib import Path

import evalret

SRC = Path(evalret.__file__).parent
# decorators through the last line; docs/explanation/architecture.md says why
MAX_FUNCTION_LINES = 80


def _functions(path: Path) -> list[tuple[str, int]]:
    """(qualified-ish name, length in lines) of every function and method in one source file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            assert node.end_lineno is not None
            found.append((node.name, node.end_lineno - first + 1))
    return found


def test_no_function_is_longer_than_the_cap() -> None:
    """Every function in src/evalret fits in 80 lines, so each reads as one named step."""
    files = sorted(SRC.rglob("*.py"))
    assert len(files) > 30  # the walk found the package
    too_long = [
        f"{path.relative_to(SRC)}:{name} ({lines} lines)"
        for path in files
        for name, lines in _functions(path)
        if lines > MAX_FUNCTION_LINES
    ]
    assert too_long == []
