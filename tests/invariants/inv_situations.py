"""The catalogue of hostile situations, and which of them apply to a row of the table.

A situation prepares a case (inv_case.Case: the world's copy, the role -> path map, the
environment, the config) and says what the call must end with: the exit codes its documented
meaning allows, text the output must name, and any check of its own. The common invariants
(inv_case.check_invariants) hold for every pair whatever the situation.

- paths: each output equal to an input (the same path, a hard link, a symbolic link), inside an
  input directory, the folder of an input it would write over, a folder holding an input under
  the name of a product, a read-only target; every input read-only (the command still works);
- plug-ins: an encoder or retriever that exits (``sys.exit(0)``, ``SystemExit("msg")``), prints
  or warns "GATE PASSED", raises lazily, answers an overflowing, string or boolean score, hangs
  (then SIGTERM or SIGINT), or is killed with earlier outputs in place;
- plug-ins also: an encoder whose vectors are 2**100 (2**-100) times the usual, which must give
  the usual figures;
- config: a duplicate ``gate:`` key, a boolean or quoted number where a number is expected; a
  faiss search parameter out of range (``nprobe: -5``), a factory string too large for any
  vectors (``PQ16x24``) or for the golden set (``PQ16x20``, where the command searches), an
  HNSW thread count faiss cannot start;
- golden set: a query filter with an unknown operator, a range on a string, a mixed ``$in``
  list, a filter that is not an object, nested metadata, an empty ``$or`` (refused at its line);
- HTTP: an OpenAI-compatible server that redirects to another origin, drips its answer, echoes
  the key, or a base_url carrying the credential; the key is always in the environment;
- stores: evalret's caches are inputs of every row that writes (inv_table.STORES: the path
  situations above put each output on them); a file at a cache's path that is not evalret's
  (another application's SQLite database, a text file) is refused, untouched, by every row
  that would use that cache (the judge's answers: `judge`, `run --judge`; the reranker's
  scores: a row whose config's rerank index is made an HTTP reranker).
- the LLM judge (inv_judge): a judge that fails every request or answers nothing readable, a
  judged run against an unjudged baseline, a judged report compared with an unjudged one.
- body bombs: every HTTP client (the embedding provider, an HTTP reranker, the judge) answered
  a huge body or a gzip bomb, for every row that calls it: refused at its
  ``max_response_mb`` (exit 3, naming the endpoint and the limit), the connection closed before
  the server sent it all.
- streams: a reader that closes stdout (141, quietly).
- settings that apply to nothing: a floor, a budget or a rerank floor on an index the gate does
  not check (refused wherever the config is read), a ``--set`` of a disabled index (every
  command that takes ``--set``), a custom slice rule matching no query (every command that
  builds the run's slices), each exit 2 naming the key.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from inv_case import Case, Outcome
from inv_http import serve
from inv_table import ANSWER_CACHE, GOLDEN, ROWS, SCORE_CACHE, SYNTH_CACHE, Item, Row
from inv_world import (
    CLOSE,
    ENCODER,
    JUDGE_BLOCK,
    RERANKER,
    RETRIEVER,
    SECRET,
    SECRET_ENV,
    SETUP,
    config_text,
    gate_line,
)

from helpers import command_tree

Check = Callable[[Case, Outcome], None]


@dataclass(frozen=True)
class Situation:
    id: str
    prepare: Callable[[Case], None]
    # exit codes allowed; None: the row's normal exit code
    expect: frozenset[int] | None = None
    process: bool = False  # needs a real process (signals, kills, a server)
    checks: tuple[Check, ...] = field(default_factory=tuple)


def _normal(case: Case) -> None:
    if case.row.serves:
        case.stop_with = signal.SIGINT  # a server runs until Ctrl-C


# --- paths -----------------------------------------------------------------------------------


def _set(
    out: Item, target: Callable[[Case], object], names: Callable[[Case], str]
) -> Callable[[Case], None]:
    def prepare(case: Case) -> None:
        case.paths[out.role] = target(case)  # type: ignore[assignment]
        case.must_name.append(names(case))
        if case.row.serves:
            case.stop_with = signal.SIGTERM  # a refused call never serves; one that does is stopped

    return prepare


def _link(case: Case, inp: Item, kind: str) -> object:
    link = case.root / f"inv-{kind}-{case.paths[inp.role].name}"
    if kind == "hardlink":
        os.link(case.paths[inp.role], link)
    else:
        link.symlink_to(case.paths[inp.role], target_is_directory=inp.dir)
    return link


def _hold(out: Item, inp: Item) -> Callable[[Case], None]:
    """Move the input into a new folder under the output's first product name; --out is it."""

    def prepare(case: Case) -> None:
        held = case.root / "held"
        held.mkdir()
        moved = held / out.products[0]
        shutil.move(case.paths[inp.role], moved)
        case.paths[inp.role] = moved
        case.paths[out.role] = held
        case.must_name.append((moved.name, held.name))
        if case.row.serves:
            case.stop_with = signal.SIGTERM

    return prepare


