"""Benchmark evalret's ranking metrics against pytrec_eval, ranx and ir-measures.

What it measures, on deterministic synthetic data (seeded numpy generator): a corpus of
``--n-docs`` document ids, ``--queries`` queries with ``--depth`` distinct ranked documents each,
and 1-20 judged documents per query with grades 0-3 (at least one >= 1), some of them retrieved
(drawn towards the top ranks) and some not. The six metrics are ndcg@10, mrr@10, recall@100,
precision@10, map@100 and hit_rate@10.

Timed, each as the best of several repetitions with ``time.perf_counter`` (garbage collection
paused inside the timed region, as ``timeit`` does):

* evalret: ``build_judgments`` + ``compute`` from numpy arrays, and ``compute`` alone (on
  judgments built, untimed, for each repetition);
* pytrec_eval (the reference): building the ``RelevanceEvaluator`` objects and ``evaluate`` on
  dict inputs. ``recip_rank`` has no cutoff in trec_eval, so mrr@10 is a second evaluator run on
  the run cut at depth 10; both evaluators are inside the timed region. Converting the numpy
  arrays to the ``{query: {doc: value}}`` dicts is not timed (for any tool);
* ranx: ``ranx.evaluate(Qrels, Run, metrics)`` warm (in this process, after a first call), and
  cold in fresh subprocesses: once with an empty numba cache (the first call pays the JIT
  compilation) and once with that cache filled (a new process that loads compiled code from
  disk). Building ``Qrels``/``Run`` from the dicts is reported on its own line;
* ir-measures: ``iter_calc`` on the dicts (it dispatches to its own providers).

Values are checked per query: evalret must equal pytrec_eval within 1e-9 on every metric (the
script exits with status 1 otherwise); for ranx and ir-measures the maximum absolute difference
from evalret is reported per metric.

Run: ``.venv/bin/python benchmarks/bench_metrics.py [--queries N --depth D]``. ranx and
ir-measures are optional: a tool that is not installed is reported as skipped; with
``--ranx-python PATH`` ranx runs under that interpreter instead, in subprocesses (warm: one
process, timed after a first call; cold: as above), on the same data.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from evalret.core.metrics import build_judgments, compute, parse_metrics

T = TypeVar("T")

METRIC_NAMES = ["ndcg@10", "mrr@10", "recall@100", "precision@10", "map@100", "hit_rate@10"]
MAX_CUTOFF = 100
TOLERANCE = 1e-9

# evalret name -> trec_eval measure as pytrec_eval reports it. mrr@10 is recip_rank on the run
# cut at depth 10 (trec_eval's recip_rank takes no cutoff), so it comes from a second evaluator.
PYTREC_MAIN = {
    "ndcg@10": "ndcg_cut_10",
    "recall@100": "recall_100",
    "precision@10": "P_10",
    "map@100": "map_cut_100",
    "hit_rate@10": "success_10",
}
PYTREC_MAIN_MEASURES = {"ndcg_cut.10", "recall.100", "P.10", "map_cut.100", "success.10"}
MRR_CUTOFF = 10

# evalret name -> ir-measures measure name
IR_MEASURES = {
    "ndcg@10": "nDCG@10",
    "mrr@10": "RR@10",
    "recall@100": "R@100",
    "precision@10": "P@10",
    "map@100": "AP@100",
    "hit_rate@10": "Success@10",
}

Qrels = dict[str, dict[str, int]]
RunDict = dict[str, dict[str, float]]
PerQuery = dict[str, np.ndarray]


# ----------------------------------------------------------------------------- synthetic data


@dataclass(frozen=True)
class Dataset:
    """Rankings and judgments as evalret takes them (query and document indices)."""

    ranked: np.ndarray  # int64 [Q, depth], distinct document indices per query, in rank order
    qrel_query: np.ndarray  # int64 [J]
    qrel_doc: np.ndarray  # int64 [J]
    qrel_grade: np.ndarray  # int64 [J], 0..3
    n_docs: int

    @property
    def n_queries(self) -> int:
        return int(self.ranked.shape[0])

    @property
    def depth(self) -> int:
        return int(self.ranked.shape[1])


def make_dataset(n_queries: int, depth: int, n_docs: int, seed: int) -> Dataset:
    """Deterministic synthetic rankings and graded judgments."""
    rng = np.random.default_rng(seed)
    ranked = rng.integers(0, n_docs, size=(n_queries, depth), dtype=np.int64)
    while True:  # redraw the (rare) rankings that hold a document twice
        ordered = np.sort(ranked, axis=1)
        bad = np.flatnonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1))
        if bad.size == 0:
            break
        ranked[bad] = rng.integers(0, n_docs, size=(bad.size, depth), dtype=np.int64)

    # judged documents are drawn from the ranking with weight 1/rank, so the metrics spread out
    rank_weights = 1.0 / np.arange(1, depth + 1)
    rank_weights /= rank_weights.sum()
    n_judged = rng.integers(1, 21, size=n_queries)
    queries: list[np.ndarray] = []
    docs: list[np.ndarray] = []
    grades: list[np.ndarray] = []
    for q in range(n_queries):
        n = int(n_judged[q])
        n_retrieved = int(rng.binomial(n, 0.6))
        positions = rng.choice(depth, size=n_retrieved, replace=False, p=rank_weights)
        retrieved = set(ranked[q].tolist())
        unretrieved: list[int] = []
        while len(unretrieved) < n - n_retrieved:
            doc = int(rng.integers(0, n_docs))
            if doc not in retrieved and doc not in unretrieved:
                unretrieved.append(doc)
        judged = np.concatenate([ranked[q, positions], np.asarray(unretrieved, dtype=np.int64)])
        grade = rng.integers(0, 4, size=n)
        if grade.max() == 0:
            grade[rng.integers(0, n)] = rng.integers(1, 4)
        order = rng.permutation(n)
        queries.append(np.full(n, q, dtype=np.int64))
        docs.append(judged[order])
        grades.append(grade[order].astype(np.int64))
    return Dataset(
        ranked=ranked,
        qrel_query=np.concatenate(queries),
        qrel_doc=np.concatenate(docs),
        qrel_grade=np.concatenate(grades),
        n_docs=n_docs,
    )


def query_id(q: int) -> str:
    return f"q{q}"


def to_dicts(data: Dataset) -> tuple[Qrels, RunDict, RunDict]:
    """The dict inputs of pytrec_eval, ranx and ir-measures: qrels, run, run cut at depth 10.

    Scores are strictly decreasing with rank (depth - rank), so no tool breaks a tie.
    """
    qrels: Qrels = {query_id(q): {} for q in range(data.n_queries)}
    for q, d, g in zip(
        data.qrel_query.tolist(), data.qrel_doc.tolist(), data.qrel_grade.tolist(), strict=True
    ):
        qrels[query_id(q)][f"d{d}"] = g
    scores = [float(data.depth - r) for r in range(data.depth)]
    run: RunDict = {}
    run_cut: RunDict = {}
    for q, row in enumerate(data.ranked.tolist()):
        ranking = {f"d{d}": s for d, s in zip(row, scores, strict=True)}
        run[query_id(q)] = ranking
        run_cut[query_id(q)] = dict(list(ranking.items())[:MRR_CUTOFF])
    return qrels, run, run_cut


# ----------------------------------------------------------------------------- timing


def best_of(fn: Callable[[], T], repeat: int) -> tuple[float, T]:
    """Best wall time of ``repeat`` calls (gc paused while timing) and the last call's result."""
    best = float("inf")
    result: T | None = None
    for _ in range(max(repeat, 1)):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            result = fn()
            elapsed = time.perf_counter() - start
        finally:
            gc.enable()
        best = min(best, elapsed)
    assert result is not None
    return best, result


