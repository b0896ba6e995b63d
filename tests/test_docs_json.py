"""Example files in the documentation are real files: every ```json block of docs/ and README.md
parses as one JSON document, and every ```jsonl block as JSON Lines (one JSON value a line), so
a reader can paste them. What a comment would say goes in the prose around the block."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [*sorted((REPO / "docs").rglob("*.md")), REPO / "README.md"]
OPEN = re.compile(r"^(\s*)```(json|jsonl)\s*$")
CLOSE = re.compile(r"^\s*```\s*$")


def json_blocks(text: str) -> list[tuple[int, str, list[str]]]:
    """Each ```json / ```jsonl block of a page: its opening line (1-based), its language and its
    lines, the fence's indentation removed."""
    blocks = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = OPEN.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, language, start = len(opening.group(1)), opening.group(2), i + 1
        body: list[str] = []
        i += 1
        while i < len(lines) and not CLOSE.match(lines[i]):
            body.append(lines[i][indent:])
            i += 1
        blocks.append((start, language, body))
        i += 1
    return blocks


def problems_of(language: str, body: list[str]) -> list[str]:
    """Why a block does not parse: none when it does."""
    if language == "json":
        try:
            json.loads("\n".join(body))
        except json.JSONDecodeError as e:
            return [str(e)]
        return []
    found = []
    for offset, line in enumerate(body, start=1):
        if not line.strip():
            continue
        try:
            json.loads(line)
        except json.JSONDecodeError as e:
            found.append(f"line {offset} of the block: {e}")
    return found


def test_every_json_and_jsonl_block_parses() -> None:
    failures = []
    counted = 0
    for page in PAGES:
        for line, language, body in json_blocks(page.read_text(encoding="utf-8")):
            counted += 1
            failures += [
                f"{page.relative_to(REPO)}:{line} ({language}): {problem}"
                for problem in problems_of(language, body)
            ]
    assert failures == [], "\n".join(failures)
    assert counted >= 4, "the documentation's example files are shown as ```json / ```jsonl"


@pytest.mark.parametrize(
    ("language", "body", "parses"),
    [
        ("json", ['{"a": 1,', ' "b": [2, 3]}'], True),
        ("json", ["// queries.jsonl", '{"id": "q-001"}'], False),
        ("jsonl", ['{"id": "q-001"}', "", '{"id": "q-002"}'], True),
        ("jsonl", ['{"id": "q-001",', ' "text": "wrapped"}'], False),
    ],
)
def test_a_comment_or_a_wrapped_record_fails(language: str, body: list[str], parses: bool) -> None:
    """A `//` comment is no JSON, and a JSON Lines record wrapped over two lines is two bad
    lines: the check finds both."""
    text = "\n".join(["intro", f"```{language}", *body, "```", "after"])
    [(line, found_language, found_body)] = json_blocks(text)
    assert (line, found_language, found_body) == (2, language, body)
    assert (problems_of(language, body) == []) is parses
