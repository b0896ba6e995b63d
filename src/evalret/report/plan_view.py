"""The terminal view of `evalret run --dry-run`: what a run would embed and what it would cost."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from evalret.data.schema import EmbeddingPlan, PlannedKind
from evalret.report.escape import terminal


def _cost(kind: PlannedKind) -> str:
    return "" if kind.cost is None else f"{kind.cost:.4f}"


def plan_table(plan: EmbeddingPlan) -> Table:
    """One row per kind of text: texts, cached, to embed, tokens, requests and cost."""
    table = Table(title="Dry run: nothing embedded, no request sent", title_justify="left")
    for column in ("", "texts", "cached", "to embed", "tokens", "requests", "cost"):
        table.add_column(column, justify="left" if not column else "right")
    kinds = (("documents", plan.document), ("queries", plan.query))
    for label, kind in kinds:
        requests = "" if kind.requests is None else str(kind.requests)
        table.add_row(
            label,
            str(kind.texts),
            str(kind.cached),
            str(kind.to_embed),
            str(kind.tokens),
            requests,
            _cost(kind),
        )
    if plan.price_per_million_tokens is not None:
        total = sum(k.cost or 0.0 for _, k in kinds)
        table.add_row("total", "", "", "", str(sum(k.tokens for _, k in kinds)), "", f"{total:.4f}")
    return table


def print_plan(console: Console, plan: EmbeddingPlan) -> None:
    """The dry run's table and how its figures were found (the cost hint only for a model that
    takes a price: ``EmbeddingPlan.price_key``)."""
    console.print(Text(terminal(f"model {plan.model} (provider {plan.provider})")))
    cache = plan.cache if plan.cache is not None else "off"
    console.print(Text(terminal(f"embedding cache: {cache}"), style="dim"))
    console.print(plan_table(plan))
    for line in plan.rerank:
        console.print(Text(terminal(line)))
    tokens = f"tokens: {plan.tokenizer}"
    if plan.tokenizer_note:
        tokens += f" ({plan.tokenizer_note})"
    console.print(Text(terminal(tokens), style="dim"))
    if plan.price_per_million_tokens is None:
        if plan.price_key is not None:  # a local model has no price to set
            console.print(Text(f"cost: set {plan.price_key} to see it", style="dim"))
    else:
        price = f"cost at {plan.price_per_million_tokens:g} per million tokens"
        console.print(Text(price, style="dim"))
