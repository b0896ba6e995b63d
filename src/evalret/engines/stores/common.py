"""What several drivers need in the same form: their package imported (a ConfigError naming the
extra when missing), secrets read from the environment, a local store's existence, the filter
keys a store cannot write, scratch mode's typed metadata keys (a key holding values of
several types kept as one key per type, ``__<type>__<key>``, so that a store comparing values
loosely still tells a boolean from a number) and scratch leftovers.

Scratch leftovers: a scratch collection is named ``evalret_scratch_<pid>_<random>`` (a Milvus
Lite database of its own: ``<that>.db``) and dropped when its session ends, but a process
killed outright (SIGKILL, a lost machine) drops nothing. So when a scratch session opens in a
local store (``connect.path``, no URL: every process using it runs on this machine), the driver
first drops the scratch collections there whose process is no longer alive (``sweep``), and
the index's cache notes count them (the session's ``swept``). A collection of a live process
(this one, or another run beside it) is never touched, nor anything on a server, where the pid
may be another machine's. A pid reused since by another process keeps its leftover until that
process ends (the safe side). "This machine" is this pid namespace: a store directory shared
with runs in other containers would see their live pids as dead, so give each its own. A
scratch store without ``connect.path`` lives in a temporary directory of its own,
``evalret-<kind>-<pid>-<random>`` (``scratch_dir``), and those of dead processes are removed
the same way."""

from __future__ import annotations

import importlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
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


def known_keys(given: Iterable[str], known: Iterable[str], where: str, what: str) -> None:
    """ConfigError at ``where`` naming the first key of ``given`` that is none of ``known``."""
    names = list(known)
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise ConfigError(f"{where}: {unknown[0]!r} is no {what} (one of {', '.join(names)})")


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


SCRATCH_PREFIX = "evalret_scratch_"
_SCRATCH = re.compile(rf"{SCRATCH_PREFIX}(\d+)_[0-9a-f]+(\.db)?")


def local(settings: StoreIndexConfig) -> bool:
    """The store is a local one (``connect.path``, no URL): its scratch leftovers may be swept."""
    c = settings.connect
    return c.path is not None and c.url is None and c.url_env is None


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # another user's process, or a pid this system cannot hold: not ours to judge
    return True


def stale_scratch(names: Iterable[str]) -> list[str]:
    """The names, among ``names``, of scratch collections (or Milvus Lite ``.db`` files) whose
    process is not alive on this machine, sorted."""
    out = []
    for name in names:
        m = _SCRATCH.fullmatch(str(name))
        if m is not None and not _alive(int(m.group(1))):
            out.append(str(name))
    return sorted(out)


def sweep(names: Iterable[str], drop: Callable[[str], None]) -> int:
    """``drop`` called on every stale scratch name of ``names`` (one that fails is left); the
    number dropped."""
    dropped = 0
    for name in stale_scratch(names):
        try:
            drop(name)
        except Exception:  # another process dropped it first, or it is half-made
            continue
        dropped += 1
    return dropped


def scratch_dir(kind: str) -> tuple[Path, int]:
    """A new temporary directory for a scratch store without ``connect.path``, named
    ``evalret-<kind>-<pid>-<random>``, once those of dead processes are removed; (it, how many
    were removed)."""
    root = Path(tempfile.gettempdir())
    prefix = f"evalret-{kind}-"
    pattern = re.compile(rf"{re.escape(prefix)}(\d+)-[a-z0-9_]+")
    removed = 0
    for found in root.glob(f"{prefix}*"):
        m = pattern.fullmatch(found.name)
        if m is not None and found.is_dir() and not _alive(int(m.group(1))):
            shutil.rmtree(found, ignore_errors=True)
            removed += not found.exists()
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-")), removed
