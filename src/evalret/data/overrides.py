"""Config settings given on the command line: ``--set KEY=VALUE`` (and its shortcuts ``--model``,
``--dimension``) on every command that reads a config, and ``evalret sweep --set KEY=V1,V2,...``,
the axes of a grid of configs.

A ``--set`` is the same everywhere: a dotted config path and a value read as a YAML scalar
(``256``, ``int8``, ``null``, ``true``), set on the config file's YAML and validated by the config
model exactly as the file is (a bad value or an unknown key is a ConfigError naming the option and
the key). A comma separates values, so only a sweep takes several (a quoted YAML string may hold
one). A relative path given in a ``--set`` is relative to the working directory, as any path on
the command line; the file's own stay relative to the file. The settings are recorded on the
config (``Config.overrides``) and so in report.json.

An axis is a dotted config path (``indexes.hnsw.ef_search``) and comma-separated values, each read
as a YAML scalar (``16``, ``int8``, ``null``, ``true``); a comma inside a quoted value is part of
it (``indexes.ivf.factory="IVF64,PQ16","HNSW32,SQ8"``). A point's config is the config file's
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
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from evalret.data import yamltext
from evalret.data.config import Config, load_config, parse_config, read_yaml_mapping
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


@dataclass(frozen=True)
class Override:
    """One setting from the command line: a dotted config path, its value, and the option that
    gave it as written (``--set model.truncate_dim=256``, ``--dimension 256``), for messages."""

    path: str
    value: Any
    option: str

    @property
    def keys(self) -> list[str]:
        return self.path.split(".")

    @property
    def words(self) -> tuple[str, str]:
        """The option as command-line words, ``("--set", "model.truncate_dim=256")``: a command
        printed for pasting repeats it (``shlex.join``)."""
        flag, _, given = self.option.partition(" ")
        return flag, given


# a URL's password (scheme://user:password@host): never echoed back in a message
_USERINFO = re.compile(r"(://[^/\s:@]*:)[^@\s/]*@")


def shown(text: str) -> str:
    """``text`` as a message may quote it: a URL's password replaced by ``***``."""
    return _USERINFO.sub(r"\1***@", text)


def _bad(text: str, why: str) -> ConfigError:
    return ConfigError(f"invalid --set {shown(text)!r}", [Problem(shown(why), "--set")])


def _scalar(text: str, raw: str) -> Any:
    try:
        value = yamltext.load(raw)
    except (yaml.YAMLError, ValueError, RecursionError):
        raise _bad(text, f"{raw!r} is not a YAML scalar") from None
    if not isinstance(value, _SCALARS) or raw.strip() == "":
        raise _bad(text, f"{raw!r} is not a YAML scalar (a number, a word, true/false or null)")
    return value


def _key_and_values(text: str, usage: str, example: str) -> tuple[str, str]:
    """``KEY=VALUES`` -> (the dotted path, the text after ``=``); ConfigError when malformed."""
    path, sep, values = text.partition("=")
    path = path.strip()
    if not sep or not path:
        raise _bad(text, f"write {usage} (e.g. {example})")
    if any(not part.strip() for part in path.split(".")):
        raise _bad(text, f"{path!r} is not a dotted config path (e.g. {example.split('=')[0]})")
    return path, values


def parse_override(text: str) -> Override:
    """``KEY=VALUE`` (one ``--set`` of a command that runs one config) -> Override."""
    path, raw = _key_and_values(text, "KEY=VALUE", "model.truncate_dim=256")
    quoted = raw.strip()[:1] in ("'", '"')
    if "," in raw and not quoted:
        raise _bad(
            text,
            "one value per --set here: several values are a grid, which `evalret sweep` runs "
            "(quote a text that holds a comma: KEY='\"a, b\"')",
        )
    return Override(path, _scalar(text, raw), f"--set {shown(text)}")


def command_overrides(
    sets: Sequence[str] = (), *, model: str | None = None, dimension: int | None = None
) -> list[Override]:
    """The overrides of a command's ``--set`` options and of its shortcuts ``--model NAME``
    (model.name) and ``--dimension N`` (model.truncate_dim); ConfigError when a key is set
    twice."""
    found = [parse_override(t) for t in sets]
    if model is not None:
        found.append(Override("model.name", model, f"--model {model}"))
    if dimension is not None:
        found.append(Override("model.truncate_dim", dimension, f"--dimension {dimension}"))
    for i, o in enumerate(found):
        twice = [p.option for p in found[i + 1 :] if p.path == o.path]
        if twice:
            raise ConfigError(
                f"{o.path} is set twice",
                [Problem(f"{o.path} is set by {o.option} and {twice[0]}: give it once", o.option)],
            )
    return found


