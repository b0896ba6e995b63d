"""What `evalret validate` finds about a golden set, as plain frozen dataclasses: the errors and
warnings, the counts, and every slice's size, reliability and minimum detectable nDCG@10
difference. Made by ``evalret.pipeline.validate``, drawn by ``evalret.report.validate_view``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from evalret.core.slices import RELIABILITY, Reliability
from evalret.errors import Problem

# reliability label -> what it means, e.g. "unreliable" -> "unreliable: only large changes show"
RELIABILITY_MEANING = {label: meaning for _, label, meaning in RELIABILITY}


@dataclass(frozen=True)
class SliceCheck:
    """One slice: how many queries, how reliable, and the smallest nDCG@10 change it detects."""

    name: str
    kind: str
    definition: str
    n_queries: int
    reliability: Reliability
    sd: float
    sd_source: str  # "assumed" or "report (k queries)"
    mde: float | None  # None for a slice of fewer than two queries


@dataclass(frozen=True)
class Summary:
    """Counts of a golden set as read (also when it has errors)."""

    format: str
    n_documents: int
    n_queries: int  # in the queries file
    n_evaluated: int  # judged (in the split, for BEIR): what a run evaluates
    n_scored: int  # evaluated queries with at least one relevant document
    n_judgments: int  # of the evaluated queries
    grades: dict[int, int]
    relevant_per_query: dict[str, float]  # min, median, mean, max over evaluated queries
    relevant_histogram: dict[str, int]
    tags: dict[str, int]
    n_with_frequency: int


def _problem_json(p: Problem) -> dict[str, Any]:
    """One problem as `validate --json` lists it."""
    return {"code": p.code, "file": p.file, "line": p.line, "message": p.message}


@dataclass(frozen=True)
class Validation:
    """What `evalret validate` found: errors (exit 2), warnings, summary and slices."""

    source: str
    errors: list[Problem]
    warnings: list[Problem]
    summary: Summary | None = None
    slices: list[SliceCheck] = field(default_factory=list)
    mde: dict[str, Any] = field(default_factory=dict)  # metric, alpha, power, sd settings
    # a draft (`evalret golden ...`): its number of queries, none judged yet; None: a golden set
    draft: int | None = None

    @property
    def ok(self) -> bool:
        """True when the golden set has no error (warnings allowed)."""
        return not self.errors

    def to_json(self) -> dict[str, Any]:
        """The JSON object `evalret validate --json` prints."""
        summary = None
        if self.summary is not None:
            summary = asdict(self.summary)
            summary["grades"] = {str(k): v for k, v in self.summary.grades.items()}
        out = {
            "source": self.source,
            "ok": self.ok,
            "errors": [_problem_json(p) for p in self.errors],
            "warnings": [_problem_json(p) for p in self.warnings],
            "summary": summary,
            "slices": [asdict(s) for s in self.slices],
            "mde": self.mde,
        }
        if self.draft is not None:  # only a draft's document has the key
            out["draft"] = {"queries": self.draft, "judged": 0}
        return out
