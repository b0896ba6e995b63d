"""Benchmark scoring a large run file: evalret beside pytrec_eval and ranx.

The data is synthetic and deterministic, made by a seeded numpy generator. There are ``--queries``
queries, each with ``--depth`` ranked documents drawn from a corpus of ``--n-docs`` ids. The
defaults, 1000 x 1000, make a 1M-line run (30.7 MB). Each query has 1-20 judged documents with
grades 0-3, at least one of them relevant. The run lists each query's documents by rank, as
trec_eval-style tools write them (scores rounded to 2 decimals, so many tie, ties in numeric id
order, not trec_eval's); ``--order shuffled`` shuffles its lines, ``--format jsonl`` writes it as
evalret's JSONL runs (one line per query), ``--gzip`` compresses it. Each tool reads the same files
from disk, computes ndcg@10, map, recall@100 and recip_rank (MRR over the whole ranking) per query,
and returns.

Every tool runs in a fresh subprocess of its own, so that its peak memory (``ru_maxrss``) is its
own. The ranx subprocess may use another interpreter (``--ranx-python``), because ranx pins numba
and numpy versions of its own. A process that only imports the tool is measured too, and its RSS
is reported beside the peak. Times are wall-clock (``time.perf_counter``), best of ``--repeat``
runs. Ratios are taken against pytrec_eval measured in the same run.

* pytrec_eval (the reference): ``parse_qrel``, ``parse_run`` and ``RelevanceEvaluator.evaluate``,
  in process (interpreter start and import not timed);
* evalret in process, the same work as the pipeline does it: the qrels read as a golden set
  (``data.goldenset.load_golden_set``), the run read (``data.runfile.read_run``), aligned with the
  golden set (``engines.retrievers.external.columns_search_result``), judgments built and the
  metrics computed (``core.metrics.build_judgments``, ``compute``); import not timed;
* evalret score (whole process): ``evalret score QRELS RUN -m ... --out DIR``, timed from the
  parent: interpreter start, imports, the reader and the metrics, bootstrap intervals, slices and
  every report file;
* ranx: ``Qrels.from_file``, ``Run.from_file`` and ``evaluate`` (numba compiles on first use; the
  time is the second call in the same process, and the first is reported beside it). ranx cannot
  read evalret's JSONL runs, so it is left out with ``--format jsonl``.

Values are checked per query against pytrec_eval (1e-9); the script exits 1 on a mismatch.

``--scale-lines N`` (e.g. 10000000) measures the run at that size instead: the whole
``evalret score`` process and pytrec_eval, time and peak memory (pytrec_eval may be skipped with
``--no-pytrec`` when it would not fit in memory).

Run: ``.venv/bin/python benchmarks/bench_runfile.py [--queries Q --depth D] [--order shuffled]
[--format jsonl] [--gzip] [--scale-lines N] [--ranx-python /path/to/python]``. ranx is skipped when
its interpreter cannot import it.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np

METRICS = {  # evalret name -> trec_eval measure as pytrec_eval reports it
    "ndcg@10": "ndcg_cut_10",
    "map": "map",
    "recall@100": "recall_100",
    "mrr": "recip_rank",
}
MEASURES = ["ndcg_cut.10", "map", "recall.100", "recip_rank"]  # as pytrec_eval takes them
RANX = {"ndcg@10": "ndcg@10", "map": "map", "recall@100": "recall@100", "mrr": "mrr"}
TOLERANCE = 1e-9


def write_data(
    root: Path,
    n_queries: int,
    depth: int,
    n_docs: int,
    seed: int,
    order: str = "ranked",
    fmt: str = "trec",
    gz: bool = False,
) -> tuple[Path, Path, Path]:
    """Write qrels.txt and the run under ``root``: deterministic, many scores tied. Returns the
    qrels, the run as evalret reads it (``fmt``, gzipped with ``gz``) and the same run as TREC
    text for the other tools."""
    rng = np.random.default_rng(seed)
    qrels, trec = root / "qrels.txt", root / "run.trec"
    rows: list[str] = []
    jsonl: list[str] = []
    with qrels.open("w") as q, trec.open("w") as r:
        for i in range(n_queries):
            qid = f"q{i}"
            docs = rng.choice(n_docs, size=depth, replace=False)
            scores = np.round(rng.normal(size=depth), 2)  # rounding makes ties
            ranked = np.lexsort((-docs, -scores))
            lines = [
                f"{qid} Q0 d{docs[j]} {k} {scores[j]:.2f} bench\n" for k, j in enumerate(ranked, 1)
            ]
            if order == "shuffled":
                rows.extend(lines)
            else:
                r.writelines(lines)
            if fmt == "jsonl":
                results = [
                    {"doc_id": f"d{docs[j]}", "score": float(f"{scores[j]:.2f}")} for j in ranked
                ]
                jsonl.append(json.dumps({"query_id": qid, "results": results}) + "\n")
            n_judged = int(rng.integers(1, 21))
            pool = np.concatenate([docs[: depth // 10], rng.choice(n_docs, size=n_judged)])
            judged = list(dict.fromkeys(int(d) for d in rng.choice(pool, size=n_judged)))
            grades = rng.integers(0, 4, size=len(judged))
            grades[0] = max(int(grades[0]), 1)
            for d, g in zip(judged, grades, strict=True):
                q.write(f"{qid} 0 d{d} {g}\n")
        if order == "shuffled":
            r.writelines(rows[k] for k in rng.permutation(len(rows)))
    run = trec
    if fmt == "jsonl":
        run = root / "run.jsonl"
        run.write_text("".join(jsonl))
    if gz:
        packed = run.with_name(run.name + ".gz")
        packed.write_bytes(gzip.compress(run.read_bytes(), compresslevel=6, mtime=0))
        run = packed
    return qrels, run, trec


EVALRET = """
import json, os, sys, time, resource
t0 = time.perf_counter()
from pathlib import Path
from evalret.core.metrics import build_judgments, compute, parse_metrics
from evalret.core.ranking import judgeable_ids
from evalret.data.config import GoldenSetConfig
from evalret.data.goldenset import load_golden_set
from evalret.data.runfile import read_run
from evalret.engines.retrievers.external import columns_search_result
t_import = time.perf_counter() - t0
qrels_path, run_path = Path(sys.argv[1]), Path(sys.argv[2])
fmt, depth, names = sys.argv[3], int(sys.argv[4]), sys.argv[5:]
metrics = parse_metrics(names)
best, values = None, None
for _ in range(int(os.environ["REPEAT"])):
    t = time.perf_counter()
    golden = load_golden_set(GoldenSetConfig(path=qrels_path, qrels_only=True))
    run = read_run(run_path, fmt, depth)
    result, _ = columns_search_result(run, golden.query_ids, golden.doc_ids, depth)
    n_docs = len(golden.doc_ids)
    ranked = judgeable_ids(result.ids, n_docs)
    judgments = build_judgments(ranked, *golden.qrel_arrays(), n_docs=n_docs)
    out = compute(metrics, judgments)
    elapsed = time.perf_counter() - t
    best = elapsed if best is None else min(best, elapsed)
    values = {m: dict(zip(golden.query_ids, v.tolist())) for m, v in out.items()}
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": best, "import_seconds": t_import, "peak_kib": peak, "values": values}))
"""

WRITE_SCRIPT = """
import json, os, sys
from pathlib import Path
sys.path.insert(0, os.environ["BENCH_DIR"])
from bench_runfile import write_data
root, n_queries, depth, n_docs, seed = sys.argv[1], *map(int, sys.argv[2:6])
paths = write_data(Path(root), n_queries, depth, n_docs, seed, os.environ["ORDER"],
                   os.environ["FORMAT"], bool(os.environ["GZIP"]))