def _split_values(values: str) -> list[str]:
    """``V1,V2,...`` split at the commas outside quotes: a quoted YAML string may hold commas
    (``"IVF64,PQ16","HNSW32,SQ8"``, two faiss factory strings)."""
    out, start, quote = [], 0, ""
    for i, c in enumerate(values):
        if quote:
            quote = "" if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c == ",":
            out.append(values[start:i])
            start = i + 1
    return [*out, values[start:]]


def parse_axis(text: str) -> Axis:
    """``KEY=V1,V2,...`` -> Axis; ConfigError when the key or a value is missing or malformed."""
    path, values = _key_and_values(text, "KEY=V1,V2,...", "indexes.hnsw.ef_search=16,32,64")
    measured = next((k for k in MEASURED if path == k or path.startswith(k + ".")), None)
    if measured is not None:
        raise _bad(
            text,
            f"{path} changes what is measured{'' if path == measured else f' ({measured})'}: "
            "a sweep compares settings on one golden set and one metric definition; run one "
            "sweep per setting instead",
        )
    parsed = tuple(_scalar(text, raw) for raw in _split_values(values))
    if len(set(map(repr, parsed))) != len(parsed):
        raise _bad(text, "a value is repeated")
    return Axis(path=path, values=parsed, text=shown(text))


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


def sweep_axes(sets: list[str], fixed: Sequence[Override] = ()) -> list[Axis]:
    """The axes of ``sets`` (``--set KEY=V1,V2,...``), then one single-valued axis per setting
    of ``fixed`` (the shortcuts ``--model``, ``--dimension``): the same for every point."""
    axes = parse_axes(sets) if sets or not fixed else []
    for o in fixed:
        if any(a.path == o.path for a in axes):
            raise _bad(o.option, f"{o.path} is set by a --set too: give it once")
        axes.append(Axis(path=o.path, values=(o.value,), text=f"{o.path}={o.value}"))
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


def _set(data: dict[str, Any], option: Override, value: Any) -> dict[str, Any]:
    """A copy of ``data`` with ``value`` at the option's path (mappings made on the way)."""
    out = dict(data)
    node = out
    for key in option.keys[:-1]:
        child = node.get(key)
        if child is not None and not isinstance(child, dict):
            raise ConfigError(
                f"invalid {option.option}",
                [Problem(f"{key} is not a mapping in the config", option.option)],
            )
        node[key] = dict(child or {})
        node = node[key]
    node[option.keys[-1]] = value
    return out


def _value_at(cfg: Config, keys: list[str]) -> Any:
    """The validated value at a dotted path (None where there is none)."""
    node: Any = cfg
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else getattr(node, key, None)
    return node


def _from_cwd(cfg: Config, option: Override) -> str | None:
    """The absolute path an option's relative path names, from the working directory (as every
    path on the command line), or None when its value is no path: a config file's own paths
    are relative to the file, and stay so."""
    if not isinstance(option.value, str) or Path(option.value).is_absolute():
        return None
    value = _value_at(cfg, option.keys)
    here = Path.cwd() / option.value
    if isinstance(value, Path) or (option.path == "model.name" and here.exists()):
        return str(here.resolve())
    return None


def _attributed(problem: Problem, overrides: Sequence[Override]) -> Problem:
    """A problem of the overridden config, named after the option that set its key (every
    option, when the problem is not at one of their keys)."""
    key = problem.message.partition(":")[0]
    mine = [
        o.option
        for o in overrides
        if key == o.path or key.startswith(o.path + ".") or o.path.startswith(key + ".")
    ]
    return Problem(problem.message, " ".join(mine or [o.option for o in overrides]))


def _validated(data: dict[str, Any], overrides: Sequence[Override], label: str) -> Config:
    """``data`` validated by the config model exactly as a file's YAML is (strict types, unknown
    keys refused); ConfigError naming the options when it does not validate."""
    try:
        try:
            return Config.model_validate(data)
        except ValidationError:  # the same data as YAML text, for parse_config's messages
            return parse_config(yaml.safe_dump(data, sort_keys=False), label)
    except ConfigError as e:
        problems = [_attributed(p, overrides) for p in e.problems]
        raise ConfigError(f"invalid config with {label}", problems) from None


