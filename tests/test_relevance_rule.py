"""The relevance rule (a grade >= the relevance level is relevant) and its default level live in
one place, core/relevance.py: the rule on grades and arrays, and a scan of src/ for copies."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from evalret.core.relevance import DEFAULT_RELEVANCE_LEVEL, is_relevant

SRC = Path(__file__).parents[1] / "src" / "evalret"
HOME = SRC / "core" / "relevance.py"
LEVEL_NAMES = {"level", "relevance_level"}
GRADE_NAMES = {"g", "grade", "grades"}


def test_the_rule_on_grades_and_arrays() -> None:
    """trec_eval's -l: grade >= level is relevant; 0 and negative grades never are at level 1."""
    assert DEFAULT_RELEVANCE_LEVEL == 1
    assert [is_relevant(g, 1) for g in (-2, 0, 1, 3)] == [False, False, True, True]
    assert [is_relevant(g, 2) for g in (1, 2, 3)] == [False, True, True]
    grades = np.array([[-1, 0, 1], [2, 3, 1]])
    assert is_relevant(grades, 2).tolist() == [[False, False, False], [True, True, False]]


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_number(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def _defaults(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[tuple[ast.arg, ast.AST]]:
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    yield from zip(positional[len(positional) - len(a.defaults) :], a.defaults, strict=True)
    yield from ((arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d)


def _copies(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, what) for every comparison of a grade with a level or a literal, and every literal
    default relevance level (a parameter, a field, a pydantic Field, a ``.get`` fallback)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(isinstance(o, ast.GtE) for o in node.ops):
            sides = [node.left, *node.comparators]
            names = {_name(s) for s in sides}
            if names & LEVEL_NAMES or (names & GRADE_NAMES and any(map(_is_number, sides))):
                yield node.lineno, "the rule written out: call is_relevant"
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for arg, default in _defaults(node):
                if arg.arg in LEVEL_NAMES and _is_number(default):
                    yield default.lineno, f"parameter {arg.arg}: default DEFAULT_RELEVANCE_LEVEL"
        elif isinstance(node, ast.AnnAssign) and _name(node.target) in LEVEL_NAMES:
            value = node.value
            if isinstance(value, ast.Call) and _name(value.func) == "Field" and value.args:
                value = value.args[0]
            if _is_number(value):
                yield node.lineno, "a field's default: DEFAULT_RELEVANCE_LEVEL"
        elif isinstance(node, ast.Call) and _name(node.func) == "get" and len(node.args) == 2:
            key, fallback = node.args
            if isinstance(key, ast.Constant) and key.value in LEVEL_NAMES and _is_number(fallback):
                yield node.lineno, "a .get fallback: DEFAULT_RELEVANCE_LEVEL"


def test_the_rule_and_its_default_are_written_once() -> None:
    """No module but core/relevance.py compares a grade with a level (or with a literal), and no
    default relevance level is a literal: each is ``is_relevant`` or ``DEFAULT_RELEVANCE_LEVEL``."""
    found = [
        f"{path.relative_to(SRC.parent)}:{line}: {what}"
        for path in sorted(SRC.rglob("*.py"))
        if path != HOME
        for line, what in _copies(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert found == []


def test_the_scan_finds_each_kind_of_copy() -> None:
    """The scan above is not vacuous: each way of writing the rule or the default is found."""
    code = """
def f(grades, level: int = 1, *, relevance_level=1):
    return grades >= level
def h(d):
    return d.grade >= 1, report.get("relevance_level", 1)
class C:
    relevance_level: int = Field(1, ge=1)
    level: int = 1
"""
    lines = sorted(line for line, _ in _copies(ast.parse(code)))
    assert lines == [2, 2, 3, 5, 5, 7, 8]