print(json.dumps(dict(zip(["qrels", "run", "trec"], map(str, paths)))))
"""

PYTREC = """
import json, os, sys, time, resource
t0 = time.perf_counter()
import pytrec_eval
t_import = time.perf_counter() - t0
measures = set(json.loads(os.environ["MEASURES"]))
best, values = None, None
for _ in range(int(os.environ["REPEAT"])):
    t = time.perf_counter()
    with open(sys.argv[1]) as f:
        qrels = pytrec_eval.parse_qrel(f)
    with open(sys.argv[2]) as f:
        run = pytrec_eval.parse_run(f)
    values = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    elapsed = time.perf_counter() - t
    best = elapsed if best is None else min(best, elapsed)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": best, "import_seconds": t_import, "peak_kib": peak, "values": values}))
"""

RANX_SCRIPT = """
import json, os, sys, time, resource
t0 = time.perf_counter()
from ranx import Qrels, Run, evaluate
t_import = time.perf_counter() - t0
metrics = json.loads(os.environ["RANX_METRICS"])
times, values = [], None
for _ in range(int(os.environ["REPEAT"]) + 1):
    t = time.perf_counter()
    qrels = Qrels.from_file(sys.argv[1], kind="trec")
    run = Run.from_file(sys.argv[2], kind="trec")
    evaluate(qrels, run, metrics, make_comparable=True)
    times.append(time.perf_counter() - t)
    values = {m: dict(run.scores[m]) for m in metrics}
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": min(times[1:]), "first_seconds": times[0],
                  "import_seconds": t_import, "peak_kib": peak, "values": values}))
