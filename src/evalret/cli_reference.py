"""The CLI reference page (docs/reference/cli.md), generated from the Typer app: every command
and sub-command, grouped as ``evalret --help`` groups them, with its usage, help, arguments and
options (their help, type, choices, bounds and default) and one example with its real output. It
walks the command tree Typer builds (``typer.main.get_command``) and reads each parameter's
declaration, never the text of ``--help``: nothing depends on the terminal's width or colours.
The page's cog block calls ``cli_reference``; tests/test_docs_generated.py checks it.

The examples (``EXAMPLES``: one command line per command) are run by ``python -m
evalret.cli_reference``, in order, in a copy of the demo with an empty embedding cache of their
own, 1000 columns wide (no line wraps, whatever the length of the temporary path); their
output, with what varies replaced by ``report.shown_output``'s placeholders (paths,
durations, the load, dates, the version), is recorded in
docs/reference/cli-examples.json, which the page is made from: ``cog`` itself loads no model,
and an example changed in ``EXAMPLES`` without rerunning it fails the page's generation. The
model lane reruns them all and compares, normalised (tests/test_docs_generated.py), so a command
whose output changes fails until they are rerun.

The one module above ``cli.py``: it imports the app, and nothing imports it.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

import typer.main

from evalret.cli import app
from evalret.cli_help import SECTIONS
from evalret.report.reference_docs import code, md_text
from evalret.report.shown_output import placeholders

REPO = Path(__file__).resolve().parents[2]
RECORD = REPO / "docs" / "reference" / "cli-examples.json"
RERUN = "python -m evalret.cli_reference"
_DEMO = ("golden_sets", "configs", "baselines")
_TYPES = {bool: "flag", int: "integer", float: "number", str: "text", Path: "path"}


def _context(command: Any, name: str, parent: Any | None) -> Any:
    return type(command).context_class(command, info_name=name, parent=parent)


def _commands(command: Any, ctx: Any) -> Iterator[tuple[Any, Any]]:
    """Every command below ``command`` (itself first), each with its context, in the order
    ``--help`` lists them."""
    yield command, ctx
    if hasattr(command, "list_commands"):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _commands(sub, _context(sub, name, ctx))


def _type_text(param: Any) -> str:
    """A parameter's type as the page writes it: ``integer, ≥ 1``, one of its choices,
    ``path, repeatable``."""
    descriptor = param.type_descriptor
    annotation = descriptor.annotation
    many = get_origin(annotation) is list
    if many:
        annotation = get_args(annotation)[0]
    if descriptor.is_choice:
        text = "one of " + ", ".join(code(str(c)) for c in descriptor.choices or ())
    else:
        text = _TYPES.get(annotation, str(getattr(annotation, "__name__", annotation)))
    bounds = [f"≥ {param.min}" if param.min is not None else "", ""]
    bounds[1] = f"≤ {param.max}" if param.max is not None else ""
    if any(bounds):
        text += ", " + ", ".join(b for b in bounds if b)
    if many and param.param_type_name == "option":
        text += ", repeatable"
    return text


def _default_text(param: Any) -> str:
    default = param.default
    if param.required:
        return "required"
    if default is None or default == [] or callable(default):
        return ""
    if isinstance(default, bool):
        if param.secondary_opts:  # --progress / --no-progress
            return code((param.opts if default else param.secondary_opts)[0])
        return "" if default is False else "on"
    if isinstance(default, Path):
        default = default.as_posix()
    return code(str(default))


def _name_text(param: Any) -> str:
    if param.param_type_name == "argument":
        name = str(param.metavar or param.name).upper()
        return code(name + ("..." if param.nargs != 1 else ""))
    return " / ".join(code(n) for n in (*param.opts, *param.secondary_opts))


def _usage(command: Any, ctx: Any) -> str:
    return " ".join([ctx.command_path, *command.collect_usage_pieces(ctx)])


def _help_paragraphs(text: str | None) -> list[str]:
    paragraphs = inspect.cleandoc(text or "").split("\n\n")
    return [md_text(p) for p in paragraphs if p.strip()]


def _param_item(param: Any) -> str:
    """One parameter as a list item: its names, then type and default (or "required"), then
    what it means. A list, not a table: a column squeezed by the others would break option
    names mid-word."""
    facts = [_type_text(param), _default_text(param)]
    said = "; ".join(f for f in facts if f)
    if facts[1] and facts[1] != "required":
        said = f"{facts[0]}; default {facts[1]}" if facts[0] else f"default {facts[1]}"
    meaning = md_text(getattr(param, "help", "") or "")
    item = f"- {_name_text(param)} ({said})"
    return f"{item}: {meaning}" if meaning else item


def _params(command: Any, ctx: Any) -> list[str]:
    params = [p for p in command.get_params(ctx) if not p.hidden and p.name != "help"]
    out = []
    for kind, title in (("argument", "Arguments"), ("option", "Options")):
        items = [_param_item(p) for p in params if p.param_type_name == kind]
        if items:
            out.append(f"**{title}**\n\n" + "\n".join(items) + "\n")
    return out


def _subcommands(command: Any, ctx: Any) -> list[str]:
    if not hasattr(command, "list_commands"):
        return []
    items = []
    for name in command.list_commands(ctx):
        sub = command.get_command(ctx, name)
        if sub is not None and not sub.hidden:
            path = f"{ctx.command_path} {name}"
            short = md_text(sub.get_short_help_str(limit=1000))
            items.append(f"- [{code(path)}](#{_anchor(path)}): {short}")
    return ["**Commands**\n\n" + "\n".join(items) + "\n"] if items else []


def _anchor(path: str) -> str:
    """The anchor MkDocs gives the heading of ``path`` (``evalret cache info``)."""
    return path.replace(" ", "-")


def command_section(command: Any, ctx: Any, heading: int = 3) -> str:
    """One command: its heading, usage, help, arguments and options, sub-commands and
    example."""
    out = [f"{'#' * heading} `{ctx.command_path}`\n", f"```\n{_usage(command, ctx)}\n```\n"]
    out += [p + "\n" for p in _help_paragraphs(command.help)]
    out += _params(command, ctx)
    out += _subcommands(command, ctx)
    if not hasattr(command, "list_commands"):
        out.append(example_text(ctx.command_path))
    return "\n".join(out)


def _group_of(name: str) -> str:
    return next((title for title, names in SECTIONS if name in names), "Other commands")


def _groups(root: Any, ctx: Any) -> dict[str, list[str]]:
    """The top-level commands by section of ``evalret --help`` (``cli_help.SECTIONS``), in its
    order (then any other), each section's commands in the order of ``--help``."""
    found: dict[str, list[str]] = {title: [] for title, _ in SECTIONS}
    for name in root.list_commands(ctx):
        command = root.get_command(ctx, name)
        if command is not None and not command.hidden:
            found.setdefault(_group_of(name), []).append(name)
    return {title: names for title, names in found.items() if names}


