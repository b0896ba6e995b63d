"""`evalret init`: a starter config, a tiny golden-set template and, with ``--action-ref``, a
GitHub workflow; with ``--pre-commit``, the evalret-gate hook added to the repository's
.pre-commit-config.yaml.

The workflow names evalret's composite action by the repository and ref the user gives
(``--action-ref OWNER/REPO@REF``): evalret cannot know where a user's copy of it lives (it is not
on a package index, and a guessed repository or tag fails only in CI), so without the option no
workflow is written and init says how to add one. The action installs evalret from its own
checkout (the repository at that ref) unless ``--install SPEC`` names another pip requirement.

The starter config's drop thresholds (``max_drop``) sit at the minimum detectable drop of a set
the size of the packaged demo (244 queries) as `evalret validate` gives it (two-sided, alpha
0.05, power 0.8, the assumed per-query sd 0.40; ``evalret.pipeline.validate``): 0.072, rounded
up to 0.08, above the gate's own one-sided figure (0.064). A finer threshold on such a set would
mark every failed check as possibly noise (tests/test_scaffold.py recomputes it)."""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from evalret.data import yamltext
from evalret.data.atomic import atomic_write_text, check_writable_file
from evalret.data.config import RunIndexConfig, load_config
from evalret.data.config_schema import shipped_schema_text
from evalret.data.paths import Declared, Input, Output, guard
from evalret.data.textfile import read_text
from evalret.errors import ConfigError, InputError, Problem, docs_page
from evalret.pipeline.precommit import HOOK_ID

# target path in the repository -> template file shipped in evalret/templates
FILES = {
    "evalret.yaml": "evalret.yaml",
    "golden_sets/example/corpus.jsonl": "corpus.jsonl",
    "golden_sets/example/queries.jsonl": "queries.jsonl",
}
WORKFLOW = ".github/workflows/evalret.yml"  # from templates/workflow.yml, with --action-ref only
# where evalret's composite action lives in its repository: the action installs evalret from the
# directory three levels above it, the repository's root (.github/actions/evalret/action.yml)
ACTION_DIR = ".github/actions/evalret"
_ACTION_LINE = "      - uses: EVALRET_ACTION_REF\n"
_INSTALL_LINE = "          # install: EVALRET_INSTALL_SPEC\n"
# OWNER/REPO, optionally with the action's path, then @REF (GitHub's names: an owner of letters,
# digits and inner hyphens, or underscores of managed users; a repository of letters, digits,
# '.', '_' and '-'; a ref as git allows it in a tag or branch name, or a commit)
_ACTION_REF = re.compile(
    r"(?P<owner>[A-Za-z0-9](?:[A-Za-z0-9_-]{0,37}[A-Za-z0-9])?)/(?P<repo>[A-Za-z0-9._-]{1,100})"
    rf"(?P<path>/{re.escape(ACTION_DIR)})?@(?P<ref>[A-Za-z0-9_][A-Za-z0-9._/+-]*)"
)
# the config's JSON Schema, written beside the starter config: the config's first line points
# editors at it by a relative path (yaml-language-server resolves it against the config's
# directory), so completion and checking work offline and for everyone who clones the repository
SCHEMA_FILE = "evalret.schema.json"
SCHEMA_LINE = f"# yaml-language-server: $schema={SCHEMA_FILE}\n"
NEXT_STEPS = (
    "next: put your corpus and queries in golden_sets/example, then run "
    "`evalret run --config evalret.yaml --save-baseline baselines/evalret.json` once, "
    "on purpose, and commit the baseline."
)
NO_WORKFLOW = (
    "no GitHub workflow written: name the repository holding evalret's action and a ref, "
    "`evalret init --action-ref OWNER/REPO@REF --workflow-only` (see "
    + docs_page("how-to/ci", "github-actions")
    + ")"
)


