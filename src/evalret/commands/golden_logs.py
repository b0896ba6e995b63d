"""`evalret golden from-logs LOG --corpus CORPUS --n N --out DRAFT`: a golden-set draft sampled
from a query log.

The steps, each counted in the terminal and in the draft's manifest (``data.goldenset.draft``):

1. the log read (``data.querylog``: text, JSONL or CSV, gzipped or not; a bad line is an error
   naming file and line, or skipped and counted under ``--skip-bad-lines``);
2. every logged query screened for personal data before anything else is done with it
   (``pipeline.log_queries``: ``--pii drop|mask|keep``, counts by kind);
3. counted by normalized text, then near-duplicates collapsed (``core.querylog``);
4. strata by traffic (head, torso, tail by cumulative share, ``--traffic-cuts``) and the seeded
   draw of ``--n`` with ``--allocation proportional|equal`` (``core.querylog``);
5. the draft written whole (``data.goldenset.draft.write_draft``): the corpus copied as native
   lines, the drawn queries ``log-0001``, ... in traffic order (count descending, then text),
   each with ``origin: log``, ``frequency`` (its count after collapsing) and the tags
   ``traffic:<stratum>``, ``shape:<name>`` (``core.query_shapes``, rare terms against the
   corpus) and ``FIELD:VALUE`` for each ``--keep-field`` (its most frequent value).

Same inputs and seed: a byte-identical draft. No query's text is printed, nor recorded in the
manifest.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalret.core import query_shapes as qs
from evalret.core.duplicates import NEAR_DUPLICATE_JACCARD, normalize_text
from evalret.core.querylog import (
    DEFAULT_CUTS,
    STRATA,
    Draw,
    FromLogsResult,
    LoggedQuery,
    StratumRow,
    by_traffic,
    collapse_near_duplicates,
    count_queries,
    draw,
)
from evalret.data.atomic import sha256_file
from evalret.data.goldenset.draft import (
    CorpusDoc,
    DraftQuery,
    corpus_file,
    read_corpus,
    write_draft,
)
from evalret.data.paths import Declared, Input, Output, guard
from evalret.data.querylog import LogEntry, LogFormat, QueryLog, read_log, resolved_format
from evalret.errors import InputError
from evalret.pipeline.log_queries import Screened, compile_patterns, patterns_digest, screen
from evalret.pipeline.progress import ProgressBars, no_bars

COMMAND = "golden from-logs"
ID_PREFIX = "log-"


@dataclass(frozen=True)
class FromLogsRequest:
    """What `evalret golden from-logs` was asked."""

    log: Path
    corpus: Path
    n: int
    out: Path
    seed: int = 0
    pii: str = "drop"
    pii_patterns: tuple[str, ...] = ()
    allocation: str = "proportional"
    cuts: tuple[float, float] = DEFAULT_CUTS
    log_format: LogFormat = field(default_factory=LogFormat)


def parse_cuts(text: str) -> tuple[float, float]:
    """``HEAD,TORSO`` (``--traffic-cuts``) as two shares rising within (0, 1)."""
    try:
        head, torso = (float(p) for p in text.split(","))
    except ValueError:
        raise InputError(f"--traffic-cuts {text!r}: give two shares, HEAD,TORSO") from None
    if not 0 < head < torso < 1:
        raise InputError(f"--traffic-cuts {text!r}: the shares must rise within (0, 1)")
    return head, torso


def _declare(req: FromLogsRequest) -> None:
    reads = [
        Input("the query log (LOG)", req.log),
        Input("the corpus (--corpus)", req.corpus, tree=req.corpus.is_dir()),
    ]
    guard(Declared(COMMAND, reads, [Output("--out", req.out, "tree")]))


def _field_tags(
    entries: Sequence[LogEntry], chosen: Sequence[LoggedQuery]
) -> list[tuple[str, ...]]:
    """``FIELD:VALUE`` tags of each chosen query: per kept field, the value its log entries
    (those whose normalized text the query stands for, near-duplicates merged into it included)
    gave most often, by count (ties: the smallest value)."""
    wanted = {m: q.normalized for q in chosen for m in (q.normalized, *q.merged)}
    values: dict[str, dict[str, Counter[str]]] = {}
    for e in entries:
        key = wanted.get(normalize_text(e.text))
        if key is not None:
            for k, v in e.fields.items():
                if v.strip():
                    values.setdefault(key, {}).setdefault(k, Counter())[v.strip()] += e.count
    out = []
    for q in chosen:
        fields = values.get(q.normalized, {})
        out.append(
            tuple(
                f"{k}:{min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0]}"
                for k, c in sorted(fields.items())
            )
        )
    return out


def _queries(
    chosen: Sequence[LoggedQuery],
    labels: Sequence[str],
    docs: Sequence[CorpusDoc],
    fields: Sequence[tuple[str, ...]],
) -> list[DraftQuery]:
    shapes = qs.shape_tags([q.text for q in chosen], [d.embedded for d in docs])
    width = max(4, len(str(len(chosen))))
    return [
        DraftQuery(
            id=f"{ID_PREFIX}{i:0{width}d}",
            text=q.text,
            tags=(f"traffic:{label}", *shape, *extra),
            frequency=q.count,
            origin="log",
        )
        for i, (q, label, shape, extra) in enumerate(
            zip(chosen, labels, shapes, fields, strict=True), 1
        )
    ]


def _timestamps(entries: Sequence[LogEntry]) -> dict[str, str] | None:
    stamps = [e.timestamp for e in entries if e.timestamp]
    if not stamps:
        return None
    try:
        numeric = sorted(stamps, key=float)
        return {"first": numeric[0], "last": numeric[-1]}
    except ValueError:
        return {"first": min(stamps), "last": max(stamps)}


def _rules(req: FromLogsRequest, log_kind: str) -> dict[str, Any]:
    fmt = req.log_format
    return {
        "n": req.n,
        "traffic_cuts": list(req.cuts),
        "allocation": req.allocation,
        "near_duplicate_jaccard": NEAR_DUPLICATE_JACCARD,
        "normalize": "core.duplicates.normalize_text",
        "pii": {
            "mode": req.pii,
            "kinds": ["email", "phone", "card", "ip", "custom"],
            "patterns": len(req.pii_patterns),
            "patterns_sha256": patterns_digest(req.pii_patterns),
        },
        "log": {
            "format": log_kind,
            "query_field": fmt.query_field,
            "count_field": fmt.count_field,
            "timestamp_field": fmt.timestamp_field,
            "keep_fields": list(fmt.keep_fields),
            "skip_bad_lines": fmt.skip_bad_lines,
        },
        "shapes": {
            "short_words": qs.SHORT_WORDS,
            "long_words": qs.LONG_WORDS,
            "identifier_digits": qs.IDENTIFIER_DIGITS,
            "rare_share": qs.RARE_SHARE,
            "rare_min_df": qs.RARE_MIN_DF,
        },
    }


def _step(
    req: FromLogsRequest,
    log: QueryLog,
    screened: Screened,
    result: FromLogsResult,
    drawn: Draw,
) -> dict[str, Any]:
    """The manifest's step: inputs with their sha256, the counts at each stage, the rules."""
    corpus = corpus_file(req.corpus)
    counts: dict[str, Any] = {
        "lines": result.lines,
        "skipped": result.skipped,
        f"pii_{'dropped' if req.pii == 'drop' else req.pii + 'ed'}": screened.counts(),
        "no_alphanumeric": result.no_alphanumeric,
        "distinct": result.distinct,
        "after_near_duplicates": result.collapsed,
        "by_stratum": {s: {"queries": drawn.sizes[s], "traffic": drawn.traffic[s]} for s in STRATA},
        "drawn": dict(drawn.drawn),
        "written": result.written,
        "shapes": result.shapes,
    }
    stamps = _timestamps(screened.entries) if req.log_format.timestamp_field else None
    if stamps is not None:
        counts["timestamps"] = stamps
    return {
        "command": COMMAND,
        "seed": req.seed,
        "inputs": [
            {"role": "log", "path": str(req.log), "sha256": log.sha256},
            {"role": "corpus", "path": str(corpus), "sha256": sha256_file(corpus)},
        ],
        "counts": counts,
        "rules": _rules(req, resolved_format(req.log, req.log_format)),
    }


