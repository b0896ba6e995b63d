"""Reading a config file: its YAML (through data/yamltext), validated into a ``Config``, every
problem reported as a ``Problem`` with its key path and line (a union member's tag, which is no
key of the file, taken out of the path)."""

from __future__ import annotations

import re
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from evalret.core.suggest import did_you_mean
from evalret.data import yamltext
from evalret.data.config.base import AtKey
from evalret.data.config.indexes import INDEX_CONFIGS, IndexesConfig
from evalret.data.config.models import MODEL_CONFIGS
from evalret.data.config.rerank import RERANKER_PROVIDERS
from evalret.data.config.root import Config
from evalret.data.textfile import read_text
from evalret.errors import ConfigError, Problem


def _node_line(root: yaml.Node | None, loc: tuple[int | str, ...]) -> int | None:
    """1-based line of the YAML node at ``loc`` (or of its deepest existing parent)."""
    node, line = root, (root.start_mark.line + 1 if root is not None else None)
    for part in loc:
        child = None
        if isinstance(node, yaml.MappingNode):
            for key, value in reversed(node.value):  # the last: a merge's key may be overridden
                if key.value == part:
                    child = key if part == loc[-1] else value
                    break
        elif (
            isinstance(node, yaml.SequenceNode)
            and isinstance(part, int)
            and 0 <= part < len(node.value)
        ):
            child = node.value[part]
        if child is None:
            break
        node, line = child, child.start_mark.line + 1
    return line


def _format_loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _key_loc(node: yaml.Node | None, mark: Any) -> tuple[int | str, ...] | None:
    """The path of the mapping key under ``node`` that starts at ``mark``."""
    pairs: list[tuple[int | str, yaml.Node, yaml.Node | None]] = []
    if isinstance(node, yaml.MappingNode):
        pairs = [(k.value, k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode)]
    elif isinstance(node, yaml.SequenceNode):
        pairs = [(n, child, child) for n, child in enumerate(node.value)]
    for part, key, value in pairs:
        if key.start_mark.index == mark.index and isinstance(node, yaml.MappingNode):
            return (part,)
        below = _key_loc(value, mark)
        if below is not None:
            return (part, *below)
    return None


def _yaml_problem(
    e: yaml.YAMLError, text: str, root: yaml.Node | None = None
) -> tuple[str, int | None]:
    """The message and 1-based line of a YAML error (a reader error, e.g. a control character,
    carries a character position instead of a mark); a repeated key is named by its path."""
    if isinstance(e, yaml.reader.ReaderError):
        line = text.count("\n", 0, e.position) + 1
        return f"unacceptable character #x{e.character:04x}: {e.reason}", line
    mark = getattr(e, "problem_mark", None)
    message = getattr(e, "problem", None) or str(e)
    first = getattr(e, "context_mark", None)
    if isinstance(e, yamltext.DuplicateKeyError) and mark is not None and first is not None:
        loc = _key_loc(root, mark)
        if loc:
            lines = f"lines {first.line + 1} and {mark.line + 1}"
            message = f"{_format_loc(loc)}: duplicate key on {lines}{yamltext.REPLACED}"
    return message, mark.line + 1 if mark is not None else None


def _unconstructible_line(node: yaml.Node | None) -> int | None:
    """The 1-based line of the first scalar under ``node`` the safe loader cannot construct."""
    if isinstance(node, yaml.ScalarNode):
        try:
            yaml.SafeLoader("").construct_object(node)
        except (yaml.YAMLError, ValueError):
            return node.start_mark.line + 1
        return None
    children = node.value if isinstance(node, yaml.CollectionNode) else []
    for child in children:
        for part in child if isinstance(child, tuple) else (child,):
            line = _unconstructible_line(part)
            if line is not None:
                return line
    return None


def read_yaml_mapping(text: str, source: str) -> tuple[dict[str, Any], yaml.Node | None]:
    """The config's YAML as a mapping ({} when empty) and its node tree (for lines); a
    ConfigError with the line for malformed YAML, a repeated key or a top level that is no
    mapping."""
    root = None
    try:
        root = yamltext.compose(text)
        data: Any = yamltext.construct(root)
    except yaml.YAMLError as e:
        message, line = _yaml_problem(e, text, root)
        raise ConfigError("invalid YAML", [Problem(message, source, line)]) from None
    except RecursionError:
        raise ConfigError("invalid YAML", [Problem("nested too deeply", source)]) from None
    except ValueError as e:  # a scalar the YAML constructor cannot convert: a huge integer
        line = _unconstructible_line(root)
        raise ConfigError("invalid YAML", [Problem(str(e).split(";")[0], source, line)]) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError("invalid config", [Problem("the top level must be a mapping", source, 1)])
    return data, root


