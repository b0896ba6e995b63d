"""``synth``: the settings of `evalret golden synth` (synthetic queries written by a chat model).

The endpoint is ``synth.chat`` when given, else the ``judge:`` section's (the same fields,
``ChatEndpointConfig``); the judge itself (``judge:``) checks that each source document answers
its query. The rules these settings drive are stated in pipeline/synth.py."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from evalret.data.config.base import AtKey, StrictModel, UsablePath
from evalret.data.config.endpoints import ChatEndpointConfig

STYLES = ("keyword", "question", "identifier")
Style = Literal["keyword", "question", "identifier"]


class SynthConfig(StrictModel):
    """`evalret golden synth`: which documents, which styles, which prompt, which filters."""

    chat: ChatEndpointConfig | None = Field(
        None, description="the chat endpoint that writes the queries; null: the judge: section's"
    )
    styles: dict[Style, float] = Field(
        {"keyword": 1.0, "question": 1.0, "identifier": 1.0},
        description="the styles asked for and their mix (weights; a style left out or at 0 is "
        "not used): keyword (a few search words), question (a natural question), identifier (a "
        "lookup of a code, name or number in the document)",
    )
    template: UsablePath | None = Field(
        None,
        description="a prompt file replacing the built-in prompt, with {document} (and "
        "optionally {style}, {examples} and {task}); its sha256 is recorded in the draft's "
        "manifest",
    )
    answer_format: Literal["line", "json"] = Field(
        "line",
        description="line: the answer's first non-empty line is the query; json: the built-in "
        'prompt asks for {"query": ...}, and the answer is read as a JSON object with a query '
        "string or a queries list",
    )
    clusters: int | None = Field(
        None,
        ge=1,
        le=10_000,
        description="k-means clusters of the document embeddings the documents are drawn from; "
        "null: the square root of --n, rounded up",
    )
    allocation: Literal["proportional", "equal"] = Field(
        "proportional",
        description="documents drawn per cluster: in proportion to its size, or the same number "
        "from each (at least one per cluster either way, while --n allows)",
    )
    multi_document: float = Field(
        0.0,
        ge=0,
        description="two-document questions from pairs of near neighbours (cosine): a share of "
        "--n below 1, or a count (a whole number) from 1",
    )
    examples: int = Field(
        5, ge=0, le=50, description="few-shot examples drawn (seeded) from the log's queries"
    )
    max_overlap: float = Field(
        0.8,
        ge=0,
        le=1,
        description="too easy when the share of the query's words found in its source document "
        "is above this AND BM25 ranks the source first by more than bm25_margin",
    )
    bm25_margin: float = Field(
        0.2,
        ge=0,
        le=1,
        description="the relative BM25 margin of the source document over the second, (s1 - "
        "s2) / s1, above which (with max_overlap) a query is too easy",
    )
    too_easy: Literal["tag", "drop"] = Field(
        "tag", description="a too-easy query is tagged too-easy, or dropped"
    )
    check_answerable: bool = Field(
        True,
        description="the judge (judge: section) grades each query against its source "
        "document(s); a query whose source is not graded relevant is dropped",
    )
    temperature: float = Field(
        0.7, ge=0, le=2, description="sampling temperature of the generation requests"
    )

    @field_validator("styles")
    @classmethod
    def _some_style(cls, v: dict[str, float]) -> dict[str, float]:
        if any(w < 0 for w in v.values()):
            raise ValueError("a style's weight is 0 or more")
        if not any(w > 0 for w in v.values()):
            raise ValueError(f"give at least one style a weight above 0 (of {', '.join(STYLES)})")
        return v

    @model_validator(mode="after")
    def _whole_count(self) -> SynthConfig:
        m = self.multi_document
        if m >= 1 and m != int(m):
            raise AtKey(
                f"{m}: a share of --n is below 1; from 1 it is a count (a whole number)",
                ("multi_document",),
            )
        return self
