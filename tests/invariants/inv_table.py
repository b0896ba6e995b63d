"""The table: every command and sub-command of `evalret --help`, one row each, saying how to call
it on the harness's world (inv_world), what it reads and what it writes.

A row's ``argv`` names paths by role, ``{role}`` (a dash in the role is an underscore here); each
role is an input (read, never changed) or an output (written), a path relative to the case's copy
of the world. The situations (inv_situations) rewrite these paths, the config or the environment;
the checks (inv_checks) use the rest: the exit code of a normal call, the report that exit 0 or 1
must come with, the plug-ins the command calls and whether it embeds with the config's model.

**A new command or plug-in surface joins by adding its row here**; test_invariants fails while a
command of the Typer app has none.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evalret.core.digest import json_digest


@dataclass(frozen=True)
class Item:
    """An input or output path of a row: its role, its path in the world, whether a directory."""

    role: str
    rel: str
    dir: bool = False
    # an output directory: the names written into it (a situation puts an input under one)
    products: tuple[str, ...] = ()
    # an input named in argv (a situation may move it); not one only a config names
    in_argv: bool = True
    # read by the command (a situation may break it); False: declared only, as what no output
    # may land on (the golden set of a config `judge POOL` takes its pairs from elsewhere)
    read: bool = True


@dataclass(frozen=True)
class Asks:
    """How a row is made to call a service its config names (the judge): options added to its
    argv, and options taken out of it."""

    add: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()


@dataclass(frozen=True)
class Row:
    name: str
    argv: tuple[str, ...]
    inputs: tuple[Item, ...] = ()
    outputs: tuple[Item, ...] = ()
    exit: int = 0  # the exit code of a normal call on the world
    # the report exit 0 or 1 must come with, fresh and complete: (output role, name inside it, or
    # "" for the output itself)
    report: tuple[str, str] | None = None
    config: str | None = None  # the role of the YAML config it reads
    plugins: frozenset[str] = frozenset()  # "encoder", "retriever": the plug-ins it calls
    embeds: bool = False  # embeds with the config's model (the HTTP situations apply)
    # asks the config's judge over HTTP once told so (the judge's HTTP situations apply)
    judges: Asks | None = None
    serves: bool = False  # a server: run as a process, stopped by the harness
    run_report: bool = False  # the report is an evalret run report.json (carries run_id)
    # outputs that may be an input by design: (output role, input role)
    allowed: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    # the argv that makes it use the judge's answer cache (() : it always does; None: never)
    judge_argv: tuple[str, ...] | None = None

    @property
    def id(self) -> str:
        return self.name.replace(" ", "-")


CONFIG = Item("config", "cfg.yaml")
GOLDEN = Item("golden-set", "golden", dir=True, in_argv=False)
PLUGIN_FILE = Item("plugin", "inv_plugin.py", in_argv=False)
BASELINE = Item("baseline", "baseline.json")
CONFIG_BASELINE = Item("baseline", "baseline.json", in_argv=False)
SAVED = Item("saved-report", "saved/report.json")
RUN_PRODUCTS = ("report.json", "report.md", "report.html", "junit.xml", "run.exact.trec")
BOTH = frozenset({"encoder", "retriever"})
EVERY_PLUGIN = BOTH | {"reranker"}  # a whole run: the rerank index's Python reranker too
ENCODER = frozenset({"encoder"})
# evalret's stores in the world's cache directory (the config's cache.dir, and
# $EVALRET_CACHE_DIR for the commands that read no config), built with evalret by inv_world:
# inputs of every command that writes, but the cache's own (`cache clear`, `prune`)
OTHER_IDENTITY = {"name": "inv-other-model"}  # an embedding set no row embeds into
ANSWER_CACHE = Item("answer-cache", "cache/judgments/judge.sqlite", in_argv=False)
SCORE_CACHE = Item("score-cache", "cache/rerank/scores.sqlite", in_argv=False)
SYNTH_CACHE = Item("synth-cache", "cache/judgments/synth.sqlite", in_argv=False)
EMBEDDING_STORE = Item(
    "embedding-store",
    f"cache/embeddings/{json_digest(OTHER_IDENTITY)[:32]}",
    dir=True,
    in_argv=False,
)
STORES = (ANSWER_CACHE, SCORE_CACHE, SYNTH_CACHE, EMBEDDING_STORE)
GOLDEN_NAMED = Item("golden-set", "golden", dir=True, in_argv=False, read=False)
DRAFT_FILES = ("corpus.jsonl", "queries.jsonl", "manifest.json")  # a golden command's draft

ROWS: tuple[Row, ...] = (
    Row(
        "run",
        (
            "run",
            "-c",
            "{config}",
            "--no-progress",
            "--out",
            "{out}",
            "--baseline",
            "{baseline}",
            "--save-baseline",
            "{save_baseline}",
        ),
        inputs=(CONFIG, GOLDEN, BASELINE, PLUGIN_FILE, *STORES),
        outputs=(
            Item("out", "out", dir=True, products=RUN_PRODUCTS),
            Item("save-baseline", "new-baseline.json"),
        ),
        report=("out", "report.json"),
        config="config",
        plugins=EVERY_PLUGIN,
        embeds=True,
        judges=Asks(add=("--judge",)),
        run_report=True,
        # saving over the baseline gated against is how a baseline is refreshed, on purpose
        allowed=frozenset({("save-baseline", "baseline")}),
        judge_argv=("--judge",),
    ),
    Row(
        "embed",
        ("embed", "-c", "{config}", "--no-progress", "--dir", "{cache}", "--export", "{export}"),
        inputs=(CONFIG, GOLDEN, PLUGIN_FILE, *STORES),
        outputs=(
            Item("cache", "cache", dir=True, products=("embeddings",)),
            # --export: the documents' vectors (never over an input, as every output)
            Item("export", "vectors.parquet"),
        ),
        config="config",
        plugins=ENCODER,
        embeds=True,
    ),
    Row(
        "score",
        ("score", "{qrels}", "prod={run_file}", "--out", "{out}", "--no-progress"),
        inputs=(Item("qrels", "qrels.txt"), Item("run-file", "run.prod.trec"), *STORES),
        outputs=(
            Item(
                "out",
                "out",
                dir=True,
                products=("report.json", "report.md", "report.html", "run.prod.trec"),
            ),
        ),
        report=("out", "report.json"),
        run_report=True,
    ),
    Row(
        "trec_eval",
        ("trec_eval", "-c", "-q", "-m", "all_trec", "{qrels}", "{run_file}"),
        inputs=(Item("qrels", "qrels.txt"), Item("run-file", "run.prod.trec"), *STORES),
    ),
    Row(
        "compare",
        ("compare", "{a}", "{b}", "--out", "{out}", "--no-progress", "--samples", "100"),
        inputs=(Item("a", "saved/a.json"), Item("b", "saved/b.json"), *STORES),
        outputs=(
            Item(
                "out",
                "out",
                dir=True,
                products=("compare.json", "compare.md", "disagreements.md", "report.html"),
            ),
        ),
        report=("out", "compare.json"),
    ),
    Row(
        "pool",
        ("pool", "{config}", "-k", "3", "--out", "{out}", "--no-progress"),
        inputs=(CONFIG, GOLDEN, PLUGIN_FILE, *STORES),
        outputs=(Item("out", "new-pool.jsonl"),),
        report=("out", ""),
        config="config",
        plugins=EVERY_PLUGIN,  # the rerank index too
        embeds=True,
    ),
    Row(
        "annotate",
        ("annotate", "{pool}", "-a", "carol", "--port", "0", "--no-browser", "--out", "{out}"),
        inputs=(Item("pool", "pool.jsonl"), *STORES),
        outputs=(Item("out", "carol.jsonl"),),
        serves=True,
    ),
    Row(
        "judge",
        ("judge", "{pool}", "-c", "{config}", "--dry-run", "--out", "{out}", "--no-progress"),
        inputs=(
            Item("pool", "pool.jsonl"),
            Item("config", "judge.yaml"),
            GOLDEN_NAMED,
            PLUGIN_FILE,
            *STORES,
        ),
        outputs=(Item("out", "labels.jsonl"),),
        config="config",
        judge_argv=(),
        judges=Asks(drop=("--dry-run",)),
    ),
    Row(
        "report",
        ("report", "{saved_report}", "--out", "{out}"),
        inputs=(SAVED, *STORES),
        outputs=(Item("out", "html", dir=True, products=("report.html",)),),
        report=("out", "report.html"),
    ),
    Row(
        "init",
        # the workflow too (--action-ref, --install): .github/workflows/evalret.yml
        ("init", "{repo}", "--action-ref", "acme/evalret@v0.1.0", "--install", "evalret==0.1.0"),
        inputs=STORES,
        outputs=(Item("repo", "repo", dir=True, products=("evalret.yaml", "evalret.schema.json")),),
        report=("repo", "evalret.yaml"),
    ),
    Row(
        "hook",
        ("hook", "-c", "{config}", "--out", "{out}"),
        inputs=(CONFIG, GOLDEN, CONFIG_BASELINE, PLUGIN_FILE, *STORES),
        outputs=(Item("out", "out", dir=True, products=RUN_PRODUCTS),),
        report=("out", "report.json"),
        config="config",
        plugins=EVERY_PLUGIN,
        embeds=True,
        run_report=True,
    ),
    Row(
        "validate",
        ("validate", "{config}", "--report", "{saved_report}"),
        inputs=(CONFIG, GOLDEN, SAVED),
        config="config",
    ),
    Row(
        "leakage",
        ("leakage", "--train", "{train}", "{config}", "--out", "{out}", "--no-progress"),
        inputs=(Item("train", "train.txt"), CONFIG, GOLDEN, PLUGIN_FILE, *STORES),
        outputs=(Item("out", "leakage.json"),),
        report=("out", ""),
        config="config",
        plugins=ENCODER,
        embeds=True,
    ),
    Row(
        "sweep",
        (
            "sweep",
            "--set",
            "indexes.hnsw.ef_search=16,32",
            "--out",
            "{out}",
            "-c",
            "{config}",
            "--repeats",
            "1",
            "--no-progress",
        ),
        inputs=(CONFIG, GOLDEN, PLUGIN_FILE, *STORES),
        outputs=(Item("out", "sweep", dir=True, products=("sweep.json", "sweep.html")),),
        report=("out", "sweep.json"),
        config="config",
        plugins=EVERY_PLUGIN,  # the rerank index too
        embeds=True,
    ),
    Row("baseline show", ("baseline", "show", "{baseline}"), inputs=(BASELINE,)),
    Row(
        "cache info",
        ("cache", "info", "--dir", "{cache}"),
        inputs=(Item("cache", "cachefull", dir=True),),
    ),
    Row(
        "cache clear",
        ("cache", "clear", "--dir", "{cache}"),
        outputs=(Item("cache", "cachefull", dir=True, products=("embeddings",)),),
    ),
    Row(
        "cache prune",
        ("cache", "prune", "--dir", "{cache}", "--days", "0"),
        outputs=(Item("cache", "cachefull", dir=True, products=("embeddings",)),),
    ),
    Row(
        "history add",
        ("history", "add", "{saved_report}", "--db", "{db}", "-c", "{config}", "--label", "pr"),
        inputs=(SAVED, CONFIG, GOLDEN_NAMED, PLUGIN_FILE, *STORES),
        outputs=(Item("db", "history.sqlite"),),
        report=("db", ""),
        config="config",
    ),
    Row(
        "history show",
        ("history", "show", "--db", "{db}", "-c", "{config}"),
        inputs=(Item("db", "history.sqlite"), CONFIG),
        config="config",
    ),
    Row(
        "history report",
        ("history", "report", "--db", "{db}", "-c", "{config}", "-o", "{out}"),
        inputs=(Item("db", "history.sqlite"), CONFIG, GOLDEN_NAMED, PLUGIN_FILE, *STORES),
        outputs=(Item("out", "trend.html"),),
        report=("out", ""),
        config="config",
    ),
    Row(
        "judgments agreement",
        ("judgments", "agreement", "{alice}", "{bob}", "--out", "{out}"),
        inputs=(Item("alice", "alice.jsonl"), Item("bob", "bob.jsonl"), *STORES),
        outputs=(Item("out", "agreement.json"),),
        report=("out", ""),
    ),
    Row(
        "judgments merge",
        ("judgments", "merge", "{alice}", "{bob}", "--into", "{into}", "--out", "{out}"),
        inputs=(
            Item("alice", "alice.jsonl"),
            Item("bob", "bob.jsonl"),
            Item("into", "golden", dir=True),
            *STORES,
        ),
        outputs=(
            Item(
                "out",
                "merged",
                dir=True,
                products=("queries.jsonl", "corpus.jsonl", "disputed.jsonl"),
            ),
        ),
        report=("out", "queries.jsonl"),
    ),
    # prints the config's JSON Schema: reads and writes nothing
    Row("config schema", ("config", "schema")),
    # the world's golden set as the draft (its judged pairs kept); the config's golden set is
    # replaced by it (so not read); the typed indexes are off in the pool (the encoder alone)
    Row(
        "golden judge",
        (
            "golden",
            "judge",
            "{draft}",
            "-c",
            "{config}",
            "--retrievers",
            "dense",
            "--dry-run",
            "--out",
            "{out}",
            "--no-progress",
        ),
        inputs=(
            Item("draft", "golden", dir=True),
            Item("config", "judge.yaml"),
            PLUGIN_FILE,
            *STORES,
        ),
        outputs=(
            Item(
                "out",
                "graded",
                dir=True,
                products=("corpus.jsonl", "queries.jsonl", "manifest.json"),
            ),
        ),
        config="config",
        plugins=ENCODER,
        embeds=True,
        judge_argv=(),
        judges=Asks(drop=("--dry-run",)),
    ),
    # a query log (train.txt: a text log) sampled into a draft over the small set's corpus
    Row(
        "golden from-logs",
        (
            "golden",
            "from-logs",
            "{log}",
            "--corpus",
            "{corpus}",
            "--n",
            "3",
            "--out",
            "{out}",
            "--no-progress",
        ),
        inputs=(Item("log", "train.txt"), Item("corpus", "golden", dir=True), *STORES),
        outputs=(
            Item(
                "out",
                "draft",
                dir=True,
                products=("corpus.jsonl", "queries.jsonl", "manifest.json"),
            ),
        ),
        report=("out", "manifest.json"),
    ),
    # --dry-run: embeds (the plug-in encoder) and plans, sends nothing (its judge: section points
    # nowhere); told to call the judge (its endpoint is the query writer's), it sends
    Row(
        "golden synth",
        (
            "golden",
            "synth",
            "-c",
            "{config}",
            "--corpus",
            "{corpus}",
            "--n",
            "5",
            "--dry-run",
            "--out",
            "{out}",
            "--no-progress",
        ),
        inputs=(
            Item("config", "judge.yaml"),
            Item("corpus", "golden/corpus.jsonl"),
            GOLDEN_NAMED,
            PLUGIN_FILE,
            *STORES,
        ),
        outputs=(Item("out", "draft", dir=True, products=DRAFT_FILES),),
        config="config",
        plugins=ENCODER,
        # not embeds: its dry run sends no text to an API model whose cache lacks the corpus
        # (tests/test_golden_synth.py), so the HTTP embedding situations would see no request
        judges=Asks(drop=("--dry-run",)),
        judge_argv=(),
    ),
    Row(
        "golden doctor",
        (
            "golden",
            "doctor",
            "-c",
            "{config}",
            "--log",
            "{log}",
            "--out",
            "{out}",
            "--no-progress",
        ),
        inputs=(Item("log", "train.txt"), CONFIG, GOLDEN, PLUGIN_FILE, *STORES),
        outputs=(Item("out", "doctor", dir=True, products=("doctor.json", "doctor.html")),),
        report=("out", "doctor.json"),
        config="config",
        plugins=EVERY_PLUGIN,
        embeds=True,
    ),
)