# pydantic's error types of a value of the wrong type (the models are strict: nothing converts)
_TYPE_ERRORS = ("int_type", "float_type", "bool_type", "string_type")
# a section that is no mapping (a model's, or a union member's)
_MAPPING_ERRORS = ("model_type", "model_attributes_type")
_YAML_TYPES = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
_YAML_SHAPES = {dict: "a mapping", list: "a list", type(None): "null"}


def _given(value: Any) -> str:
    """What a value of the wrong type is, as the YAML reader made it: ``a string ('10')``."""
    kind = _YAML_TYPES.get(type(value))
    if kind is None:
        return _YAML_SHAPES.get(type(value), type(value).__name__)
    shown = str(value).lower() if isinstance(value, bool) else repr(value)
    return f"{kind} ({shown[:60]}{'...' if len(shown) > 60 else ''})"


@dataclass(frozen=True)
class _UnionSite:
    """Where a registered union sits in the config: its errors' ``loc`` carries the member's tag
    at ``depth`` (no key of the file: it is taken out), after ``head``."""

    head: str
    depth: int
    field: str  # the tag's key
    noun: str  # what a tag names, in messages
    registry: dict[str, Any]

    def member_at(self, loc: tuple[int | str, ...]) -> str | None:
        """The tag in ``loc`` when the error lies inside one of this union's members."""
        n = self.depth
        inside = len(loc) > n and loc[0] == self.head and loc[n] in self.registry
        return str(loc[n]) if inside else None

    def holds(self, loc: tuple[int | str, ...]) -> bool:
        """``loc`` is the union itself (an error of its tag)."""
        return len(loc) == self.depth and loc[0] == self.head

    def choices(self) -> str:
        return ", ".join(self.registry)


_UNION_SITES = (
    _UnionSite("model", 1, "provider", "provider", MODEL_CONFIGS),
    _UnionSite("indexes", 2, "type", "index type", INDEX_CONFIGS),
)


def _member_message(site: _UnionSite, tag: str, err: Any, key: int | str) -> str | None:
    """What a key of a union member is missing or misplaced for, naming the members: a key of
    another member, a required key with its description."""
    member = site.registry[tag]
    if err["type"] == "extra_forbidden":
        readers = [t for t, m in site.registry.items() if key in m.model_fields and t != tag]
        if readers:
            return (
                f"a setting of {site.noun} {' or '.join(readers)}, not read with {site.noun} {tag}"
            )
    elif err["type"] == "missing" and key in member.model_fields:
        description = member.model_fields[key].description
        return f"{site.noun} {tag} needs {key}" + (f": {description}" if description else "")
    return None


def _union_problem(
    loc: tuple[int | str, ...], err: Any
) -> tuple[tuple[int | str, ...], str | None]:
    """``loc`` without a union's tag, and the message of an error about the tag or about a key
    of a member (None: the usual message)."""
    for site in _UNION_SITES:
        tag = site.member_at(loc)
        if tag is not None:
            loc = loc[: site.depth] + loc[site.depth + 1 :]  # the tag is no key of the file
            inside = len(loc) == site.depth + 1
            return loc, _member_message(site, tag, err, loc[-1]) if inside else None
        if site.holds(loc) and err["type"] == "union_tag_invalid":
            given = err["ctx"]["tag"]
            hint = did_you_mean(given, site.registry)
            return (*loc, site.field), f"{given!r} is no {site.noun}{hint}: one of {site.choices()}"
        if site.holds(loc) and err["type"] == "union_tag_not_found":
            return (*loc, site.field), f"required: one of {site.choices()}"
    return loc, None


