"""Every option of the evalret command line, declared once: one meaning per option name.

A command in ``evalret.cli`` takes its options from here (a type alias, or a factory where the
help names what the command does with the value, as ``out``). Every declaration goes through
``_option``, which records the option's names; a name is declared once, so that ``--baseline``
is always a saved report the run is measured against, ``--json`` always the flag that prints
JSON, ``--format`` always a golden set's format (tests/test_cli_surface.py checks every command
against ``DECLARED``). Spellings kept from before an option was renamed are hidden and say so on
stderr (``deprecated``).

Option groups (``Overrides``, ``SetsOnly``, ``FixedSettings``, ``Progress``) are several options
that reach a command's function as one value (``cli_runtime.OptionGroup``). The choices an option
offers are the library's, from ``evalret.choices``. This module imports typer, the standard
library and those light modules only: `evalret --help` stays light.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

# the choices and bounds the library states (stdlib only: the CLI stays light); typer refuses a
# Literal's other values with exit 2, and every command taking --format checks it here, before
# anything runs
from evalret.choices import (
    GOLDEN_FORMATS,
    MAX_SAMPLES,
    POOL_FORMATS,
    Allocation,
    Correction,
    LogFileFormat,
    MarginMode,
    PiiMode,
    TrainFormat,
)
from evalret.choices import Policy as PolicyName
from evalret.choices import WithoutRelevant as QueriesWithoutRelevant
from evalret.cli_runtime import BadChoice, OptionGroup, bars
from evalret.pipeline.progress import ProgressBars

if TYPE_CHECKING:
    from evalret.data.overrides import Override
    from evalret.data.querylog import LogFormat

# long option name -> its one meaning (the help of its declaration, or, for a factory whose help
# each command words, what the value always is)
DECLARED: dict[str, str] = {}
# old spellings, hidden: old name -> the name that replaced it
DEPRECATED: dict[str, str] = {}


def _option(*names: str, meaning: str | None = None, **kwargs: Any) -> Any:
    """``typer.Option(*names, **kwargs)``, its long name recorded with its meaning (a name is
    declared once: a second declaration is a bug caught at import)."""
    long = next(n.split("/")[0] for n in names if n.startswith("--"))
    said = meaning or kwargs.get("help") or ""
    if DECLARED.setdefault(long, said) != said:
        raise AssertionError(f"{long} is declared twice, with two meanings")
    return typer.Option(*names, **kwargs)


def _once(factory_name: str, *names: str, meaning: str, **kwargs: Any) -> Any:
    """Record a factory's option (its help varies by command, its meaning does not)."""
    long = next(n for n in names if n.startswith("--"))
    if DECLARED.setdefault(long, meaning) != meaning:
        raise AssertionError(f"{long} ({factory_name}) is declared twice, with two meanings")
    return lambda help, **more: typer.Option(*names, help=help, **{**kwargs, **more})


def renamed(value: Any, old_value: Any, new: str) -> Any:
    """The value of a renamed option: the new spelling's, else that of its hidden old one
    (with a note on stderr; stdout may be JSON a script reads)."""
    if old_value is None or old_value is False:
        return value
    old = next(o for o, n in DEPRECATED.items() if n == new)
    print(f"evalret: {old} is deprecated here, and will go: use {new}", file=sys.stderr)
    return value if value is not None and value is not False else old_value


def _hidden(old: str, new: str, **kwargs: Any) -> Any:
    """The hidden old spelling ``old`` of the option ``new`` (see ``renamed``)."""
    DEPRECATED[old] = new
    return typer.Option(old, hidden=True, help=f"Deprecated: {new}.", **kwargs)


def _golden_format(value: str | None) -> str | None:
    if value is not None and value not in GOLDEN_FORMATS:
        raise BadChoice(
            f"{value!r} is not a golden-set format; choose {', '.join(GOLDEN_FORMATS)}",
            GOLDEN_FORMATS,
        )
    return value


def _pool_format(value: str | None) -> str | None:
    if value is not None and value not in POOL_FORMATS:
        raise BadChoice(f"{value!r}: choose {' or '.join(POOL_FORMATS)}", POOL_FORMATS)
    return value