# ----------------------------------------------------------------------------- the tools


def run_evalret(data: Dataset, repeat: int) -> tuple[float, float, PerQuery]:
    """(build + compute time, compute-only time, per-query values)."""
    metrics = parse_metrics(METRIC_NAMES)

    def total() -> PerQuery:
        judgments = build_judgments(
            data.ranked, data.qrel_query, data.qrel_doc, data.qrel_grade, data.n_docs
        )
        return compute(metrics, judgments)

    t_total, values = best_of(total, repeat)
    # compute alone, each time on judgments just built (untimed): the sparse views the metrics
    # read are made once per RankedJudgments, so reusing one would time only the arithmetic
    fresh = iter(
        [
            build_judgments(
                data.ranked, data.qrel_query, data.qrel_doc, data.qrel_grade, data.n_docs
            )
            for _ in range(max(repeat, 1))
        ]
    )
    t_compute, _ = best_of(lambda: compute(metrics, next(fresh)), repeat)
    return t_total, t_compute, values


def run_pytrec_eval(
    qrels: Qrels, run: RunDict, run_cut: RunDict, n_queries: int, repeat: int
) -> tuple[float, PerQuery]:
    import pytrec_eval

    def evaluate() -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
        main = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MAIN_MEASURES)
        rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"})
        return main.evaluate(run), rr.evaluate(run_cut)

    elapsed, (main_out, rr_out) = best_of(evaluate, repeat)
    ids = [query_id(q) for q in range(n_queries)]
    values = {
        name: np.array([main_out[i][measure] for i in ids]) for name, measure in PYTREC_MAIN.items()
    }
    values["mrr@10"] = np.array([rr_out[i]["recip_rank"] for i in ids])
    return elapsed, values