def cli_reference() -> str:
    """Every command of `evalret`: the top level first, then one section per group of
    ``--help``, each command (and its sub-commands) in the order of ``--help``."""
    root: Any = typer.main.get_command(app)
    ctx = _context(root, "evalret", None)
    top = ["## `evalret`\n", f"```\n{_usage(root, ctx)}\n```\n"]
    top += [p + "\n" for p in _help_paragraphs(root.help)]
    top += _params(root, ctx)
    groups = _groups(root, ctx)
    top.append("**Commands**, by group\n")
    for title, names in groups.items():
        links = ", ".join(f"[{code(n)}](#{_anchor('evalret ' + n)})" for n in names)
        top.append(f"- **{title}**: {links}")
    out = ["\n".join(top) + "\n"]
    for title, names in groups.items():
        out.append(f"## {title}\n")
        for name in names:
            command = root.get_command(ctx, name)
            sub_ctx = _context(command, name, ctx)
            out += [
                command_section(c, c_ctx, heading=2 + c_ctx.command_path.count(" "))
                for c, c_ctx in _commands(command, sub_ctx)
            ]
    return "\n".join(out)


# --- one example per command, run by the generator ---------------------------------------------


@dataclass(frozen=True)
class Example:
    """One command line run in a copy of the demo (``golden_sets/``, ``configs/``,
    ``baselines/``): ``before`` runs first (shown as the commands it comes after; its output is
    not shown), ``command`` is shown with its output; ``exit_code`` is the code it must end
    with; ``not_run`` says why a command is shown without output (it serves a page until
    stopped); ``varies`` why its output is shown but not compared when rerun (measured
    timings); ``lines``: the most output lines shown (the rest elided with ``...``)."""

    command: str
    before: tuple[str, ...] = ()
    exit_code: int = 0
    not_run: str = ""
    varies: str = ""
    lines: int = 32


