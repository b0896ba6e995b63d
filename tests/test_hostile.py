"""A hostile golden set (HTML, Markdown, escape sequences, control characters, newlines and pipes
in ids, tags and texts) through every command and every output, with the real packaged model:
HTML escaped, Markdown inert, junit.xml well-formed, the terminal free of raw escapes, TREC run
files with six columns."""

from __future__ import annotations

import json
import re
import unicodedata
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import invoke, marks_its_users

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
JS_LINK = "[x](javascript:alert(1))"
IMAGE = "![i](http://evil/x.png)"
CLEAR = "\x1b[2J"
TITLE = "\x1b]0;pwned\x07"
CONTROLS = "".join(chr(c) for c in range(0x20) if chr(c) not in "\n\t\r")
RLO = "\u202e"
QUOTES = "\"'><svg/onload=alert(1)>"  # breaks out of an HTML attribute when not escaped
# tags become slices named after them; each kind of payload gets its own
TAGS = [
    f"tag{SCRIPT}",
    f"{IMG} {JS_LINK}",
    "a | pipe |\n# heading",
    f"{CLEAR}{TITLE}",
    f"ctl{CONTROLS}",
    f"[bold]markup[/] {RLO}",
    IMAGE,
    f"attr{QUOTES}",
]
DOCS = [
    ("d-pw", "How to reset a forgotten password from the login page."),
    (f"d{SCRIPT}", f"Upload limits for large files {SCRIPT} {IMG}"),
    (f"d{JS_LINK}", f"Billing and invoices {JS_LINK} {IMAGE}\n# heading"),
    ("d|pipe|", f"Two-factor authentication {CLEAR}{TITLE} | pipe |"),
    (f"d{IMAGE}", f"Exporting data to CSV{CONTROLS}{RLO}"),
    ("d-api", "API rate limits and tokens."),
    (f"d{QUOTES}", f"Single sign-on {QUOTES}"),
]
QUERIES = [
    (f"q{SCRIPT}", "forgot my password", {"d-pw": 1, f"d{SCRIPT}": 2}, TAGS[:2]),
    ("q|pipe|", f"how large can an upload be {IMG}", {f"d{IMAGE}": 1}, TAGS[1:4]),
    (f"q{JS_LINK}", f"invoice {JS_LINK}\n# heading", {"d-api": 1, "d|pipe|": 1}, TAGS[3:5]),
    (f"q{RLO}x", f"two factor {CLEAR}{TITLE}", {f"d{JS_LINK}": 1}, TAGS[4:]),
    (f"q{IMAGE}", f"export csv{CONTROLS}", {"d-pw": 1}, TAGS[5:]),
    ("q-plain", "api token limit", {"d-api": 1}, [TAGS[0], TAGS[6]]),
    (f"q{QUOTES}", f"single sign on {QUOTES}", {f"d{QUOTES}": 1, "d-pw": 0}, TAGS[6:]),
]
ALLOWED_TAGS = re.compile(r"</?(details|summary|code)>")


