"""`evalret history add | show | report`: keep a metric's trend across commits in a SQLite
database (``data/history.py``), show it as a table or draw it as trend.html.

The database is ``--db``, else ``history.path`` of the ``--config`` file, else
``evalret-history.sqlite`` in the current directory.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalret.core.metrics import parse_metric
from evalret.core.ranking import primary_index
from evalret.data.atomic import atomic_write_text, sha256_file
from evalret.data.baseline import load_baseline
from evalret.data.config import load_config
from evalret.data.history import DEFAULT_PATH, HistoryEntry, add_report, read_history
from evalret.data.paths import Declared, Input, Output, config_inputs, guard
from evalret.errors import InputError, MetricError
from evalret.report.history_view import (
    LABEL_CHARS,
    SHOWN_ENTRIES,
    HistoryView,
    build_view,
    names_in,
)
from evalret.report.trend_html import trend_html

TREND_PAGE = "trend.html"


def history_path(db: Path | None, config: Path | None) -> Path:
    """The history database: ``db``, else the config's ``history.path``, else DEFAULT_PATH;
    a config given is loaded (and so checked) either way."""
    configured = load_config(config).history.path if config is not None else None  # checked
    return db or configured or DEFAULT_PATH


def history_add_command(
    *,
    report_path: Path,
    db: Path | None = None,
    config: Path | None = None,
    label: str | None = None,
    commit: str | None = None,
    baseline: bool = False,
) -> tuple[Path, HistoryEntry]:
    """Append the saved report.json at ``report_path`` to the history (checked as `evalret
    report` checks it: a bad file is exit 2 naming it and the field)."""
    if label is not None and len(label) > LABEL_CHARS:
        raise InputError(
            f"--label: {len(label)} characters; a label names an entry in at most {LABEL_CHARS}"
        )
    path = history_path(db, config)
    guard(
        Declared(
            "history add",
            [Input("the report (REPORT)", report_path), *_config_input(config)],
            updated=[Input("the history database", path)],
        )
    )
    report = load_baseline(report_path, "report")
    try:
        digest = sha256_file(report_path)
    except OSError as e:
        raise InputError(f"cannot read report {report_path}: {e.strerror or e}") from None
    entry = add_report(
        path,
        report,
        source=str(report_path),
        report_sha256=digest,
        label=label,
        commit=commit,
        baseline=baseline,
    )
    return path, entry


def _config_input(config: Path | None) -> list[Input]:
    """The config and what it names (its golden set, evalret's stores in its cache directory):
    none of them may be the database or the trend page."""
    return config_inputs(load_config(config), config) if config is not None else []


def _metric_name(name: str) -> str:
    """A metric as reports name it (``nDCG@10`` -> ``ndcg@10``); an unparsable name as given."""
    try:
        return str(parse_metric(name))
    except MetricError:
        return name


def _chosen(kind: str, asked: Sequence[str], held: Sequence[str], db: Path) -> list[str]:
    """The names asked for, each one the history holds; else an InputError listing them."""
    missing = [a for a in asked if a not in held]
    if missing:
        raise InputError(
            f"{kind} {', '.join(repr(m) for m in missing)} not in history {db}; it holds: "
            + ", ".join(held)
        )
    return list(dict.fromkeys(asked))


def history_view(
    *,
    db: Path | None,
    config: Path | None,
    indexes: Sequence[str] | None,
    slices: Sequence[str] | None,
    metrics: Sequence[str] | None,
    all_by_default: bool,
    last: int = SHOWN_ENTRIES,
) -> HistoryView:
    """The history read and narrowed to the indexes, slices and metrics asked for. Without a
    choice: every metric, and (``all_by_default``) every index and slice, else the primary index
    (exact when present) and the slice ``all``. The ``last`` newest entries are shown (0: all);
    a negative count is an InputError."""
    if last < 0:
        raise InputError(f"--last {last}: a number of entries, 0 for all")
    path = history_path(db, config)
    history = read_history(path)
    held_indexes, held_slices, held_metrics = names_in(history)
    if not held_indexes:  # no entry yet
        return build_view(history, [], [], [], last)
    if indexes:
        chosen_indexes = _chosen("index", indexes, held_indexes, path)
    else:
        chosen_indexes = held_indexes if all_by_default else [primary_index(held_indexes)]
    primary = primary_index(chosen_indexes)  # first: its interval is the one drawn
    chosen_indexes = [primary, *(i for i in chosen_indexes if i != primary)]
    default_slices = held_slices if all_by_default or "all" not in held_slices else ["all"]
    chosen_slices = _chosen("slice", slices, held_slices, path) if slices else default_slices
    chosen_metrics = (
        _chosen("metric", [_metric_name(m) for m in metrics], held_metrics, path)
        if metrics
        else held_metrics
    )
    return build_view(history, chosen_indexes, chosen_slices, chosen_metrics, last)


def history_report_command(
    *,
    db: Path | None,
    config: Path | None,
    out: Path | None,
    indexes: Sequence[str] | None = None,
    slices: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    last: int = SHOWN_ENTRIES,
) -> Path:
    """Write trend.html of the history to ``out`` (a file, or a directory to hold trend.html;
    default: trend.html beside the database), its ``last`` newest entries (0: all); returns the
    path written."""
    path = history_path(db, config)
    target = out if out is not None else path.parent / TREND_PAGE
    if target.is_dir():
        target = target / TREND_PAGE
    reads = [Input("the history database", path), *_config_input(config)]
    guard(Declared("history report", reads, [Output("--out", target)]))
    view = history_view(
        db=db,
        config=config,
        indexes=indexes,
        slices=slices,
        metrics=metrics,
        all_by_default=True,
        last=last,
    )
    atomic_write_text(target, trend_html(view), "trend page")
    return target
