"""Terminal rendering of `evalret leakage`: the pairs, the fraction per slice, the verdict."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from evalret.core.leakage import LeakageResult
from evalret.report.escape import terminal

SHOWN_PAIRS = 50  # --json and --out list every pair
KIND_STYLE = {"exact": "bold red", "near-text": "red", "embedding": "yellow"}


def _clip(text: str, width: int = 70) -> str:
    return terminal(text if len(text) <= width else text[: width - 1] + "…")


def render_leakage(r: LeakageResult) -> Group:
    s = r.settings
    how = f"normalized text, character 3-gram Jaccard >= {s['text_threshold']}"
    if s.get("cosine_threshold") is not None:
        how += f", {terminal(str(s['model']))} cosine >= {s['cosine_threshold']}"
    else:
        how += " (no embedding check)"
    parts: list[RenderableType] = [
        Text.assemble(
            ("leakage ", "bold"),
            f"{terminal(r.train_source)} ({r.n_train:,} training queries) against "
            f"{terminal(r.golden_source)} "
            f"({r.n_golden:,} evaluated queries): {how}",
        )
    ]
    if r.pairs:
        counts = ", ".join(f"{n} {k}" for k, n in r.kind_counts().items() if n)
        table = Table(
            title=f"{len(r.pairs)} pair(s): {counts}"
            + (f" (first {SHOWN_PAIRS}; --json lists all)" if len(r.pairs) > SHOWN_PAIRS else ""),
            title_justify="left",
        )
        for col in ("kind", "golden query", "training line", "jaccard", "cosine"):
            table.add_column(col, justify="right" if col in ("jaccard", "cosine") else "left")
        for p in r.pairs[:SHOWN_PAIRS]:
            table.add_row(
                Text(p.kind, style=KIND_STYLE[p.kind]),
                Text(f"{terminal(p.query_id)}: {_clip(p.query_text)}"),
                Text(f"{p.train_line}: {_clip(p.train_text)}"),
                f"{p.text_similarity:.2f}",
                "-" if p.cosine is None else f"{p.cosine:.3f}",
            )
        parts += [Text(""), table]
    if len(r.slices) > 1 or r.pairs:
        table = Table(title="golden queries with a copy, per slice", title_justify="left")
        for col in ("slice", "n", "leaked", "fraction"):
            table.add_column(col, justify="left" if col == "slice" else "right")
        for sl in r.slices:
            table.add_row(
                Text(terminal(sl.name)),
                str(sl.n_queries),
                str(sl.n_leaked),
                Text(f"{sl.fraction:.1%}", style="red" if sl.n_leaked else ""),
            )
        parts += [Text(""), table]
    parts.append(Text(""))
    summary = (
        f"{len(r.leaked)} of {r.n_golden} golden queries ({r.fraction:.2%}) have a copy in the "
        "training file"
    )
    if r.max_fraction is None:
        parts.append(Text(summary, style="bold yellow" if r.pairs else "bold green"))
    elif r.failed:
        parts.append(
            Text(f"LEAKAGE FAILED: {summary}, above --max-fraction {r.max_fraction}", "bold red")
        )
    else:
        parts.append(
            Text(f"LEAKAGE PASSED: {summary}, within --max-fraction {r.max_fraction}", "bold green")
        )
    return Group(*parts)
