"""The generated reference pages (docs/reference/cli.md, config.md, metrics.md, report-json.md)
hold what their cog blocks make from the code today: `cog --check` fails on a stale page, and
the message says how to regenerate. What they are made from is complete: every config key has a
description, every metric family its meaning, every config section a valid example, every
command an example whose recorded output is what it prints (rerun in the model lane)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import typer.main
from cogapp import Cog
from pydantic import BaseModel, Field

from evalret.cli import app
from evalret.cli_reference import EXAMPLES, RERUN, cli_reference, recorded, run_examples
from evalret.core.metrics import FAMILIES
from evalret.data.config import Config, parse_config
from evalret.report.config_examples import CONFIG_EXAMPLES
from evalret.report.reference_docs import (
    config_reference,
    md_text,
    metrics_reference,
    report_json_reference,
    section_title,
    sections,
)
from evalret.report.shown_output import normalise

REPO = Path(__file__).resolve().parents[1]
PAGES = [
    REPO / "docs" / "reference" / f"{name}.md"
    for name in ("cli", "config", "metrics", "report-json")
]
REGENERATE = "cog -r " + " ".join(p.relative_to(REPO).as_posix() for p in PAGES)


def _cog_check(pages: list[Path], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """`cog --check` on ``pages`` in this process (the evalret under test is the one imported):
    its status and what it printed."""
    status = Cog().main(
        ["cog", "--check", "--diff", f"--check-fail-msg={REGENERATE}", *map(str, pages)]
    )
    out = capsys.readouterr()
    return status, out.out + out.err


def test_the_generated_pages_are_up_to_date(capsys: pytest.CaptureFixture[str]) -> None:
    status, said = _cog_check(PAGES, capsys)
    assert status == 0, f"a generated reference page is stale: run `{REGENERATE}`\n{said}"


def test_a_stale_page_fails_the_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A page whose generated part no longer matches the code fails, with the command to
    regenerate it; the same page regenerated passes."""
    page = tmp_path / "metrics.md"
    shutil.copy(REPO / "docs" / "reference" / "metrics.md", page)
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace("`set_recall`", "`recall`"), encoding="utf-8")
    status, said = _cog_check([page], capsys)
    assert status != 0 and REGENERATE in said
    assert Cog().main(["cog", "-r", str(page)]) == 0
    assert page.read_text(encoding="utf-8") == text
    assert _cog_check([page], capsys)[0] == 0


def test_each_page_holds_its_generated_reference() -> None:
    """Each page's block is the function it names (not an empty block), with the regenerate
    command at the top."""
    made = {"cli": cli_reference, "config": config_reference, "metrics": metrics_reference}
    made["report-json"] = report_json_reference
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        assert text.startswith("<!-- Generated") and "cog -r docs/reference/" in text, page
        assert made[page.stem]() in text, page