# --- the config and what the command line changes in it ----------------------------------------

_config = _once(
    "config",
    "--config",
    "-c",
    meaning="an evalret YAML config file",
)
ConfigFile = Annotated[Path | None, _config("YAML config; without it, the built-in defaults.")]
RunConfigFile = Annotated[
    Path | None,
    _config(
        "YAML config; without it, ./evalret.yaml when present, else the built-in defaults "
        "(the demo golden set packaged with evalret)."
    ),
]
HookConfig = Annotated[Path, _config("YAML config naming gate.baseline.")]
HistoryConfigFile = Annotated[Path | None, _config("YAML config whose history.path to use.")]
InitConfig = Annotated[Path, _config("With --pre-commit: the config the hook gates.")]

_set = _once(
    "set",
    "--set",
    meaning="KEY=VALUE: a config setting, a dotted path and a YAML scalar (repeatable; a sweep "
    "takes several values, KEY=V1,V2,...)",
)
Sets = Annotated[
    list[str] | None,
    _set(
        "KEY=VALUE: set a config key for this command, e.g. model.truncate_dim=256 (a dotted "
        "path and a YAML scalar; repeatable), validated as the file is.",
        metavar="KEY=VALUE",
    ),
]
SweepSets = Annotated[
    list[str] | None,
    _set(
        "KEY=V1,V2,...: a dotted config path and its values (YAML scalars), e.g. "
        "indexes.hnsw.ef_search=16,32,64; repeat for more axes (the grid is every "
        "combination).",
        metavar="KEY=V1,V2,...",
    ),
]
ModelName = Annotated[
    str | None,
    _option("--model", metavar="NAME", help="The model to embed with: --set model.name=NAME."),
]
Dimension = Annotated[
    int | None,
    _option(
        "--dimension",
        min=1,
        metavar="N",
        help="Truncate embeddings to N dimensions: --set model.truncate_dim=N.",
    ),
]


@dataclass(frozen=True)
class ConfigSettings:
    """What a command's ``--set KEY=VALUE`` (repeatable), ``--model`` and ``--dimension`` change
    in the config it reads: one value, the option group ``Overrides`` (or ``SetsOnly``,
    ``FixedSettings``: the members a command takes)."""

    sets: tuple[str, ...] = ()
    model: str | None = None
    dimension: int | None = None

    def overrides(self) -> list[Override]:
        """The settings as the commands take them (a bad one: ConfigError, exit 2 naming the
        option and the key), ``evalret.data.overrides``."""
        from evalret.data.overrides import command_overrides

        return command_overrides(self.sets, model=self.model, dimension=self.dimension)


def _settings(
    set_: list[str] | None = None, model: str | None = None, dimension: int | None = None
) -> ConfigSettings:
    return ConfigSettings(tuple(set_ or ()), model, dimension)


_SET, _MODEL, _DIMENSION = (
    ("set_", Sets, None),
    ("model", ModelName, None),
    ("dimension", Dimension, None),
)
# --set, --model, --dimension: every command that reads a config
Overrides = Annotated[ConfigSettings, OptionGroup((_SET, _MODEL, _DIMENSION), _settings)]
# --set alone (judge: the model is the judge's config, not the run's)
SetsOnly = Annotated[ConfigSettings, OptionGroup((_SET,), _settings)]
# --model, --dimension (sweep: its --set is a grid, SweepSets; these fix one setting of every point)
FixedSettings = Annotated[ConfigSettings, OptionGroup((_MODEL, _DIMENSION), _settings)]

NoCache = Annotated[bool, _option("--no-cache", help="Neither read nor write the embedding cache.")]
CacheDir = Annotated[
    Path | None,
    _option("--dir", help="Cache directory (default: $EVALRET_CACHE_DIR or the user cache)."),
]

# --- what a command writes and how it talks ----------------------------------------------------