@dataclass
class RanxTimes:
    construct: float  # Qrels + Run from the dicts
    warm: float  # best warm evaluate, per-query arrays only
    warm_default: float  # best warm evaluate with ranx's default arguments


def run_ranx(qrels: Qrels, run: RunDict, n_queries: int, repeat: int) -> tuple[RanxTimes, PerQuery]:
    import ranx

    def construct() -> tuple[Any, Any]:
        return ranx.Qrels(qrels), ranx.Run(run)

    t_construct, (rq, rr) = best_of(construct, repeat)

    def per_query() -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = ranx.evaluate(
            rq, rr, METRIC_NAMES, return_mean=False, save_results_in_run=False
        )
        return out

    per_query()  # the first call compiles or loads ranx's numba code; not part of "warm"
    t_warm, raw = best_of(per_query, repeat)
    t_default, _ = best_of(lambda: ranx.evaluate(rq, rr, METRIC_NAMES), repeat)
    # ranx orders queries by id (string order); put its values back in query-index order
    position = {qid: i for i, qid in enumerate(rr.get_query_ids())}
    order = np.array([position[query_id(q)] for q in range(n_queries)])
    values = {name: np.asarray(raw[name], dtype=np.float64)[order] for name in METRIC_NAMES}
    return RanxTimes(t_construct, t_warm, t_default), values


def ranx_cold_worker(args: argparse.Namespace) -> None:
    """Runs in a fresh process: times import, construction and the first two evaluate calls."""
    data = make_dataset(args.queries, args.depth, args.n_docs, args.seed)
    qrels, run, _ = to_dicts(data)
    start = time.perf_counter()
    import ranx

    t_import = time.perf_counter() - start
    start = time.perf_counter()
    rq, rr = ranx.Qrels(qrels), ranx.Run(run)
    t_construct = time.perf_counter() - start
    times = []
    for _ in range(2):
        start = time.perf_counter()
        ranx.evaluate(rq, rr, METRIC_NAMES, return_mean=False, save_results_in_run=False)
        times.append(time.perf_counter() - start)
    report = {"import": t_import, "construct": t_construct, "first": times[0], "second": times[1]}
    print(json.dumps(report))


