"""The generated reference pages (docs/reference/cli.md, config.md, metrics.md, report-json.md)
hold what their cog blocks make from the code today: `cog --check` fails on a stale page, and
the message says how to regenerate. What they are made from is complete: every config key has a
description, every metric family its meaning."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cogapp import Cog
from pydantic import BaseModel, Field

from evalret.cli_reference import cli_reference
from evalret.core.metrics import FAMILIES
from evalret.data.config import Config
from evalret.report.reference_docs import (
    config_reference,
    md_text,
    metrics_reference,
    report_json_reference,
    sections,
)

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
        assert f"## `{command}`" in plain


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