def apply_overrides(
    data: dict[str, Any], base: Path, overrides: Sequence[Override], label: str | None = None
) -> Config:
    """The config of ``data`` (a config file's YAML mapping, {} for the defaults) with every
    override set at its path, validated as the file is; the file's relative paths resolved
    against ``base``, an override's against the working directory. The overrides are recorded
    on the config (``Config.overrides``), for the report."""
    label = label or " ".join(o.option for o in overrides)
    for option in overrides:
        data = _set(data, option, option.value)
    cfg = _validated(data, overrides, label)
    moved = {o.path: p for o in overrides if (p := _from_cwd(cfg, o)) is not None}
    if moved:
        for option in overrides:
            if option.path in moved:
                data = _set(data, option, moved[option.path])
        cfg = _validated(data, overrides, label)
    return cfg.resolve_paths(base).with_overrides({o.path: o.value for o in overrides})


def configured(
    path: Path | None, overrides: Sequence[Override] = (), data: dict[str, Any] | None = None
) -> Config:
    """The config file ``path`` (None: the built-in defaults, or ``data`` when given, read from
    the working directory) with ``overrides`` applied. Without overrides it is the file as
    ``load_config`` reads it; with them, the file's own problems come first, at their lines."""
    if not overrides and data is None:
        return load_config(path)
    if data is None:
        data = raw_config(path)
    base = path.resolve().parent if path is not None else Path.cwd()
    try:
        cfg = apply_overrides(data, base, overrides)
    except ConfigError:
        if path is not None:
            load_config(path)  # the file's own problems first, at their lines
        raise
    for option in overrides:
        inert = inert_setting(cfg, option.path)
        if inert is not None:
            raise ConfigError(
                f"invalid {option.option}", [Problem(inert.message(option.path), option.option)]
            )
    return cfg


# settings of the Ray engine alone: with ``embedding.engine: local`` they change nothing
RAY_SETTINGS = ("address", "workers", "batch_size", "gpus_per_worker")


@dataclass(frozen=True)
class Inert:
    """Why a setting changes nothing in a config (``why``), and how to make it count (``fix``)."""

    why: str
    fix: str

    def message(self, path: str, at: str = "") -> str:
        there = f" at {at}" if at else ""
        return (
            f"{self.why}{there}: {path} would change nothing{' there' if at else ''} ({self.fix})"
        )


def inert_setting(cfg: Config, path: str) -> Inert | None:
    """Why a setting given on the command line at the dotted ``path`` would change nothing in a
    run of ``cfg`` (None: it may change something): a setting of a disabled index, of the
    health figures or the cache while they are disabled, or of the Ray engine while embedding
    locally. A config file may keep such settings (a section switched off keeps its values);
    a ``--set`` naming one is refused (the gate's own settings are checked by the config
    model, data.config, wherever they come from)."""
    keys = path.split(".")
    if len(keys) < 2:
        return None
    head, key = keys[0], keys[1]
    if head == "indexes" and len(keys) >= 3 and keys[2] != "enabled":
        if key not in cfg.indexes.enabled_names():
            return Inert(
                f"index {key} is disabled",
                f"enable it with indexes.{key}.enabled: true, or drop this --set",
            )
    elif head in ("health", "cache") and key != "enabled" and not getattr(cfg, head).enabled:
        return Inert(
            f"{head} is disabled", f"enable it with {head}.enabled: true, or drop this --set"
        )
    elif head == "embedding" and key in RAY_SETTINGS and cfg.embedding.engine == "local":
        return Inert(
            "embedding.engine is local",
            "a setting of the Ray engine: set embedding.engine: ray, or drop this --set",
        )
    return None


def point_config(
    data: dict[str, Any], base: Path, axes: list[Axis], point: dict[str, Any]
) -> Config:
    """The validated config of one grid point, its relative paths resolved against ``base``
    (those of its ``--set`` values against the working directory)."""
    settings = shown(", ".join(f"{k}={v!r}" for k, v in point.items()))
    options = [Override(a.path, point[a.path], f"--set {a.text}") for a in axes]
    try:
        cfg = apply_overrides(data, base, options, f"--set {settings}")
    except ConfigError as e:
        texts = " ".join(f"--set {a.text}" for a in axes)
        problems = [Problem(p.message, "--set") for p in e.problems]
        raise ConfigError(f"invalid config at {settings} (from {texts})", problems) from None
    _refuse_inert_axes(cfg, axes, settings)
    return cfg


def _refuse_inert_axes(cfg: Config, axes: list[Axis], settings: str) -> None:
    """ConfigError for an axis whose setting changes nothing at this point (``inert_setting``:
    an index disabled there, by the file or by another axis): the points would differ in name
    only."""
    for axis in axes:
        inert = inert_setting(cfg, axis.path)
        if inert is not None:
            raise _bad(axis.text, inert.message(axis.path, settings))
