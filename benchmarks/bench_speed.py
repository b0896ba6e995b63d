"""Benchmark issue #40's three speed ratios on bench_runfile.py's 1M-line run, every figure
against its reference measured in the same run, the tools taking turns (A B A B ...).

1. **In process, evalret's scoring vs pytrec_eval** (target: at least 4x). pytrec_eval:
   ``parse_qrel``, ``parse_run`` and ``evaluate``; evalret: the golden set, ``read_run``, the
   alignment, ``build_judgments`` and ``compute``, as the pipeline scores. Both compute ndcg@10,
   map, recall@100 and recip_rank; imports not timed (bench_runfile.py's own child scripts).
2. **The whole `evalret score` process vs pytrec_eval in process** (target: no slower): the
   command timed from the parent (interpreter start, imports, reading, the metrics, bootstrap,
   every report file) against pytrec_eval's parse + evaluate of (1).
3. **trec_eval's whole measure set vs the six families** (target: under 2x): in process, what
   ``evalret score --trec-eval-output`` computes (``read_trec_qrels``, ``read_run``, ``run_tag``
   and ``trec_eval_text`` with ``-c -q -m all_trec``: every measure of every query, and the text)
   against (1)'s evalret path over ``DEFAULT_METRICS`` (one metric or more of each of the six
   families); and as whole processes, ``evalret score --trec-eval-output`` against ``evalret
   score`` with its default metrics.

Beside (1) and (2), two floors measured in the same run say how near a reader built on pyarrow
can come: (a) pyarrow's CSV parse of the run's three used columns and the interning of its
qids and docnos, with nothing checked, ordered or aligned; (b) a process that only imports the
libraries `evalret score` cannot start without (numpy, pyarrow, pydantic, typer, rich), plus
floor (a).

Each in-process figure is the median, over ``--processes`` fresh processes, of each one's best
of ``--repeat`` calls; a whole-process figure is the median of ``--runs`` processes. The ratios
are taken between figures of this run. The all_trec text is checked equal to
``trec_eval_command``'s, and evalret's values equal to pytrec_eval's per query (1e-9); the
script exits 1 on a mismatch.

Run: ``.venv/bin/python benchmarks/bench_speed.py [--queries Q --depth D] [--repeat N]
[--runs N] [--processes N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_runfile import EVALRET, MEASURES, METRICS, PYTREC, _child, _max_difference, write_data

from evalret.data.config import DEFAULT_METRICS

ALL_TREC = """
import json, os, sys, time
from pathlib import Path
from evalret.core.treceval import Settings, trec_eval_text
from evalret.data.runfile import read_run, run_tag
from evalret.data.trecqrels import read_trec_qrels
qrels_path, run_path = Path(sys.argv[1]), Path(sys.argv[2])
settings = Settings(average_complete=True, per_query=True)
best, text = None, ""
for _ in range(int(os.environ["REPEAT"])):
    t = time.perf_counter()
    qrels = read_trec_qrels(qrels_path)
    run = read_run(run_path, "trec", 2147483647)
    text = trec_eval_text(qrels, run, run_tag(run_path), settings, ["all_trec"])
    elapsed = time.perf_counter() - t
    best = elapsed if best is None else min(best, elapsed)
print(json.dumps({"seconds": best, "bytes": len(text), "lines": text.count(chr(10))}))
"""


# what any reader built on pyarrow pays before it checks, orders or aligns anything: the CSV
# parse of the run's three used columns and the interning of its qids and docnos
FLOOR_READ = """
import json, os, sys, time
import pyarrow as pa, pyarrow.compute as pc, pyarrow.csv as csv
names = ["qid", "q0", "docno", "rank", "score", "tag"]
options = dict(
    read_options=csv.ReadOptions(column_names=names, block_size=2 << 20),
    parse_options=csv.ParseOptions(delimiter=" ", quote_char=False, escape_char=False),
    convert_options=csv.ConvertOptions(
        column_types={n: pa.binary() for n in names} | {"score": pa.float64()},
        include_columns=["qid", "docno", "score"]),
)
best = None
for _ in range(int(os.environ["REPEAT"])):
    t = time.perf_counter()
    table = csv.read_csv(sys.argv[1], **options)
    pc.dictionary_encode(table.column("qid")), pc.dictionary_encode(table.column("docno"))
    elapsed = time.perf_counter() - t
    best = elapsed if best is None else min(best, elapsed)
