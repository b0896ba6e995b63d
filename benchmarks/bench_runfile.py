"""Benchmark reading and scoring a large TREC run: evalret beside pytrec_eval and ranx.

The data is synthetic and deterministic, made by a seeded numpy generator. There are ``--queries``
queries, each with ``--depth`` ranked documents drawn from a corpus of ``--n-docs`` ids. The
defaults, 1000 x 1000, make a 1M-line run. Each query has 1-20 judged documents with grades 0-3,
at least one of them relevant. Both files are written once to a temporary directory. Each tool
then reads the same two files from disk, computes ndcg@10, map, recall@100 and recip_rank (MRR
over the whole ranking) per query, and returns.

Every tool runs in a fresh subprocess of its own, so that its peak memory (``ru_maxrss``) is its
own. The ranx subprocess may use another interpreter (``--ranx-python``), because ranx pins numba
and numpy versions of its own. A process that only imports the tool is measured too, and its RSS
is reported beside the peak, so the file's cost can be read apart from the libraries'. Times are
wall-clock (``time.perf_counter``) from the start of reading to the last value, best of
``--repeat`` runs. Ratios are taken against pytrec_eval measured in the same run.

* evalret (library): ``data.runfile.read_run`` (streaming, top ``depth`` per query), documents
  mapped to indices, then ``core.metrics.build_judgments`` and ``compute``;
* evalret score (CLI): the whole command, ``evalret score QRELS RUN -m ... --out DIR``. That is
  the reader and the metrics plus bootstrap intervals, slices and every report file;
* pytrec_eval: ``parse_qrel``, ``parse_run`` and ``RelevanceEvaluator.evaluate``;
* ranx: ``Qrels.from_file``, ``Run.from_file`` and ``evaluate`` (numba compiles on first use; the
  time is the second call in the same process, and the first is reported beside it).

Values are checked per query against pytrec_eval (1e-9); the script exits 1 on a mismatch.

Run: ``.venv/bin/python benchmarks/bench_runfile.py [--queries Q --depth D]
[--ranx-python /path/to/python]``. ranx is skipped when its interpreter cannot import it.
"""

from __future__ import annotations

import argparse
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


