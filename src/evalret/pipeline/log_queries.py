"""Logged queries screened for personal data, before anything else is done with them (`evalret
golden from-logs`; any golden command that reads a query log): the rules of what is found are
``core.pii``'s, what happens to a query holding some is ``--pii``:

* ``drop`` (the default): the query is left out, its count with it;
* ``mask``: each match is replaced by its kind's marker (``[EMAIL]``, ``[PHONE]``, ``[CARD]``,
  ``[IP]``, ``[PII]``) and the masked text goes on;
* ``keep``: the text goes on as logged (the command warns: the output holds personal data).

The values of the kept fields (``--keep-field``, written as tags) are screened as the query is:
a match in one counts for the query, which is dropped, masked (the value too) or kept whole.
A timestamp holding a match is left out. The counts are by kind: how many queries held at least
one match of that kind. The user's patterns (``--pii-pattern``) are named in messages by their
position, never quoted (a pattern may spell the very data it hides), and recorded in a manifest
by a digest only. Nothing here ever shows a matched text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from evalret.core.digest import json_digest
from evalret.core.pii import KINDS, PiiMatch, find_pii, mask
from evalret.data.querylog import LogEntry
from evalret.errors import InputError, Problem
from evalret.pipeline.progress import ProgressFactory

PROGRESS_STEP = 1000  # entries screened between two advances of the progress bar


def compile_patterns(
    patterns: Sequence[str], option: str = "--pii-pattern"
) -> list[re.Pattern[str]]:
    """The user's patterns compiled; InputError (exit 2) naming each bad one by position."""
    compiled, problems = [], []
    for i, text in enumerate(patterns, 1):
        try:
            compiled.append(re.compile(text))
        except re.error as e:
            where = f" at position {e.pos}" if e.pos is not None else ""
            problems.append(
                Problem(f"{option} #{i} is not a valid regular expression ({e.msg}{where})")
            )
    if problems:
        raise InputError(f"{len(problems)} of the {option} patterns cannot be used", problems)
    return compiled


def patterns_digest(patterns: Sequence[str]) -> str | None:
    """A digest of the user's patterns, in order (None: none), for a manifest: it tells two
    runs' patterns apart without recording them."""
    return json_digest(list(patterns)) if patterns else None


@dataclass(frozen=True)
class Screened:
    """A log's entries after screening: those that go on (masked under ``mask``) and the counts."""

    entries: list[LogEntry]
    mode: str
    queries: int = 0  # entries that held personal data (dropped, masked or kept)
    by_kind: dict[str, int] = field(default_factory=dict)  # entries holding each kind

    def counts(self) -> dict[str, int | dict[str, int]]:
        """The manifest's record: ``{"queries": N, "by_kind": {...}}``."""
        return {"queries": self.queries, "by_kind": dict(self.by_kind)}


def _entry_matches(
    entry: LogEntry, patterns: Sequence[re.Pattern[str]]
) -> tuple[list[PiiMatch], dict[str, list[PiiMatch]], bool]:
    """The matches in the query, in each kept field, and whether the timestamp holds one."""
    fields = {k: find_pii(v, patterns) for k, v in entry.fields.items()}
    stamp = bool(entry.timestamp and find_pii(entry.timestamp, patterns))
    return find_pii(entry.text, patterns), fields, stamp


def _masked(
    entry: LogEntry, query: list[PiiMatch], fields: dict[str, list[PiiMatch]], stamp: bool
) -> LogEntry:
    kept = {k: mask(v, fields[k]) for k, v in entry.fields.items()}
    timestamp = None if stamp else entry.timestamp
    return LogEntry(mask(entry.text, query), entry.count, entry.line, timestamp, kept)


def screen(
    entries: Sequence[LogEntry],
    mode: str,
    patterns: Sequence[re.Pattern[str]] = (),
    bar: ProgressFactory | None = None,
) -> Screened:
    """``entries`` screened for personal data under ``mode`` (the module doc)."""
    advance = bar("screening for personal data", len(entries)) if bar is not None else None
    out: list[LogEntry] = []
    kinds: Counter[str] = Counter()
    held = 0
    for i, entry in enumerate(entries, 1):
        query, fields, stamp = _entry_matches(entry, patterns)
        found = {m.kind for m in query} | {m.kind for ms in fields.values() for m in ms}
        if advance is not None and i % PROGRESS_STEP == 0:
            advance(PROGRESS_STEP)
        if not found and not stamp:
            out.append(entry)
            continue
        if stamp and not found:  # a timestamp alone: dropped from the entry, never shown
            out.append(_masked(entry, query, fields, stamp))
            continue
        held += 1
        kinds.update(found)
        if mode == "mask":
            out.append(_masked(entry, query, fields, stamp))
        elif mode == "keep":
            out.append(_masked(entry, [], {k: [] for k in fields}, stamp))
    if advance is not None:
        advance(len(entries) % PROGRESS_STEP)
    by_kind = {k: kinds[k] for k in KINDS if kinds[k]}
    return Screened(out, mode, held, by_kind)