def write_scaffold(
    *,
    root: Path,
    force: bool = False,
    action_ref: str | None = None,
    install: str | None = None,
    workflow_only: bool = False,
) -> list[Path]:
    """Write the starter files under ``root`` (the workflow only with ``action_ref``; only it
    with ``workflow_only``); refuse to overwrite any unless ``force``, and (even with it) to
    write through a symbolic link whose target lies outside ``root``."""
    if action_ref is None and (install is not None or workflow_only):
        option = "--install" if install is not None else "--workflow-only"
        raise InputError(f"{option} needs --action-ref OWNER/REPO@REF: it is about the workflow")
    workflow = None if action_ref is None else workflow_text(action_ref, install)
    if os.path.lexists(root) and not root.is_dir():
        raise InputError(f"cannot scaffold into {root}: it exists and is not a directory")
    texts = {} if workflow_only else starter_texts()
    if workflow is not None:
        texts[WORKFLOW] = workflow
    # its outputs: the starter files under ROOT, never an input (evalret's stores among them)
    guard(Declared("init", [], [Output("ROOT", root, "dir", tuple(texts))]))
    targets = {root / target: text for target, text in texts.items()}
    existing = [p for p in targets if os.path.lexists(p)]  # a dangling link too
    if existing and not force:
        raise InputError(
            "evalret init would overwrite existing files (use --force to overwrite)",
            [Problem("exists", str(p)) for p in existing],
        )
    for path in targets:  # a link that leads out of ``root`` is refused before anything is written
        check_writable_file(path, "starter file", within=root)
    for path, text in targets.items():
        atomic_write_text(path, text, "starter file", within=root)
    return list(targets)


def starter_texts() -> dict[str, str]:
    """What `evalret init` writes, by path relative to the root: the templates, the config
    headed by the line that points editors at its JSON Schema, and that schema (the file shipped
    in the package)."""
    package = resources.files("evalret") / "templates"
    texts = {target: (package / t).read_text(encoding="utf-8") for target, t in FILES.items()}
    texts["evalret.yaml"] = SCHEMA_LINE + texts["evalret.yaml"]
    texts[SCHEMA_FILE] = shipped_schema_text()
    return texts


def action_uses(action_ref: str) -> str:
    """The workflow's ``uses:`` for ``--action-ref``: ``OWNER/REPO@REF`` or the same with the
    action's path (``OWNER/REPO/.github/actions/evalret@REF``) names the action in that
    repository at that ref; anything else is an InputError saying the shape."""
    match = _ACTION_REF.fullmatch(action_ref)
    ref = match.group("ref") if match else ""
    bad_ref = re.search(r"\.\.|//|@\{|[/.]$|\.lock$", ref)
    if match is None or bad_ref is not None or match.group("repo") in (".", ".."):
        why = "has no @REF" if "@" not in action_ref else "is not OWNER/REPO@REF"
        raise InputError(
            f"--action-ref: {action_ref!r} {why}: give the GitHub repository holding evalret's "
            f"action ({ACTION_DIR}) and a tag, branch or commit, e.g. acme/evalret@v0.1.0 "
            f"(OWNER/REPO/{ACTION_DIR}@REF is taken too)"
        )
    return f"{match.group('owner')}/{match.group('repo')}/{ACTION_DIR}@{ref}"


def workflow_text(action_ref: str, install: str | None) -> str:
    """The workflow init writes: templates/workflow.yml with ``uses:`` naming the action at
    ``action_ref`` and, when given, ``install:`` the pip requirement ``install`` (a JSON string,
    which YAML reads as itself); an empty one or one holding a line break or another control
    character is an InputError."""
    template = (resources.files("evalret") / "templates" / "workflow.yml").read_text("utf-8")
    if _ACTION_LINE not in template or _INSTALL_LINE not in template:
        raise AssertionError("templates/workflow.yml lacks its uses: or install: line")
    text = template.replace(_ACTION_LINE, f"      - uses: {action_uses(action_ref)}\n")
    if install is None:
        return text.replace(_INSTALL_LINE, "")
    if not install.strip() or _LINE_BREAKING.search(install):
        raise InputError(
            f"--install: {install!r} is not a pip requirement on one line (a version such as "
            "evalret==0.1.0, a path, a URL)"
        )
    return text.replace(_INSTALL_LINE, f"          install: {json.dumps(install)}\n")