def write_golden_set(directory: Path) -> None:
    directory.mkdir()
    docs = [{"id": d, "title": f"{RLO}{IMG}", "text": t} for d, t in DOCS]
    queries = [{"id": q, "text": t, "relevant": r, "tags": g} for q, t, r, g in QUERIES]
    for name, rows in (("corpus.jsonl", docs), ("queries.jsonl", queries)):
        (directory / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


def rerank_by_length(query: str, documents: list[str]) -> list[float]:
    """The rerank index's reranker: the shorter document first (its hostile slices are shown)."""
    return [-float(len(d)) for d in documents]


def write_config(path: Path, extra: str = "") -> Path:
    path.write_text(
        "golden_set: {path: gs}\n"
        "indexes:\n  rr: {type: rerank, of: exact, k: 5, reranker: {provider: python, "
        "callable: 'test_hostile:rerank_by_length'}}\n"
        "metrics: [ndcg@10, recall@10]\n"
        "bootstrap: {samples: 100}\n"
        f"slices:\n  custom: [{{name: {json.dumps('custom' + SCRIPT + CLEAR)}, tag: "
        f"{json.dumps(TAGS[0])}}}]\n" + extra
    )
    return path


def assert_terminal_clean(output: str) -> None:
    """No control character but newlines, no format character, no line separator."""
    bad = {
        c for c in output if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")
    }
    assert not bad, sorted(bad)


def assert_markdown_inert(text: str) -> None:
    """No raw HTML from input, no link or image, no heading from input, tables unbroken."""
    assert "<" not in ALLOWED_TAGS.sub("", text), text
    assert "](" not in text and "\x1b" not in text
    assert not any(line.lstrip().startswith("# heading") for line in text.splitlines())
    assert_terminal_clean(text)
    columns = None
    for line in text.splitlines():
        if not line.startswith("|"):
            columns = None
            continue
        pipes = len(re.findall(r"(?<!\\)\|", line))
        columns = columns or pipes  # the header row sets the count
        assert pipes == columns, line


@dataclass(frozen=True)
class HostileRuns:
    root: Path
    base_out: Path
    gated_out: Path
    gated_code: int
    outputs: dict[str, str]


@pytest.fixture(scope="module")
@marks_its_users("model")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> HostileRuns:
    """A baseline run, then a gated run (32 dimensions, a floor that fails) against it."""
    root = tmp_path_factory.mktemp("hostile")
    write_golden_set(root / "gs")
    base_cfg = write_config(root / "base.yaml")
    gated_cfg = write_config(
        root / "gated.yaml",
        "model: {truncate_dim: 32}\ngate:\n  thresholds: {ndcg@10: {min: 0.999}}\n",
    )
    base_out, gated_out = root / "base", root / "gated"
    baseline = str(root / "base.json")
    run = ("run", "--no-progress", "-c")
    code, first = invoke(*run, str(base_cfg), "-o", str(base_out), "--save-baseline", baseline)
    assert code == 0, first
    gated_code, gated_output = invoke(*run, str(gated_cfg), "-o", str(gated_out), "-b", baseline)
    # the same two runs with every table (into other directories: the files stay those above)
    _, first_verbose = invoke(*run, str(base_cfg), "-o", str(root / "v1"), "--verbose")
    _, gated_verbose = invoke(
        *run, str(gated_cfg), "-o", str(root / "v2"), "-b", baseline, "--verbose"
    )
    outputs = {
        "run": first,
        "gated run": gated_output,
        "run --verbose": first_verbose,
        "gated run --verbose": gated_verbose,
    }
    return HostileRuns(root, base_out, gated_out, gated_code, outputs)


def test_run_terminal_shows_hostile_text_escaped(hostile: HostileRuns) -> None:
    """`evalret run`, saving a baseline, then gated against it with a failing floor, each with
    the short summary and with --verbose: no raw control or bidi character on the terminal, and
    rich markup in a tag shown as written (the short summary names slices only in the failed
    checks)."""
    assert hostile.gated_code == 1, hostile.outputs["gated run"]
    for name, output in hostile.outputs.items():
        assert_terminal_clean(output)
        if name != "run":
            assert "[bold]markup[/]" in output, name


def test_run_report_md_is_inert(hostile: HostileRuns) -> None:
    """report.md (metrics tables without a gate; checks, notes and failures with one), and
    comment.md (the same, after its hidden marker, with the per-query losses of the gated run)."""
    for out in (hostile.base_out, hostile.gated_out):
        assert_markdown_inert((out / "report.md").read_text())
        marker, comment = (out / "comment.md").read_text().split("\n", 1)
        assert marker == "<!-- evalret-comment -->"
        comment, run_line = comment.rstrip("\n").rsplit("\n", 1)  # the run id, hidden, last
        assert re.fullmatch(r"<!-- evalret-run: [0-9a-f-]{36} -->", run_line), run_line
        assert_markdown_inert(comment)
    assert "### Biggest per-query losses" in (hostile.gated_out / "comment.md").read_text()
    assert "### Rerank rr of exact (top 5)" in (hostile.base_out / "report.md").read_text()


def test_run_junit_is_well_formed(hostile: HostileRuns) -> None:
    """junit.xml parses although slice names hold characters XML 1.0 forbids."""
    junit = ET.parse(hostile.gated_out / "junit.xml").getroot()
    failed = [c for c in junit.iter("testcase") if c.find("failure") is not None]
    assert any("script" in (c.get("classname") or "") for c in failed)


def test_run_html_and_trec_files(hostile: HostileRuns) -> None:
    """report.html: payloads only as text (elements, attributes, SVG titles), no raw control or
    bidi character; every TREC run line has six columns."""
    for out in (hostile.base_out, hostile.gated_out):
        html = (out / "report.html").read_text()
        assert "<script" not in html.lower() and "<img" not in html.lower()
        assert "<svg/" not in html and 'href="javascript' not in html
        assert "&lt;script&gt;" in html
        assert 'id="rerank"' in html
        assert_terminal_clean(html)
        for run_file in out.glob("run.*.trec"):
            lines = run_file.read_text().splitlines()
            assert lines and all(len(line.split()) == 6 for line in lines), run_file


def test_compare_report_and_baseline_show_escape_hostile_text(
    hostile: HostileRuns, tmp_path: Path
) -> None:
    """`evalret compare` of the two saved reports, `evalret report` of both JSON files and
    `evalret baseline show`: terminal clean, compare.md and disagreements.md inert, HTML
    escaped."""
    code, output = invoke(
        "compare",
        str(hostile.base_out / "report.json"),
        str(hostile.gated_out / "report.json"),
        "-o",
        str(tmp_path),
        "--no-progress",
        "--samples",
        "200",
    )
    assert code == 0, output
    assert_terminal_clean(output)
    for name in ("compare.md", "disagreements.md"):
        assert_markdown_inert((tmp_path / name).read_text())
    listing = (tmp_path / "disagreements.md").read_text()
    assert "&lt;script&gt;" in listing  # the examples carry the hostile texts
    for saved in (tmp_path / "compare.json", hostile.gated_out / "report.json"):
        code, output = invoke("report", str(saved), "-o", str(tmp_path / saved.stem))
        assert code == 0, output
        assert_terminal_clean(output)
        html = (tmp_path / saved.stem / "report.html").read_text().lower()
        assert "<script" not in html and "<img" not in html and "&lt;script&gt;" in html
        assert "<svg/" not in html
        assert_terminal_clean(html)  # no raw control or bidi character either
    code, output = invoke("baseline", "show", str(hostile.root / "base.json"))
    assert code == 0, output
    assert_terminal_clean(output)


def test_validate_leakage_and_pool_escape_hostile_text(hostile: HostileRuns) -> None:
    """`evalret validate`, `evalret leakage --no-embedding` with a hostile training file and
    `evalret pool` into a hostile path: terminal free of raw escapes and markup."""
    code, output = invoke("validate", str(hostile.root / "base.yaml"))
    assert code == 0, output
    assert_terminal_clean(output)
    train = hostile.root / "train.jsonl"
    lines = [{"text": t} for _, t, _, _ in QUERIES] + [{"text": f"{TITLE}{SCRIPT}"}]
    train.write_text("".join(json.dumps(r) + "\n" for r in lines))
    code, output = invoke(
        "leakage", "--train", str(train), str(hostile.root / "base.yaml"), "--no-embedding"
    )
    assert code == 0, output
    assert_terminal_clean(output)
    assert "7 of 7 golden queries" in output
    pool = hostile.root / f"pool{CLEAR}[red].jsonl"  # the output path is quoted back
    code, output = invoke(
        "pool", str(hostile.root / "base.yaml"), "-k", "3", "-o", str(pool), "--no-progress"
    )
    assert code == 0, output
    assert_terminal_clean(output)
    assert "[red].jsonl" in output


def test_errors_quoting_hostile_input_reach_the_terminal_escaped(tmp_path: Path) -> None:
    """Error messages quote ids and paths from input (here a duplicate query id in a directory
    named with an escape sequence): `validate` and `run` print them escaped."""
    gs = tmp_path / f"gs{TITLE}"
    write_golden_set(gs)
    with (gs / "queries.jsonl").open("a") as f:
        f.write(json.dumps({"id": f"q{RLO}x", "text": "t", "relevant": ["d-pw"]}) + "\n")
    code, output = invoke("validate", str(gs))
    assert code == 2, output
    assert_terminal_clean(output)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"golden_set: {{path: {json.dumps(gs.name)}}}\n")
    code, output = invoke("run", "-c", str(cfg), "--no-progress")
    assert code == 2 and "duplicate query id" in output, output
    assert_terminal_clean(output)