def _read_only_output(out: Item) -> Callable[[Case], None]:
    def prepare(case: Case) -> None:
        folder = case.root / "ro"
        folder.mkdir()
        current = case.paths[out.role]
        target = folder / current.name
        if current.is_dir():
            shutil.copytree(current, target)
        elif current.exists():
            shutil.copyfile(current, target)
        case.paths[out.role] = target
        case.make_read_only(folder)
        if case.row.serves:
            case.stop_with = signal.SIGTERM

    return prepare


def _read_only_inputs(case: Case) -> None:
    for item in case.row.inputs:
        case.make_read_only(case.paths[item.role])
    _normal(case)


def _pairs(out: Item, inp: Item) -> Iterator[Situation]:
    two = frozenset({2})
    name = lambda c: c.paths[inp.role].name  # noqa: E731
    base = f"{out.role}-is-{inp.role}"
    yield Situation(base, _set(out, lambda c: c.paths[inp.role], name), two)
    if inp.dir == out.dir:
        yield Situation(
            f"{out.role}-symlink-to-{inp.role}",
            _set(out, lambda c: _link(c, inp, "symlink"), name),
            two,
        )
    if not inp.dir and not out.dir:
        yield Situation(
            f"{out.role}-hardlink-to-{inp.role}",
            _set(out, lambda c: _link(c, inp, "hardlink"), name),
            two,
        )
    if inp.dir:
        inside = lambda c: c.paths[inp.role] / c.paths[out.role].name  # noqa: E731
        yield Situation(f"{out.role}-inside-{inp.role}", _set(out, inside, name), two)
    if inp.dir and not out.dir:  # over one of its files (the last by name: queries.jsonl)
        last = lambda c: sorted(p for p in c.paths[inp.role].iterdir() if p.is_file())[-1]  # noqa: E731
        yield Situation(
            f"{out.role}-is-a-file-of-{inp.role}", _set(out, last, lambda c: last(c).name), two
        )
    if out.dir and not inp.dir and _basename(inp) in out.products:
        yield Situation(
            f"{out.role}-is-folder-of-{inp.role}",
            _set(out, lambda c: c.paths[inp.role].parent, name),
            two,
        )
    if out.dir and not inp.dir and inp.in_argv and out.products and inp.role != "config":
        yield Situation(f"{out.role}-holds-{inp.role}", _hold(out, inp), two)


def _basename(item: Item) -> str:
    return item.rel.rsplit("/", 1)[-1]


def path_situations(row: Row) -> Iterator[Situation]:
    for out in row.outputs:
        for inp in row.inputs:
            if (out.role, inp.role) not in row.allowed:
                yield from _pairs(out, inp)
        yield Situation(f"{out.role}-read-only", _read_only_output(out), frozenset({2}))
    if row.inputs:
        yield Situation("inputs-read-only", _read_only_inputs)


# --- plug-ins --------------------------------------------------------------------------------


def _plugin(target: str, mode: str, names: str | None) -> Callable[[Case], None]:
    def prepare(case: Case) -> None:
        case.env["INV_PLUGIN_TARGET"] = target
        case.env["INV_PLUGIN_MODE"] = mode
        if names:
            case.must_name.append(names)

    return prepare