def write_data(root: Path, n_queries: int, depth: int, n_docs: int, seed: int) -> tuple[Path, Path]:
    """Write qrels.txt and run.trec under ``root``: deterministic, many scores tied."""
    rng = np.random.default_rng(seed)
    qrels, run = root / "qrels.txt", root / "run.trec"
    with qrels.open("w") as q, run.open("w") as r:
        for i in range(n_queries):
            qid = f"q{i}"
            docs = rng.choice(n_docs, size=depth, replace=False)
            scores = np.round(rng.normal(size=depth), 2)  # rounding makes ties
            order = np.lexsort((-docs, -scores))
            for rank, j in enumerate(order, start=1):
                r.write(f"{qid} Q0 d{docs[j]} {rank} {scores[j]:.2f} bench\n")
            n_judged = int(rng.integers(1, 21))
            pool = np.concatenate([docs[: depth // 10], rng.choice(n_docs, size=n_judged)])
            judged = list(dict.fromkeys(int(d) for d in rng.choice(pool, size=n_judged)))
            grades = rng.integers(0, 4, size=len(judged))
            grades[0] = max(int(grades[0]), 1)
            for d, g in zip(judged, grades, strict=True):
                q.write(f"{qid} 0 d{d} {g}\n")
    return qrels, run


EVALRET = """
import json, sys, time, resource
t0 = time.perf_counter()
import numpy as np
from pathlib import Path
from evalret.core.metrics import build_judgments, compute, parse_metrics
from evalret.data.runfile import read_run
t_import = time.perf_counter() - t0
qrels_path, run_path = Path(sys.argv[1]), Path(sys.argv[2])
depth, names = int(sys.argv[3]), sys.argv[4:]
best, values = None, None
for _ in range(int(__import__("os").environ["REPEAT"])):
    t = time.perf_counter()
    qrels = {}
    for line in qrels_path.read_text().splitlines():
        qid, _, doc, grade = line.split()
        qrels.setdefault(qid, {})[doc] = int(grade)
    run = read_run(run_path, "trec", depth).rankings
    qids = sorted(qrels)
    index = {}
    for judged in qrels.values():
        for d in judged:
            index.setdefault(d, len(index))
    for ranking in run.values():
        for d, _ in ranking:
            index.setdefault(d, len(index))
    ranked = np.full((len(qids), depth), -1, dtype=np.int64)
    for row, q in enumerate(qids):
        ids = [index[d] for d, _ in run.get(q, [])]
        ranked[row, : len(ids)] = ids
    rows = [(row, index[d], g) for row, q in enumerate(qids) for d, g in qrels[q].items()]
    qq, qd, qg = (np.array(c, dtype=np.int64) for c in zip(*rows))
    judgments = build_judgments(ranked, qq, qd, qg, len(index))
    out = compute(parse_metrics(names), judgments)
    elapsed = time.perf_counter() - t
    best = elapsed if best is None else min(best, elapsed)
    values = {m: dict(zip(qids, v.tolist())) for m, v in out.items()}
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": best, "import_seconds": t_import, "peak_kib": peak, "values": values}))
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
    """Best wall time of the whole `evalret score` command, and its peak RSS (GNU time)."""
    best, peak = None, None
    for _ in range(repeat):
        cmd = [sys.executable, "-m", "evalret", "score", str(qrels), str(run), "--no-progress"]
        cmd += [a for m in METRICS for a in ("-m", m)] + ["--out", str(out)]
        code = (
            "import resource, subprocess, sys, time, json; t = time.perf_counter(); "
            "r = subprocess.run(sys.argv[1:], capture_output=True); "
            "print(json.dumps({'code': r.returncode, 'seconds': time.perf_counter() - t, "
            "'peak_kib': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))"
        )
        result = _child(sys.executable, code, cmd, {})
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


def main() -> int:
    """Write the data, run every tool, print the table; 1 when evalret disagrees with trec_eval."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--depth", type=int, default=1000)
    p.add_argument("--n-docs", type=int, default=200_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ranx-python", default=sys.executable)
    args = p.parse_args()
    env = {"REPEAT": str(args.repeat)}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        qrels, run = write_data(root, args.queries, args.depth, args.n_docs, args.seed)
        size_mb = run.stat().st_size / 1e6
        print(f"run: {args.queries * args.depth:,} lines, {size_mb:.1f} MB; qrels: {qrels}")
        measures = json.dumps(MEASURES)
        ref = _child(sys.executable, PYTREC, [str(qrels), str(run)], {**env, "MEASURES": measures})
        ours = _child(
            sys.executable, EVALRET, [str(qrels), str(run), str(args.depth), *METRICS], env
        )
        cli = _time_cli(qrels, run, root / "score-out", args.repeat)
        base = {
            "evalret": _child(sys.executable, IMPORT_ONLY, ["evalret.data.runfile", "numpy"], {}),
            "pytrec_eval": _child(sys.executable, IMPORT_ONLY, ["pytrec_eval"], {}),
        }
        try:
            ranx = _child(
                args.ranx_python,
                RANX_SCRIPT,
                [str(qrels), str(run)],
                {**env, "RANX_METRICS": json.dumps(list(RANX.values()))},
            )
            base["ranx"] = _child(args.ranx_python, IMPORT_ONLY, ["ranx"], {})
        except (RuntimeError, OSError) as e:
            ranx = None
            print(f"ranx skipped: {str(e).splitlines()[-1] if str(e) else e}")

    rows = [
        ("pytrec_eval (reference)", ref, base["pytrec_eval"]),
        ("evalret library: read_run + metrics", ours, base["evalret"]),
        ("evalret score (whole command)", cli, None),
    ]
    if ranx is not None:
        rows.append(("ranx (second call)", ranx, base["ranx"]))
    print(f"\n{'tool':38} {'seconds':>8} {'x pytrec':>9} {'peak MiB':>9} {'import-only MiB':>16}")
    for name, r, b in rows:
        ratio = ref["seconds"] / r["seconds"]
        only = f"{b['peak_kib'] / 1024:.0f}" if b else "-"
        print(f"{name:38} {r['seconds']:8.2f} {ratio:8.2f}x {r['peak_kib'] / 1024:9.0f} {only:>16}")
    if ranx is not None:
        print(f"ranx first call (numba compiling): {ranx['first_seconds']:.2f} s")
    evalret_diff = _max_difference(ours["values"], ref["values"], METRICS)
    print(f"\nevalret vs pytrec_eval, largest per-query difference: {evalret_diff:.2e}")
    if ranx is not None:
        for m, measure in METRICS.items():
            diff = _max_difference(ranx["values"], ref["values"], {RANX[m]: measure})
            print(f"ranx vs pytrec_eval on {m}, largest per-query difference: {diff:.2e}")
    return 0 if evalret_diff <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