@pytest.mark.model
def test_a_newline_in_a_path_cannot_forge_a_line(tmp_path: Path) -> None:
    """Error messages and "wrote PATH" lines kept a path's newline raw (only an error's own line
    structure may break lines), so a config value could print a line of its own, such as a fake
    verdict. Each problem and each path is one line, its newline shown as \\n."""
    forged = "\nGATE PASSED: all 3 checks pass"
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"golden_set: {{path: {json.dumps(str(tmp_path / 'nowhere') + forged)}}}\n")
    code, output = invoke("run", "-c", str(cfg), "--no-progress")
    assert code == 2, output
    assert not any(line.startswith("GATE PASSED") for line in output.splitlines()), output
    assert "\\nGATE PASSED" in output
    out = tmp_path / f"pool{forged}.jsonl"
    write_golden_set(tmp_path / "gs")
    (tmp_path / "p.yaml").write_text("golden_set: {path: gs}\n")
    code, output = invoke("pool", str(tmp_path / "p.yaml"), "-o", str(out), "--no-progress")
    assert code == 0, output
    assert not any(line.startswith("GATE PASSED") for line in output.splitlines()), output


def test_json_printed_by_validate_and_leakage_is_terminal_clean(hostile: HostileRuns) -> None:
    """`validate --json` and `leakage --json` print texts as JSON: json.dumps escapes C0 controls
    but left bidi overrides (U+202E), C1 controls and line separators raw, so a hostile text
    could reorder the terminal. They are written as \\u escapes: the parsed data are unchanged."""
    train = hostile.root / "train-json.jsonl"
    train.write_text(json.dumps({"text": f"two factor {CLEAR}\u2028{TITLE}{RLO}\x9b2J"}) + "\n")
    code, out_validate = invoke("validate", str(hostile.root / "base.yaml"), "--json")
    assert code == 0, out_validate
    cfg = str(hostile.root / "base.yaml")
    code, out_leak = invoke("leakage", "--train", str(train), cfg, "--no-embedding", "--json")
    assert code == 0, out_leak
    for output in (out_validate, out_leak):
        assert_terminal_clean(output)
    data = json.loads(out_leak)
    assert data["pairs"][0]["train_text"] == f"two factor {CLEAR}\u2028{TITLE}{RLO}\x9b2J"
    assert json.loads(out_validate)["ok"] is True