def test_the_cli_page_does_not_depend_on_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI reference reads the commands' declarations, not --help's wrapped, coloured text."""
    plain = cli_reference()
    monkeypatch.setenv("COLUMNS", "30")
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    assert cli_reference() == plain
    assert "\x1b[" not in plain
    for command in ("evalret run", "evalret config schema", "evalret judgments merge"):
        assert f"## `{command}`\n" in plain


def _leaf_commands() -> list[str]:
    """Every command of the app that runs (not a group), as ``evalret a b``."""
    found: list[str] = []

    def walk(command: object, path: str) -> None:
        subs = getattr(command, "commands", None)
        if not subs:
            found.append(path)
            return
        for name, sub in subs.items():
            if not sub.hidden:
                walk(sub, f"{path} {name}")

    walk(typer.main.get_command(app), "evalret")
    return found


def test_every_command_has_an_example_with_its_recorded_output() -> None:
    """The page shows an example per command that runs, each with its output (recorded by
    running it) unless it says why not; no option sits in a table, where a squeezed column
    would break its name mid-word."""
    leaves = _leaf_commands()
    assert len(leaves) > 20 and sorted(EXAMPLES) == sorted(leaves)
    page = (REPO / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    record = recorded()
    for path, example in EXAMPLES.items():
        assert f"$ {example.command}\n" in page, path
        if not example.not_run:
            assert record[path]["output"], path
            assert "\n".join(record[path]["output"][:3]) in page, path
    assert not [line for line in page.splitlines() if line.startswith("| `--")]


def _same(entry: dict[str, object]) -> list[str]:
    """An example's recorded lines as they are compared: normalised (layout and padding aside:
    a table's widths follow the length of the temporary directory's path)."""
    return normalise("\n".join(entry["output"]))  # type: ignore[arg-type]


@pytest.mark.model
def test_the_recorded_examples_are_what_the_commands_print() -> None:
    """Every example rerun (in a fresh copy of the demo, with an empty cache: the packaged model
    embeds it) ends with its exit code and prints, normalised, what the page was made from; an
    example whose timings vary is checked for its exit code only."""
    fresh = run_examples()
    record = recorded()
    stale = [
        path
        for path, entry in fresh.items()
        if path not in record
        or entry["recipe"] != record[path]["recipe"]
        or (not EXAMPLES[path].varies and _same(entry) != _same(record[path]))
    ]
    assert stale == [], f"the recorded output of {stale} is not what they print: run `{RERUN}`"


def test_every_config_section_has_an_example_that_loads() -> None:
    """Each section of the config reference shows an example; each is a whole config the
    loader accepts, and sets a key of its section."""
    titles = [section_title(s) for s in sections(Config)]
    assert sorted(CONFIG_EXAMPLES) == sorted(titles)
    for title, text in CONFIG_EXAMPLES.items():
        parse_config(text, f"the example of {title or 'the top level'}")
        top = title.split(" ")[0].split(".")[0]
        assert text.startswith(top) or not top, title
    page = (REPO / "docs" / "reference" / "config.md").read_text(encoding="utf-8")
    assert page.count("Example:\n\n```yaml\n") == len(titles)


def test_every_config_key_has_a_description() -> None:
    """Every field of every model a config holds (nested sections, each provider, each index
    type and reranker) says what it is: the config reference and the editors' hover text show
    it."""
    models: set[type[BaseModel]] = {s.model for s in sections(Config)}
    assert len(models) > 30
    missing = [
        f"{model.__name__}.{name}"
        for model in models
        for name, info in model.model_fields.items()
        if not (info.description or "").strip()
    ]
    assert missing == []


def test_every_metric_family_says_what_it_scores() -> None:
    for family in FAMILIES:
        assert family.at_k.strip() and family.whole.strip(), family.name


def test_markdown_text_is_escaped_outside_code() -> None:
    """A description is one table cell whatever it holds: pipes, emphasis, brackets and HTML
    are escaped; code spans keep their text."""
    assert md_text("a | b") == "a \\| b"
    assert md_text("called with **options") == "called with \\*\\*options"
    assert md_text("_x_ in snake_case") == "\\_x\\_ in snake_case"
    assert md_text("[a] <b>\nnext") == "\\[a\\] &lt;b> next"
    assert md_text("``a_b|c`` and `d`") == "`a_b\\|c` and `d`"


class _Documented(BaseModel):
    """A model documented by comments, as data/schema/'s are."""

    # above the field,
    # on two lines
    first: int
    second: str  # at the end of its line
    third: dict[str, int] = Field(
        default_factory=dict,  # inside the brackets of a field over several lines
    )
    model_config = {"extra": "forbid"}  # no field: dropped
    fourth: int = 0

    def method(self) -> int:
        # inside a method: no field's
        return 1


def test_field_comments_are_read_from_the_source() -> None:
    """report.json's reference reads each field's comments: those above it and at the end of its
    line(s); a comment of another line is nobody's."""
    from evalret.report.reference_docs import field_comments

    assert field_comments(_Documented) == {
        "first": "above the field, on two lines",
        "second": "at the end of its line",
        "third": "inside the brackets of a field over several lines",
    }


def test_every_report_field_is_described() -> None:
    """Every field of report.json and compare.json says what it holds (a description or a
    comment in data/schema/): the report.json reference has no empty cell."""
    from evalret.data.schema import CompareReport, RunReport
    from evalret.report.reference_docs import field_description

    missing = [
        f"{s.model.__name__}.{name}"
        for root in (RunReport, CompareReport)
        for s in sections(root)
        for name in s.model.model_fields
        if not field_description(s.model, name).strip()
    ]
    assert missing == []
