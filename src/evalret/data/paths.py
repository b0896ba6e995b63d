"""An input is never an output: the one guard every command passes before any work.

Each command declares, in one place, what it reads and what it writes (``Declared``): its
inputs (config, golden set, baseline, run files, history database, annotation files, training
files, saved reports) and its outputs (a file, a directory and the fixed names it writes there,
or a directory written whole). ``guard`` refuses with an InputError (exit 2) naming both roles
and both paths every output that is one of the inputs or lies in an input directory:

- a file written is an input file when both resolve to the same real path (symbolic links
  followed, as the writers follow them) or are the same file on disk (``st_dev``, ``st_ino``:
  a hard link, a bind mount, a case-insensitive file system);
- a file or directory written lies in an input directory (a golden-set directory, the golden set
  ``judgments merge --into`` reads, a store of the embedding cache) when that directory is
  itself or one of its parents, by the same two tests; a file written that is a hard link to a
  file under an input directory is that file too;
- a directory output is refused when it is an input file, and when one of the names it writes
  (or clears beforehand) there is an input.

evalret's own stores (data/stores.py: the embedding cache's folders, the judge's answer cache,
the reranker's score cache) are inputs of every command: those of the config's cache directory
(``config_inputs``), and ``guard`` adds those of the default one ($EVALRET_CACHE_DIR or the
per-user cache directory) to every declaration. The cache's own writes are no outputs here:
``cache_output`` (the cache directory, written under) never clashes with the stores inside it.

A file both read and written on purpose (``history add``'s database, ``annotate``'s output file,
the ``.pre-commit-config.yaml`` that ``init --pre-commit`` edits) is declared ``updated``: it is
checked against every other input, never against itself. An input that does not exist cannot be
overwritten and is not checked (a missing baseline that this very run saves, a new database).
Character devices and pipes (``/dev/null``) are written in place and never clobber a file: they
are not checked either.
"""

from __future__ import annotations

import importlib.util
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from evalret.data.atomic import write_target
from evalret.data.config import Config, PythonIndexConfig, PythonModelConfig, RunIndexConfig
from evalret.data.goldenset import TREC_CORPUS_NAMES, TREC_QUERIES_NAMES
from evalret.data.stores import SQLITE_STORES, STORE_DIRS, CacheRoot, cache_root
from evalret.errors import InputError, Problem

OutputKind = Literal["file", "dir", "tree"]


@dataclass(frozen=True)
class Input:
    """A path a command reads. ``role`` names it as the user gave it, e.g. "the baseline
    (--baseline)"; ``tree``: a directory every file under which is an input (a golden set)."""

    role: str
    path: Path
    tree: bool = False


@dataclass(frozen=True)
class Output:
    """A path a command writes. ``kind`` "file": ``path`` is the file; "dir": the files
    ``names`` written (and cleared beforehand) in the directory ``path``; "tree": the directory
    ``path`` written whole (a new golden set). ``role`` is the option that names it ("--out")."""

    role: str
    path: Path
    kind: OutputKind = "file"
    names: tuple[str, ...] = ()

    @property
    def files(self) -> list[Path]:
        """The files this output writes: ``path`` itself, or each name in the directory."""
        if self.kind == "dir":
            return [self.path / name for name in self.names]
        return [self.path] if self.kind == "file" else []


@dataclass(frozen=True)
class Declared:
    """What one command reads (``inputs``), writes (``outputs``), and reads and writes on purpose
    (``updated``): what ``guard`` checks."""

    command: str
    inputs: Sequence[Input] = ()
    outputs: Sequence[Output] = ()
    updated: Sequence[Input] = field(default_factory=tuple)


FileId = tuple[int, int]


@dataclass(frozen=True)
class _Where:
    """Where a path lands on disk: its real path, and (when it exists) its (st_dev, st_ino)."""

    real: str
    ident: FileId | None
    mode: int | None

    @classmethod
    def of(cls, path: Path) -> _Where:
        real = os.path.realpath(path)
        try:
            st = os.stat(real)
        except OSError:  # not there (yet), or not reachable: compared by its real path alone
            return cls(real, None, None)
        return cls(real, (st.st_dev, st.st_ino), st.st_mode)

    @property
    def exists(self) -> bool:
        return self.ident is not None

    @property
    def written_in_place(self) -> bool:
        """A character device or a pipe: written in place, nothing on disk is replaced."""
        return self.mode is not None and (stat.S_ISCHR(self.mode) or stat.S_ISFIFO(self.mode))

    def same(self, other: _Where) -> bool:
        if self.real == other.real:
            return True
        return self.ident is not None and self.ident == other.ident


def _ancestors(path: Path) -> Iterator[_Where]:
    """``path`` and each of its parents (real paths), nearest first, as far as the root."""
    current = Path(os.path.realpath(path))
    while True:
        yield _Where.of(current)
        if current.parent == current:
            return
        current = current.parent