print(json.dumps({"seconds": best}))
"""

# the libraries `evalret score` cannot start without, imported by a process that does nothing else
FLOOR_IMPORTS = "import numpy, pyarrow, pyarrow.csv, pyarrow.compute, pydantic, typer, rich"


def _process(cmd: list[str], pycache: Path) -> float:
    """Wall seconds of one whole process (its output thrown away); exit 0 required. Python
    writes and reads its bytecode under ``pycache``, as an installed evalret has it compiled
    (pip compiles a wheel's modules; a machine that sets PYTHONDONTWRITEBYTECODE would
    otherwise compile evalret's source in every process, about 0.15 s)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    t = time.perf_counter()
    done = subprocess.run(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False, env=env
    )
    seconds = time.perf_counter() - t
    if done.returncode != 0:
        raise RuntimeError(f"{cmd[3:5]} exited {done.returncode}: {done.stderr[-500:]!r}")
    return seconds


def _arguments() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--depth", type=int, default=1000)
    p.add_argument("--n-docs", type=int, default=200_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=3, help="calls in each in-process child")
    p.add_argument("--runs", type=int, default=5, help="processes of each whole command")
    p.add_argument("--processes", type=int, default=3, help="children of each in-process figure")
    return p.parse_args()


def _in_process(
    root: Path, qrels: Path, run: Path, repeat: int, processes: int
) -> dict[str, dict]:
    """The in-process figures, each from ``processes`` children, the tools in turn (pytrec_eval,
    evalret on the 4 metrics, on the default metrics, all_trec, the read floor, and again): each
    figure's seconds are the median of its children's bests (a process's own layout moves one
    child's figure by several percent), the rest of it the first child's."""
    env = {"REPEAT": str(repeat), "MEASURES": json.dumps(MEASURES)}
    files = [str(qrels), str(run)]
    children = {
        "pytrec": (PYTREC, files),
        "evalret": (EVALRET, [*files, "trec", "1000", *METRICS]),
        "six": (EVALRET, [*files, "trec", "1000", *DEFAULT_METRICS]),
        "all_trec": (ALL_TREC, files),
        "floor_read": (FLOOR_READ, [str(run)]),
    }
    got: dict[str, list[dict]] = {name: [] for name in children}
    for _ in range(processes):
        for name, (script, args) in children.items():
            got[name].append(_child(sys.executable, script, args, env))
    return {
        name: {**runs[0], "seconds": statistics.median(r["seconds"] for r in runs)}
        for name, runs in got.items()
    }


def _whole(root: Path, qrels: Path, run: Path, runs: int) -> dict[str, list[float]]:
    """Whole-process seconds: `evalret score` on the four metrics and on its defaults, and
    `evalret score --trec-eval-output`, in turn, after one warm-up round (which also writes
    the bytecode)."""
    base = [sys.executable, "-m", "evalret", "score", str(qrels), str(run), "--no-progress"]
    four = [a for m in METRICS for a in ("-m", m)]
    commands = {
        "score": [*base, *four, "--out", str(root / "out4")],
        "score_default": [*base, "--out", str(root / "out6")],
        "score_trec_eval": [*base, "--trec-eval-output"],
        "floor_imports": [sys.executable, "-c", FLOOR_IMPORTS],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for n in range(runs + 1):
        for name, cmd in commands.items():
            seconds = _process(cmd, root / "pycache")
            if n:
                times[name].append(seconds)
    return times


def _target(label: str, ratio: float, met: bool, bound: str) -> None:
    print(f"{label}: {ratio:.2f}x (target {bound}): {'met' if met else 'NOT met'}")


def main() -> int:
    """Write the data, time everything, print the figures and the three targets."""
    args = _arguments()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        qrels, run, _ = write_data(root, args.queries, args.depth, args.n_docs, args.seed)
        lines = sum(1 for _ in run.open("rb"))
        print(f"run: {lines:,} lines, {run.stat().st_size / 1e6:.1f} MB; load before: ", end="")
        print(Path("/proc/loadavg").read_text().split()[:3])
        fig = _in_process(root, qrels, run, args.repeat, args.processes)
        worst = _max_difference(fig["evalret"]["values"], fig["pytrec"]["values"], METRICS)
        from evalret.commands.trec_eval import score_as_trec_eval

        want = score_as_trec_eval(golden=qrels, runs=[str(run)], relevance_level=1, refused={})
        if fig["all_trec"]["bytes"] != len(want):
            print("MISMATCH: the all_trec text differs from score --trec-eval-output's")
            return 1
        whole = _whole(root, qrels, run, args.runs)
        print(f"load after: {Path('/proc/loadavg').read_text().split()[:3]}")
    med = {name: statistics.median(v) for name, v in whole.items()}
    ref = fig["pytrec"]["seconds"]
    floor_read, floor_imports = fig["floor_read"]["seconds"], med.pop("floor_imports")
    rows = [
        ("pytrec_eval in process: parse + evaluate (4 measures)", ref),
        ("evalret in process: golden set, read, align, compute (4)", fig["evalret"]["seconds"]),
        ("evalret in process, the default metrics (six families)", fig["six"]["seconds"]),
        ("evalret in process, all_trec -c -q, with the text", fig["all_trec"]["seconds"]),
        ("`evalret score -m (4) --out` whole process, median", med["score"]),
        ("`evalret score --out` (defaults) whole process, median", med["score_default"]),
        ("`evalret score --trec-eval-output` whole process, median", med["score_trec_eval"]),
        ("floor (a): pyarrow's parse of the run + interning its ids, in process", floor_read),
        ("floor (b): a process importing numpy, pyarrow, pydantic, typer, rich", floor_imports),
    ]
    for label, seconds in rows:
        print(f"{label:<70} {seconds:7.3f} s")
    print(f"all_trec text: {fig['all_trec']['lines']:,} lines; evalret vs pytrec_eval: {worst:.1e}")
    a = ref / fig["evalret"]["seconds"]
    b = med["score"] / ref
    c_in = fig["all_trec"]["seconds"] / fig["six"]["seconds"]
    c_whole = med["score_trec_eval"] / med["score_default"]
    print()
    _target("(a) in process vs pytrec_eval, x faster", a, a >= 4, ">= 4")
    print(f"    floor (a) alone is pytrec_eval's time / {ref / floor_read:.2f}")
    _target("(b) whole evalret score / pytrec_eval in process, x its time", b, b <= 1, "<= 1")
    floor_b = (floor_imports + floor_read) / ref
    print(f"    floor (b), those imports and floor (a), is {floor_b:.2f}x pytrec_eval's time")
    _target("(c) all_trec / six families, in process", c_in, c_in < 2, "< 2")
    _target("(c) --trec-eval-output / score, whole processes", c_whole, c_whole < 2, "< 2")
    return 1 if worst > 1e-9 else 0


if __name__ == "__main__":
    raise SystemExit(main())