def run_ranx_cold(args: argparse.Namespace, cache_dir: str) -> dict[str, float]:
    """One fresh process with NUMBA_CACHE_DIR=cache_dir; returns the worker's timings."""
    python = sys.executable if installed("ranx") else args.ranx_python
    cmd = [python, os.path.abspath(__file__), "--ranx-cold-worker", *worker_args(args)]
    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    report: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def best_cold(args: argparse.Namespace) -> tuple[dict[str, float], dict[str, float]]:
    """Best-of cold timings: (empty numba cache = JIT compile, numba cache filled on disk)."""
    jit: list[dict[str, float]] = []
    cached: list[dict[str, float]] = []
    for _ in range(max(args.cold_repeat, 1)):
        with tempfile.TemporaryDirectory(prefix="bench-numba-") as cache_dir:
            jit.append(run_ranx_cold(args, cache_dir))  # compiles, and fills cache_dir
            cached.append(run_ranx_cold(args, cache_dir))  # a new process loading from it

    def best(reports: list[dict[str, float]]) -> dict[str, float]:
        return {key: min(r[key] for r in reports) for key in reports[0]}

    return best(jit), best(cached)


def ranx_warm_worker(args: argparse.Namespace) -> None:
    """Runs under --ranx-python: the warm ranx timings and per-query values, as JSON."""
    data = make_dataset(args.queries, args.depth, args.n_docs, args.seed)
    qrels, run, _ = to_dicts(data)
    times, values = run_ranx(qrels, run, data.n_queries, args.repeat)
    report = {
        "version": version("ranx"),
        "times": [times.construct, times.warm, times.warm_default],
        "values": {name: v.tolist() for name, v in values.items()},
    }
    print(json.dumps(report))


def measure_ranx(
    args: argparse.Namespace, qrels: Qrels, run: RunDict, n_queries: int
) -> tuple[float, list[tuple[str, str, float]], PerQuery]:
    """ranx's rows (warm in this process, or in --ranx-python's; cold in new processes) and
    its per-query values."""
    if installed("ranx"):
        times, values = run_ranx(qrels, run, n_queries, args.repeat)
    else:
        done = subprocess.run(
            [args.ranx_python, os.path.abspath(__file__), "--ranx-warm-worker", *worker_args(args)],
            capture_output=True,
            text=True,
            check=True,
        )
        report = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"ranx {report['version']}: measured in {args.ranx_python}")
        times = RanxTimes(*report["times"])
        values = {name: np.asarray(v, dtype=np.float64) for name, v in report["values"].items()}
    rows = [
        ("ranx", "evaluate, warm (per-query arrays)", times.warm),
        ("ranx", "evaluate, warm, default arguments", times.warm_default),
        ("ranx", "Qrels + Run from dicts (warm)", times.construct),
    ]
    if not args.skip_cold:
        jit, cached = best_cold(args)
        rows += [
            ("ranx", "evaluate, cold: new process, JIT compile", jit["first"]),
            ("ranx", "evaluate, cold: new process, numba disk cache", cached["first"]),
            ("ranx", "second evaluate in that new process", cached["second"]),
            ("ranx", "Qrels + Run, new process, JIT compile", jit["construct"]),
            ("ranx", "Qrels + Run, new process, numba disk cache", cached["construct"]),
            ("ranx", "import ranx, new process", cached["import"]),
        ]
    return times.warm, rows, values


def worker_args(args: argparse.Namespace) -> list[str]:
    return [
        f"--queries={args.queries}",
        f"--depth={args.depth}",
        f"--n-docs={args.n_docs}",
        f"--seed={args.seed}",
        f"--repeat={args.repeat}",
    ]


