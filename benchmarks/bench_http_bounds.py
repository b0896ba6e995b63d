"""Peak memory of `evalret judge` answered a body no client should read whole (issue 35).

    .venv/bin/python benchmarks/bench_http_bounds.py [--before /path/to/other/src]
        [--out benchmarks/RESULTS-http-bounds.md]

One judge request (one pair, ``max_retries: 0``) to tests/chat_server.py on 127.0.0.1, answered
each of helpers.send_hostile_body's bodies: 256 MiB of whitespace (with and without its
Content-Length), a gzip and a deflate bomb (256 MiB of zeros in 260 KB). Each call is its own
child process (``python -m evalret judge``); its peak resident set is read from ``os.wait4``. A
normal answer gives the reference: (peak - reference) is what the body cost. ``--before SRC``
runs the same calls with another checkout's ``src`` (the code before the cap) for comparison.
The server counts what it could send before the client closed the connection.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from chat_server import ChatServer  # noqa: E402
from helpers import HOSTILE_BYTES, HOSTILE_MODES, MIB, bomb  # noqa: E402

PAIR = {"query_id": "q1", "doc_id": "d1", "grade": None, "query": "q", "document": "d"}


def judge_once(src: Path, work: Path, fault: tuple[Any, ...] | None) -> dict[str, Any]:
    """One `evalret judge` in a child process, answered ``fault``: its exit code, peak RSS
    (MiB), the bytes the server sent, and the last line it printed."""
    with ChatServer({("q", "d"): 2}) as server:
        if fault is not None:
            server.state.faults.append(fault)
        settings = {"name": server.state.name, "base_url": server.base_url, "api_key_env": None}
        config = work / "judge.yaml"
        config.write_text(
            "cache: {enabled: false}\n"
            f"judge: {json.dumps({**settings, 'max_retries': 0, 'concurrency': 1})}\n"
        )
        pool = work / "pool.jsonl"
        pool.write_text(json.dumps(PAIR) + "\n")
        argv = ["judge", str(pool), "-c", str(config), "--out", str(work / "labels.jsonl")]
        env = {**os.environ, "PYTHONPATH": str(src)}
        with (work / "out.txt").open("w") as out:
            child = subprocess.Popen(
                [sys.executable, "-m", "evalret", *argv, "--no-progress"],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=work,
            )
            _, status, usage = os.wait4(child.pid, 0)
        sent = server.state.sent[0][0] if server.state.sent else None
    said = (work / "out.txt").read_text().strip().splitlines()
    return {
        "code": os.waitstatus_to_exitcode(status),
        "peak_mib": usage.ru_maxrss / 1024,
        "sent": sent,
        "said": said[-1] if said else "",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another checkout's src (the code before)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    for mode in ("gzip", "deflate"):
        bomb(mode)
    sources = [("after", REPO / "src")] + ([("before", args.before)] if args.before else [])
    rows = []
    for label, src in sources:
        with tempfile.TemporaryDirectory() as tmp:
            ref = judge_once(src, Path(tmp), None)
            rows.append((label, "normal answer", ref, ref["peak_mib"]))
            for mode in HOSTILE_MODES:
                got = judge_once(src, Path(tmp), ("hostile", mode))
                rows.append((label, mode, got, ref["peak_mib"]))
    lines = [
        "| code | body | exit | peak RSS MiB | peak - normal MiB | bytes sent of "
        f"{HOSTILE_BYTES // MIB} MiB | last line |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for label, mode, got, ref in rows:
        sent = "" if got["sent"] is None else f"{got['sent']:,}"
        lines.append(
            f"| {label} | {mode} | {got['code']} | {got['peak_mib']:,.0f} | "
            f"{got['peak_mib'] - ref:,.0f} | {sent} | {got['said'][:110]} |"
        )
    table = "\n".join(lines)
    print(table)
    if args.out:
        args.out.write_text(table + "\n")


if __name__ == "__main__":
    main()
