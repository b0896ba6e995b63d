"""``slices``: the slices metrics are reported and gated for."""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import Field, field_validator, model_validator

from evalret.core.slices import CustomSlice, Slice, build_slices
from evalret.data.config.base import StrictModel


class SliceDefinition(StrictModel):
    """A slice declared in the config: queries matching every given criterion."""

    name: str = Field(min_length=1, description="the slice's name in reports and gates")
    tag: str | None = Field(None, description="queries carrying this tag")
    query_ids: list[str] | None = Field(None, description="queries with these ids")
    pattern: str | None = Field(None, description="regular expression searched in the query text")

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as e:
                raise ValueError(f"invalid regular expression: {e}") from None
        return v

    @model_validator(mode="after")
    def _has_criterion(self) -> SliceDefinition:
        if self.tag is None and self.query_ids is None and self.pattern is None:
            raise ValueError("a slice needs at least one of: tag, query_ids, pattern")
        return self

    def to_core(self) -> CustomSlice:
        """The plain slice definition the core builds slices from (its ids a tuple)."""
        ids = None if self.query_ids is None else tuple(self.query_ids)
        return CustomSlice(**self.model_dump(exclude={"query_ids"}), query_ids=ids)


class SlicesConfig(StrictModel):
    """The slices metrics are reported and gated for, beside ``all``."""

    tags: bool = Field(True, description="one slice per tag found in the golden set")
    frequency: bool = Field(True, description="head/torso/tail when queries carry frequency")
    head_fraction: float = Field(0.05, gt=0, lt=1, description="share of queries in the head")
    tail_fraction: float = Field(0.5, gt=0, lt=1, description="share of queries in the tail")
    custom: list[SliceDefinition] = Field(
        [], description="slices of your own: queries matching every criterion given"
    )

    @model_validator(mode="after")
    def _fractions(self) -> SlicesConfig:
        if self.head_fraction + self.tail_fraction > 1:
            raise ValueError("head_fraction + tail_fraction must not exceed 1")
        names = [s.name for s in self.custom]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate custom slice names: {', '.join(dupes)}")
        return self


def configured_slices(
    query_ids: Sequence[str],
    query_texts: Sequence[str],
    tags: Sequence[Sequence[str]],
    frequency: Sequence[int | None],
    cfg: SlicesConfig,
) -> list[Slice]:
    """``build_slices`` with the settings of the config's ``slices`` section."""
    return build_slices(
        query_ids,
        query_texts,
        tags,
        frequency,
        use_tags=cfg.tags,
        use_frequency=cfg.frequency,
        head_fraction=cfg.head_fraction,
        tail_fraction=cfg.tail_fraction,
        custom=[d.to_core() for d in cfg.custom],
    )