MARK = "GATE PASSED [inv_plugin]"  # what the plug-in prints or warns


def _stdout_clean(case: Case, outcome: Outcome) -> None:
    assert MARK not in outcome.stdout, "a plug-in wrote on evalret's stdout"
    assert MARK in outcome.stderr, "the plug-in's output is lost (it belongs on stderr)"


def _figures_of_the_baseline(case: Case, outcome: Outcome) -> None:
    """The run's exact-search metrics are the baseline's (saved from the same vectors unscaled):
    vectors overflowing in normalization became zero vectors, metrics near 0."""
    out = next(item for item in case.row.outputs if item.dir)
    report = json.loads((case.paths[out.role] / "report.json").read_text())
    baseline = json.loads((case.root / "baseline.json").read_text())
    got, want = (r["indexes"]["exact"]["slices"]["all"]["metrics"] for r in (report, baseline))
    assert got == want, f"exact search's metrics {got} are not the unscaled vectors' {want}"


ENDINGS = ("exit-0", "exit-msg")
RETRIEVER_ANSWERS = ("raise", "lazy-raise", "overflow", "str-score", "bool-score")


def plugin_situations(row: Row) -> Iterator[Situation]:
    three = frozenset({3})
    if "encoder" in row.plugins:
        for mode in ENDINGS:
            for where in ("import", "factory", "identity", "encode"):
                callable_ = ENCODER.split(":")[0] if where == "import" else ENCODER
                yield Situation(
                    f"{mode}-in-encoder-{where}", _plugin(where, mode, callable_), three
                )
        yield Situation(
            # a real process: what a CI log shows is what reaches file descriptor 1
            "print-in-encoder",
            _plugin("encode", "print", None),
            None,
            True,
            (_stdout_clean,),
        )
        yield Situation("warn-in-encoder", _plugin("encode", "warn", None), checks=(_stdout_clean,))
        for mode in ("huge", "tiny"):  # 2**100 times the vectors: the figures of the vectors
            yield Situation(
                f"{mode}-vectors-from-encoder",
                _plugin("encode", mode, None),
                checks=(_figures_of_the_baseline,) if row.run_report else (),
            )
    if "retriever" in row.plugins:
        for mode in ENDINGS + RETRIEVER_ANSWERS:
            yield Situation(f"{mode}-in-retriever", _plugin("search", mode, RETRIEVER), three)
        for hook, spec in (("setup", SETUP), ("close", CLOSE)):  # the retriever's hooks
            for mode in (*ENDINGS, "raise"):
                yield Situation(f"{mode}-in-retriever-{hook}", _plugin(hook, mode, spec), three)
        yield Situation(
            # a real process: what a CI log shows is what reaches file descriptor 1
            "print-in-retriever",
            _plugin("search", "print", None),
            None,
            True,
            (_stdout_clean,),
        )
        yield Situation(
            "warn-in-retriever", _plugin("search", "warn", None), checks=(_stdout_clean,)
        )
    if "reranker" in row.plugins:
        for mode in (*ENDINGS, *RETRIEVER_ANSWERS, "short"):
            yield Situation(f"{mode}-in-reranker", _plugin("rerank", mode, RERANKER), three)
        yield Situation(
            "warn-in-reranker", _plugin("rerank", "warn", None), checks=(_stdout_clean,)
        )
    yield from _process_situations(row)


def _hang(target: str, stop: signal.Signals) -> Callable[[Case], None]:
    def prepare(case: Case) -> None:
        case.env["INV_PLUGIN_TARGET"] = target
        case.env["INV_PLUGIN_MODE"] = "hang"
        case.stop_with = stop
        case.wait_ready = True

    return prepare