def run_ir_measures(
    qrels: Qrels, run: RunDict, n_queries: int, repeat: int
) -> tuple[float, PerQuery, str]:
    import ir_measures

    measures = [ir_measures.parse_measure(m) for m in IR_MEASURES.values()]
    elapsed, results = best_of(lambda: list(ir_measures.iter_calc(measures, qrels, run)), repeat)
    by_name = {str(m): name for name, m in zip(IR_MEASURES, measures, strict=True)}
    values = {name: np.full(n_queries, np.nan) for name in IR_MEASURES}
    for metric in results:
        values[by_name[str(metric.measure)]][int(metric.query_id[1:])] = metric.value
    evaluator = ir_measures.DefaultPipeline.evaluator(measures, {"q0": {"d0": 1}})
    parts = getattr(evaluator, "evaluators", [evaluator])
    providers = ", ".join(sorted({type(p).__module__.rsplit(".", 1)[-1] for p in parts}))
    return elapsed, values, providers


# ----------------------------------------------------------------------------- reporting


def max_abs_diff(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray]) -> dict[str, float]:
    return {name: float(np.max(np.abs(a[name] - b[name]))) for name in METRIC_NAMES}


def n_differing(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray]) -> dict[str, int]:
    return {name: int(np.sum(np.abs(a[name] - b[name]) > TOLERANCE)) for name in METRIC_NAMES}