out = _once("out", "--out", "-o", meaning="where the command writes (a file or a directory)")
ShowProgress = Annotated[bool, _option("--progress/--no-progress", help="Show progress bars.")]
# --progress/--no-progress as the bars a command draws (cli_runtime.bars): rich's, or none
Progress = Annotated[
    ProgressBars, OptionGroup((("progress", ShowProgress, True),), lambda progress: bars(progress))
]
Verbose = Annotated[
    bool, _option("--verbose", "-v", help="Print every table (default: a short summary).")
]
AsJson = Annotated[bool, _option("--json", help="Print JSON instead of tables.")]

# --- baselines and saved reports ---------------------------------------------------------------

_baseline = _once(
    "baseline",
    "--baseline",
    "-b",
    meaning="a saved report (a baseline) the run is measured against",
)
Baseline = Annotated[
    Path | None, _baseline("Gate against this baseline (overrides gate.baseline).")
]
ScoreBaseline = Annotated[Path | None, _baseline("Gate every run against this baseline.")]
DrawnBaseline = Annotated[
    Path | None,
    _baseline("Draw this saved report beside the run (default: the gate's baseline, if found)."),
]
SaveBaseline = Annotated[
    Path | None,
    _option("--save-baseline", help="Save this run as a baseline file (never implicit)."),
]
SavedReport = Annotated[Path, typer.Argument(help="A saved report.json (or compare.json).")]

# --- golden sets and judgments -----------------------------------------------------------------

GoldenFormat = Annotated[
    str | None,
    _option(
        "--format", callback=_golden_format, help="Golden-set format: auto, native, beir or trec."
    ),
]
GoldenSplit = Annotated[str | None, _option("--split", help="BEIR split (default: test).")]
Scale = Annotated[str, _option("--scale", help="The grading scale lo-hi: 0-1, 0-2, 0-3 or 0-4.")]
AnnotationFiles = Annotated[
    list[Path],
    typer.Argument(help="Annotation files: evalret annotate's JSONL, or a Label Studio export."),
]

# --- selections --------------------------------------------------------------------------------

_index = _once("index", "--index", "-i", meaning="an index name (repeatable)")
_metric = _once("metric", "--metric", "-m", meaning="a metric name (repeatable)")
_seed = _once("seed", "--seed", meaning="the seed of a random draw")
PoolIndex = Annotated[list[str] | None, _index("Pool only this index (repeatable); default all.")]
HistoryIndex = Annotated[list[str] | None, _index("Only this index (repeatable).")]
ScoreMetric = Annotated[
    list[str] | None, _metric("A metric (repeatable); default the run defaults.")
]
HistoryMetric = Annotated[list[str] | None, _metric("Only this metric (repeatable).")]
HistorySlice = Annotated[
    list[str] | None, _option("--slice", "-s", help="Only this slice (repeatable).")
]
HistoryLast = Annotated[int, _option("--last", help="Show the newest N entries (0: all of them).")]
HistoryDb = Annotated[
    Path | None,
    _option(
        "--db",
        help="History database (default: the config's history.path, else evalret-history.sqlite).",
    ),
]
CompareSeed = Annotated[int, _seed("Seed of every resampling.")]
PoolSeed = Annotated[int, _seed("Seed of the gold lines' draw.", min=0)]
AnnotateSeed = Annotated[int, _seed("Seed of the item order (with the name).")]

# --- run ---------------------------------------------------------------------------------------

_dry_run = _once(
    "dry_run", "--dry-run", meaning="say what the command would do and cost, then stop"
)
DryRun = Annotated[
    bool,
    _dry_run(
        "Say what would be embedded (texts, cached, tokens, cost) and stop: no model "
        "is loaded, no request sent, no file written."
    ),
]
Sample = Annotated[
    int | None,
    _option(
        "--sample",
        min=1,
        help="Evaluate a seeded sample of N queries, stratified over the slices (sets "
        "sample.queries; the config's sample.documents and seed apply).",
    ),
]
Shard = Annotated[
    str | None,
    _option(
        "--shard",
        metavar="I/N",
        help="Embed only the I-th (1-based) of N deterministic slices of the texts (e.g. "
        "2/4); without it, every text the cache lacks.",
    ),
]