def _stale_outputs(case: Case) -> None:
    """Earlier outputs of a passing run in the output folder (a verdict of another run)."""
    out = next(item for item in case.row.outputs if item.dir)
    folder = case.paths[out.role]
    folder.mkdir(parents=True, exist_ok=True)
    for name in out.products:
        stale = (
            b'{"run_id": "stale-run", "verdict": "pass"}\n'
            if name.endswith(".json")
            else (b"stale: gate passed\n")
        )
        (folder / name).write_bytes(stale)
        case.stale[folder / name] = stale
    if case.row.run_report:
        (folder / "comment.md").write_bytes(b"stale: gate passed\n")
        case.stale[folder / "comment.md"] = b"stale: gate passed\n"


def _then(*steps: Callable[[Case], None]) -> Callable[[Case], None]:
    def prepare(case: Case) -> None:
        for step in steps:
            step(case)

    return prepare


# rows whose signals are tested in a process (each costs a start of Python and evalret)
SIGNAL_ROWS = {"run", "embed", "hook"}


def _process_situations(row: Row) -> Iterator[Situation]:
    target = "search" if "retriever" in row.plugins else "encode"
    if row.name in SIGNAL_ROWS:
        yield Situation("hang-then-sigterm", _hang(target, signal.SIGTERM), frozenset({143}), True)
        yield Situation("hang-then-sigint", _hang(target, signal.SIGINT), frozenset({130}), True)
    has_dir_out = any(item.dir and item.products for item in row.outputs)
    if has_dir_out and "retriever" in row.plugins:
        yield Situation(
            "stale-outputs-then-plugin-fails",
            _then(_stale_outputs, _plugin("search", "raise", RETRIEVER)),
            frozenset({3}),
        )
        if row.name in SIGNAL_ROWS:
            yield Situation(
                "stale-outputs-then-killed",
                _then(_stale_outputs, _hang(target, signal.SIGKILL)),
                frozenset({-9}),
                True,
            )


# --- config ----------------------------------------------------------------------------------


def _duplicate_gate(case: Case) -> None:
    text = case.config_text()
    second = len(text.splitlines()) + 1
    case.write_config(text + "gate:\n  indexes: [exact]\n")
    case.must_lines = (gate_line(), second)


def _named(names: str) -> Callable[[Case], None]:
    def prepare(case: Case) -> None:
        case.must_name.append(names)
        _normal(case)

    return prepare


def _edit(old: str, new: str) -> Callable[[Case], None]:
    def prepare(case: Case) -> None:
        text = case.config_text()
        assert old in text
        case.write_config(text.replace(old, new))

    return prepare


def _index(entry: str, names: str) -> Callable[[Case], None]:
    """One more index, ``entry``, in the config; an error must name ``names``."""

    def prepare(case: Case) -> None:
        _edit("  service: {type: python", f"  ivf: {entry}\n  service: {{type: python")(case)
        case.must_name.append(names)
        _normal(case)

    return prepare


# rows that search the config's indexes (a faiss index the golden set cannot train stops them)
SEARCHING = {"retriever"}


def config_situations(row: Row) -> Iterator[Situation]:
    if row.config is None:
        return
    yield Situation("duplicate-gate-key", _duplicate_gate, frozenset({2}))
    # settings faiss cannot take, refused at their key by every command that reads the config
    # (they ended as exit 3 in faiss, or took gigabytes before their refusal)
    two = frozenset({2})
    faiss_ivf = '{type: faiss, factory: "IVF4,Flat", params: {nprobe: -5}}'
    yield Situation("faiss-nprobe-negative", _index(faiss_ivf, "indexes.ivf.params.nprobe"), two)
    too_big = '{type: faiss, factory: "PQ16x24"}'
    yield Situation("faiss-factory-too-large", _index(too_big, "indexes.ivf.factory"), two)
    threads = _then(_edit("threads: 1}", "threads: 100000}"), _named("indexes.hnsw.threads"))
    yield Situation("hnsw-threads-past-bound", threads, two)  # faiss's OpenMP crashed (139)
    # one the golden set's few dozen documents cannot train: refused before embedding where it
    # is searched, and no concern of a command that does not search
    untrainable = _index('{type: faiss, factory: "PQ16x20"}', "indexes.ivf.factory")
    searches = bool(SEARCHING & row.plugins)
    yield Situation("faiss-untrainable", untrainable, two if searches else None)
    if row.name == "run":
        yield Situation(
            "sample-queries-true",
            _edit("output: {dir: reports}", "output: {dir: reports}\nsample: {queries: true}"),
            frozenset({2}),
        )
        yield Situation(
            "quoted-number", _edit("{samples: 100}", "{samples: '100'}"), frozenset({2})
        )