def _inside(path: Path, tree: _Where) -> bool:
    """Whether ``path`` is the directory ``tree`` or lies anywhere under it."""
    return any(a.same(tree) for a in _ancestors(path))


def _linked_into(written: Path, tree: Path) -> Path | None:
    """The file under the directory ``tree`` that ``written`` is a hard link to (None: none).
    Only a file with more than one link is looked for, so the tree is walked only then."""
    try:
        st = os.stat(written)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_nlink < 2:
        return None
    for folder, _, names in os.walk(tree):
        for name in names:
            path = Path(folder) / name
            try:
                other = os.stat(path, follow_symlinks=False)
            except OSError:
                continue
            if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                return path
    return None


def _file_clash(written: Path, label: str, inp: Input, where: _Where) -> str | None:
    """Why writing the file ``written`` would clobber ``inp`` (None: it would not)."""
    if inp.tree:
        if _inside(written, where):
            return f"{label} would write into {inp.role} {inp.path}"
        linked = _linked_into(written, inp.path)
        if linked is not None:
            return f"{label} would overwrite {linked}, a file of {inp.role} {inp.path}"
        return None
    target = _Where.of(written)
    if target.written_in_place or not target.same(where):
        return None
    return f"{label} would overwrite {inp.role} {inp.path}"


def _dir_clash(out: Output, inp: Input, where: _Where) -> str | None:
    """Why the directory output ``out`` itself clashes with ``inp`` (None: it does not)."""
    label = f"{out.role} {out.path}"
    if inp.tree:
        if _inside(out.path, where):
            return f"{label} would write into {inp.role} {inp.path}"
        return None
    if _Where.of(out.path).same(where):
        return f"{label} is {inp.role} {inp.path}, not a directory to write into"
    return None


def _clashes(out: Output, inp: Input) -> Iterator[str]:
    where = _Where.of(inp.path)
    if not where.exists or where.written_in_place:
        return
    if out.kind != "file":
        found = _dir_clash(out, inp, where)
        if found is not None:
            yield found
            return
    for written in out.files:
        found = _file_clash(written, f"{out.role} {out.path}", inp, where)
        if found is not None:
            yield found if out.kind == "file" else f"{found} (it writes {written.name} there)"


def _output_clashes(outputs: Sequence[Output]) -> Iterator[str]:
    """Two outputs that are one file on disk (``--save-baseline OUT/report.json``, a step
    summary that is ``OUT/report.md``): the second write would replace the first."""
    seen: list[tuple[_Where, str]] = []
    for out in outputs:
        for written in out.files:
            where = _Where.of(written)
            if where.written_in_place:
                continue
            label = f"{out.role} {written}" if out.kind == "dir" else f"{out.role} {out.path}"
            for other, other_label in seen:
                if where.same(other) and not other_label.startswith(f"{out.role} "):
                    yield f"{label} is also {other_label}: one would replace the other"
            seen.append((where, label))


def clashes(declared: Declared) -> list[str]:
    """Every output (or updated file) of ``declared`` that is, or writes into, an input, and
    every two outputs that are one file."""
    found: list[str] = list(_output_clashes(declared.outputs))
    for out in declared.outputs:
        for inp in [*declared.inputs, *declared.updated]:
            found.extend(_clashes(out, inp))
    for upd in declared.updated:
        as_output = Output(upd.role, upd.path)
        for inp in declared.inputs:
            found.extend(_clashes(as_output, inp))
    return list(dict.fromkeys(found))


def with_default_stores(declared: Declared) -> Declared:
    """``declared`` with the stores of the default cache directory among its inputs (those it
    declares as inputs already, by real path, not twice; an updated file on one is refused)."""
    known = {os.path.realpath(i.path) for i in declared.inputs}
    extra = [i for i in store_inputs(cache_root()) if os.path.realpath(i.path) not in known]
    return replace(declared, inputs=[*declared.inputs, *extra]) if extra else declared


def guard(declared: Declared) -> None:
    """Refuse (InputError, exit 2) ``declared`` when an output is one of its inputs (evalret's
    stores in the default cache directory included) or lies in an input directory; run before
    any work, so that nothing is read long or written at all."""
    found = clashes(with_default_stores(declared))
    if not found:
        return
    hint = "an input is never an output, nor are two outputs one file: choose another output path"
    if len(found) == 1:
        raise InputError(f"{found[0]}; {hint}")
    raise InputError(
        f"{len(found)} outputs of evalret {declared.command} are inputs; {hint}",
        [Problem(text) for text in found],
    )


def clear_outputs(out: Output) -> None:
    """Remove the files a command wrote into the directory ``out`` on an earlier run (only
    ``out.names``: the files this run writes there), before it starts: a run that fails then
    leaves no older report.md or comment.md saying "pass". Called after ``guard`` (an input among
    them is refused, never removed). A symbolic link's final target goes (the link stays, to be
    written through) when it lies inside the directory; a link that leads out of it, and a
    directory in the way, are refused (InputError), as writing there would be; a device or pipe
    stays (written in place)."""
    for name in out.names:
        path = out.path / name
        target, in_place = write_target(path, "earlier output")
        if in_place:
            continue
        try:
            target.unlink(missing_ok=True)
        except OSError as e:
            raise InputError(f"cannot remove the earlier {path}: {e.strerror or e}") from None