# --- score -------------------------------------------------------------------------------------

RelevanceLevel = Annotated[
    int, _option("--relevance-level", min=1, help="trec_eval's -l: grade >= this is relevant.")
]
WithoutRelevant = Annotated[
    QueriesWithoutRelevant,
    _option(
        "--queries-without-relevant",
        help="exclude: left out of the means; zero: scored, as trec_eval.",
    ),
]

# --- compare -----------------------------------------------------------------------------------

Primary = Annotated[str, _option("--primary", help="Metric the verdict is decided on.")]
MinGain = Annotated[
    float, _option("--min-gain", help="Gain B needs on the primary metric in every slice.")
]
Alpha = Annotated[float, _option("--alpha", help="Significance level.")]
CorrectionOption = Annotated[
    Correction, _option("--correction", help="Multiple-test correction across every test.")
]
Margin = Annotated[
    float | None,
    _option(
        "--margin",
        help="Test B - A on every metric and slice against this margin: non-inferiority (the "
        "lower bound above -margin) or, with --margin-mode equivalence, TOST.",
    ),
]
MarginModeOption = Annotated[
    MarginMode | None,
    _option("--margin-mode", help="non_inferiority (the default) or equivalence; needs --margin."),
]
Samples = Annotated[
    int,
    _option("--samples", max=MAX_SAMPLES, help="Randomization-test resamples (at least 100)."),
]
FailOnRegression = Annotated[
    bool, _option("--fail-on-regression", help="Exit 1 on a significant regression.")
]

# --- pool and annotate -------------------------------------------------------------------------

TopK = Annotated[int, _option("--k", "-k", min=1, help="Top k of each ranking.")]
GoldFraction = Annotated[
    float,
    _option(
        "--gold-fraction",
        min=0.0,
        max=1.0,
        help="Add round(F x pooled) gold lines: judged pairs with their grade as gold_grade.",
    ),
]
PoolFormat = Annotated[
    str | None,
    _option(
        "--output-format",
        callback=_pool_format,
        help="What --out holds: jsonl (default), or label-studio (a JSON list of Label Studio "
        "import tasks).",
    ),
]
OldPoolFormat = Annotated[str | None, _hidden("--format", "--output-format", callback=_pool_format)]
Annotator = Annotated[
    str, _option("--annotator", "-a", help="Your name: it labels every grade you give.")
]
Port = Annotated[
    int, _option("--port", min=0, max=65535, help="Port on 127.0.0.1 (0: a free one).")
]
NoBrowser = Annotated[bool, _option("--no-browser", help="Print the URL but open no browser.")]

# --- validate and leakage ----------------------------------------------------------------------

MdeReport = Annotated[
    Path | None,
    _option("--report", help="A report.json whose per-query nDCG@10 spread sets the MDE."),
]
Train = Annotated[Path, _option("--train", help="Training queries: JSONL (text or query) or text.")]
TrainFormatOption = Annotated[
    TrainFormat, _option("--train-format", help="How to read the training file.")
]
Threshold = Annotated[
    float | None,
    _option(
        "--threshold",
        help="Embedding cosine at or above which a pair leaks (leakage.threshold).",
    ),
]
MaxFraction = Annotated[
    float | None,
    _option("--max-fraction", help="Exit 1 when a larger fraction of golden queries leaks."),
]
NoEmbedding = Annotated[
    bool, _option("--no-embedding", help="Text checks only: no model is loaded.")
]

# --- sweep -------------------------------------------------------------------------------------

Repeats = Annotated[
    int,
    _option("--repeats", min=1, max=1000, help="Times every query is searched when timing."),
]
MaxPoints = Annotated[
    int | None,
    _option(
        "--max-points",
        min=1,
        help="The most grid points to run (default 1000): a larger grid is refused "
        "unless this allows it.",
    ),
]

# --- history -----------------------------------------------------------------------------------

