"""The generated reference pages (docs/reference/): every config key from the pydantic models of
``data/config/``, every field of report.json from ``data/schema/``, and the metric table
from the metric registry (``core.metrics.FAMILIES``). The cog blocks of the pages call these
functions; ``tests/test_docs_generated.py`` fails when a page differs from what they return.

A model becomes sections of Markdown tables, one per mapping of the file, headed by its dotted
path (``gate.significance``, ``indexes.<name>`` for a key of your own, ``slices.custom[]`` for
the items of a list); a union of models told apart by a tag (``model`` by ``provider``, the typed
indexes by ``type``) gives one section per member. A field says what it is in its
``description``; report.json's models say it in the comments above or beside the field, which
are read from the source as they stand. Output is plain text, the same on every machine.
"""

from __future__ import annotations

import inspect
import io
import json
import re
import tokenize
import types
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from evalret.core.metrics import FAMILIES, JUDGED_SUFFIX
from evalret.core.treceval import MEASURES, NICKNAMES
from evalret.data.config import DEMO_SHOWN, Config, demo_golden_set
from evalret.data.schema import CompareReport, RunReport
from evalret.report.config_examples import CONFIG_EXAMPLES

# what Markdown (Python-Markdown, as MkDocs runs it) would read as markup in plain text: a
# backslash, emphasis (an underscore only at a word's edge: inside a word it is no markup), link
# brackets, a table cell's end; "<" could open an HTML tag and is written as an entity
_MD_SPECIAL = re.compile(r"[\\*\[\]|]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_CODE = re.compile(r"(`[^`]*`)")


def _escaped(text: str) -> str:
    return _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), text).replace("<", "&lt;")


def md_text(text: str) -> str:
    """``text`` for a Markdown table cell or paragraph: on one line, markup characters escaped
    outside code spans (a ``|`` inside one too, as it would end a table cell)."""
    parts = _CODE.split(" ".join(text.split()).replace("``", "`"))  # RST's literals too
    return "".join(
        part.replace("|", "\\|") if part.startswith("`") else _escaped(part) for part in parts
    )


def code(text: str) -> str:
    """``text`` as a code span (a backtick inside becomes a quote: none of ours has one)."""
    return "`" + text.replace("`", "'").replace("|", "\\|") + "`"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table of cells already escaped."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# --- types, defaults and bounds ------------------------------------------------------------------

_SCALARS = {bool: "boolean", int: "integer", float: "number", str: "string", Path: "path"}
_BOUNDS = (
    (annotated_types.Ge, "ge", "≥"),
    (annotated_types.Gt, "gt", ">"),
    (annotated_types.Le, "le", "≤"),
    (annotated_types.Lt, "lt", "<"),
)


def _unwrap(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _members(annotation: Any) -> tuple[Any, ...]:
    """The members of a union (itself alone when it is none)."""
    annotation = _unwrap(annotation)
    if get_origin(annotation) in (Union, types.UnionType):
        return tuple(_unwrap(a) for a in get_args(annotation))
    return (annotation,)


def is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def type_name(annotation: Any) -> str:
    """A type as a reader of YAML or JSON calls it: ``integer``, ``list of string``,
    ``one of `a`, `b```, ``mapping`` (a section of its own)."""
    names = []
    for member in _members(annotation):
        if member is type(None):
            names.append("null")
        elif member in _SCALARS:
            names.append(_SCALARS[member])
        elif is_model(member):
            names.append("mapping")
        elif get_origin(member) is Literal:
            values = [code(str(v)) for v in get_args(member)]
            names.append(values[0] if len(values) == 1 else "one of " + ", ".join(values))
        elif get_origin(member) is list:
            names.append("list of " + type_name(get_args(member)[0]))
        elif get_origin(member) is dict:
            names.append("mapping of string to " + type_name(get_args(member)[1]))
        else:
            names.append("any")
    return " or ".join(dict.fromkeys(names))


def bounds(info: FieldInfo) -> str:
    """The field's numeric bounds and length floor: ``≥ 1, ≤ 64``."""
    said = []
    for meta in info.metadata:
        for kind, attr, sign in _BOUNDS:
            if isinstance(meta, kind):
                said.append(f"{sign} {getattr(meta, attr)}")
        if isinstance(meta, annotated_types.MinLen) and meta.min_length > 0:
            said.append(f"at least {meta.min_length} long")
    return ", ".join(said)


def default_text(info: FieldInfo) -> str:
    """The field's default as YAML writes it (a code span), ``required``, or ``(section)`` for a
    mapping of its own."""
    if info.default is PydanticUndefined and info.default_factory is None:
        return "required"
    if info.default_factory is demo_golden_set:
        return DEMO_SHOWN  # a path of this machine's installation
    value = info.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        return "(section)"
    if isinstance(value, Path):
        value = value.as_posix()
    if isinstance(value, str):
        return code(value) if value else code('""')
    if isinstance(value, dict) and any(isinstance(v, BaseModel) for v in value.values()):
        value = {k: v.model_dump(exclude_none=True) for k, v in value.items()}
    return code(json.dumps(value, ensure_ascii=False, separators=(", ", ": ")))


# --- field comments of the report models ---------------------------------------------------------


@cache
def field_comments(model: type[BaseModel]) -> dict[str, str]:
    """The comments that say what each field of ``model`` holds: the comment lines right above
    the field and the comment at the end of its line, read from the class's source."""
    try:
        source = inspect.getsource(model)
    except (OSError, TypeError):
        return {}
    found: dict[str, str] = {}
    above: list[str] = []
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    line_start, depth = True, 0  # depth: open brackets (a statement over several lines)
    field: str | None = None
    for tok in tokens:
        if tok.type == tokenize.OP and tok.string in "([{)]}":
            depth += 1 if tok.string in "([{" else -1
        if tok.type == tokenize.COMMENT:
            text = tok.string.lstrip("#").strip()
            if line_start and depth == 0:  # a comment line of its own: about the field below
                above.append(text)
            elif field is not None:  # on the field's line (or lines)
                found[field] = " ".join([*filter(None, [found.get(field, "")]), text])
        elif (
            line_start
            and depth == 0
            and tok.type not in (tokenize.NL, tokenize.INDENT, tokenize.DEDENT)
        ):
            # a line's first token: a field of the class body, or any other line
            is_field = tok.type == tokenize.NAME and tok.start[1] == 4
            field = tok.string if is_field and tok.string in model.model_fields else None
            if field is not None and above:
                found[field] = " ".join(above)
            above = []
            line_start = False
        elif tok.type in (tokenize.NEWLINE, tokenize.NL):
            line_start = depth == 0
    return found


def field_description(model: type[BaseModel], name: str) -> str:
    info = model.model_fields[name]
    return info.description or field_comments(model).get(name, "")


# --- a model as sections -------------------------------------------------------------------------


@dataclass(frozen=True)
class Section:
    path: str
    model: type[BaseModel]
    note: str  # which member of a union this is ("provider: openai"), or ""


def _tag(members: tuple[type[BaseModel], ...]) -> str | None:
    """The field that tells the members of a union apart: one each narrows to a single string."""
    if len(members) < 2:
        return None
    for name in members[0].model_fields:
        values = [get_args(m.model_fields[name].annotation) if name in m.model_fields else ()
                  for m in members]  # fmt: skip
        if all(len(v) == 1 and isinstance(v[0], str) for v in values):
            return name
    return None


def _extra_type(model: type[BaseModel]) -> Any:
    """The type of a model's extra keys (``indexes.<name>``), None when it takes none."""
    if model.model_config.get("extra") != "allow":
        return None
    hints = get_type_hints(model, include_extras=True)
    extra = hints.get("__pydantic_extra__")
    return get_args(_unwrap(extra))[1] if extra is not None else None


def _nested(annotation: Any, path: str) -> Iterator[tuple[str, Any]]:
    """The models below a field's type, each with its path: a list's items (``[]``), a
    mapping's values (``.<name>``), each member of a union."""
    for member in _members(annotation):
        if is_model(member):
            yield path, member
        elif get_origin(member) is list:
            yield from _nested(get_args(member)[0], f"{path}[]")
        elif get_origin(member) is dict:
            yield from _nested(get_args(member)[1], f"{path}.<name>")


def sections(model: type[BaseModel], path: str = "", note: str = "") -> Iterator[Section]:
    """``model``'s section, then those of the models below it, depth first."""
    yield Section(path, model, note)
    below: list[tuple[str, Any]] = []
    for name, info in model.model_fields.items():
        below += _nested(info.annotation, f"{path}.{name}" if path else name)
    extra = _extra_type(model)
    if extra is not None:
        below += _nested(extra, f"{path}.<name>" if path else "<name>")
    by_path: dict[str, list[type[BaseModel]]] = {}
    for sub_path, sub in below:
        by_path.setdefault(sub_path, []).append(sub)
    for sub_path, subs in by_path.items():
        tag = _tag(tuple(subs))
        for sub in subs:
            label = f"{tag}: {get_args(sub.model_fields[tag].annotation)[0]}" if tag else ""
            yield from sections(sub, sub_path, label)


def _field_rows(model: type[BaseModel], with_default: bool) -> list[tuple[str, ...]]:
    rows = []
    for name, info in model.model_fields.items():
        kind = type_name(info.annotation)
        limits = bounds(info)
        # a type name holds code spans (the choices) and nothing else to escape
        kind_cell = kind if not limits else f"{kind}, {md_text(limits)}"
        cells = [code(name), kind_cell]
        if with_default:
            cells.append(default_text(info))
        else:
            required = info.default is PydanticUndefined and info.default_factory is None
            cells.append("always" if required else "optional")
        cells.append(md_text(field_description(model, name)))
        rows.append(tuple(cells))
    return rows


def _field_list(model: type[BaseModel], with_default: bool) -> str:
    """The fields as a list: ``- `key` (type; default `x`): meaning``. A list, not a table: a
    column squeezed by the others would break long key names mid-word."""
    items = []
    for name, kind, last, meaning in _field_rows(model, with_default):
        if with_default and last not in ("required", "(section)"):
            last = f"default {last}" if last else "no default"
        elif last == "(section)":
            last = "its section below"
        last = "always present" if last == "always" else last
        items.append(f"- {name} ({kind}; {last})" + (f": {meaning}" if meaning else ""))
    return "\n".join(items) + "\n"


def _docstring(model: type[BaseModel]) -> str:
    doc = model.__doc__ or ""
    if doc == BaseModel.__doc__ or doc.startswith(f"{model.__name__}("):
        return ""
    return " ".join(inspect.cleandoc(doc).split())


def section_title(section: Section) -> str:
    """A section as ``CONFIG_EXAMPLES`` names it: its path, and its member in brackets."""
    return section.path + (f" ({section.note})" if section.note else "")


def model_page(
    root: type[BaseModel], with_default: bool, top: str, examples: dict[str, str] | None = None
) -> str:
    """Every section of ``root`` as a heading, its docstring, a table of its fields and its
    example (``examples``, by ``section_title``), as YAML; a model met again at another path is
    named, not repeated."""
    out: list[str] = []
    seen: dict[type[BaseModel], str] = {}
    for section in sections(root):
        title = code(section.path) if section.path else top
        title += f" ({md_text(section.note)})" if section.note else ""
        out.append(f"## {title}\n")
        doc = _docstring(section.model)
        if doc:
            out.append(md_text(doc) + "\n")
        if section.model in seen:
            out.append(f"The same keys as {code(seen[section.model])}.\n")
        else:
            seen[section.model] = section.path or top
            out.append(_field_list(section.model, with_default))
        example = (examples or {}).get(section_title(section))
        if example is not None:
            out.append(f"Example:\n\n```yaml\n{example.rstrip()}\n```\n")
    return "\n".join(out)


def config_reference() -> str:
    """Every config key: a section per mapping of the file, each key's type, default and
    meaning, and an example of the section (``config_examples``)."""
    return model_page(Config, with_default=True, top="top level", examples=CONFIG_EXAMPLES)


def report_json_reference() -> str:
    """Every field of report.json (``RunReport``), then of compare.json (``CompareReport``)."""
    run = model_page(RunReport, with_default=False, top="report.json")
    compare = model_page(CompareReport, with_default=False, top="compare.json")
    return run + "\n" + compare


def metrics_reference() -> str:
    """The metric table from the registry: each family with a cutoff and without, its trec_eval
    measure, what a query scores, and the names it answers to."""
    rows = []
    for family in FAMILIES:
        trec = family.trec_eval
        if trec is None:  # what it equals instead (err: ir_measures' ERR)
            cut = md_text(f"none: {family.equals}")
            uncut = md_text("none: the same at k = the ranking's depth")
        elif trec.cut_run:
            cut, uncut = f"{code(trec.cut)} on the run cut at k", code(trec.uncut)
        else:
            cut, uncut = code(f"{trec.cut}.k"), code(trec.uncut)
        uncut = f"{uncut} > 0" if trec is not None and trec.positive else uncut
        names = ", ".join(code(a) for a in (family.name, *family.aliases))
        rows.append((code(f"{family.name}@k"), cut, md_text(family.at_k), names))
        rows.append((code(family.name), uncut, md_text(family.whole), names))
    rows.append(
        (
            code(f"<metric>:{JUDGED_SUFFIX}"),
            "the metric's measure with `-J`",
            md_text(
                f"any name above followed by :{JUDGED_SUFFIX}: the unjudged documents are removed "
                "from each ranking first, then it is cut at k and scored as usual"
            ),
            "",
        )
    )
    return table(("metric", "trec_eval", "what a query scores", "family names"), rows)


def trec_eval_measures_reference() -> str:
    """The measures of `evalret trec_eval` (``core.treceval.MEASURES``), in trec_eval's print
    order: each one's default parameters, the nicknames that select it and what a query scores
    (its function's docstring)."""
    rows = []
    for m in MEASURES:
        default = ",".join(f"{x:g}" if isinstance(x, float) else str(x) for x in m.default)
        sets = ", ".join(code(n) for n, names in NICKNAMES.items() if m.name in names)
        what = " ".join((m.fn.__doc__ or "").split()) if m.fn else ""
        if m.kind == "runid":
            what = "the run's tag (the last line's sixth column); 'all' line only"
        elif m.kind == "num_q":
            what = "the queries scored (every qrels query with -c); 'all' line only"
        elif m.kind == "gm":
            what += " 'all' line only: exp(the mean)"
        rows.append((code(m.name), code(default) if default else "", sets, md_text(what)))
    return table(("measure", "default parameters", "in", "what a query scores"), rows)