def _leaves(annotation: Any) -> list[Any]:
    """The types an annotation may hold: Annotated, Optional and unions unwrapped."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _leaves(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return [leaf for arg in get_args(annotation) for leaf in _leaves(arg)]
    return [annotation]


def _step(node: Any, part: int | str) -> Any:
    """The type at key ``part`` below ``node`` (a model, an annotation, or a tag's registry for
    a typed index's name), or None when the path leaves the models."""
    if isinstance(node, dict):  # a union's registry: part is its member's tag
        return node.get(part) if isinstance(part, str) else None
    registries = [site.registry for site in _UNION_SITES]
    for leaf in _leaves(node):
        if isinstance(leaf, type) and issubclass(leaf, BaseModel):
            if part in leaf.model_fields:
                return leaf.model_fields[str(part)].annotation
            if leaf is IndexesConfig:  # any other name is a typed index
                return INDEX_CONFIGS
        elif get_origin(leaf) is dict and isinstance(part, str):
            return get_args(leaf)[1]
        elif get_origin(leaf) is list and isinstance(part, int):
            return get_args(leaf)[0]
    members = set(_leaves(node))
    tagged = [r for r in registries if members & set(r.values())]
    if tagged and isinstance(part, str):
        return tagged[0].get(part)
    return next((m for m in members if part in _tags(m)), None)  # another union: its tag


def _tags(member: Any) -> set[Any]:
    """The values a union member's Literal fields take (its tag among them)."""
    if not (isinstance(member, type) and issubclass(member, BaseModel)):
        return set()
    return {
        v
        for f in member.model_fields.values()
        if get_origin(f.annotation) is Literal
        for v in get_args(f.annotation)
    }


def _keys_at(loc: tuple[int | str, ...]) -> list[str]:
    """The keys a config may hold at ``loc`` (pydantic's path, a union member's tag included),
    [] when the path is not one model's."""
    node: Any = Config
    for part in loc:
        node = _step(node, part)
        if node is None:
            return []
    models = [x for x in _leaves(node) if isinstance(x, type) and issubclass(x, BaseModel)]
    return [str(k) for k in models[0].model_fields] if len(models) == 1 else []


def _validation_problem(err: Any, root: yaml.Node | None, source: str) -> Problem:
    """One pydantic error as a Problem at its key's path and line."""
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function")))
    loc, said = _union_problem(loc, err)
    if len(loc) > 4 and loc[2] == "reranker" and loc[3] in RERANKER_PROVIDERS:
        loc = loc[:3] + loc[4:]  # indexes.<name>.reranker.<provider>.<key>: the tag taken out
    error = (err.get("ctx") or {}).get("error")
    if isinstance(error, AtKey):
        loc = loc + error.loc
    msg = str(error) if isinstance(error, AtKey) else err["msg"]
    if said is not None:
        msg = said
    elif err["type"] == "union_tag_invalid":  # a union outside _UNION_SITES (reranker.provider)
        c = err["ctx"]
        tags = re.findall(r"'([^']*)'", c["expected_tags"])
        loc = (*loc, c["discriminator"].strip("'"))
        msg = (
            f"{c['tag']!r} is no {loc[-1]}{did_you_mean(c['tag'], tags)}: one of {', '.join(tags)}"
        )
    elif err["type"] == "extra_forbidden":
        msg = "unknown key" + did_you_mean(str(err["loc"][-1]), _keys_at(err["loc"][:-1]))
    elif err["type"] in _TYPE_ERRORS:
        msg = f"{msg}, not {_given(err['input'])}"
    elif err["type"] in _MAPPING_ERRORS:
        msg = f"Input should be a mapping, not {_given(err['input'])}"
    return Problem(f"{_format_loc(loc)}: {msg}", source, _node_line(root, loc))


def parse_config(text: str, source: str = "<config>") -> Config:
    """Validate YAML text into a Config; every problem is reported with its key path and line.
    The models are strict: a value of another type is refused, never converted."""
    data, root = read_yaml_mapping(text, source)
    try:
        return Config.model_validate(data)
    except ValidationError as e:
        problems = [_validation_problem(err, root, source) for err in e.errors()]
        raise ConfigError(f"invalid config {source}", problems) from None


def load_config(path: Path | None) -> Config:
    """Read and validate a config file (defaults when ``path`` is None), paths made absolute."""
    if path is None:
        return Config().resolve_paths(Path.cwd())
    text = read_text(path, "config", ConfigError)
    return parse_config(text, str(path)).resolve_paths(path.resolve().parent)