_JUDGE = (
    "printf 'judge:\\n  name: gpt-4o-mini\\n  base_url: https://api.openai.com/v1\\n"
    "  api_key_env: OPENAI_API_KEY\\n  price_per_million_input_tokens: 0.15\\n"
    "  price_per_million_output_tokens: 0.60\\n' > judge.yaml"
)
_LOG = (
    "python -c \"import json; qs = [json.loads(x)['text'] for x in "
    "open('golden_sets/demo/queries.jsonl')]; open('queries.log', 'w').writelines("
    "q + '\\n' for i, q in enumerate(qs) for _ in range(1 + 40 // (i + 1)))\""
)
_GRADES = (
    "python -c \"import json; pairs = [json.loads(x) for x in open('pool.jsonl')][:6]; "
    "[open(f'{who}.jsonl', 'w').writelines(json.dumps({**p, 'grade': (i + shift) % 4, "
    "'annotator': who}) + '\\n' for i, p in enumerate(pairs)) "
    "for who, shift in (('alice', 0), ('bob', 1))]\""
)
_QRELS = (
    "python -c \"import json; open('qrels.txt', 'w').writelines(f\\\"{q['id']} 0 {d} {g}\\\\n\\\" "
    "for q in map(json.loads, open('golden_sets/demo/queries.jsonl')) "
    "for d, g in q['relevant'].items())\""
)
_TRAIN = (
    "printf 'LMW-4031\\nhow do I rotate an API key\\nwhat is the capital of France\\n' > train.txt"
)
# in the order they run: a later example reads what an earlier one wrote (reports/run)
EXAMPLES: dict[str, Example] = {
    "evalret run": Example(
        "evalret run -c configs/default.yaml --baseline baselines/demo.json --out reports/run"
    ),
    "evalret embed": Example("evalret embed -c configs/default.yaml"),
    "evalret score": Example(
        "evalret score golden_sets/demo reports/run/run.exact.trec reports/run/run.bm25.trec "
        "--out reports/score"
    ),
    "evalret trec_eval": Example(
        "evalret trec_eval -m map -m P.5,10 -m ndcg_cut.10 qrels.txt reports/run/run.exact.trec",
        (_QRELS,),
    ),
    "evalret compare": Example(
        "evalret compare reports/run/report.json reports/d64/report.json --out reports/compare",
        before=("evalret run -c configs/default.yaml --dimension 64 --out reports/d64",),
    ),
    "evalret report": Example("evalret report reports/run/report.json"),
    "evalret hook": Example("evalret hook -c configs/default.yaml --baseline baselines/demo.json"),
    "evalret baseline show": Example("evalret baseline show baselines/demo.json"),
    "evalret validate": Example("evalret validate golden_sets/demo"),
    "evalret leakage": Example("evalret leakage golden_sets/demo --train train.txt", (_TRAIN,)),
    "evalret golden from-logs": Example(
        "evalret golden from-logs queries.log --corpus golden_sets/demo --n 100 --out draft "
        "--seed 0",
        (_LOG,),
    ),
    "evalret golden synth": Example(
        "evalret golden synth -c judge.yaml --corpus golden_sets/demo --n 20 --out synth --dry-run",
        (_JUDGE,),
    ),
    "evalret golden judge": Example(
        "evalret golden judge draft -c judge.yaml --out graded --retrievers bm25 --dry-run"
    ),
    "evalret golden doctor": Example("evalret golden doctor -c configs/default.yaml --out doctor"),
    "evalret pool": Example("evalret pool configs/default.yaml --k 5 --out pool.jsonl"),
    "evalret judge": Example(
        "evalret judge pool.jsonl -c judge.yaml --limit 50 --out labels.jsonl --dry-run"
    ),
    "evalret annotate": Example(
        "evalret annotate pool.jsonl --annotator alice --out alice.jsonl",
        not_run="it serves the grading page on 127.0.0.1 until you stop it",
    ),
    "evalret judgments agreement": Example(
        "evalret judgments agreement alice.jsonl bob.jsonl", (_GRADES,)
    ),
    "evalret judgments merge": Example(
        "evalret judgments merge alice.jsonl bob.jsonl --into golden_sets/demo --out merged"
    ),
    "evalret sweep": Example(
        "evalret sweep -c configs/default.yaml --set indexes.hnsw.ef_search=16,128 "
        "--repeats 1 --out sweep",
        varies="its latency, QPS and build-time columns are measured; the Pareto column follows",
    ),
    "evalret init": Example("evalret init my-project"),
    "evalret cache info": Example("evalret cache info"),
    "evalret cache prune": Example("evalret cache prune --days 30"),
    "evalret history add": Example(
        "evalret history add reports/run/report.json --db history.sqlite --label main "
        "--commit 4b2366a"
    ),
    "evalret history show": Example("evalret history show --db history.sqlite"),
    "evalret history report": Example(
        "evalret history report --db history.sqlite --out trend.html"
    ),
    "evalret config schema": Example("evalret config schema | head -n 8"),
    "evalret cache clear": Example("evalret cache clear"),
}