# --- --set: a setting from the command line --------------------------------------------------


def _golden_by_set(out: Item | None) -> Callable[[Case], None]:
    """A copy of the golden set where the config does not say, named by ``--set
    golden_set.path`` (the world's plug-in retriever reads the original); with ``out``, that
    output put on the copy (a directory onto it, a file over its last file): the guard must see
    the input the --set names."""

    def prepare(case: Case) -> None:
        moved = case.root / "set-golden"
        shutil.copytree(case.paths[GOLDEN.role], moved)
        case.paths[GOLDEN.role] = moved
        case.extra += ["--set", f"golden_set.path={moved}"]
        if out is not None:
            target = moved if out.dir else sorted(p for p in moved.iterdir() if p.is_file())[-1]
            case.paths[out.role] = target
            case.must_name.append(target.name)
        _normal(case)

    return prepare


def set_situations(row: Row) -> Iterator[Situation]:
    """Every command that reads a config takes ``--set`` (a sweep's sets axes, and refuses the
    golden set's: it has no such row here)."""
    if row.config is None or GOLDEN not in row.inputs or row.name == "sweep":
        return
    yield Situation("golden-set-by-set", _golden_by_set(None))
    for out in row.outputs:
        yield Situation(f"{out.role}-is-golden-set-by-set", _golden_by_set(out), frozenset({2}))


# --- settings that apply to nothing (#35) -------------------------------------------------------

# gate settings on what the world's gate does not check (gate.indexes: [exact, service]; hnsw
# and the rerank index `reranked` run ungated): (situation, the line's old text, its new text,
# the key the error names)
INERT_GATE = (
    (
        "floor-on-no-gated-index",
        "  ann_min_recall: null",
        "  ann_min_recall: 0.9",
        "ann_min_recall",
    ),
    (
        "budget-on-ungated-index",
        "  ann_min_recall: null",
        "  ann_min_recall: null\n  budgets: {hnsw: {max_index_bytes: 1000000}}",
        "budgets.hnsw",
    ),
    (
        "rerank-floor-on-ungated-index",
        "  ann_min_recall: null",
        "  ann_min_recall: null\n  rerank_min_recall: 0.5",
        "rerank_min_recall",
    ),
)
# the rows that build the run's slices (a custom slice rule is checked there)
SLICE_ROWS = {"run", "hook", "pool", "sweep", "validate"}


def _inert_gate(old: str, new: str, key: str) -> Callable[[Case], None]:
    """The config's line ``old`` made ``new``: refused at the key's line, naming it."""

    def prepare(case: Case) -> None:
        text = case.config_text()
        assert old + "\n" in text
        text = text.replace(old + "\n", new + "\n", 1)
        case.write_config(text)
        last = new.rsplit("\n", 1)[-1]
        case.must_name.append(f"gate.{key}")
        case.must_lines = (text.splitlines().index(last) + 1,)
        _normal(case)

    return prepare


def _set_of_disabled_index(case: Case) -> None:
    """``--set`` of a setting of the disabled bm25 index: it would change nothing."""
    case.extra += ["--set", "indexes.bm25.k1=1.2"]
    case.must_name += ["indexes.bm25.k1", "index bm25 is disabled"]
    _normal(case)


def _empty_custom_slice(case: Case) -> None:
    text = case.config_text()
    rule = "slices: {custom: [{name: nothing, pattern: '^no query reads like this$'}]}\n"
    case.write_config(text.replace("gate:\n", rule + "gate:\n", 1))
    case.must_name.append("slices.custom[0]: nothing")
    _normal(case)


def _takes_set(row: Row) -> bool:
    """Whether the row's command has a ``--set`` option (read from the Typer app)."""
    command = dict(command_tree())[f"evalret {row.name}"]
    return any("--set" in getattr(p, "opts", ()) for p in command.params)