# --- the pre-commit hook: `evalret init --pre-commit` ------------------------------------------

PRE_COMMIT_CONFIG = ".pre-commit-config.yaml"
PRE_COMMIT_NEXT_STEPS = (
    "next: `pre-commit install --hook-type pre-push` (the hook runs before each push, when a "
    "watched file changed); try it now with `pre-commit run evalret-gate --hook-stage pre-push "
    "--all-files`"
)


@dataclass(frozen=True)
class PreCommitHook:
    """What `evalret init --pre-commit` did: the config file, whether it changed, the paths whose
    change runs the hook, and those it cannot watch (outside the repository)."""

    path: Path
    added: bool  # False: the same evalret-gate hook was already there
    watched: list[str]
    outside: list[Path]


def watched_paths(root: Path, config: Path, extra: list[Path]) -> tuple[list[str], list[Path]]:
    """The files and directories whose change can change the hook's verdict, relative to
    ``root`` in POSIX form: the config, its golden set (directory or files), its baseline, a
    local model directory, run files of typed indexes, and ``extra``. Paths outside ``root``
    are returned apart: no push can change them. ``config`` and ``extra`` are relative to
    ``root`` (as the hook runs), unless absolute."""
    _one_line(config.as_posix(), "--config")  # the hook's entry names it too
    cfg = load_config(root / config)
    if cfg.gate.baseline is None:
        raise ConfigError(
            f"{root / config}: gate.baseline is not set: the {HOOK_ID} hook gates against a saved "
            "baseline; name it in gate.baseline (and save it once with evalret run "
            "--save-baseline)"
        )
    gs = cfg.golden_set
    candidates: list[tuple[Path, str]] = [
        (root / config, "--config"),
        (gs.path, "golden_set.path"),
        (cfg.gate.baseline, "gate.baseline"),
    ]
    files = (("queries", gs.queries), ("corpus", gs.corpus), ("qrels", gs.qrels))
    candidates += [(p, f"golden_set.{key}") for key, p in files if p is not None]
    model = Path(cfg.model.name)
    if model.is_absolute() and model.exists():
        candidates.append((model, "model.name"))
    candidates += [
        (t.path, f"indexes.{name}.path")
        for name, t in cfg.indexes.typed.items()
        if isinstance(t, RunIndexConfig)
    ]
    candidates += [(root / p, "--watch") for p in extra]
    base = root.resolve()
    watched: list[str] = []
    outside: list[Path] = []
    for path, source in candidates:
        resolved = path.resolve()
        if not resolved.is_relative_to(base):
            outside.append(path)
        elif resolved != base and (rel := resolved.relative_to(base).as_posix()) not in watched:
            _one_line(rel, source)
            watched.append(rel)
    return watched, outside


# what the hook's one-line `files:` pattern cannot hold: control characters and the characters
# YAML and pre-commit read as line breaks (U+0085, U+2028, U+2029)
_LINE_BREAKING = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")


def _one_line(rel: str, source: str) -> None:
    """InputError naming ``source`` (--watch, --config, a config key) when the watched path
    ``rel`` holds a line break or another control character: pre-commit's ``files:`` regex, one
    line of YAML, cannot match it (it was reported as a layout of .pre-commit-config.yaml that
    evalret cannot edit)."""
    found = _LINE_BREAKING.search(rel)
    if found is not None:
        raise InputError(
            f"{source}: the path {rel!r} holds a line break or control character "
            f"({found.group()!r}): the "
            f"{HOOK_ID} hook's files: pattern cannot watch it; rename the path, or leave it out"
        )