def _recipe(example: Example) -> list[Any]:
    """What the recorded output was made from: a changed example is rerun, not reused."""
    return [example.command, list(example.before), example.exit_code]


def recorded() -> dict[str, Any]:
    if not RECORD.exists():
        return {}
    loaded: dict[str, Any] = json.loads(RECORD.read_text(encoding="utf-8"))
    return loaded


def _shown(lines: list[str], most: int) -> list[str]:
    """At most ``most`` lines of an output: its start and its last three, ``...`` between."""
    if len(lines) <= most:
        return lines
    return [*lines[: most - 4], "...", *lines[-3:]]


def example_text(path: str) -> str:
    """The example of command ``path``: its command line and recorded output as a console
    block, the commands it runs after, the exit code when it is not 0. A command without an
    example, or whose example changed since it was recorded, fails the page's generation."""
    example = EXAMPLES.get(path)
    if example is None:
        raise LookupError(f"{path} has no example: add one to EXAMPLES in {__name__}")
    intro = "**Example**, in a copy of the demo (`golden_sets/`, `configs/`, `baselines/`)"
    if example.before:
        intro += ", after " + " and ".join(code(b) for b in example.before)
    lines = [f"$ {example.command}"]
    if example.varies:
        intro += f" (timings differ from run to run: {md_text(example.varies)})"
    if example.not_run:
        intro += f"; its output is not shown: {md_text(example.not_run)}"
    else:
        entry = recorded().get(path)
        if entry is None or entry["recipe"] != _recipe(example):
            raise LookupError(f"the example of {path} is not recorded as it stands: run `{RERUN}`")
        lines += _shown(entry["output"], example.lines)
        if example.exit_code:
            lines.append(f"# exit {example.exit_code}")
    return intro + ":\n\n```console\n" + "\n".join(lines) + "\n```\n"


def _shell(line: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    done = subprocess.run(
        ["bash", "-c", line],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=1800,
    )
    return done.returncode, done.stdout


def run_examples() -> dict[str, Any]:
    """Every example of ``EXAMPLES``, in order, in one copy of the demo with an empty
    embedding cache: what ``recorded`` reads. An example (or a command it runs after) that
    ends with another exit code than its own stops the run."""
    with tempfile.TemporaryDirectory(prefix="evalret-examples-") as tmp:
        work, cache = Path(tmp).resolve() / "demo", Path(tmp).resolve() / "cache"
        for name in _DEMO:
            shutil.copytree(REPO / name, work / name)
        env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "EVALRET_DEBUG")}
        env.update(COLUMNS="1000", NO_COLOR="1", EVALRET_CACHE_DIR=str(cache))
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        places = {str(work): "", str(cache): "~/.cache/evalret"}
        record: dict[str, Any] = {}
        for path, example in EXAMPLES.items():
            if example.not_run:
                continue
            for line in example.before:
                status, output = _shell(line, work, env)
                if status != 0:
                    raise RuntimeError(f"{path}: `{line}` exited {status}:\n{output}")
            status, output = _shell(example.command, work, env)
            if status != example.exit_code:
                raise RuntimeError(f"{path}: `{example.command}` exited {status}:\n{output}")
            record[path] = {"recipe": _recipe(example), "output": placeholders(output, places)}
    return record


def main() -> None:
    """``python -m evalret.cli_reference``: rerun the examples and record their output."""
    text = json.dumps(run_examples(), ensure_ascii=False, indent=1) + "\n"
    RECORD.write_text(text, encoding="utf-8")
    print(f"wrote {RECORD}; now regenerate the page: cog -r docs/reference/cli.md")


if __name__ == "__main__":
    main()
