"""What a command's help says it writes is what it writes (#39): every row of the harness's table
(inv_table) is run once, normally, on the harness's world (a row that asks the LLM judge, with
tests/chat_server.py answering), and the files it wrote are compared with its help's claims.

A claim is a sentence of the command's help that starts with "Writes" (the file names in it, and
the options it names, whose values are then the files written), and the file names in the help of
its ``--out``. Every file written must be claimed (by its name, ``run.INDEX.trec`` standing for
any index; by an option naming it; or, for "a copy of --into", as a copy of that input's file), and
every name claimed must be written, unless the help says when it is not (``CONDITIONAL``). A
command whose help claims nothing writes nothing. evalret's own stores (the embedding, index,
answer and score caches under the world's cache directories) and SQLite's -wal/-shm files are
not outputs a user names, and are left out.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer.main
from inv_case import new_case, run_in_process, tree_snapshot
from inv_judge import _with_judge
from inv_table import ROWS, Row
from inv_world import build_world

from evalret.cli import app
from evalret.pipeline.annotation import default_output

# a file name in help: report.json, run.INDEX.trec, .github/workflows/evalret.yml, qrels/SPLIT.tsv
FILE = re.compile(
    r"(?<![\w/.-])(?:[\w.-]+/)*[\w.-]*\w\.(?:jsonl|json|md|html|xml|trec|sqlite|yaml|yml|"
    r"parquet|npz|tsv)\b"
)
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z-]*")
SENTENCE = re.compile(r"(?<=\.)\s+(?=[A-Z`])")
# names a help claims that the row's normal call does not write, and the words that say when
CONDITIONAL = {
    "score": {"junit.xml": "with a baseline"},
    "init": {".pre-commit-config.yaml": "--pre-commit"},
    "judgments merge": {"SPLIT.tsv": "BEIR", "judgments.sources.jsonl": "BEIR"},
}
STORES = ("cache", "cachefull")  # the world's cache directories (inv_world)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_world(tmp_path_factory.mktemp("help-outputs") / "world")


def _command(name: str) -> Any:
    command: Any = typer.main.get_command(app)
    for part in name.split():
        command = command.commands[part]
    return command


def _claims(command: Any) -> tuple[list[str], list[str], set[str]]:
    """The "Writes" sentences of ``command``'s help, the file names they claim, and those its
    ``--out`` help names."""
    text = " ".join((command.help or "").split())
    sentences = [s for s in SENTENCE.split(text) if s.startswith("Writes")]
    names = [m.group(0) for s in sentences for m in FILE.finditer(s)]
    out = next((p for p in command.params if "--out" in getattr(p, "opts", ())), None)
    in_out = {m.group(0) for m in FILE.finditer(getattr(out, "help", None) or "")}
    return sentences, names, in_out


def _pattern(name: str) -> re.Pattern[str]:
    """A claimed name as the file names it stands for: an upper-case part is any name."""
    base = name.rsplit("/", 1)[-1]
    parts = [r"[^/]+" if p.isupper() else re.escape(p) for p in re.split(r"([A-Z]+)", base) if p]
    return re.compile("".join(parts) + r"\Z")


def _option_values(command: Any, argv: list[str], sentences: list[str]) -> list[Path]:
    """The paths given to the options the sentences name (``--out``, ``--export``, ...)."""
    named = {o for s in sentences for o in OPTION.findall(s)}
    values = []
    for param in command.params:
        opts = set(getattr(param, "opts", ()))
        if not opts & named:
            continue
        values += [Path(argv[i + 1]) for i, a in enumerate(argv[:-1]) if a in opts]
    return values


def _written(root: Path, before: dict[str, str]) -> list[Path]:
    after = tree_snapshot(root)
    changed = [Path(p) for p, digest in after.items() if before.get(p) != digest]
    return [
        p
        for p in changed
        if p.relative_to(root).parts[0] not in STORES and not p.name.endswith(("-wal", "-shm"))
    ]


def _copied(path: Path, sentences: list[str], command: Any, argv: list[str]) -> bool:
    """``path`` is a file of the input a sentence says is copied ("a copy of ... --into")."""
    copied = [s for s in sentences if "a copy of" in s]
    for source in _option_values(command, argv, copied):
        for out in _option_values(command, argv, [s.split("a copy of")[0] for s in copied]):
            twin = source / path.relative_to(out) if path.is_relative_to(out) else None
            if twin is not None and twin.is_file() and twin.read_bytes() == path.read_bytes():
                return True
    return False


@pytest.mark.parametrize("row", [r for r in ROWS if not r.serves], ids=lambda r: r.id)
def test_a_command_writes_what_its_help_says(
    row: Row, world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command = _command(row.name)
    sentences, names, in_out = _claims(command)
    case = new_case(row, world, tmp_path)
    try:
        if row.judges is not None and row.name != "run":  # a row that must ask the judge
            _with_judge(case, None)
        before = tree_snapshot(case.root)
        outcome = run_in_process(case, monkeypatch)
        assert outcome.code == row.exit, outcome.stdout + outcome.stderr
        argv = [str(case.root / a) if (case.root / a).exists() else a for a in case.argv()]
        given = {p.resolve() for p in _option_values(command, argv, sentences)}
        written = _written(case.root, before)
        unclaimed = [
            str(p.relative_to(case.root))
            for p in written
            if p.resolve() not in given
            and not any(_pattern(n).match(p.name) for n in names)
            and not _copied(p, sentences, command, argv)
        ]
        assert not unclaimed, f"written, but its help does not say so: {unclaimed}"
        conditional = CONDITIONAL.get(row.name, {})
        for name in [*names, *sorted(in_out)]:
            base = name.rsplit("/", 1)[-1]
            if base in conditional:
                assert any(conditional[base] in s for s in sentences), (name, sentences)
                continue
            assert any(_pattern(name).match(p.name) for p in written), (
                f"its help says it writes {name}, but it wrote {sorted(p.name for p in written)}"
            )
        if not sentences:
            assert not written, f"its help claims no output, but it wrote {written}"
    finally:
        case.close()


def test_annotate_writes_where_its_help_says() -> None:
    """`annotate` (a server, run by tests/test_annotate.py) appends to --out, by default the
    file its help names: POOL.ANNOTATOR.jsonl beside the pool."""
    command = _command("annotate")
    sentences, names, _ = _claims(command)
    assert any("--out" in s for s in sentences), sentences
    default = default_output(Path("labels/pool.jsonl"), "carol")
    assert default.parent == Path("labels")
    assert [n for n in names if _pattern(n).match(default.name)] == ["POOL.ANNOTATOR.jsonl"]


def test_the_conditions_name_real_claims() -> None:
    """Each name ``CONDITIONAL`` lets a row leave unwritten is one its help claims."""
    for name, conditional in CONDITIONAL.items():
        _, names, _ = _claims(_command(name))
        assert set(conditional) <= {n.rsplit("/", 1)[-1] for n in names}, name