def version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def installed(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def fmt_seconds(t: float) -> str:
    return f"{t * 1000:,.1f} ms" if t < 10 else f"{t:,.2f} s"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--queries", type=int, default=10_000, help="number of queries")
    parser.add_argument("--depth", type=int, default=100, help="ranked documents per query")
    parser.add_argument("--n-docs", type=int, default=1_000_000, help="corpus size (doc ids)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data generator")
    parser.add_argument("--repeat", type=int, default=7, help="repetitions: warm ranx")
    parser.add_argument(
        "--evalret-repeat",
        type=int,
        default=30,
        help="repetitions: evalret (each takes milliseconds; more of them, less of the noise of "
        "a shared machine)",
    )
    parser.add_argument(
        "--slow-repeat", type=int, default=5, help="repetitions: pytrec_eval, ir-measures"
    )
    parser.add_argument(
        "--cold-repeat", type=int, default=2, help="fresh processes per cold ranx measurement"
    )
    parser.add_argument("--skip-cold", action="store_true", help="skip the cold ranx processes")
    parser.add_argument(
        "--ranx-python",
        help="a Python interpreter that has ranx (and numpy), when this one has not: ranx runs "
        "there, in a subprocess, on the same data",
    )
    parser.add_argument("--ranx-cold-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--ranx-warm-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.depth < MAX_CUTOFF:
        parser.error(f"--depth must be at least {MAX_CUTOFF} (the metrics cut at {MAX_CUTOFF})")
    if args.n_docs < args.depth + 20:
        parser.error("--n-docs must exceed the depth by at least 20")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # ranx 0.3.21 casts numba's uint64 string hashes to int64 internally and warns on every call
    warnings.filterwarnings("ignore", message="unsafe cast from uint64 to int64")
    if args.ranx_cold_worker:
        ranx_cold_worker(args)
        return 0
    if args.ranx_warm_worker:
        ranx_warm_worker(args)
        return 0

    print(
        f"# evalret metrics benchmark: {args.queries:,} queries x {args.depth} ranked, "
        f"{args.n_docs:,} doc ids, seed {args.seed}"
    )
    print(
        f"python {platform.python_version()}, numpy {np.__version__}, "
        f"pytrec_eval-terrier {version('pytrec_eval-terrier')}, ranx {version('ranx')}, "
        f"numba {version('numba')}, ir-measures {version('ir-measures')}; "
        f"{os.cpu_count()} cores; OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '')!r}"
    )
    start = time.perf_counter()
    data = make_dataset(args.queries, args.depth, args.n_docs, args.seed)
    qrels, run, run_cut = to_dicts(data)
    n_rel = np.bincount(data.qrel_query, weights=data.qrel_grade >= 1, minlength=data.n_queries)
    in_ranking = np.isin(
        data.qrel_query * data.n_docs + data.qrel_doc,
        (np.arange(data.n_queries)[:, None] * data.n_docs + data.ranked).ravel(),
    )
    print(
        f"data: {len(data.qrel_query):,} judgments ({in_ranking.mean():.0%} of them retrieved), "
        f"{n_rel.mean():.1f} relevant per query on average; "
        f"made in {time.perf_counter() - start:.1f} s (numpy -> dicts not timed)\n"
    )

    rows: list[tuple[str, str, float]] = []
    t_total, t_compute, ev = run_evalret(data, args.evalret_repeat)
    t_pytrec, pt = run_pytrec_eval(qrels, run, run_cut, data.n_queries, args.slow_repeat)
    rows.append(("pytrec_eval (reference)", "2 RelevanceEvaluators + evaluate", t_pytrec))
    rows.append(("evalret", "build_judgments + compute", t_total))
    rows.append(("evalret", "compute only", t_compute))

    agreement: list[tuple[str, dict[str, float], dict[str, int]]] = []
    pytrec_diff = max_abs_diff(ev, pt)
    agreement.append(("pytrec_eval", pytrec_diff, n_differing(ev, pt)))

    t_ranx_warm: float | None = None
    if installed("ranx") or args.ranx_python:
        t_ranx_warm, ranx_rows, rx = measure_ranx(args, qrels, run, data.n_queries)
        rows += ranx_rows
        agreement.append(("ranx", max_abs_diff(ev, rx), n_differing(ev, rx)))
    else:
        print("ranx: not installed, skipped (--ranx-python names an interpreter that has it)")

    if installed("ir_measures"):
        t_irm, im, providers = run_ir_measures(qrels, run, data.n_queries, args.slow_repeat)
        rows.append(("ir-measures", f"iter_calc (providers: {providers})", t_irm))
        agreement.append(("ir-measures", max_abs_diff(ev, im), n_differing(ev, im)))
    else:
        print("ir-measures: not installed, skipped")

    print("| tool | timed | best time | t_pytrec_eval / t | t_ranx_warm / t |")
    print("| --- | --- | ---: | ---: | ---: |")
    for tool, what, t in rows:
        ranx_ratio = f"{t_ranx_warm / t:,.2f}x" if t_ranx_warm is not None else "-"
        print(f"| {tool} | {what} | {fmt_seconds(t)} | {t_pytrec / t:,.1f}x | {ranx_ratio} |")
    print()

    print("per-query agreement with evalret (max |difference|; queries differing by > 1e-9):")
    print("| tool | " + " | ".join(METRIC_NAMES) + " |")
    print("| --- |" + " ---: |" * len(METRIC_NAMES))
    for tool, diff, count in agreement:
        cells = " | ".join(f"{diff[m]:.2e} ({count[m]})" for m in METRIC_NAMES)
        print(f"| {tool} | {cells} |")
    print()
    print("means: " + ", ".join(f"{m} {ev[m].mean():.4f}" for m in METRIC_NAMES))
    print()

    matches = all(d <= TOLERANCE for d in pytrec_diff.values())
    speedup = t_pytrec / t_total
    print(f"evalret equals pytrec_eval within {TOLERANCE:g} on every metric: {matches}")
    verdict = "met" if speedup >= 30 else "NOT met"
    print(f"target evalret >= 30x pytrec_eval: {speedup:.1f}x -> {verdict}")
    if t_ranx_warm is not None:
        vs_ranx = t_ranx_warm / t_total
        verdict = "met" if vs_ranx > 1 else "NOT met"
        print(f"target evalret faster than warm ranx: {vs_ranx:.2f}x -> {verdict}")
    return 0 if matches else 1


if __name__ == "__main__":
    sys.exit(main())