Label = Annotated[str | None, _option("--label", help="A name for this entry (e.g. a branch).")]
Commit = Annotated[str | None, _option("--commit", help="The commit the report was made on.")]
MarkBaseline = Annotated[bool, _option("--mark-baseline", help="Mark this entry as a baseline.")]
OldMarkBaseline = Annotated[bool, _hidden("--baseline", "--mark-baseline")]

# --- judgments ---------------------------------------------------------------------------------

Top = Annotated[int, _option("--top", min=0, help="Widest disagreements shown.")]
OldAgreementJson = Annotated[Path | None, _hidden("--json", "--out")]
Into = Annotated[Path, _option("--into", help="The golden set to add the grades to.")]
Policy = Annotated[
    PolicyName,
    _option("--policy", help="How grades merge: median (the lower of two), majority or mean."),
]
MinAnnotators = Annotated[int, _option("--min-annotators", min=1, help="Fewer: disputed.")]
DropBelow = Annotated[
    float | None,
    _option("--drop-annotators-below", help="Drop annotators below this gold accuracy."),
]
Overwrite = Annotated[
    bool, _option("--overwrite", help="Replace grades the golden set has already.")
]

# --- cache and init ----------------------------------------------------------------------------

Days = Annotated[float, _option("--days", help="Remove sets unused for this many days.")]
Force = Annotated[bool, _option("--force", help="Overwrite existing files.")]
PreCommit = Annotated[
    bool,
    _option(
        "--pre-commit",
        help="Only add the evalret-gate hook to .pre-commit-config.yaml (made if absent).",
    ),
]
Watch = Annotated[
    list[Path] | None,
    _option(
        "--watch",
        help="With --pre-commit: another path whose change runs the hook (repeatable).",
    ),
]
ActionRef = Annotated[
    str | None,
    _option(
        "--action-ref",
        metavar="OWNER/REPO@REF",
        help="Write the GitHub workflow, using evalret's action from this repository and ref "
        "(a tag, branch or commit); without it no workflow is written.",
    ),
]
Install = Annotated[
    str | None,
    _option(
        "--install",
        metavar="SPEC",
        help="With --action-ref: the pip requirement the action installs evalret from (a "
        "version, a path, a URL) instead of the action's own repository.",
    ),
]
WorkflowOnly = Annotated[
    bool,
    _option(
        "--workflow-only",
        help="With --action-ref: write only the workflow (a repository scaffolded already).",
    ),
]

# --- judge (issue #25) -------------------------------------------------------------------------

JudgeConfigFile = Annotated[
    Path | None, _config("YAML config with a judge: section (and the golden set of the report).")
]
JudgePool = Annotated[
    Path | None,
    typer.Argument(metavar="[POOL]", help="A pool file (JSONL) from `evalret pool`."),
]
JudgeDryRun = Annotated[
    bool,
    _dry_run(
        "Say what would be asked (pairs, cached, to ask, tokens, requests, cost) and stop: "
        "nothing is sent, nothing written."
    ),
]
Votes = Annotated[
    int | None,
    _option("--votes", min=1, max=25, help="Answers per pair, median kept (default judge.votes)."),
]
Limit = Annotated[int | None, _option("--limit", min=1, help="Judge only the first N pairs.")]
FromReport = Annotated[
    Path | None,
    _option("--from-report", help="Judge the unjudged pairs of this run's report.json top k."),
]
JudgeIndex = Annotated[
    str | None, _index("With --from-report: the index whose top k is judged (default exact).")
]
Calibrate = Annotated[
    Path | None,
    _option(
        "--calibrate",
        help="Human labels (an annotation file or a golden set): report the judge's agreement.",
    ),
]
Judge = Annotated[
    bool,
    _option(
        "--judge",
        help="Grade the unjudged top 10 of the gated indexes with the config's LLM judge and "
        "score with those labels added (labelled llm in the report).",
    ),
]
JudgeCacheOnly = Annotated[
    bool,
    _option(
        "--judge-cache-only",
        help="As --judge, with the judge's cached answers only: no request is sent (a pair not "
        "cached stays unjudged).",
    ),
]

