"""The hostile qrels and run of the trec_eval drop-in tests (tests/data/trec_eval/), the flag
sets they are scored under, and the trec_eval binary the recordings come from.

``hostile.qrels`` / ``hostile.run`` (written by ``write_hostile``, seeded): graded judgments
from -1 to 4 (negative: pooled, not judged), a query whose grades are all 0, a query judged but
missing from the run (trec_eval 10 needs -c for it), a run query without judgments, score ties
broken by document id, unjudged documents, one query ranked 1,100 deep (the 1000 cutoffs).
``<case>.out`` is what trec_eval 10.0 (git tag v10.0 of usnistgov/trec_eval, which reports
itself as 10.0-rc3, built with its own Makefile) printed for each case: recorded with
``python tests/trec_eval_cases.py --record PATH_TO_TREC_EVAL``.

The binary: ``EVALRET_TREC_EVAL`` (a trec_eval executable), or ``EVALRET_TREC_EVAL_SRC`` (its
source directory, built here with ``make`` into a cache directory once). No PyPI package ships
trec_eval's C sources (pytrec-eval-terrier's sdist downloads them from GitHub at build time), so
without either the tests that run the binary are skipped and the recordings stand for it."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).parent / "data" / "trec_eval"
QRELS = DATA / "hostile.qrels"
RUN = DATA / "hostile.run"

# case name -> trec_eval flags (before QRELS RUN)
CASES: dict[str, tuple[str, ...]] = {
    "all_trec_c": ("-c", "-q", "-m", "all_trec"),
    "all_trec_c_J": ("-c", "-q", "-J", "-m", "all_trec"),
    "all_trec_c_l2": ("-c", "-q", "-l2", "-m", "all_trec"),
    "all_trec_c_M5": ("-c", "-q", "-M5", "-m", "all_trec"),
    "all_trec_c_J_l2_M20": ("-c", "-q", "-J", "-l2", "-M20", "-m", "all_trec"),
    "official_c": ("-c",),
    "set_c_n": ("-c", "-n", "-q", "-m", "set"),
    "cuts_c": ("-c", "-q", "-m", "P.3,1,50", "-m", "ndcg_cut.3,7", "-m", "success.2"),
    "gains_c": ("-c", "-q", "-J", "-m", "ndcg.1=2,2=5,4=1", "-m", "G.1=3,3=1"),
    "rbp_c": ("-c", "-q", "-m", "rbp.p=0.5", "-m", "rbp_resid.p=0.8", "-m", "relstring.20"),
    "params_c": ("-c", "-q", "-m", "utility.2,-1,0,0", "-m", "iprec_at_recall.0.25,0.5"),
    "mult_c": ("-c", "-q", "-N", "3000", "-m", "Rprec_mult.0.5,3", "-m", "11pt_avg.0.2,0.5,0.8"),
    # gains above the ideal's: G's log2 argument falls to 0 or below, trec_eval prints -nan
    "g_nan_c": ("-c", "-q", "-m", "G.-1=1.5,-2=0.5"),
    # a gain equal to a negative grade (-1 for a document outside the qrels): those ranks gain
    "gains_negative_c": (
        *("-c", "-q", "-m", "ndcg.-1=-1", "-m", "G.-1=-1,-2=-2", "-m", "Rndcg.-1=-1"),
        *("-m", "ndcg_rel.-1=-1"),
    ),
}


def write_hostile(qrels: Path, run: Path, seed: int = 40) -> None:
    """The hostile qrels and run (see the module docstring), from ``seed``."""
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(1200)]
    q_lines, r_lines = [], []
    for n in range(1, 10):
        qid = f"q{n}"
        pool = rng.sample(docs[:60], 30) if n != 5 else rng.sample(docs, 400)
        grades = [rng.choice([-1, 0, 0, 1, 1, 2, 3, 4]) for _ in pool]
        grades[0] = max(grades[0], 0)
        if n == 3:
            grades = [0] * len(pool)  # all zero: no relevant document
        q_lines += [f"{qid} 0 {d} {g}" for d, g in zip(pool, grades, strict=True)]
        if n == 7:
            continue  # judged, not in the run
        depth = 1100 if n == 5 else rng.randint(5, 50)
        ranked = rng.sample(docs[:80] if n != 5 else docs, depth)
        for rank, d in enumerate(ranked):
            score = rng.choice([1.0, 0.5, 0.25]) if rng.random() < 0.4 else round(rng.random(), 3)
            r_lines.append(f"{qid} Q0 {d} {rank} {score} hostile")
    r_lines += ["q99 Q0 d1 0 1.0 hostile", "q99 Q0 d2 1 0.5 hostile"]  # no judgments
    qrels.write_text("\n".join(q_lines) + "\n")
    run.write_text("\n".join(r_lines) + "\n")


def build_trec_eval(source: Path, cache: Path) -> Path:
    """trec_eval built from ``source`` with its Makefile, in a copy under ``cache`` named after
    a hash of the sources (built once; later calls find it)."""
    digest = hashlib.sha256()
    for f in [*sorted(source.glob("*.[ch]")), source / "Makefile"]:
        digest.update(f.name.encode() + f.read_bytes())
    where = cache / f"trec_eval-{digest.hexdigest()[:16]}"
    binary = where / "trec_eval"
    if not binary.exists():
        tmp = cache / f"{where.name}.{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(source, tmp)
        subprocess.run(["make", "-s", "trec_eval"], cwd=tmp, check=True, capture_output=True)
        shutil.rmtree(where, ignore_errors=True)
        tmp.rename(where)
    return binary


def trec_eval_binary(cache: Path) -> Path | None:
    """The trec_eval executable the environment names, built when it names the sources."""
    if os.environ.get("EVALRET_TREC_EVAL"):
        return Path(os.environ["EVALRET_TREC_EVAL"])
    if os.environ.get("EVALRET_TREC_EVAL_SRC"):
        return build_trec_eval(Path(os.environ["EVALRET_TREC_EVAL_SRC"]), cache)
    return None


def run_binary(binary: Path, flags: tuple[str, ...], qrels: Path, run: Path) -> bytes:
    return subprocess.run(
        [str(binary), *flags, str(qrels), str(run)], check=True, capture_output=True
    ).stdout


if __name__ == "__main__":
    if sys.argv[1:2] != ["--record"] or len(sys.argv) != 3:
        sys.exit("usage: python tests/trec_eval_cases.py --record PATH_TO_TREC_EVAL")
    DATA.mkdir(parents=True, exist_ok=True)
    write_hostile(QRELS, RUN)
    for name, flags in CASES.items():
        (DATA / f"{name}.out").write_bytes(run_binary(Path(sys.argv[2]), flags, QRELS, RUN))