def _check(req: FromLogsRequest) -> list[re.Pattern[str]]:
    if req.n < 1:
        raise InputError(f"--n {req.n}: draw at least one query")
    if not 0 < req.cuts[0] < req.cuts[1] < 1:
        raise InputError(f"--traffic-cuts {req.cuts}: the shares must rise within (0, 1)")
    if req.out.exists() and (not req.out.is_dir() or any(req.out.iterdir())):
        raise InputError(f"{req.out}: the output must be a new or empty directory")
    return compile_patterns(req.pii_patterns)


def from_logs_command(req: FromLogsRequest, *, progress: ProgressBars = no_bars) -> FromLogsResult:
    """`evalret golden from-logs` (module docstring)."""
    patterns = _check(req)
    _declare(req)
    docs = read_corpus(req.corpus)
    log = read_log(req.log, req.log_format)
    with progress() as bar:
        screened = screen(log.entries, req.pii, patterns, bar)
    counted = count_queries([(e.text, e.count) for e in screened.entries])
    collapsed = collapse_near_duplicates(counted.queries)
    if not collapsed:
        raise InputError(
            f"{req.log}: no query left to draw ({len(log.entries)} read, {screened.queries} "
            f"with personal data ({req.pii}), {counted.no_alphanumeric} without a letter or digit)"
        )
    ranked = by_traffic(collapsed)
    drawn = draw(ranked, req.n, req.seed, req.allocation, req.cuts)
    chosen = [ranked[i] for i in drawn.positions]
    labels = [drawn.strata[i] for i in drawn.positions]
    queries = _queries(chosen, labels, docs, _field_tags(screened.entries, chosen))
    shapes = Counter(t for q in queries for t in q.tags if t.startswith("shape:"))
    result = FromLogsResult(
        out=req.out,
        log_format=resolved_format(req.log, req.log_format),
        lines=len(log.entries),
        skipped=len(log.skipped),
        pii_mode=req.pii,
        pii_queries=screened.queries,
        pii_by_kind=dict(screened.by_kind),
        no_alphanumeric=counted.no_alphanumeric,
        distinct=len(counted.queries),
        collapsed=len(collapsed),
        strata=[StratumRow(s, drawn.sizes[s], drawn.traffic[s], drawn.drawn[s]) for s in STRATA],
        written=len(queries),
        requested=req.n,
        documents=len(docs),
        shapes={s: shapes[f"shape:{s}"] for s in qs.SHAPES},
    )
    write_draft(req.out, docs, queries, [_step(req, log, screened, result, drawn)])
    return result
