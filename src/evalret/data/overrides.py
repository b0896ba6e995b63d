"""`evalret sweep --set KEY=V1,V2,...`: the axes of a grid of configs, and the config of each point.

An axis is a dotted config path (``indexes.hnsw.ef_search``) and comma-separated values, each read
as a YAML scalar (``16``, ``int8``, ``null``, ``true``). A point's config is the config file's
YAML with the point's values set at their paths, validated by the config model exactly as the
file is: a bad value or an unknown key is a ConfigError naming the ``--set`` it came from.

A sweep compares settings on one measurement, so three kinds of axis are refused: one over what
is measured (``MEASURED``: the golden set, the sample of it, and every setting of the metric
definitions, see pipeline/evaluate.metric_definitions), a setting of an index that is disabled
at a point (it would change nothing there), and a grid of more than ``MAX_POINTS`` points
unless ``--max-points`` allows it (each point is a whole evaluation).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from evalret.data import yamltext
from evalret.data.config import Config, parse_config, read_yaml_mapping
from evalret.data.textfile import read_text
from evalret.errors import ConfigError, InputError, Problem

_SCALARS = (str, int, float, bool, type(None))

# the config keys that decide what is measured: the queries, documents and judgments evaluated
# (golden_set, sample) and the metric definitions (the metrics, the search depth the uncut ones
# read, the nDCG gain, the relevance level, how queries without a relevant document count)
MEASURED = (
    "golden_set",
    "sample",
    "metrics",
    "search_depth",
    "ndcg_gain",
    "relevance_level",
    "queries_without_relevant",
)
MAX_POINTS = 1000  # a larger grid needs --max-points


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
        value = yamltext.load(raw)
    except (yaml.YAMLError, ValueError, RecursionError):
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
    measured = next((k for k in MEASURED if path == k or path.startswith(k + ".")), None)
    if measured is not None:
        raise _bad(
            text,
            f"{path} changes what is measured{'' if path == measured else f' ({measured})'}: "
            "a sweep compares settings on one golden set and one metric definition; run one "
            "sweep per setting instead",
        )
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


def check_size(axes: list[Axis], max_points: int | None) -> int:
    """The number of grid points; InputError when over ``max_points`` (default MAX_POINTS),
    before any point is made."""
    sizes = [len(a.values) for a in axes]
    n = math.prod(sizes)
    bound = MAX_POINTS if max_points is None else max_points
    if n > bound:
        shape = " x ".join(map(str, sizes))
        fix = (
            f"pass --max-points {n} to run them all"
            if max_points is None
            else "raise --max-points, or give fewer values"
        )
        raise InputError(
            f"the sweep grid has {n} points ({shape}), more than "
            f"{'--max-points ' if max_points is not None else 'the bound of '}{bound}: {fix}"
        )
    return n


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
    data, _ = read_yaml_mapping(read_text(path, "config", ConfigError), str(path))
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
        try:
            cfg = Config.model_validate(data)  # the data the file's YAML and the --set made
        except ValidationError:  # the same data as YAML text, for parse_config's messages
            cfg = parse_config(yaml.safe_dump(data, sort_keys=False), f"--set {settings}")
    except ConfigError as e:
        problems = [Problem(p.message, "--set") for p in e.problems]
        texts = " ".join(f"--set {a.text}" for a in axes)
        raise ConfigError(f"invalid config at {settings} (from {texts})", problems) from None
    _refuse_disabled_index_settings(cfg, axes, settings)
    return cfg.resolve_paths(base)


def _refuse_disabled_index_settings(cfg: Config, axes: list[Axis], settings: str) -> None:
    """ConfigError for an axis setting an index (other than its ``enabled``) that is disabled at
    this point: the setting would change nothing, and the points would differ in name only."""
    enabled = set(cfg.indexes.enabled_names())
    for axis in axes:
        keys = axis.keys
        setting = len(keys) >= 3 and keys[0] == "indexes" and keys[2] != "enabled"
        if setting and keys[1] not in enabled:
            raise _bad(
                axis.text,
                f"index {keys[1]} is disabled at {settings}: {axis.path} would change nothing "
                f"there (enable it with indexes.{keys[1]}.enabled: true, or drop this --set)",
            )
