"""`evalret judge`: an LLM grades (query, document) pairs, written as annotation lines.

The pairs come from a pool (what `evalret pool` writes) or, with ``--from-report``, from the
unjudged documents of one index's top k in a run's report.json (texts from the config's golden
set, which must be the report's). The machinery (prompt, strict reading, votes, cache, plan)
is pipeline/judge.py's; the requests are engines/chat_api.py's.

``--calibrate HUMAN_LABELS`` (an annotation file, or a golden set directory) also asks the
judge about every pair the humans graded, and reports the judge's agreement with them
(pipeline/calibration.py); with ``judge.min_kappa`` set, labels are written only when Cohen's
kappa reaches it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalret.core.ranking import primary_index
from evalret.data.atomic import atomic_write_text, check_writable_file
from evalret.data.config import Config, JudgeConfig
from evalret.data.goldenset import GoldenSet, load_golden_set
from evalret.data.judgments import Scale, parse_scale
from evalret.data.overrides import Override, configured
from evalret.data.paths import Declared, Input, Output, cache_output, config_inputs, guard, unique
from evalret.data.schema import TOP_KEPT, RunReport
from evalret.errors import ConfigError, ExitCode, InputError, docs_page
from evalret.pipeline import judge as jp
from evalret.pipeline.annotation import read_pool
from evalret.pipeline.calibration import below_min, calibration, human_pairs
from evalret.pipeline.judge import JUDGE_SECTION
from evalret.pipeline.progress import ProgressBars, no_bars


@dataclass(frozen=True, kw_only=True)
class JudgeRequest:
    """What the command line asked for (``judge_command``'s one argument, every field named)."""

    pool: Path | None
    out: Path
    config: Path | None = None
    dry_run: bool = False
    votes: int | None = None
    limit: int | None = None
    from_report: Path | None = None
    index: str | None = None
    k: int = 10
    calibrate: Path | None = None
    overrides: Sequence[Override] = ()


@dataclass
class JudgeOutcome:
    """What `evalret judge` did (or, with --dry-run, would do)."""

    plan: dict[str, Any]  # pipeline/judge.dry_run's figures
    out: Path
    dry_run: bool
    written: int = 0
    judged_pairs: int = 0
    asked: int = 0
    unparseable: int = 0
    failed: int = 0
    failures: list[str] = field(default_factory=list)  # the first few reasons
    cost: float | None = None
    cost_from: str = ""  # "usage" (the API's token counts) or "estimate"
    skipped: int = 0  # pairs without a document text (never asked)
    calibration: dict[str, Any] | None = None
    refused: str | None = None  # why no labels were written (judge.min_kappa)
    incomplete: str | None = None  # what judging left undone (pipeline/judge.shortfall)

    @property
    def exit_code(self) -> ExitCode:
        """3 when judging left work undone (before any verdict: kappa on part of the pairs is
        none), 1 when judge.min_kappa refused the labels, else 0."""
        if self.incomplete is not None:
            return ExitCode.INTERNAL
        return ExitCode.REGRESSION if self.refused is not None else ExitCode.OK


def _judge_settings(cfg: Config, config: Path | None) -> JudgeConfig:
    if cfg.judge is None:
        where = str(config) if config is not None else "(the built-in defaults)"
        raise ConfigError(
            f"the config {where} has no judge: section: add one (judge: {{name: MODEL, "
            f"base_url: URL}}; see {docs_page('how-to/annotate-and-judgments', JUDGE_SECTION)})"
        )
    return cfg.judge


def _pool_pairs(pool: Path, scale: Scale) -> tuple[list[jp.Pair], int]:
    pairs, skipped = [], 0
    for item in read_pool(pool, scale):
        document = item.record.get("document")
        if not isinstance(document, str) or not document:
            skipped += 1
            continue
        record = {k: v for k, v in item.record.items() if k != "grade"}  # gold_grade kept
        pairs.append(jp.Pair(item.query_id, item.doc_id, item.record["query"], document, record))
    return pairs, skipped


def _golden(cfg: Config) -> GoldenSet:
    return load_golden_set(cfg.golden_set, cfg.relevance_level)


def _report_pairs(req: JudgeRequest, golden: GoldenSet) -> tuple[list[jp.Pair], int]:
    """The unjudged documents of the report's index's top k, in query then rank order."""
    assert req.from_report is not None
    try:
        report = RunReport.model_validate_json(req.from_report.read_bytes())
    except OSError as e:
        raise InputError(f"--from-report {req.from_report}: {e.strerror or e}") from None
    except ValueError as e:
        raise InputError(
            f"--from-report {req.from_report}: not a run's report.json ({e})"
        ) from None
    if report.golden_set.fingerprint != golden.fingerprint:
        raise InputError(
            f"--from-report {req.from_report} was made on another golden set "
            f"({report.golden_set.source}) than the config's ({golden.source}): give the "
            "config of that run"
        )
    index = req.index or primary_index(report.indexes)
    if index not in report.indexes:
        raise InputError(f"--index {index}: the report has {', '.join(report.indexes)}")
    query_text = dict(zip(golden.query_ids, golden.query_texts, strict=True))
    pairs, skipped = [], 0
    label = f"{req.from_report.parent.name or 'report'}:{index}"
    for qid, top in zip(report.query_ids, report.indexes[index].top_ids, strict=True):
        for rank, doc in enumerate(top[: req.k], start=1):
            if golden.is_judged(qid, doc) or qid not in query_text:
                continue
            if doc not in golden.doc_index:
                skipped += 1
                continue
            text = golden.doc_texts[golden.doc_index[doc]]
            record = {
                "query_id": qid,
                "doc_id": doc,
                "query": query_text[qid],
                "document": text,
                "best_rank": rank,
                "retrieved_by": {label: rank},
            }
            pairs.append(jp.Pair(qid, doc, query_text[qid], text, record))
    return pairs, skipped


def _declare(req: JudgeRequest, cfg: Config, judge: JudgeConfig) -> None:
    reads: list[Input] = []
    if req.pool is not None:
        reads.append(Input("the pool (POOL)", req.pool))
    if req.from_report is not None:
        reads += [Input("the report (--from-report)", req.from_report)]
    # the config's golden set and evalret's stores are inputs even when the pairs come from a
    # pool: labels written over queries.jsonl or the answer cache would destroy them
    reads += config_inputs(cfg, req.config)
    if req.calibrate is not None:
        reads.append(Input("the human labels (--calibrate)", req.calibrate, req.calibrate.is_dir()))
    if judge.prompt != jp.UMBRELA:
        reads.append(Input("the prompt (judge.prompt)", Path(judge.prompt)))
    writes = [Output("--out", req.out), *cache_output(cfg)]
    guard(Declared("judge", unique(reads), writes))


def _check_request(req: JudgeRequest, judge: JudgeConfig) -> None:
    if (req.pool is None) == (req.from_report is None):
        raise InputError("give a POOL file or --from-report REPORT (one of them)")
    if req.index is not None and req.from_report is None:
        raise InputError("--index picks an index of --from-report's run: give --from-report")
    if not 1 <= req.k <= TOP_KEPT:
        raise InputError(f"--k {req.k}: a report keeps the top {TOP_KEPT} of each query")
    if judge.min_kappa is not None and req.calibrate is None:
        raise ConfigError(
            f"judge.min_kappa is {judge.min_kappa}: give --calibrate HUMAN_LABELS (labels are "
            "written only when the judge agrees with humans that well)"
        )


def judge_command(req: JudgeRequest, *, progress: ProgressBars = no_bars) -> JudgeOutcome:
    """`evalret judge` (module docstring)."""
    cfg = configured(req.config, req.overrides)
    judge = _judge_settings(cfg, req.config)
    _check_request(req, judge)
    _declare(req, cfg, judge)
    scale = parse_scale(judge.scale)
    if req.pool is not None:
        pairs, skipped = _pool_pairs(req.pool, scale)
    else:
        pairs, skipped = _report_pairs(req, _golden(cfg))
    if req.limit is not None:
        pairs = pairs[: req.limit]
    humans = human_pairs(req.calibrate, scale) if req.calibrate is not None else []
    n_out = len(pairs)
    known = {(p.query_id, p.doc_id) for p in pairs}
    pairs += [p for p, _ in humans if (p.query_id, p.doc_id) not in known]
    check_writable_file(req.out, "labels file")  # a dry run says so too, before any cost
    cache = jp.AnswerCache.of(cfg)
    try:
        cache.check()  # a file there that is not evalret's answer cache: exit 2, untouched
        plan = jp.make_plan(pairs, judge, req.votes or judge.votes, cache)
        figures = jp.dry_run(plan, judge)
        outcome = JudgeOutcome(figures, req.out, req.dry_run, skipped=skipped)
        if req.dry_run:
            return outcome
        with progress() as factory:
            advance = factory("judging", len(plan.to_ask)) if factory is not None else None
            judged = jp.judge_plan(plan, judge, cache, advance)
    finally:
        cache.close()
    outcome.incomplete = jp.shortfall(
        judged, jp.cache_path(cfg) if cfg.cache.enabled else None
    )  # the labels got are written all the same
    return _finish(req, judge, scale, plan, judged, outcome, n_out, humans)


def _finish(
    req: JudgeRequest,
    judge: JudgeConfig,
    scale: Scale,
    plan: jp.Plan,
    judged: jp.Judged,
    outcome: JudgeOutcome,
    n_out: int,
    humans: list[tuple[jp.Pair, int]],
) -> JudgeOutcome:
    labels = judged.labels(plan)
    outcome.asked, outcome.unparseable = judged.asked, judged.unparseable
    outcome.failed, outcome.failures = len(judged.failed), judged.failed[: jp.SHOWN_FAILURES]
    outcome.cost, outcome.cost_from = jp.spent(judge, judged, outcome.plan)
    position = {(p.query_id, p.doc_id): i for i, p in enumerate(plan.pairs)}
    if humans:
        by_pair = {(p.query_id, p.doc_id): jp.vote_grade(v) for p, v, _ in labels}
        human = {(p.query_id, p.doc_id): g for p, g in humans}
        outcome.calibration = calibration(human, by_pair, scale)
        outcome.refused = below_min(judge, outcome.calibration)
    written = [
        jp.label_line(p, v, at, plan.model, plan.prompt.hash)
        for p, v, at in labels
        if position[(p.query_id, p.doc_id)] < n_out
    ]
    outcome.judged_pairs = len(written)
    if outcome.refused is None:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in written)
        atomic_write_text(req.out, text, "labels file")
        outcome.written = len(written)
    return outcome