# --- the inputs of a config ----------------------------------------------------------------------


def golden_inputs(cfg: Config, role: str = "golden_set.path") -> list[Input]:
    """The golden set of ``cfg`` (``role``: where the user named it): its directory (every file
    under it) or its file, and the TREC queries, corpus and qrels files when named apart."""
    gs = cfg.golden_set
    tree = gs.path.is_dir()
    inputs = [Input(f"the golden set ({role})", gs.path, tree=tree)]
    for key in ("queries", "corpus", "qrels"):
        path = getattr(gs, key)
        if path is not None:
            inputs.append(Input(f"the golden set's {key} file (golden_set.{key})", path))
    if not tree:  # a TREC qrels file: the queries and corpus found beside it are read too
        beside = gs.path.parent
        for name in (*TREC_QUERIES_NAMES, *TREC_CORPUS_NAMES):
            inputs.append(Input(f"the golden set's {name} (beside {gs.path.name})", beside / name))
    return inputs


def run_file_inputs(cfg: Config) -> list[Input]:
    """The run files of ``cfg``'s enabled run indexes."""
    return [
        Input(f"the run file of index {name} (indexes.{name}.path)", index.path)
        for name, index in cfg.indexes.typed.items()
        if isinstance(index, RunIndexConfig) and index.enabled
    ]


def _module_source(spec: str) -> Input | None:
    """Where the top-level module of a callable ``spec`` ("pkg.module:attr") lives, found
    without importing it (``importlib.util.find_spec`` on the top-level name runs no code of
    the module): a package's directory (every file under it) or the module's file. None for a
    built-in module or one that cannot be found (importing it fails later, with its own error)."""
    top = spec.partition(":")[0].split(".")[0]
    try:
        found = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if found is None:
        return None
    role = f"the plug-in module {top!r}"
    locations = list(found.submodule_search_locations or [])
    if locations:
        return Input(role, Path(locations[0]), tree=True)
    if found.origin is None or not found.has_location:
        return None
    return Input(role, Path(found.origin))


def plugin_inputs(cfg: Config) -> list[Input]:
    """The source of the code ``cfg`` names (the custom encoder's factory, the enabled Python
    retrievers): an output over a plug-in's own file would replace code with a report."""
    specs = [cfg.model.callable] if isinstance(cfg.model, PythonModelConfig) else []
    specs += [
        index.callable
        for index in cfg.indexes.typed.values()
        if isinstance(index, PythonIndexConfig) and index.enabled
    ]
    found = (_module_source(spec) for spec in specs)
    return [source for source in found if source is not None]


def cache_output(cfg: Config, role: str = "cache.dir") -> list[Output]:
    """The embedding cache's directory as an output (files are added under it) when the user
    named it (``role``: cache.dir, --dir, or $EVALRET_CACHE_DIR); the per-user default is
    evalret's own and not checked."""
    if not cfg.cache.enabled:
        return []
    if cfg.cache.dir is not None:
        return [Output(role, cfg.cache.dir, "tree")]
    env = os.environ.get("EVALRET_CACHE_DIR")
    return [Output("$EVALRET_CACHE_DIR", Path(env), "tree")] if env else []


def store_inputs(root: CacheRoot) -> list[Input]:
    """evalret's own stores in the cache directory ``root``: the judge's answer cache and the
    reranker's score cache (files), the embedding cache's folders (every file under them). An
    output on one would replace what was computed or paid for with a report."""
    where = f"({root.key})"
    inputs = [Input(f"{store.what} {where}", root.file(store)) for store in SQLITE_STORES]
    inputs += [
        Input(f"{what} {where}", root.path / name, tree=True) for name, what in STORE_DIRS.items()
    ]
    return inputs


def config_inputs(
    cfg: Config, config: Path | None, role: str = "--config", cache_key: str = "cache.dir"
) -> list[Input]:
    """What evaluating ``cfg`` reads: the config file itself (``config``, the option ``role``
    names it), its golden set, its run files, the plug-in modules it names and evalret's stores
    in its cache directory (``cache_key`` names it; the gate's baseline is the command's to
    declare: not every command reads it)."""
    inputs = [Input(f"the config ({role})", config)] if config is not None else []
    stores = store_inputs(cache_root(cfg.cache, cache_key))
    return inputs + golden_inputs(cfg) + run_file_inputs(cfg) + plugin_inputs(cfg) + stores


def unique(inputs: Iterable[Input]) -> list[Input]:
    """``inputs`` without repeats (several sweep points or pooled configs share a golden set)."""
    return list(dict.fromkeys(inputs))
