"""Discriminated unions whose members live in a registry: ``model`` (by ``provider``) and the
typed indexes (by ``type``).

A union is written once, as a plain ``A | B | C`` of pydantic models that each narrow the tag
field to a ``Literal``; ``members_by_tag`` turns it into the registry (tag -> model) and
``RegisteredUnion`` is the ``Annotated`` metadata that makes pydantic validate the field as the
discriminated union of whatever that registry holds when the schema is built. A member added to
the registry later (a plug-in's provider, a test's index type) joins once the models holding the
field are rebuilt (``BaseModel.model_rebuild(force=True)``, in the order they nest): nothing
else changes, and no existing module is edited.
"""

from __future__ import annotations

import functools
import operator
import types
from collections.abc import Mapping
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, Field, GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema


def tag_of(member: type[BaseModel], field: str) -> str:
    """The one value the member's ``field`` takes (its ``Literal``); ValueError otherwise."""
    info = member.model_fields.get(field)
    values = get_args(info.annotation) if info is not None else ()
    if len(values) != 1 or not isinstance(values[0], str):
        raise ValueError(f"{member.__name__}.{field} must be a Literal of one string")
    return values[0]


def members_by_tag(union: Any, field: str) -> dict[str, Any]:
    """The members of ``union`` (``A | B``, or one model) by the value of their tag ``field``."""
    members = get_args(union) if get_origin(union) in (Union, types.UnionType) else (union,)
    return {tag_of(m, field): m for m in members}


class RegisteredUnion:
    """``Annotated`` metadata: validate as the union of ``registry``'s members told apart by
    ``field``; with ``default``, a mapping without the field is that member."""

    def __init__(self, registry: Mapping[str, type[BaseModel]], field: str, default: str | None):
        self.registry = registry
        self.field = field
        self.default = default

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        members = tuple(self.registry.values())
        if len(members) == 1:
            schema = handler.generate_schema(members[0])
        else:
            union = functools.reduce(operator.or_, members)  # A | B | ...
            schema = handler.generate_schema(Annotated[union, Field(discriminator=self.field)])
        if self.default is None:
            return schema
        return core_schema.no_info_before_validator_function(self._with_default, schema)

    def _with_default(self, value: Any) -> Any:
        if isinstance(value, dict) and self.field not in value:
            return {self.field: self.default, **value}
        return value
