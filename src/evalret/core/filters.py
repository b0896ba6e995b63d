"""Metadata filters in the operator form Chroma and Pinecone users write: parsed strictly, evaluated
to a boolean mask over the corpus with numpy, one vectorised comparison per key.

A filter is a JSON object:

* ``{key: value}``: equality (``value`` a string, a number or a boolean);
* ``{key: {op: operand, ...}}`` with ``op`` one of ``$eq``, ``$ne`` (a string, number or boolean),
  ``$gt``, ``$gte``, ``$lt``, ``$lte`` (a number), ``$in``, ``$nin`` (a non-empty list of values of
  one type); several operators on one key must all hold;
* ``{"$and": [filter, ...]}``, ``{"$or": [filter, ...]}`` (non-empty lists);
* several keys in one object must all hold (an implicit ``$and``, as Pinecone reads it).

Document metadata values are strings, numbers or booleans. Numbers compare as numbers (``1`` equals
``1.0``), in float64: an integer beyond +-2**53, which float64 cannot hold exactly, is refused in a
filter and not filterable in metadata. A boolean is not a number (``true`` does not equal ``1``).

Edge semantics, as Chroma's current metadata filter has them (its SQLite segment keeps one typed
value column per type and compiles ``$ne`` / ``$nin`` to "not among the documents whose value
equals"): ``$eq``, ``$in`` and the ranges match only a document whose metadata holds the key with
a value of the operand's type (a number for a range); a document without the key, or with a value
of another type, matches none of them. ``$ne`` and ``$nin`` are their complements: they match
every document ``$eq`` / ``$in`` would not, those without the key and those with a value of
another type included (``{"lang": {"$ne": "en"}}`` keeps documents without a ``lang``), as
MongoDB, whose operators Pinecone's filters follow, reads them. Older Chroma releases left
documents without the key out of ``$ne``; Pinecone documents no rule for a missing key.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

Scalar = str | float | bool
ValueType = Literal["string", "number", "boolean"]
EQUALITY = ("$eq", "$ne")
RANGE = ("$gt", "$gte", "$lt", "$lte")
MEMBERSHIP = ("$in", "$nin")
OPERATORS = (*EQUALITY, *RANGE, *MEMBERSHIP)
LOGICAL = ("$and", "$or")
MAX_EXACT_INT = 2**53  # the largest integer float64 holds exactly
# selectivity buckets: the fraction of the corpus a query's filter leaves eligible
BUCKETS = (("<1%", 0.0, 0.01), ("1-10%", 0.01, 0.10), ("10-50%", 0.10, 0.50), (">=50%", 0.50, 1.01))


class FilterError(ValueError):
    """A filter that cannot be read; the message starts with where in the filter it is."""


@dataclass(frozen=True)
class Condition:
    """One operator on one key: ``value`` a scalar, or a tuple of scalars for $in / $nin."""

    key: str
    op: str
    value: Scalar | tuple[Scalar, ...]
    type: ValueType


@dataclass(frozen=True)
class Logical:
    """``$and`` / ``$or`` over filters."""

    op: Literal["$and", "$or"]
    parts: tuple[Filter, ...]


Filter = Condition | Logical


def value_type(value: Any) -> ValueType | None:
    """The filterable type of a JSON value: None for null, lists, objects, non-finite numbers
    and integers float64 cannot hold exactly."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int):
        return "number" if abs(value) <= MAX_EXACT_INT else None
    if isinstance(value, float):
        return "number" if math.isfinite(value) else None
    return None


def _scalar(value: Any, where: str, what: str) -> tuple[Scalar, ValueType]:
    kind = value_type(value)
    if kind is None:
        raise FilterError(
            f"{where}: {what} is a string, a number or a boolean, not {_shown(value)}"
            + (" (integers beyond +-2**53 cannot be compared exactly)" if _big(value) else "")
        )
    return (float(value) if kind == "number" else value), kind