def files_pattern(paths: list[str]) -> str:
    """pre-commit's ``files:`` regex matching each path (a file) and everything under it (a
    directory)."""
    return "^(?:" + "|".join(re.escape(p) for p in paths) + ")(?:/|$)"


def hook_entry(config: Path, pattern: str) -> dict[str, Any]:
    """The evalret-gate hook of a ``repo: local`` block: evalret from the PATH (the virtual
    environment of the repository), before each push, only when a watched path changed."""
    return {
        "id": HOOK_ID,
        "name": "evalret gate (retrieval quality against the baseline)",
        "entry": f"evalret hook --config {shlex.quote(config.as_posix())}",
        "language": "system",
        "pass_filenames": False,
        "require_serial": True,
        "verbose": True,
        "stages": ["pre-push"],
        "files": pattern,
    }


def _yaml_scalar(text: str) -> str:
    """``text`` as a YAML scalar: plain when it reads back as itself, else single-quoted."""
    if re.fullmatch(r"[A-Za-z][\w .,()/@=+-]*", text) and not re.search(r": | #|\s$", text):
        return text
    return "'" + text.replace("'", "''") + "'"


def repo_block(hook: dict[str, Any], indent: str) -> str:
    """The ``- repo: local`` list item holding ``hook``, as YAML text at ``indent``."""
    inner = indent + "      "
    lines = [f"{indent}- repo: local", f"{indent}  hooks:", f"{indent}    - id: {hook['id']}"]
    for key, value in hook.items():
        if key == "id":
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, list):
            text = "[" + ", ".join(value) + "]"
        else:
            text = _yaml_scalar(str(value))
        lines.append(f"{inner}{key}: {text}")
    return "\n".join(lines) + "\n"


def _hook_line(text: str) -> int | None:
    match = re.search(rf"^.*\bid:\s*['\"]?{re.escape(HOOK_ID)}\b", text, re.MULTILINE)
    return text.count("\n", 0, match.start()) + 1 if match else None


def _read_pre_commit(path: Path) -> tuple[str, dict[str, Any] | None]:
    """The text of an existing pre-commit config and its data (None when empty)."""
    text = read_text(path, "pre-commit config", InputError)
    try:
        data = yamltext.load(text)
    except (yaml.YAMLError, ValueError, RecursionError) as e:  # ValueError: an integer too long
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise InputError(
            f"cannot read {path}", [Problem(f"invalid YAML: {e}", str(path), line)]
        ) from None
    if data is not None and not (
        isinstance(data, dict) and isinstance(data.get("repos", []), list)
    ):
        raise InputError(
            f"{path} is not a pre-commit config: expected a mapping with `repos:` list"
        )
    return text, data


def _loaded(text: str) -> Any:
    """The YAML data of ``text``, None when it does not parse."""
    try:
        return yamltext.load(text)
    except (yaml.YAMLError, ValueError, RecursionError):
        return None


def _existing_hook(data: dict[str, Any] | None) -> dict[str, Any] | None:
    for repo in (data or {}).get("repos") or []:
        for hook in (repo.get("hooks") or []) if isinstance(repo, dict) else []:
            if isinstance(hook, dict) and hook.get("id") == HOOK_ID:
                return {"repo": repo.get("repo"), **hook}
    return None


