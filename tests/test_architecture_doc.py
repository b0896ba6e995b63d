"""docs/explanation/architecture.md stays true to the tree: every module path it names exists
(with the name after it, when it names one), and every module of src/evalret is named in it, so
that a module moved, renamed or added without its place in the layers fails here."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import evalret

SRC = Path(evalret.__file__).parent
REPO = SRC.parent.parent
DOC = REPO / "docs" / "explanation" / "architecture.md"
LAYERS = ("core", "data", "engines", "report", "pipeline", "commands")
TOP_LEVEL = (
    "cli_reference.py",
    "cli.py",
    "cli_golden.py",
    "cli_judgments.py",
    "cli_help.py",
    "cli_options.py",
    "cli_runtime.py",
    "errors.py",
    "version.py",
    "choices.py",
)
SPAN = re.compile(r"`([^`\n]+)`")
# a span naming a place in the tree: a layer (or tests) then folders, modules and a name, joined
# by "/" or "."; ".py" is part of a module's name
PLACE = re.compile(rf"^(?:{'|'.join(LAYERS)}|tests)(?:[/.][A-Za-z_]\w*)*/?")


def _spans(text: str) -> list[str]:
    return SPAN.findall(text)


@cache
def _top_level_names(module: Path) -> frozenset[str]:
    """The names a module defines or imports at its top level."""
    names: set[str] = set()
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return frozenset(names)


def _resolve(span: str) -> tuple[Path | None, str | None]:
    """(the file or folder a span names, or None; what is wrong, or None). ``tests/...`` is under
    the repository, the layers under src/evalret. A dotted span whose second part is no module
    (``report.json``) names no place."""
    match = PLACE.match(span)
    assert match is not None
    parts = [p for p in re.split(r"[/.]", match.group(0).rstrip("/")) if p]
    here = REPO if parts[0] == "tests" else SRC
    for i, part in enumerate(parts):
        if here.is_dir():
            if (here / part).is_dir():
                here = here / part
            elif (here / f"{part}.py").is_file():
                here = here / f"{part}.py"
            elif i == 1 and span[len(parts[0])] == ".":
                return None, None  # not a module path: a file name such as report.json
            else:
                return None, f"`{span}`: no {part} in {here.relative_to(REPO)}"
        elif part == "py" and i == len(parts) - 1:
            break  # "module.py"
        elif here.suffix == ".py":
            if part not in _top_level_names(here):
                return None, f"`{span}`: {here.relative_to(REPO)} has no {part}"
            break
        else:
            break  # a data file's own suffix (tests/x.json)
    return here, None


def _layer_rows(text: str) -> dict[str, str]:
    """The layer table's row of each layer, by its folder name."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\| `(\w+)/` \|", line)
        if m:
            rows[m.group(1)] = line
    return rows


def _named_in_row(module: Path, row: str) -> bool:
    """Whether a layer's row names ``module`` by its path inside the layer or by its stem
    (``runner.py``, ``html/run_page.py``, ``embedders.EMBEDDERS``, a command's bare name)."""
    layer = module.relative_to(SRC).parts[0]
    inside = module.relative_to(SRC / layer).as_posix()
    stem = module.stem
    for span in _spans(row):
        head = re.split(r"[\s(.,:]", span.rstrip("/"), maxsplit=1)[0]
        if span.rstrip("/") in (inside, inside[:-3]) or head == stem or span == f"{stem}.py":
            return True
    return False


def test_every_place_the_doc_names_exists() -> None:
    """A path such as `pipeline/evaluate.run_evaluation`, `core.ranking.primary_index` or
    `tests/test_cli.py` is a file or folder of the tree, and the name after a module is one it
    defines."""
    problems = [
        problem
        for span in _spans(DOC.read_text(encoding="utf-8"))
        if PLACE.match(span)
        for _, problem in [_resolve(span)]
        if problem is not None
    ]
    assert problems == []


def test_every_module_has_its_place_in_the_doc() -> None:
    """Each module of src/evalret is named in the doc: by its path anywhere, or in its layer's
    row of the layer table. A new module says there what it holds."""
    text = DOC.read_text(encoding="utf-8")
    named = {here for span in _spans(text) if PLACE.match(span) for here, _ in [_resolve(span)]}
    rows = _layer_rows(text)
    assert set(rows) >= set(LAYERS), f"the layer table lacks {set(LAYERS) - set(rows)}"
    spans = set(_spans(text))
    missing = [
        str(module.relative_to(SRC))
        for module in sorted(SRC.rglob("*.py"))
        if module.name not in ("__init__.py", "__main__.py")
        and module not in named
        and not (
            module.parent == SRC
            and module.name in TOP_LEVEL
            and (module.name in spans or any(s.startswith(module.stem + ".") for s in spans))
        )
        and not (
            module.parent != SRC and _named_in_row(module, rows[module.relative_to(SRC).parts[0]])
        )
    ]
    assert missing == [], f"modules docs/explanation/architecture.md does not place: {missing}"


def _hashing_places() -> set[str]:
    """``layer/module.Name`` of every top-level function or class of src/evalret whose code calls
    ``hashlib`` (``core/sampling.seeded_keys``, ``data/goldenset.GoldenSet``), read from the
    source."""
    places = set()
    for module in SRC.rglob("*.py"):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        for node in tree.body:
            calls = [
                call
                for call in ast.walk(node)
                if isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and isinstance(call.func.value, ast.Name)
                and call.func.value.id == "hashlib"
            ]
            if calls and isinstance(node, ast.FunctionDef | ast.ClassDef):
                places.add(f"{module.relative_to(SRC).with_suffix('').as_posix()}.{node.name}")
    return places


def test_the_doc_lists_every_hash_the_code_computes() -> None:
    """Every function or class that hashes with ``hashlib`` is named in the doc (the shared
    ``core/digest.json_digest`` and ``data/atomic.sha256_file``, and every hash with a recipe of
    its own), so that a new hash is added to the list, or goes through the shared ones."""
    spans = set(_spans(DOC.read_text(encoding="utf-8")))
    places = _hashing_places()
    assert {"core/digest.json_digest", "data/atomic.sha256_file"} <= places
    assert sorted(places - spans) == []


def _diagram_layers(diagram: str) -> list[list[str]]:
    """The layers a diagram line names, top to bottom: the names at the start of each line
    (``cli.py``, ``commands/``; two on a line sit side by side), before its description."""
    layers = []
    for line in diagram.splitlines():
        names = []
        for token in line.split():
            if not re.search(r"\w", token):  # the lines and dots that draw the diagram
                continue
            if not re.fullmatch(r"\w+(?:/|\.py)", token):
                break
            names.append(token.rstrip("/").removesuffix(".py"))
        if names:
            layers.append(sorted(names))
    return layers


def test_the_layer_diagram_is_the_import_linter_contract() -> None:
    """The doc's layer diagram names the layers of pyproject.toml's layers contract (what
    ``lint-imports`` enforces), top to bottom in its order, independent layers side by side."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(
        c for c in project["tool"]["importlinter"]["contracts"] if c["type"] == "layers"
    )
    expected = [
        sorted(m.strip().removeprefix("evalret.") for m in layer.split("|"))
        for layer in contract["layers"]
    ]
    diagram = DOC.read_text(encoding="utf-8").split("```")[1]
    assert _diagram_layers(diagram) == expected
