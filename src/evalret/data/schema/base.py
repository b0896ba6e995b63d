"""The base models of report.json and compare.json (unknown keys refused; a sparse model keeps
absent keys absent), the schema version and a setting's change between two runs."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

# the closed vocabularies are the core's, defined once there

# report.json's layout: 2 keys ``ann`` by index name (1 had the hnsw index's section as ``ann``
# and every other approximate index in ``ann_others``; read into 2 by RunReport's migration)
SCHEMA_VERSION = 2
READABLE_SCHEMA_VERSIONS = (1, 2)  # the report.json layouts this evalret reads
COMPARE_SCHEMA_VERSION = 1  # compare.json's layout
TOP_KEPT = 10  # ranked document ids kept per query in a report (drift, qualitative review)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# the config of the models only compare.json and the dry run hold: each is built (its schema and
# validator) when first used, not at import (pydantic's defer_build), as `evalret score` and
# `run` import this package for report.json and never use them; what they validate, their errors
# and their JSON are the same
BUILT_WHEN_USED = ConfigDict(defer_build=True)


class _Sparse(_Model):
    """A model whose optional fields stay out of the JSON when the input left them out: keys an
    older evalret did not write (or a backend does not have) are not added as nulls or empty
    lists, so a saved report reads back and writes out the same."""

    @model_serializer(mode="wrap")
    def _absent_stays_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if k in self.model_fields_set}


class Change(_Model):
    """One setting that differs between two runs: its value in each (None where absent)."""

    baseline: Any  # the value in the baseline
    current: Any  # the value in this run

    @model_validator(mode="before")
    @classmethod
    def _an_object(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError("not an object")
        return data


IntervalMethod = Literal["bootstrap", "ppi"]