# --- evalret golden judge ----------------------------------------------------------------------

GoldenJudgeDraft = Annotated[
    Path,
    typer.Argument(
        metavar="DRAFT", help="The draft: a golden-set directory whose queries may judge nothing."
    ),
]
GoldenJudgeConfig = Annotated[
    Path | None,
    _config("YAML config: the model and indexes pooled, and the judge: section."),
]
PoolRetrievers = Annotated[
    str,
    _option(
        "--retrievers",
        help="Retrievers whose top k is pooled, comma-separated: dense (the config's model, "
        "exact search), bm25, hybrid (their reciprocal rank fusion).",
    ),
]

# --- golden from-logs (and the other golden commands: --corpus, --n, the log options) -----------


GoldenCorpus = Annotated[
    Path,
    _option(
        "--corpus",
        help="The corpus: a corpus.jsonl (native id or BEIR _id lines) or a golden-set "
        "directory holding one.",
    ),
]
queries_n = _once("n", "--n", meaning="how many queries the command writes", min=1)
LogQueriesN = Annotated[int, queries_n("Queries to draw (all of them when the log has fewer).")]
LogSeed = Annotated[int, _seed("Seed of the draw in each traffic stratum.", min=0)]
LogFileFormatOption = Annotated[
    LogFileFormat,
    _option(
        "--log-format",
        help="How to read the log: auto (by suffix: .jsonl, .csv, else text; .gz dropped "
        "first), text (a query a line), jsonl or csv.",
    ),
]
QueryField = Annotated[
    str, _option("--query-field", help="JSONL key or CSV column holding the query.")
]
CountField = Annotated[
    str | None,
    _option("--count-field", help="JSONL key or CSV column: how many times it was typed."),
]
TimestampField = Annotated[
    str | None, _option("--timestamp-field", help="JSONL key or CSV column: when it was typed.")
]
KeepField = Annotated[
    list[str] | None,
    _option(
        "--keep-field",
        help="JSONL key or CSV column kept as the tag FIELD:VALUE (repeatable).",
    ),
]
SkipBadLines = Annotated[
    bool,
    _option("--skip-bad-lines", help="Skip (and count) the log lines that cannot be read."),
]


@dataclass(frozen=True)
class LogReading:
    """How a query log is read (the option group ``LogOptions``): the fields of
    ``evalret.data.querylog.LogFormat``."""

    format: str = "auto"
    query_field: str = "query"
    count_field: str | None = None
    timestamp_field: str | None = None
    keep_fields: tuple[str, ...] = ()
    skip_bad_lines: bool = False

    def log_format(self) -> LogFormat:
        from evalret.data.querylog import LogFormat

        return LogFormat(**asdict(self))


def _log_reading(
    log_format: str = "auto",
    query_field: str = "query",
    count_field: str | None = None,
    timestamp_field: str | None = None,
    keep_field: list[str] | None = None,
    skip_bad_lines: bool = False,
) -> LogReading:
    return LogReading(
        log_format,
        query_field,
        count_field,
        timestamp_field,
        tuple(keep_field or ()),
        skip_bad_lines,
    )


# --log-format, --query-field, --count-field, --timestamp-field, --keep-field, --skip-bad-lines
LogOptions = Annotated[
    LogReading,
    OptionGroup(
        (
            ("log_format", LogFileFormatOption, "auto"),
            ("query_field", QueryField, "query"),
            ("count_field", CountField, None),
            ("timestamp_field", TimestampField, None),
            ("keep_field", KeepField, None),
            ("skip_bad_lines", SkipBadLines, False),
        ),
        _log_reading,
    ),
]
PiiOption = Annotated[
    PiiMode,
    _option(
        "--pii",
        help="A logged query holding personal data (email, phone, card, IP address, "
        "--pii-pattern): drop it, mask it ([EMAIL], ...), or keep it (with a warning).",
    ),
]
PiiPattern = Annotated[
    list[str] | None,
    _option(
        "--pii-pattern",
        metavar="REGEX",
        help="A Python regular expression for more personal data (repeatable; masked as [PII]).",
    ),
]
AllocationOption = Annotated[
    Allocation,
    _option(
        "--allocation",
        help="How --n is shared among the strata: proportional (to each stratum's share of "
        "traffic) or equal (protects the tail).",
    ),
]
TrafficCuts = Annotated[
    str,
    _option(
        "--traffic-cuts",
        metavar="HEAD,TORSO",
        help="Cumulative traffic shares where the head and the torso end (the rest: the tail).",
    ),
]