def inert_situations(row: Row) -> Iterator[Situation]:
    """A setting that applies to nothing is a config error naming its key (exit 2) wherever
    the config is read; a custom slice rule matching no query wherever the slices are built."""
    if row.config is None:
        return
    two = frozenset({2})
    for name, old, new, key in INERT_GATE:
        yield Situation(name, _inert_gate(old, new, key), two)
    if _takes_set(row):
        yield Situation("set-of-disabled-index", _set_of_disabled_index, two)
    if row.name in SLICE_ROWS:
        yield Situation("custom-slice-matches-no-query", _empty_custom_slice, two)


# --- golden-set inputs -------------------------------------------------------------------------

# hostile query filters (#27): each is refused at its line, exit 2, naming what is wrong
BAD_FILTERS = {
    "unknown-operator": ({"section": {"$regex": "inst.*"}}, "$regex"),
    "range-on-a-string": ({"section": {"$gt": "a"}}, "$gt compares numbers"),
    "mixed-in-list": ({"section": {"$in": ["errors", 1]}}, "one type"),
    "not-an-object": ("section=errors", "a filter is an object"),
    "nested-metadata": ({"section": {"name": "errors"}}, "is not an operator"),
    "empty-or": ({"$or": []}, "non-empty list"),
}


def _bad_filter(raw: object, names: str) -> Callable[[Case], None]:
    """The golden set's first query gets the filter ``raw``: refused at queries.jsonl:1."""

    def prepare(case: Case) -> None:
        queries = case.paths[GOLDEN.role] / "queries.jsonl"
        first, *rest = queries.read_text().splitlines(keepends=True)
        record = json.loads(first)
        record["filter"] = raw
        queries.write_text(json.dumps(record) + "\n" + "".join(rest))
        case.must_name += ["queries.jsonl:1", names]
        _normal(case)

    return prepare


def golden_situations(row: Row) -> Iterator[Situation]:
    """Every command that reads the config's golden set refuses a bad filter at its line."""
    if row.config is None or GOLDEN not in row.inputs:
        return
    for name, (raw, names) in BAD_FILTERS.items():
        yield Situation(f"filter-{name}", _bad_filter(raw, names), frozenset({2}))


# --- HTTP ------------------------------------------------------------------------------------


def _openai_model(url: str, timeout: int = 2) -> str:
    return (
        "  provider: openai\n  name: inv-embed\n"
        f'  base_url: "{url}"\n  api_key_env: {SECRET_ENV}\n'
        f"  max_retries: 0\n  timeout: {timeout}\n  concurrency: 1"
    )


BOMBS = ("huge", "gzip-bomb")  # inv_http's modes whose body no client should read whole
LIMIT = 1  # the max_response_mb of a client a bomb is served to: a bomb passes it at once


def _http(mode: str, url_form: str = "{url}") -> Callable[[Case], None]:
    def prepare(case: Case) -> None:
        elsewhere_url, elsewhere = case.enter(serve("ok"))
        url, state = case.enter(serve(mode, redirect_to=elsewhere_url.removesuffix("/v1")))
        host = url.removeprefix("http://")
        model = _openai_model(url_form.format(url=url, host=host))
        if mode in BOMBS:
            model += f"\n  max_response_mb: {LIMIT}"
            case.must_name += [f"{url}/embeddings", f"model.max_response_mb ({LIMIT} MiB)"]
        judge = JUDGE_BLOCK if JUDGE_BLOCK in case.config_text() else ""  # a judge row's judge
        case.write_config(config_text(model=model) + judge)
        case.servers = (state, elsewhere)

    return prepare


def _service(url: str) -> str:
    """The settings every HTTP service of a bomb situation shares (flow style)."""
    return (
        f"base_url: '{url}', api_key_env: {SECRET_ENV}, max_retries: 0, timeout: 5, "
        f"max_response_mb: {LIMIT}"
    )


