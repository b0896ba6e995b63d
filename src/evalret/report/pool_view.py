"""Terminal view of `evalret pool`: one line on what was pooled and where it went."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalret.report.escape import markup_safe


def pool_line(
    n_documents: int, n_queries: int, n_total: int, k: int, labels: Sequence[str], out: Path
) -> str:
    """How many unjudged documents for how many queries, from which runs, into which file."""
    return (
        f"{n_documents} unjudged documents for {n_queries} of {n_total} queries, from the top "
        f"{k} of {markup_safe(', '.join(labels))} -> {markup_safe(str(out))}"
    )