def _big(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_EXACT_INT


def _shown(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, (list, dict)):
        return "a list" if isinstance(value, list) else "an object"
    text = json.dumps(value) if isinstance(value, (int, float, str)) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _operator(key: str, op: str, operand: Any, where: str) -> Condition:
    at = f"{where}.{op}"
    if op in EQUALITY:
        value, kind = _scalar(operand, at, f"the operand of {op}")
        return Condition(key, op, value, kind)
    if op in RANGE:
        value, kind = _scalar(operand, at, f"the operand of {op}")
        if kind != "number":
            raise FilterError(f"{at}: {op} compares numbers, not {_shown(operand)}")
        return Condition(key, op, value, kind)
    if not isinstance(operand, list) or not operand:
        raise FilterError(f"{at}: {op} takes a non-empty list of values, not {_shown(operand)}")
    items = [_scalar(v, f"{at}[{i}]", "each value") for i, v in enumerate(operand)]
    kinds = {k for _, k in items}
    if len(kinds) > 1:
        raise FilterError(
            f"{at}: the values of {op} are of one type, not {', '.join(sorted(kinds))}"
        )
    return Condition(key, op, tuple(v for v, _ in items), kinds.pop())


def _field(key: str, spec: Any, where: str) -> list[Condition]:
    at = f"{where}.{key}"
    if not key or key.startswith("$"):
        known = ", ".join(LOGICAL)
        raise FilterError(
            f"{at}: unknown operator {key!r} at this level (logical operators: {known}; a "
            "metadata key does not start with $)"
            if key
            else f"{where}: a metadata key is a non-empty string"
        )
    if not isinstance(spec, dict):
        value, kind = _scalar(spec, at, "an equality's value")
        return [Condition(key, "$eq", value, kind)]
    if not spec:
        raise FilterError(f"{at}: an empty operator object (write {{op: operand}})")
    out = []
    for op, operand in spec.items():
        if op not in OPERATORS:
            raise FilterError(
                f"{at}: unknown operator {op!r} (one of {', '.join(OPERATORS)})"
                if op.startswith("$")
                else f"{at}: {op!r} is not an operator (one of {', '.join(OPERATORS)}); "
                "nested metadata is not filterable"
            )
        out.append(_operator(key, op, operand, at))
    return out


def parse_filter(obj: Any, where: str = "filter") -> Filter:
    """The filter ``obj`` (parsed JSON) as a tree; FilterError naming the place in it (``where``
    first: ``filter.$and[1].year.$gt``) for anything this module does not define."""
    if not isinstance(obj, dict):
        raise FilterError(f"{where}: a filter is an object, not {_shown(obj)}")
    if not obj:
        raise FilterError(f"{where}: an empty filter (leave the field out for no filter)")
    parts: list[Filter] = []
    for key, spec in obj.items():
        if key in LOGICAL:
            if not isinstance(spec, list) or not spec:
                raise FilterError(
                    f"{where}.{key}: {key} takes a non-empty list of filters, not {_shown(spec)}"
                )
            sub = tuple(parse_filter(s, f"{where}.{key}[{i}]") for i, s in enumerate(spec))
            parts.append(Logical("$and" if key == "$and" else "$or", sub))
        else:
            parts.extend(_field(key, spec, where))
    return parts[0] if len(parts) == 1 else Logical("$and", tuple(parts))


def canonical(f: Filter) -> Any:
    """A JSON value of the filter as parsed (numbers as floats): the same for filters that mean
    the same as written; for fingerprints and for grouping queries by filter."""
    if isinstance(f, Logical):
        return {f.op: [canonical(p) for p in f.parts]}
    value = list(f.value) if isinstance(f.value, tuple) else f.value
    return {f.key: {f.op: value}}


def filter_keys(f: Filter) -> set[str]:
    """The metadata keys the filter reads."""
    if isinstance(f, Logical):
        return set().union(*(filter_keys(p) for p in f.parts))
    return {f.key}


# --- evaluation -------------------------------------------------------------------------------


@dataclass
class _Column:
    """One key's values over the corpus, one array per type (absent: NaN, -1)."""

    numbers: np.ndarray  # float64, NaN where the document has no number under the key
    strings: np.ndarray  # int64 codes into vocabulary, -1 where no string
    booleans: np.ndarray  # int8: 0 / 1, -1 where no boolean
    vocabulary: dict[str, int] = field(default_factory=dict)

    def codes(self, kind: ValueType, values: Sequence[Scalar]) -> tuple[np.ndarray, np.ndarray]:
        """(the column of ``kind``, ``values`` in that column's coding; -2: no document has it)."""
        if kind == "number":
            return self.numbers, np.array(values, dtype=np.float64)
        if kind == "string":
            return self.strings, np.array([self.vocabulary.get(str(v), -2) for v in values])
        return self.booleans, np.array([int(bool(v)) for v in values], dtype=np.int8)


class MetadataColumns:
    """The corpus's metadata as columns, built per key when a filter first reads it."""

    def __init__(self, metadata: Sequence[Mapping[str, Scalar] | None]) -> None:
        self.metadata = metadata
        self.n_docs = len(metadata)
        self._columns: dict[str, _Column] = {}

    def column(self, key: str) -> _Column:
        if key not in self._columns:
            n = self.n_docs
            col = _Column(
                numbers=np.full(n, np.nan),
                strings=np.full(n, -1, dtype=np.int64),
                booleans=np.full(n, -1, dtype=np.int8),
            )
            for i, meta in enumerate(self.metadata):
                if meta is None or key not in meta:
                    continue
                value = meta[key]
                kind = value_type(value)
                if kind == "number":
                    col.numbers[i] = float(value)
                elif kind == "string":
                    col.strings[i] = col.vocabulary.setdefault(str(value), len(col.vocabulary))
                elif kind == "boolean":
                    col.booleans[i] = int(bool(value))
            self._columns[key] = col
        return self._columns[key]

    def mask(self, f: Filter) -> np.ndarray:
        """Which documents the filter keeps (bool [n_docs])."""
        if isinstance(f, Logical):
            masks = [self.mask(p) for p in f.parts]
            combine = np.logical_and if f.op == "$and" else np.logical_or
            out: np.ndarray = combine.reduce(masks)
            return out
        return self._condition(f)

    def _condition(self, c: Condition) -> np.ndarray:
        col = self.column(c.key)
        values = c.value if isinstance(c.value, tuple) else (c.value,)
        data, coded = col.codes(c.type, values)
        out: np.ndarray
        if c.op in MEMBERSHIP or c.op in EQUALITY:
            hit = np.isin(data, coded)
            out = hit if c.op in ("$eq", "$in") else ~hit  # $ne / $nin: the complement
            return out
        compare = {"$gt": np.greater, "$gte": np.greater_equal, "$lt": np.less}.get(
            c.op, np.less_equal
        )
        with np.errstate(invalid="ignore"):  # NaN (no number) compares False
            out = compare(data, coded[0])
        return out


@dataclass(frozen=True)
class Eligibility:
    """Which documents each query may retrieve: one mask per distinct filter (``masks``) and each
    query's filter among them (``of_query``: -1 for a query without a filter)."""

    masks: tuple[np.ndarray, ...]
    of_query: np.ndarray  # int64 [n_queries]
    n_docs: int

    def mask(self, query: int) -> np.ndarray | None:
        """The query's mask; None when it has no filter (every document is eligible)."""
        g = int(self.of_query[query])
        return None if g < 0 else self.masks[g]

    def groups(self) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
        """(query positions, mask or None) per filter, the unfiltered queries first."""
        for g in range(-1, len(self.masks)):
            rows = np.flatnonzero(self.of_query == g)
            if len(rows):
                yield rows, (None if g < 0 else self.masks[g])

    def selectivity(self) -> np.ndarray:
        """Per query, the fraction of the corpus eligible (1.0 without a filter)."""
        counts = np.array([m.sum() for m in self.masks] + [self.n_docs], dtype=np.float64)
        out: np.ndarray = counts[self.of_query] / max(self.n_docs, 1)
        return out


def eligibility(filters: Sequence[Filter | None], columns: MetadataColumns) -> Eligibility:
    """The eligibility of queries with ``filters`` (None: unfiltered) over ``columns``' corpus;
    queries with the same filter share one mask."""
    seen: dict[str, int] = {}
    masks: list[np.ndarray] = []
    of_query = np.full(len(filters), -1, dtype=np.int64)
    for qi, f in enumerate(filters):
        if f is None:
            continue
        key = json.dumps(canonical(f), sort_keys=True)
        if key not in seen:
            seen[key] = len(masks)
            masks.append(columns.mask(f))
        of_query[qi] = seen[key]
    return Eligibility(tuple(masks), of_query, columns.n_docs)


def selectivity_bucket(fraction: float) -> str:
    """The bucket name of a fraction of the corpus eligible."""
    return next(name for name, low, high in BUCKETS if low <= fraction < high)