# --- golden synth (issue #37) ------------------------------------------------------------------

_log = _once("log", "--log", meaning="a query log: text, JSONL or CSV (gzip accepted)")
SynthConfigFile = Annotated[
    Path | None,
    _config("YAML config: its model, its judge: section (or synth.chat) and synth: settings."),
]
SynthN = Annotated[
    int, queries_n("Queries to ask for (one per drawn document; filters may drop some).")
]
SynthLog = Annotated[
    Path | None, _log("Few-shot examples from this log's queries (default the draft's log ones).")
]
SynthDryRun = Annotated[
    bool,
    _dry_run(
        "Say what would be asked (generation and judge requests, cached, tokens, cost) and "
        "stop: nothing is sent, nothing written (the corpus is embedded to draw the documents; "
        "with an API model and an uncached corpus, the figures are estimated instead)."
    ),
]
SynthSeed = Annotated[
    int, _seed("Seed of the clusters, the document draw, styles and examples.", min=0)
]

# --- golden doctor -----------------------------------------------------------------------------

DoctorLog = Annotated[
    Path | None,
    _log(
        "A query log (one query a line, JSONL or CSV; gzip accepted): measure how much of its "
        "traffic the golden set covers, and the drift between them."
    ),
]
LogSample = Annotated[
    int,
    _option(
        "--log-sample",
        min=1,
        help="With --log: embed a seeded sample of this many distinct logged queries.",
    ),
]
DoctorSeed = Annotated[
    int,
    _seed("Seed of the random ranking, the resamplings, the log's sample and its k-means.", min=0),
]

# --- embed --export ------------------------------------------------------------------------------

Export = Annotated[
    Path | None,
    _option(
        "--export",
        metavar="FILE",
        help="Also write the documents' vectors, as a run searches them, with the model's "
        "identity, to FILE (.parquet or .npz: one row per document, id, vector, text_sha256, "
        "metadata), to load a vector store with.",
    ),
]

# --- evalret trec_eval: trec_eval's own flags, under its own long names ------------------------

TrecQuery = Annotated[
    bool, _option("--query_eval_wanted", "-q", help="trec_eval -q: a line per query too.")
]
TrecMeasure = Annotated[
    list[str] | None,
    _option(
        "--measure",
        "-m",
        help="trec_eval -m: a measure, name.params or official, all_trec, set (repeatable).",
    ),
]
TrecComplete = Annotated[
    bool,
    _option(
        "--complete_rel_info_wanted",
        "-c",
        help="trec_eval -c: average over every qrels query, one missing from the run scored.",
    ),
]
TrecLevel = Annotated[
    int, _option("--level_for_rel", "-l", help="trec_eval -l: grade >= this is relevant.")
]
TrecNoSummary = Annotated[bool, _option("--nosummary", "-n", help="trec_eval -n: no 'all' lines.")]
TrecJudgedOnly = Annotated[
    bool,
    _option("--Judged_docs_only", "-J", help="trec_eval -J: drop unjudged documents first."),
]
TrecCollection = Annotated[
    int,
    _option(
        "--Number_docs_in_coll", "-N", help="trec_eval -N: documents in the collection (utility)."
    ),
]
TrecMaxDocs = Annotated[
    int | None,
    _option("--Max_retrieved_per_topic", "-M", min=0, help="trec_eval -M: rank cut of each query."),
]
TrecEvalOutput = Annotated[
    bool,
    _option(
        "--trec-eval-output",
        help="Print what trec_eval -c -q -m all_trec -l LEVEL prints for each run, instead of "
        "the report.",
    ),
]