def _insert_repo(text: str, hook: dict[str, Any]) -> str:
    """``text`` with the local repo holding ``hook`` added as the last item of ``repos:``,
    leaving every other line (comments included) as it was."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    start = next((i for i, ln in enumerate(lines) if re.match(r"repos:\s*(#.*)?$", ln)), None)
    empty = next((i for i, ln in enumerate(lines) if re.match(r"repos:\s*\[\s*\]\s*$", ln)), None)
    if start is None and empty is not None:  # `repos: []`: the block list starts empty
        start, lines[empty] = empty, "repos:\n"
    if start is None:  # no block `repos:` line: an empty file, comments only (or a flow list)
        return "".join(lines) + "repos:\n" + repo_block(hook, "  ")
    end = next(
        (i for i in range(start + 1, len(lines)) if re.match(r"[^\s#-]", lines[i])), len(lines)
    )
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip()[:1] == "#"):
        end -= 1
    item = next((re.match(r"(\s*)- ", ln) for ln in lines[start + 1 : end] if ln.strip()), None)
    indent = item.group(1) if item else "  "
    return "".join([*lines[:end], repo_block(hook, indent), *lines[end:]])


def add_pre_commit_hook(*, root: Path, config: Path, extra: list[Path]) -> PreCommitHook:
    """Add the evalret-gate hook for ``config`` to ``root``'s .pre-commit-config.yaml (made when
    absent), keeping the user's other hooks and comments; nothing changes when the same hook is
    there, and a different evalret-gate hook is an InputError (it is never overwritten)."""
    path = root / PRE_COMMIT_CONFIG
    reads = [Input("the config (--config)", root / config)]
    guard(Declared("init", reads, updated=[Input("the pre-commit config", path)]))
    watched, outside = watched_paths(root, config, extra)
    hook = hook_entry(config, files_pattern(watched))
    text, data = _read_pre_commit(path) if path.exists() else ("", None)
    existing = _existing_hook(data)
    if existing is not None:
        if existing == {"repo": "local", **hook}:
            return PreCommitHook(path, False, watched, outside)
        raise InputError(
            f"{path} already has a different {HOOK_ID} hook: evalret init does not overwrite it",
            [
                Problem(
                    "edit or remove it by hand, then run evalret init --pre-commit again",
                    str(path),
                    _hook_line(text),
                )
            ],
        )
    new_text = _insert_repo(text, hook)
    repos = (data or {}).get("repos") or []
    expected = {**(data or {}), "repos": [*repos, {"repo": "local", "hooks": [hook]}]}
    if _loaded(new_text) != expected or len(re.findall(r"^repos:", new_text, re.MULTILINE)) != 1:
        raise InputError(  # a layout this line editor does not follow (e.g. `repos: [...]`)
            f"cannot add the {HOOK_ID} hook to {path} without rewriting it: add this block "
            "under `repos:` by hand",
            [Problem(line) for line in repo_block(hook, "").splitlines()],
        )
    atomic_write_text(path, new_text, "pre-commit config")
    return PreCommitHook(path, True, watched, outside)


# --- the command ---------------------------------------------------------------------------------


def init_command(
    *,
    root: Path,
    force: bool,
    pre_commit: bool,
    config: Path,
    watch: list[Path],
    action_ref: str | None,
    install: str | None,
    workflow_only: bool,
) -> list[str]:
    """`evalret init`: write the scaffold, or with ``pre_commit`` only add the hook; the lines to
    print (plain text: paths as they are)."""
    if pre_commit and (action_ref is not None or install is not None or workflow_only):
        raise InputError("--pre-commit adds the hook only: it writes no workflow")
    if pre_commit:
        added = add_pre_commit_hook(root=root, config=config, extra=watch)
        state = "added the evalret-gate hook to" if added.added else "evalret-gate is already in"
        return [
            f"{state} {added.path}",
            f"watched: {', '.join(added.watched)}",
            *(f"not watched (outside the repository): {path}" for path in added.outside),
            PRE_COMMIT_NEXT_STEPS,
        ]
    written = write_scaffold(
        root=root, force=force, action_ref=action_ref, install=install, workflow_only=workflow_only
    )
    lines = [f"wrote {path}" for path in written]
    lines += [] if workflow_only else [NEXT_STEPS]
    return lines + ([NO_WORKFLOW] if action_ref is None else [])
