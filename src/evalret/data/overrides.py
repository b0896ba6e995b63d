"""`evalret sweep --set KEY=V1,V2,...`: the axes of a grid of configs, and the config of each point.

An axis is a dotted config path (``indexes.hnsw.ef_search``) and comma-separated values, each read
as a YAML scalar (``16``, ``int8``, ``null``, ``true``). A point's config is the config file's
YAML with the point's values set at their paths, validated by the config model exactly as the
file is: a bad value or an unknown key is a ConfigError naming the ``--set`` it came from.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from evalret.data.config import Config, parse_config
from evalret.data.textfile import read_text
from evalret.errors import ConfigError, Problem

_SCALARS = (str, int, float, bool, type(None))


@dataclass(frozen=True)
class Axis:
    """One ``--set``: a dotted config path and its values, in the order given."""

    path: str
    values: tuple[Any, ...]
    text: str  # the --set as written, for messages

    @property
    def keys(self) -> list[str]:
        return self.path.split(".")


def _bad(text: str, why: str) -> ConfigError:
    return ConfigError(f"invalid --set {text!r}", [Problem(why, "--set")])


def _scalar(text: str, raw: str) -> Any:
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        raise _bad(text, f"{raw!r} is not a YAML scalar") from None
    if not isinstance(value, _SCALARS) or raw.strip() == "":
        raise _bad(text, f"{raw!r} is not a YAML scalar (a number, a word, true/false or null)")
    return value


def parse_axis(text: str) -> Axis:
    """``KEY=V1,V2,...`` -> Axis; ConfigError when the key or a value is missing or malformed."""
    path, sep, values = text.partition("=")
    path = path.strip()
    if not sep or not path:
        raise _bad(text, "write KEY=V1,V2,... (e.g. indexes.hnsw.ef_search=16,32,64)")
    if any(not part.strip() for part in path.split(".")):
        raise _bad(text, f"{path!r} is not a dotted config path (e.g. indexes.hnsw.ef_search)")
    parsed = tuple(_scalar(text, raw) for raw in values.split(","))
    if len(set(map(repr, parsed))) != len(parsed):
        raise _bad(text, "a value is repeated")
    return Axis(path=path, values=parsed, text=text)


def parse_axes(texts: list[str]) -> list[Axis]:
    """Every ``--set`` (at least one), each path at most once."""
    if not texts:
        raise ConfigError("evalret sweep needs at least one --set KEY=V1,V2,...")
    axes = [parse_axis(t) for t in texts]
    paths = [a.path for a in axes]
    for a in axes:
        if paths.count(a.path) > 1:
            raise _bad(a.text, f"{a.path} is set by more than one --set: give its values once")
    return axes


def grid(axes: list[Axis]) -> list[dict[str, Any]]:
    """Every point of the grid, as {path: value}: the cartesian product in the order of the
    ``--set`` options, the last one varying fastest."""
    return [
        dict(zip([a.path for a in axes], combo, strict=True))
        for combo in itertools.product(*(a.values for a in axes))
    ]


def raw_config(path: Path | None) -> dict[str, Any]:
    """The config file's YAML as a mapping ({} for the built-in defaults)."""
    if path is None:
        return {}
    data = yaml.safe_load(read_text(path, "config", ConfigError)) or {}
    if not isinstance(data, dict):
        raise ConfigError("invalid config", [Problem("the top level must be a mapping", str(path))])
    return data


def _set(data: dict[str, Any], axis: Axis, value: Any) -> dict[str, Any]:
    """A copy of ``data`` with ``value`` at the axis's path (mappings made on the way)."""
    out = dict(data)
    node = out
    for key in axis.keys[:-1]:
        child = node.get(key)
        if child is not None and not isinstance(child, dict):
            raise _bad(axis.text, f"{key} is not a mapping in the config")
        node[key] = dict(child or {})
        node = node[key]
    node[axis.keys[-1]] = value
    return out


def point_config(
    data: dict[str, Any], base: Path, axes: list[Axis], point: dict[str, Any]
) -> Config:
    """The validated config of one grid point, its relative paths resolved against ``base``."""
    for axis in axes:
        data = _set(data, axis, point[axis.path])
    settings = ", ".join(f"{k}={v!r}" for k, v in point.items())
    try:
        cfg = parse_config(yaml.safe_dump(data, sort_keys=False), f"--set {settings}")
    except ConfigError as e:
        problems = [Problem(p.message, "--set") for p in e.problems]
        texts = " ".join(f"--set {a.text}" for a in axes)
        raise ConfigError(f"invalid config at {settings} (from {texts})", problems) from None
    return cfg.resolve_paths(base)