"""

IMPORT_ONLY = """
import json, resource, sys
for name in sys.argv[1:]:
    __import__(name)
print(json.dumps({"peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def _child(python: str, script: str, args: list[str], env: dict[str, str]) -> dict:
    """Run ``script`` in a fresh interpreter and return the JSON it prints."""
    done = subprocess.run(
        [python, "-c", textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip()[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def _time_cli(qrels: Path, run: Path, out: Path, repeat: int) -> dict:
    """Best wall time of the whole `evalret score` command, and its peak RSS (GNU time). Its
    bytecode is written and read under a pycache prefix, as an installed evalret has it
    compiled (an empty PYTHONDONTWRITEBYTECODE is unset to Python); the best of ``repeat``
    runs is one that read it."""
    best, peak = None, None
    env = {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(out.parent / "pycache")}
    for _ in range(repeat):
        cmd = [sys.executable, "-m", "evalret", "score", str(qrels), str(run), "--no-progress"]
        cmd += [a for m in METRICS for a in ("-m", m)] + ["--out", str(out)]
        code = (
            "import resource, subprocess, sys, time, json; t = time.perf_counter(); "
            "r = subprocess.run(sys.argv[1:], capture_output=True); "
            "print(json.dumps({'code': r.returncode, 'seconds': time.perf_counter() - t, "
            "'peak_kib': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))"
        )
        result = _child(sys.executable, code, cmd, env)
        if result["code"] != 0:
            raise RuntimeError(f"evalret score exited {result['code']}")
        best = result["seconds"] if best is None else min(best, result["seconds"])
        peak = result["peak_kib"]
    return {"seconds": best, "peak_kib": peak}


def _max_difference(values: dict, reference: dict, names: dict[str, str]) -> float:
    """Largest per-query difference from pytrec_eval over every metric (a missing query counts
    as infinitely different)."""
    worst = 0.0
    for ours, theirs in names.items():
        for q, per_query in reference.items():
            got = values.get(ours, {}).get(q)
            worst = max(worst, abs(got - per_query[theirs]) if got is not None else float("inf"))
    return worst


def _arguments() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--depth", type=int, default=1000)
    p.add_argument("--n-docs", type=int, default=200_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--order", choices=["ranked", "shuffled"], default="ranked")
    p.add_argument("--format", choices=["trec", "jsonl"], default="trec")
    p.add_argument("--gzip", action="store_true")
    p.add_argument("--scale-lines", type=int, default=0)
    p.add_argument("--no-pytrec", action="store_true")
    p.add_argument("--ranx-python", default=sys.executable)
    args = p.parse_args()
    if args.scale_lines:
        args.queries, args.repeat = args.scale_lines // args.depth, 1
        args.n_docs = max(args.n_docs, args.scale_lines // 5)
    return args


def _ranx(args: argparse.Namespace, qrels: Path, trec: Path, env: dict) -> tuple[dict, dict] | None:
    """ranx's run and its import-only process, or None (skipped, said why)."""
    if args.format == "jsonl" or args.scale_lines:
        return None
    try:
        ranx = _child(
            args.ranx_python,
            RANX_SCRIPT,
            [str(qrels), str(trec)],
            {**env, "RANX_METRICS": json.dumps(list(RANX.values()))},
        )
        return ranx, _child(args.ranx_python, IMPORT_ONLY, ["ranx"], {})
    except (RuntimeError, OSError) as e:
        print(f"ranx skipped: {str(e).splitlines()[-1] if str(e) else e}")
        return None


def _targets(ref: dict | None, ours: dict | None, cli: dict, ranx: dict | None) -> None:
    """The issue's targets, each met or not, from this run's figures."""
    if ref is None:
        return
    print()
    if ours is not None:
        ratio = ref["seconds"] / ours["seconds"]
        met = "met" if ratio >= 4 else "NOT met"
        print(f"target in process >= 4x pytrec_eval: {ratio:.2f}x, {met}")
    if ours is not None and ranx is not None:
        faster = ours["seconds"] < ranx["seconds"]
        print(
            f"target in process faster than warm ranx: {ranx['seconds'] / ours['seconds']:.2f}x, "
            f"{'met' if faster else 'NOT met'}"
        )
    ratio = cli["seconds"] / ref["seconds"]
    print(
        f"target whole evalret score <= pytrec_eval in process: {ratio:.2f}x its time, "
        f"{'met' if ratio <= 1 else 'NOT met'}"
    )
    memory = cli["peak_kib"] / ref["peak_kib"]
    print(
        f"target whole evalret score peak memory <= pytrec_eval's: {memory:.2f}x, "
        f"{'met' if memory <= 1 else 'NOT met'}"
    )


def main() -> int:
    """Write the data, run every tool, print the table; 1 when evalret disagrees with trec_eval."""
    args = _arguments()
    env = {"REPEAT": str(args.repeat), "BENCH_DIR": str(Path(__file__).resolve().parent)}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        # written by a child process: Linux keeps a process's peak RSS across exec, so the
        # children measured below would otherwise start from this process's peak
        written = _child(
            sys.executable,
            WRITE_SCRIPT,
            [str(root), *map(str, (args.queries, args.depth, args.n_docs, args.seed))],
            {**env, "ORDER": args.order, "FORMAT": args.format, "GZIP": "1" if args.gzip else ""},
        )
        qrels, run, trec = (Path(written[k]) for k in ("qrels", "run", "trec"))
        size_mb = run.stat().st_size / 1e6
        print(
            f"run: {args.queries * args.depth:,} lines, {run.name}, {size_mb:.1f} MB, "
            f"{args.order}; qrels: {qrels.stat().st_size / 1e6:.2f} MB"
        )
        measures = json.dumps(MEASURES)
        ref = (
            None
            if args.no_pytrec
            else _child(
                sys.executable, PYTREC, [str(qrels), str(trec)], {**env, "MEASURES": measures}
            )
        )
        ours = (
            None
            if args.scale_lines
            else _child(
                sys.executable,
                EVALRET,
                [str(qrels), str(run), args.format, str(args.depth), *METRICS],
                env,
            )
        )
        cli = _time_cli(qrels, run, root / "score-out", args.repeat)
        base = {
            "evalret": _child(
                sys.executable, IMPORT_ONLY, ["evalret.data.runfile", "numpy", "pyarrow.csv"], {}
            ),
            "pytrec_eval": _child(sys.executable, IMPORT_ONLY, ["pytrec_eval"], {}),
        }
        ranx_pair = _ranx(args, qrels, trec, env)
    ranx = None if ranx_pair is None else ranx_pair[0]
    rows = [("pytrec_eval (reference)", ref, base["pytrec_eval"])] if ref else []
    if ours is not None:
        rows.append(("evalret in process", ours, base["evalret"]))
    rows.append(("evalret score (whole process)", cli, None))
    if ranx_pair is not None:
        rows.append(("ranx (second call)", ranx, ranx_pair[1]))
    print(f"\n{'tool':38} {'seconds':>8} {'x pytrec':>9} {'peak MiB':>9} {'import-only MiB':>16}")
    for name, r, b in rows:
        ratio = f"{ref['seconds'] / r['seconds']:8.2f}x" if ref else "        -"
        only = f"{b['peak_kib'] / 1024:.0f}" if b else "-"
        print(f"{name:38} {r['seconds']:8.2f} {ratio} {r['peak_kib'] / 1024:9.0f} {only:>16}")
    if ranx is not None:
        print(f"ranx first call (numba compiling): {ranx['first_seconds']:.2f} s")
    _targets(ref, ours, cli, ranx)
    if ref is None or ours is None:
        return 0
    evalret_diff = _max_difference(ours["values"], ref["values"], METRICS)
    print(f"\nevalret vs pytrec_eval, largest per-query difference: {evalret_diff:.2e}")
    if ranx is not None:
        for m, measure in METRICS.items():
            diff = _max_difference(ranx["values"], ref["values"], {RANX[m]: measure})
            print(f"ranx vs pytrec_eval on {m}, largest per-query difference: {diff:.2e}")
    return 0 if evalret_diff <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