def _rerank_bomb(mode: str) -> Callable[[Case], None]:
    """The world's Python reranker replaced by an HTTP one at a server answering ``mode``."""

    def prepare(case: Case) -> None:
        url, state = case.enter(serve(mode))
        text = case.config_text()
        python = f'reranker: {{provider: python, callable: "{RERANKER}"}}'
        assert python in text
        http = f"reranker: {{provider: http, model: inv-rerank, {_service(url)}}}"
        case.write_config(text.replace(python, http))
        case.servers = (state,)
        key = "indexes.reranked.reranker.max_response_mb"
        case.must_name += [f"{url}/rerank", f"{key} ({LIMIT} MiB)"]

    return prepare


def _judge_bomb(mode: str) -> Callable[[Case], None]:
    """A judge at a server answering ``mode``, and the row told to ask it (its ``judges``)."""

    def prepare(case: Case) -> None:
        url, state = case.enter(serve(mode))
        case.ask_judge()
        text = case.config_text().replace(JUDGE_BLOCK, "")
        case.write_config(text + f"judge: {{name: inv-judge, {_service(url)}}}\n")
        case.servers = (state,)
        case.must_name += [f"{url}/chat/completions", f"judge.max_response_mb ({LIMIT} MiB)"]

    return prepare


def _reading_stopped(case: Case, outcome: Outcome) -> None:
    """The client closed the connection before the server had sent the whole body (past what
    the kernels' buffers hold: it stopped reading)."""
    assert case.servers[0].settled(), "the server was still answering a minute after the call"
    sent = case.servers[0].sent
    assert sent, "no request reached the server"
    for done, size in sent:
        assert done < size, f"the whole hostile body ({size:,} bytes) was read"


def _key_was_sent(case: Case, outcome: Outcome) -> None:
    state = case.servers[0]
    assert state.requests, "no request reached the server"
    assert state.requests[0]["authorization"] == f"Bearer {SECRET}"


def _nothing_elsewhere(case: Case, outcome: Outcome) -> None:
    texts = [r["body"].get("input") for r in case.servers[1].requests]
    assert not texts, f"a redirect sent {len(texts)} requests of golden-set text to another origin"


def _bounded(case: Case, outcome: Outcome) -> None:
    first = case.servers[0].first_at
    assert first is not None, "no request reached the server"
    held = outcome.ended - first
    assert held < 5, f"a dripping server held the call {held:.1f} s (model.timeout: 2)"


HTTP_DRIP_ROWS = {"run", "embed"}
QUOTED = urllib.parse.quote(SECRET, safe="")


def bomb_situations(row: Row) -> Iterator[Situation]:
    """Every HTTP client a row calls, answered a body bomb: exit 3 naming the endpoint and its
    limit, the body not read whole."""
    three, checks = frozenset({3}), (_reading_stopped,)
    for mode in BOMBS:
        if row.embeds:
            yield Situation(f"http-{mode}", _http(mode), three, checks=checks)
        if "reranker" in row.plugins:
            yield Situation(f"rerank-http-{mode}", _rerank_bomb(mode), three, checks=checks)
        if row.judges is not None:
            yield Situation(f"judge-http-{mode}", _judge_bomb(mode), three, checks=checks)


def http_situations(row: Row) -> Iterator[Situation]:
    yield from bomb_situations(row)
    if not row.embeds:
        return
    yield Situation("http-ok", _http("ok"), checks=(_key_was_sent,))
    yield Situation(
        "http-redirect-elsewhere", _http("redirect"), frozenset({3}), checks=(_nothing_elsewhere,)
    )
    yield Situation("http-echoes-key", _http("echo-key"), frozenset({3}))
    yield Situation(
        "http-key-in-base-url-userinfo",
        _http("ok", f"http://inv:{QUOTED}@{{host}}"),
        frozenset({0, 1, 2}),
    )
    yield Situation(
        "http-key-in-base-url-query", _http("ok", f"{{url}}?api_key={QUOTED}"), frozenset({0, 1, 2})
    )
    if row.name in HTTP_DRIP_ROWS:
        yield Situation("http-drip", _http("drip"), frozenset({3}), checks=(_bounded,))


# --- stores: a file at a cache's path that is not evalret's -------------------------------------


