"""Is a golden set sound, and how large a change can it detect? (`evalret validate`, and
``evalret.validate`` for a library user.)

The checks that make a golden set unusable (schema, duplicate ids, judgments for unknown documents
or queries, grades out of range, malformed lines) live in the readers
(``evalret.data.goldenset``): a run and ``validate`` share them, and they
are errors. Warnings do not stop a run:

* ``no-relevant-document``: a query with no judgment of grade >= ``relevance_level`` (from the
  readers), as are ``unjudged-query`` (a native query judging nothing, not evaluated),
  ``empty-document`` / ``empty-query`` (embedded as the empty string) and
  ``non-integer-grade`` (qrels grades truncated toward zero, as trec_eval reads them);
* ``duplicate-query-text``: two evaluated queries with the same normalized text;
* ``near-duplicate-query``: two evaluated queries whose character 3-gram Jaccard similarity is at
  least 0.8 (``evalret.core.duplicates``);
* ``duplicate-document-text``: two documents with the same normalized text (title and text);
* ``no-alphanumeric-text``: a text with no letter or digit.

The summary counts documents, queries and judgments, the grade distribution and the relevant
documents per query, and for every slice its size, its reliability (domain table: under 200
unreliable, 200-999 minimal, 1,000-4,999 production grade, 5,000+ high) and the minimum detectable
nDCG@10 difference: (z_{1-alpha/2} + z_{power}) * sd / sqrt(n), two-sided, alpha 0.05, power 0.8.

``sd`` stands for the standard deviation of the per-query differences between two systems. With a
report, it is the standard deviation of the slice's per-query nDCG@10 in that report: the sd of
differences equals it when the two systems' per-query scores correlate at 0.5, and is smaller when
they correlate more, as versions of one model do (the demo set: all-MiniLM-L6-v2 against its
32-dimension truncation, per-query sd 0.338 and 0.344, correlation 0.58, sd of differences 0.312).
Without a report, sd = 0.40: the largest per-query nDCG@10 sd measured on real sets here (BEIR
SciFact test with all-MiniLM-L6-v2: 0.399; the demo set: 0.338).

The checks are pure: they work on a scan that is already read (and a report's scores); only
``run_validation`` reads files. The result types are in
``evalret.data.validation``.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from evalret.core.duplicates import (
    NEAR_DUPLICATE_JACCARD,
    exact_duplicate_groups,
    normalize_text,
    similar_pairs,
    word_difference,
)
from evalret.core.metrics import SCORE_SLACK
from evalret.core.ranking import primary_index
from evalret.core.slices import reliability
from evalret.core.stats import minimum_detectable_effect
from evalret.data.config import Config, SlicesConfig, WithoutRelevant, configured_slices
from evalret.data.goldenset import (
    GoldenSetScan,
    nothing_to_evaluate,
    relevant_count,
    scored_query_ids,
)
from evalret.data.textfile import read_json
from evalret.data.validation import SliceCheck, Summary, Validation
from evalret.errors import ConfigError, InputError, Problem
from evalret.pipeline.gate import slice_setting_problems
from evalret.report.escape import json_document

ASSUMED_NDCG_SD = 0.40
ALPHA = 0.05
POWER = 0.8
MDE_METRIC = "ndcg@10"
RELEVANT_BUCKETS: tuple[tuple[int, int, str], ...] = (
    *((k, k, str(k)) for k in range(4)),
    (4, 5, "4-5"),
    (6, 10, "6-10"),
    (11, 10**12, "11+"),
)


def report_scores(report: Any, source: str, metric: str = MDE_METRIC) -> dict[str, float]:
    """Per-query ``metric`` of a saved report.json (its exact index when present), by query id.

    Reads only ``query_ids`` and ``indexes.<index>.per_query.<metric>``, so reports of older
    evalret versions serve as well.
    """
    indexes = report.get("indexes") if isinstance(report, dict) else None
    query_ids = report.get("query_ids") if isinstance(report, dict) else None
    if not isinstance(indexes, dict) or not indexes or not isinstance(query_ids, list):
        raise InputError(f"{source} is not an evalret report (no query_ids or indexes)")
    name = primary_index(indexes)
    entry = indexes[name]
    per_query = entry.get("per_query") if isinstance(entry, dict) else None
    per_query = per_query if isinstance(per_query, dict) else {}
    values = per_query.get(metric)
    if not isinstance(values, list) or len(values) != len(query_ids):
        raise InputError(
            f"{source} has no per-query {metric} for index {name!r} "
            f"(its metrics: {', '.join(per_query) or 'none'}); run with {metric} in metrics"
        )
    bad = next((i for i, v in enumerate(values) if _score_problem(v) is not None), None)
    if bad is not None:
        raise InputError(
            f"{source}: indexes.{name}.per_query.{metric}[{bad}]: {_score_problem(values[bad])}"
        )
    return {str(q): float(v) for q, v in zip(query_ids, values, strict=True) if v is not None}


def _score_problem(v: Any) -> str | None:
    """What is wrong with a per-query score (None: nothing): it is None, or a number (not a
    bool) in [0, 1] as every metric family gives, within SCORE_SLACK of rounding."""
    if v is None:
        return None
    if type(v) not in (int, float):
        return f"{v!r} is not a number"
    if not -SCORE_SLACK <= v <= 1 + SCORE_SLACK:
        return f"{v!r} is not a score in [0, 1]"
    return None


def _where(where: tuple[Path, int]) -> tuple[str, int]:
    return str(where[0]), where[1]


def _exact_duplicates(
    kind: str,
    ids: list[str],
    norms: list[str],
    where: dict[str, tuple[Path, int]],
    texts: dict[str, str] | None = None,
) -> list[Problem]:
    """A warning for each record whose normalized text repeats an earlier one's (with the text's
    start when ``texts`` is given)."""
    out = []
    for group in exact_duplicate_groups(norms):
        first = ids[group[0]]
        for k in group[1:]:
            rid = ids[k]
            excerpt = f": {texts[rid][:80]!r}" if texts is not None else ""
            out.append(
                Problem(
                    f"{kind} {rid!r} has the same normalized text as {kind} {first!r} "
                    f"(line {where[first][1]}){excerpt}",
                    *_where(where[rid]),
                    f"duplicate-{kind}-text",
                )
            )
    return out


def text_warnings(
    scan: GoldenSetScan,
    threshold: float = NEAR_DUPLICATE_JACCARD,
    queries: list[str] | None = None,
) -> list[Problem]:
    """Duplicate and near-duplicate evaluated queries (or ``queries``: a draft's, none
    evaluated), duplicate documents, texts without a letter or digit. Each warning points at the
    later of the two records."""
    out: list[Problem] = []
    queries = scan.evaluate if queries is None else queries
    q_norm = [normalize_text(scan.queries[q]) for q in queries]
    d_ids = list(scan.docs)
    d_norm = [normalize_text(scan.docs[d]) for d in d_ids]

    for ids, norms, where, kind in (
        (queries, q_norm, scan.query_where, "query"),
        (d_ids, d_norm, scan.doc_where, "document"),
    ):
        raw = scan.queries if kind == "query" else scan.docs
        for rid, t in zip(ids, norms, strict=True):
            if not t and raw[rid].strip():
                out.append(
                    Problem(
                        f"{kind} {rid!r} has no letter or digit: {raw[rid].strip()[:60]!r}",
                        *_where(where[rid]),
                        "no-alphanumeric-text",
                    )
                )

    out += _exact_duplicates("query", queries, q_norm, scan.query_where, scan.queries)
    for i, j, sim in similar_pairs(q_norm, threshold=threshold):
        if q_norm[i] == q_norm[j]:
            continue  # an exact duplicate, reported above
        a, b = queries[i], queries[j]
        out.append(
            Problem(
                f"query {b!r} is a near-duplicate of query {a!r} (line "
                f"{scan.query_where[a][1]}; character 3-gram Jaccard {sim:.2f}; "
                f"{word_difference(q_norm[j], q_norm[i])}): "
                f"{scan.queries[b][:80]!r} ~ {scan.queries[a][:80]!r}",
                *_where(scan.query_where[b]),
                "near-duplicate-query",
            )
        )
    out += _exact_duplicates("document", d_ids, d_norm, scan.doc_where)
    return out


def summarize(scan: GoldenSetScan, draft: bool = False) -> Summary:
    """Counts, grade distribution and relevant documents per evaluated query (a draft: its tags
    and frequencies counted over all its queries, none evaluated)."""
    counted = list(scan.queries) if draft else scan.evaluate
    judged = [scan.qrels.get(q, {}) for q in scan.evaluate]
    relevant = [relevant_count(j, scan.relevance_level) for j in judged]
    grades = Counter(g for j in judged for g in j.values())
    per_query: dict[str, float] = {}
    if relevant:
        per_query = {
            "min": float(min(relevant)),
            "median": float(statistics.median(relevant)),
            "mean": round(statistics.fmean(relevant), 4),
            "max": float(max(relevant)),
        }
    histogram = {
        label: sum(1 for r in relevant if low <= r <= high) for low, high, label in RELEVANT_BUCKETS
    }
    tags = Counter(t for q in counted for t in scan.tags.get(q, ()))
    return Summary(
        format=scan.format,
        n_documents=len(scan.docs),
        n_queries=len(scan.queries),
        n_evaluated=len(scan.evaluate),
        n_scored=sum(1 for r in relevant if r > 0),
        n_judgments=sum(len(j) for j in judged),
        grades=dict(sorted(grades.items())),
        relevant_per_query=per_query,
        relevant_histogram=histogram,
        tags=dict(sorted(tags.items())),
        n_with_frequency=sum(1 for q in counted if q in scan.frequency),
    )


def slice_checks(
    scan: GoldenSetScan,
    slices: SlicesConfig,
    scores: dict[str, float] | None = None,
    alpha: float = ALPHA,
    power: float = POWER,
    assumed_sd: float = ASSUMED_NDCG_SD,
    queries_without_relevant: WithoutRelevant = "exclude",
) -> list[SliceCheck]:
    """The slices a run would report (over the queries it scores: those with a relevant document,
    or all with ``queries_without_relevant: zero``), each with its reliability and minimum
    detectable nDCG@10 difference. Raises ConfigError for bad custom slice definitions."""
    scored = scored_query_ids(
        scan.evaluate, scan.qrels, scan.relevance_level, queries_without_relevant
    )
    built = configured_slices(
        scored,
        [scan.queries[q] for q in scored],
        [scan.tags.get(q, ()) for q in scored],
        [scan.frequency.get(q) for q in scored],
        slices,
    )
    out = []
    for s in built:
        members = [scored[i] for i in np.flatnonzero(s.mask)]
        sd, source = assumed_sd, "assumed"
        if scores is not None:
            values = [scores[q] for q in members if q in scores]
            if len(values) >= 2:
                sd, source = float(np.std(values, ddof=1)), f"report ({len(values)} queries)"
        n = len(members)
        out.append(
            SliceCheck(
                name=s.name,
                kind=s.kind,
                definition=s.definition,
                n_queries=n,
                reliability=reliability(n),
                sd=round(sd, 4),
                sd_source=source,
                mde=minimum_detectable_effect(sd, n, alpha, power, two_sided=True)
                if n >= 2
                else None,
            )
        )
    return out


def is_draft(scan: GoldenSetScan) -> bool:
    """A draft (`evalret golden ...`): a native set with queries, none of which judges a
    document yet. Validate checks what can be checked of it (ids, duplicates, the corpus) and
    says so, rather than failing on nothing to evaluate."""
    return (
        scan.format == "native"
        and bool(scan.queries)
        and not any(scan.qrels.get(q) for q in scan.queries)
    )


def _check_draft(scan: GoldenSetScan, near_threshold: float) -> Validation:
    """A draft's errors and warnings: those of its files, less "no query to evaluate" and the
    unjudged-query warning of each query (a draft judges nothing yet, by design)."""
    errors = [p for p in scan.problems if p.code != "no-queries"]
    warnings = [p for p in scan.warnings if p.code != "unjudged-query"]
    warnings += text_warnings(scan, near_threshold, list(scan.queries))
    warnings.sort(key=lambda p: (p.file or "", p.line or 0))
    return Validation(
        source=scan.source,
        errors=errors,
        warnings=warnings,
        summary=summarize(scan, draft=True),
        mde=mde_settings(None),
        draft=len(scan.queries),
    )


def check_golden_set(
    scan: GoldenSetScan,
    slices: SlicesConfig,
    scores: dict[str, float] | None = None,
    report_source: str | None = None,
    near_threshold: float = NEAR_DUPLICATE_JACCARD,
    queries_without_relevant: WithoutRelevant = "exclude",
) -> Validation:
    """Every error and warning of a scanned golden set, its summary and its slices; excluding
    queries without a relevant document, a set with none left is an error (a run would refuse
    it). A draft (``is_draft``) is checked as one."""
    if is_draft(scan):
        return _check_draft(scan, near_threshold)
    errors = list(scan.problems)
    warnings = list(scan.warnings) + text_warnings(scan, near_threshold)
    if scores is not None and not set(scores) & set(scan.evaluate):
        warnings.append(
            Problem(
                "the report shares no query with this golden set: the minimum detectable "
                f"differences use the assumed sd {ASSUMED_NDCG_SD}",
                report_source,
                None,
                "report-mismatch",
            )
        )
    checks: list[SliceCheck] = []
    try:
        checks = slice_checks(
            scan, slices, scores, queries_without_relevant=queries_without_relevant
        )
    except ConfigError as e:
        errors.extend(e.problems or [Problem(e.summary, code="slices")])
    warnings.sort(key=lambda p: (p.file or "", p.line or 0))
    summary = summarize(scan)
    scored = scored_query_ids(
        scan.evaluate, scan.qrels, scan.relevance_level, queries_without_relevant
    )
    if scan.evaluate and not scored:
        message = nothing_to_evaluate(scan.source, len(scan.evaluate), scan.relevance_level)
        errors.append(Problem(message, code="nothing-to-evaluate"))
    return Validation(
        source=scan.source,
        errors=errors,
        warnings=warnings,
        summary=summary,
        slices=checks,
        mde=mde_settings(report_source),
    )


def mde_settings(report_source: str | None) -> dict[str, Any]:
    """How the minimum detectable differences were computed, as `validate --json` lists it."""
    return {
        "metric": MDE_METRIC,
        "alpha": ALPHA,
        "power": POWER,
        "two_sided": True,
        "assumed_sd": ASSUMED_NDCG_SD,
        "report": report_source,
    }


def unreadable(source: str, error: InputError) -> Validation:
    """The result for a golden set whose files cannot even be located or told apart."""
    problems = error.problems or [Problem(error.summary, code="golden-set")]
    return Validation(source=source, errors=list(problems), warnings=[])


def run_validation(cfg: Config, report: Path | None = None) -> Validation:
    """Read the config's golden set (and a report's per-query nDCG@10) and check it."""
    from evalret.data.goldenset import scan_golden_set
    from evalret.errors import GoldenSetError

    scores = None
    if report is not None:
        scores = report_scores(read_json(report, "report"), str(report))
    try:
        scan = scan_golden_set(cfg.golden_set, cfg.relevance_level)
    except GoldenSetError as e:
        return unreadable(str(cfg.golden_set.path), e)
    result = check_golden_set(
        scan,
        cfg.slices,
        scores,
        str(report) if report else None,
        queries_without_relevant=cfg.queries_without_relevant,
    )
    if not result.slices:  # the slices could not be built: their errors are listed
        return result
    names = [s.name for s in result.slices if s.n_queries]
    return replace(result, errors=[*result.errors, *slice_setting_problems(cfg, names)])


def validation_json(result: Validation) -> str:
    """The JSON document `evalret validate --json` prints."""
    return json_document(json.dumps(result.to_json(), indent=1, ensure_ascii=False))
