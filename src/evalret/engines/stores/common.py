"""What several drivers need in the same form: their package imported (a ConfigError naming the
extra when missing), secrets read from the environment, a local store's existence, the filter
keys a store cannot write, and scratch mode's typed metadata keys (a key holding values of
several types kept as one key per type, ``__<type>__<key>``, so that a store comparing values
loosely still tells a boolean from a number)."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from evalret.core.filters import Condition, Filter, Logical, value_type
from evalret.data.config import StoreIndexConfig
from evalret.errors import ConfigError


def package(module: str, driver: str, extra: str) -> Any:
    """``module`` imported; ConfigError naming ``extra`` when it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(
            f"driver {driver} needs the {module} package (not installed): pip install '{extra}'"
        ) from None


def secret(name: str, what: str, index: str) -> str:
    """The value of the environment variable ``name`` (never shown); ConfigError naming the
    key ``connect.<what>`` when it is unset or empty."""
    value = os.environ.get(name)
    if not value:
        raise ConfigError(
            f"indexes.{index}.connect.{what}: the environment variable {name} is not set"
        )
    return value


def local_store(settings: StoreIndexConfig, index: str, look: bool = True) -> None:
    """An existing collection is in a store the config points at (a server's URL, or a local
    store's path) and, with ``look``, a local one is there: opening a local store where none is
    would create an empty one."""
    c = settings.connect
    if settings.mode != "existing" or c.url is not None or c.url_env is not None:
        return
    if c.path is None:
        raise ConfigError(
            f"indexes.{index}.connect: an existing collection is read from a store: set "
            "connect.path (a local store) or connect.url (a server)"
        )
    if look and not c.path.exists():
        raise ConfigError(f"indexes.{index}.connect.path: no store at {c.path}")


def conditions(f: Filter) -> Iterator[Condition]:
    """The filter's conditions, in order."""
    if isinstance(f, Logical):
        for p in f.parts:
            yield from conditions(p)
    else:
        yield f


def refuse_keys(f: Filter, index: str, driver: str, why: Callable[[str], str | None]) -> None:
    """ConfigError at the first condition whose key ``why`` finds a reason against (the
    reason says what the store cannot write)."""
    for c in conditions(f):
        reason = why(c.key)
        if reason is not None:
            raise ConfigError(
                f"index {index}: {driver} cannot filter on the metadata key {c.key!r} ({reason})"
            )


def typed_key(key: str, kind: str) -> str:
    """Scratch mode's name for the values of ``kind`` under a key holding several types (a
    key of one type keeps its name)."""
    return f"__{kind}__{key}"


def key_types(metadata: Sequence[Mapping[str, Any] | None]) -> dict[str, set[str]]:
    """The filter types (string, number, boolean) each metadata key holds."""
    types: dict[str, set[str]] = {}
    for row in metadata:
        for key, value in (row or {}).items():
            kind = value_type(value)
            if kind is not None:
                types.setdefault(key, set()).add(kind)
    return types


def typed_rows(
    metadata: Sequence[Mapping[str, Any] | None], types: Mapping[str, set[str]]
) -> list[dict[str, Any]]:
    """Each document's filterable metadata under scratch mode's names (``typed_key`` for a key
    of several types), numbers as floats."""
    out = []
    for row in metadata:
        doc: dict[str, Any] = {}
        for key, value in (row or {}).items():
            kind = value_type(value)
            if kind is None:
                continue
            name = key if len(types[key]) == 1 else typed_key(key, kind)
            doc[name] = float(value) if kind == "number" else value
        out.append(doc)
    return out