def _other_application(path: Path) -> None:
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("PRAGMA application_id = 42")
        db.execute("CREATE TABLE notes (note TEXT)")
        db.execute("INSERT INTO notes VALUES ('not evalret''s')")


def _text_file(path: Path) -> None:
    path.write_text("my own notes, not a cache\n")


FOREIGN_FILES = {"sqlite": _other_application, "text": _text_file}
# the world's Python reranker as an HTTP one (nothing listens there: refused before a request)
HTTP_RERANKER = "reranker: {provider: http, base_url: 'http://127.0.0.1:9/v1', model: inv-rerank}"


def _foreign(
    store: Item, make: Callable[[Path], None], argv: tuple[str, ...]
) -> Callable[[Case], None]:
    """The file at ``store``'s path replaced by a foreign one; ``argv`` added (`run --judge`),
    the config given a judge (the answer cache) or an HTTP reranker (the score cache)."""

    def prepare(case: Case) -> None:
        path = case.paths[store.role]
        path.unlink()
        make(path)
        case.extra += list(argv)
        text = case.config_text()
        if store is ANSWER_CACHE and "judge:" not in text:
            case.write_config(text + JUDGE_BLOCK)
        elif store is SCORE_CACHE:
            old = f'reranker: {{provider: python, callable: "{RERANKER}"}}'
            assert old in text
            case.write_config(text.replace(old, HTTP_RERANKER))
        case.must_name += [path.name, "is not evalret's", "cache.dir"]
        _normal(case)

    return prepare


def store_situations(row: Row) -> Iterator[Situation]:
    """Every row that would write a cache refuses a foreign file at its path (exit 2): the
    judge's answer cache where it judges, the score cache where its config reranks."""
    uses: list[tuple[Item, tuple[str, ...]]] = []
    if row.judge_argv is not None and row.config is not None:
        uses.append((ANSWER_CACHE, row.judge_argv))
    if "reranker" in row.plugins and row.config is not None:
        uses.append((SCORE_CACHE, ()))
    if row.name == "golden synth":
        uses.append((SYNTH_CACHE, ()))
    for store, argv in uses:
        if store not in row.inputs:
            continue
        for kind, make in FOREIGN_FILES.items():
            yield Situation(
                f"foreign-{store.role}-{kind}", _foreign(store, make, argv), frozenset({2})
            )


# --- standard streams ------------------------------------------------------------------------


def _stdout_closed(case: Case) -> None:
    case.stdout_closed = True


def stream_situations(row: Row) -> Iterator[Situation]:
    """A reader that closes stdout (`evalret ... | head`): 141, no verdict, nothing on stderr,
    as a process killed by SIGPIPE; never a crash (3) or click's 1, which reads as a
    regression. A server's stdout carries its address: not closed here."""
    if row.serves:
        return
    yield Situation("stdout-closed", _stdout_closed, frozenset({141}), True, (_quiet_on_stderr,))


def _quiet_on_stderr(case: Case, outcome: Outcome) -> None:
    assert "Error" not in outcome.stderr, "a closed stdout is reported as an error"


# --- the cross product -----------------------------------------------------------------------


def situations(row: Row) -> list[Situation]:
    from inv_judge import judge_situations  # it builds on this module's Situation

    found = [Situation("normal", _normal)]
    families = (
        path_situations,
        plugin_situations,
        config_situations,
        set_situations,
        golden_situations,
        store_situations,
        judge_situations,
        inert_situations,
    )
    for family in (*families, http_situations, stream_situations):
        found += list(family(row))
    if row.serves:  # a server is always a process, stopped by the harness
        found = [
            s if s.process else Situation(s.id, s.prepare, s.expect, True, s.checks) for s in found
        ]
        found = [
            s
            if s.id != "normal" and s.id != "inputs-read-only"
            else Situation(s.id, s.prepare, frozenset({0, 130}), True, s.checks)
            for s in found
        ]
    ids = [s.id for s in found]
    assert len(ids) == len(set(ids)), ids
    return found


def all_cases() -> list[tuple[Row, Situation]]:
    return [(row, s) for row in ROWS for s in situations(row)]
