"""The LLM judge's situations, for the rows that send to a judge (`run --judge`, `judge`) or compare
reports that may carry a judge's labels (`compare`): a judge that fails every request or whose
every answer is unreadable (exit 3, no verdict, no report saying PASSED: the judged run writes
none, an earlier run's is removed), a judged run against the world's unjudged baseline and a
comparison of a judged report with an unjudged one (exit 2, naming both label sources, nothing
sent). The judge is tests/chat_server.py's loopback server, on the world's key (it echoes it in
its error bodies: nothing shown may hold it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

from inv_case import Case, Outcome
from inv_situations import Situation, _stale_outputs
from inv_table import Row
from inv_world import SECRET_ENV

from chat_server import ChatServer

JUDGE_ROWS = {"run", "judge", "golden judge", "golden synth"}
MANY = 20_000  # more faults than any row asks
SAMPLE = ["--sample", "20"]  # `run --judge` on 20 queries: a few hundred pairs, not thousands
SMALL = {"run": SAMPLE, "judge": ["--limit", "20"]}
# `golden synth` asks its query writer (the judge's endpoint) first
FAILED = ("judge request(s) failed for good", "generation request(s) failed for good")


def _judge_block(url: str) -> str:
    settings = {"name": "inv-judge", "base_url": url, "api_key_env": SECRET_ENV, "max_retries": 0}
    return f"judge: {json.dumps(settings)}\n"


def _with_judge(
    case: Case, fault: tuple[object, ...] | None, *, own_baseline: bool = True
) -> ChatServer:
    """The loopback judge (every request given ``fault``), named in the row's config and asked
    (Case.ask_judge: `run` gets --judge, `judge` sends for real), on a few queries or pairs."""
    server = case.enter(ChatServer({}, name="inv-judge"))
    if fault is not None:
        server.state.faults.extend([fault] * MANY)
    text = "".join(
        line
        for line in case.config_text().splitlines(keepends=True)
        if not line.startswith("judge:")
    )
    case.write_config(text + _judge_block(server.base_url))
    case.servers = (server,)
    case.ask_judge(own_baseline=own_baseline)
    # `golden judge` judges the draft's pool whole, `golden synth` its --n 5
    case.extra += SMALL.get(case.row.name, [])
    return server


def _failing(fault: tuple[object, ...], names: str | tuple[str, ...]) -> Callable[[Case], None]:
    def prepare(case: Case) -> None:
        _with_judge(case, fault)
        case.must_name.append(names)
        if case.row.name == "run":  # an earlier run's passing outputs in place: none may be left
            _stale_outputs(case)

    return prepare


def _no_pass(case: Case, outcome: Outcome) -> None:
    assert "PASSED" not in outcome.stdout, "a run whose judge failed printed a passing verdict"
    assert case.servers[0].state.requests, "no request reached the judge"


def _judged_vs_unjudged(case: Case) -> None:
    _with_judge(case, None, own_baseline=False)
    case.must_name += ["label sources", "human", "llm:inv-judge@"]


def _nothing_sent(case: Case, outcome: Outcome) -> None:
    sent = case.servers[0].state.requests
    assert not sent, f"{sent} requests sent to the judge before the refusal"


def _judged_report(case: Case) -> None:
    """B carries a judge's labels (as a `run --judge` report does), A does not."""
    b = case.paths["b"]
    report = json.loads(b.read_text())
    n = report["golden_set"]["n_judgments"]
    report["label_sources"] = {"human": n, "llm:inv-judge@0123456789ab": 5}
    b.write_text(json.dumps(report))
    case.must_name += ["label sources", "llm:inv-judge@0123456789ab"]


def judge_situations(row: Row) -> Iterator[Situation]:
    three = frozenset({3})
    if row.name in JUDGE_ROWS:
        yield Situation(
            "judge-fails-every-request",
            _failing(("status", 503, 0), FAILED),
            three,
            checks=(_no_pass,),
        )
    if row.name in JUDGE_ROWS - {"golden synth"}:  # an unreadable query is counted, not fatal
        yield Situation(
            "judge-answers-unreadable",
            _failing(("malformed",), "could not be read"),
            three,
            checks=(_no_pass,),
        )
    if row.name == "run":
        yield Situation(
            "judged-run-unjudged-baseline",
            _judged_vs_unjudged,
            frozenset({2}),
            checks=(_nothing_sent,),
        )
    if row.name == "compare":
        yield Situation("judged-report-unjudged-report", _judged_report, frozenset({2}))
