"""The gate knows when it cannot tell (#25): a drop check whose slice's judged@k fell more than
gate.unjudged.max_drop below the baseline's is inconclusive; policy warn exits 0, fail exits 1.

The baseline is the demo's exact search (its top 10 per query, from the committed
baselines/demo.json, scored as a run file: no model), the "model change" a run file whose top 10
is mostly documents nobody judged."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from chat_server import ChatServer
from evalret.core.gate import (
    Check,
    CondensedSides,
    JudgedSides,
    Significance,
    Threshold,
    Unjudged,
    evaluate_gate,
    gate_verdict,
    judged_cutoff,
    judged_floor_checks,
    mark_inconclusive,
    resolve_rules,
)
from helpers import invoke

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "golden_sets" / "demo"
Ranking = dict[str, list[str]]

CONFIG = """\
golden_set: {{path: {golden}}}
indexes:
  exact: {{enabled: false}}
  hnsw: {{enabled: false}}
  bm25: {{enabled: false}}
  hybrid: {{enabled: false}}
  model: {{type: run, path: {run}}}
metrics: [ndcg@10, recall@10, mrr@10, map]
cache: {{enabled: false}}
health: {{enabled: false}}
bootstrap: {{samples: 100}}
gate:
  indexes: [model]
  ann_min_recall: null
  health: {{}}
  thresholds: {{recall@10: {{max_drop: 0.01}}, map: {{max_drop: 0.01}}}}
"""


@dataclass
class Demo:
    root: Path
    config: Path
    baseline: Path
    top: Ranking  # the demo's exact search: top 10 per evaluated query
    qrels: dict[str, dict[str, int]]
    docs: list[str]

    def deep(self, q: str) -> list[str]:
        """The baseline's ranking of ``q``: its top 10, then other corpus documents in corpus
        order, DEPTH in all (as deep as the demo config searches: its judged-only metrics look
        past rank 10, and it holds a third of the corpus, not all of it)."""
        return deepen(self.top[q], self.docs)

    def unjudged(self, q: str, n: int) -> list[str]:
        """The first ``n`` corpus documents nobody judged for ``q`` and not in its top 10."""
        taken = set(self.qrels[q]) | set(self.top[q])
        return [d for d in self.docs if d not in taken][:n]

    def gate(self, name: str, ranking: Ranking, *settings: str) -> tuple[int, str, Path]:
        """`evalret run` of ``ranking`` against the baseline: exit code, output, report dir."""
        run = write_run(self.root / f"{name}.trec", ranking)
        out = self.root / f"out-{name}"
        sets = [x for s in settings for x in ("--set", s)]
        code, output = invoke(
            "run", "-c", str(self.config), "--baseline", str(self.baseline), "--out", str(out),
            "--no-progress", "--set", f"indexes.model.path={run}", *sets,
        )  # fmt: skip
        return code, output, out


DEPTH = 100  # the demo config's search depth (recall@100)


def deepen(head: list[str], docs: list[str]) -> list[str]:
    return (head + [d for d in docs if d not in head])[:DEPTH]


def write_run(path: Path, ranking: Ranking) -> Path:
    path.write_text(
        "".join(
            f"{q} Q0 {d} {r + 1} {100 - r} t\n"
            for q, ids in ranking.items()
            for r, d in enumerate(ids)
        )
    )
    return path


@pytest.fixture
def demo(tmp_path: Path) -> Demo:
    report = json.loads((REPO / "baselines" / "demo.json").read_text())
    top = dict(zip(report["query_ids"], report["indexes"]["exact"]["top_ids"], strict=True))
    lines = (DEMO / "queries.jsonl").read_text().splitlines()
    qrels = {q["id"]: q["relevant"] for q in map(json.loads, lines)}
    docs = [json.loads(line)["id"] for line in (DEMO / "corpus.jsonl").read_text().splitlines()]
    base_run = write_run(tmp_path / "exact.trec", {q: deepen(ids, docs) for q, ids in top.items()})
    config = tmp_path / "evalret.yaml"
    config.write_text(CONFIG.format(golden=DEMO, run=base_run))
    baseline = tmp_path / "baseline.json"
    code, output = invoke(
        "run", "-c", str(config), "--save-baseline", str(baseline), "--out",
        str(tmp_path / "out-base"), "--no-progress",
    )  # fmt: skip
    assert code == 0, output
    saved = json.loads(baseline.read_text())
    # the demo's exact search, as its committed report says: 19% of its top 10 judged
    assert saved["indexes"]["model"]["slices"]["all"]["judged"]["judged@10"] == pytest.approx(
        report["indexes"]["exact"]["slices"]["all"]["judged"]["judged@10"]
    )
    return Demo(tmp_path, config, baseline, top, qrels, docs)


def mostly_unjudged(demo: Demo) -> Ranking:
    """A model change that finds new documents: every second query keeps the baseline's first
    result, the rest of every top 10 is documents nobody judged, and the baseline's top 10
    follows in its order (so the judged-only form of every metric is the baseline's: the labels
    cannot tell whether the new documents are better). Its judged@10 (0.03) stays above the
    default floor, a tenth of the baseline's 0.19; a random ranking's is 0.01."""
    return {
        q: (top := ([ids[0]] if i % 2 == 0 else []) + demo.unjudged(q, 10 if i % 2 else 9))
        + [d for d in demo.deep(q) if d not in top]
        for i, (q, ids) in enumerate(demo.top.items())
    }


def lost(demo: Demo) -> Ranking:
    """A broken change with the same top 10 as ``mostly_unjudged``, but the judged documents
    below it gone from the ranking: the judged-only metrics drop with the others."""
    return {
        q: ids[:10] + [d for d in ids[10:] if d not in demo.qrels[q]]
        for q, ids in mostly_unjudged(demo).items()
    }


def flat(text: str) -> str:
    """Text with every run of whitespace one space (rich wraps long terminal lines) and no
    table borders."""
    return " ".join(text.translate({ord(c): " " for c in "│┃"}).split())


def drop_checks(report: dict) -> list[dict]:
    return [c for c in report["gate"]["checks"] if c["kind"] in ("max_drop", "max_drop_pct")]


def command(demo: Demo, out: Path, *settings: str) -> str:
    """The judge command a gate of ``demo.gate`` prints: its config and every --set repeated,
    the labels in a file of the index's own."""
    name = out.name.removeprefix("out-")
    sets = [
        x
        for s in (f"indexes.model.path={demo.root / f'{name}.trec'}", *settings)
        for x in ("--set", s)
    ]
    tail = ["--index", "model", "--k", "10", "--out", "labels.model.jsonl"]
    report = str(out / "report.json")
    return shlex.join(
        ["evalret", "judge", "--config", str(demo.config), *sets, "--from-report", report, *tail]
    )


def test_mostly_unjudged_change_is_inconclusive_and_warns(demo: Demo) -> None:
    """Policy warn (the default): every drop check inconclusive, exit 0, verdict inconclusive;
    report.json records the status, both judged@10 figures and the policy; the terminal,
    report.md, comment.md and junit.xml show it with the share never judged and the command."""
    code, output, out = demo.gate("change", mostly_unjudged(demo))
    assert code == 0, output
    report = json.loads((out / "report.json").read_text())
    gate = report["gate"]
    assert gate["verdict"] == "inconclusive"
    assert gate["unjudged"] == {"max_drop": 0.1, "policy": "warn", "min_judged": None}
    base = json.loads(demo.baseline.read_text())
    checks = drop_checks(report)
    assert len(checks) == 2 * len(report["slices"])  # recall@10 and map on every slice
    for c in checks:
        judged_base = base["indexes"]["model"]["slices"][c["slice"]]["judged"]["judged@10"]
        judged_now = report["indexes"]["model"]["slices"][c["slice"]]["judged"]["judged@10"]
        assert c["status"] == "inconclusive" and c["passed"] is True, c
        assert c["judged_k"] == 10  # map has no cutoff: the largest cutoff of the metrics
        assert c["judged_baseline"] == judged_base and c["judged_current"] == judged_now
        assert judged_now < judged_base - 0.1 and c["unjudged_policy"] == "warn"
    share = 1 - report["indexes"]["model"]["slices"]["all"]["judged"]["judged@10"]
    never = f"{share:.0%} of the new top 10 never judged"
    assert share > 0.9
    terminal = flat(output)
    assert "GATE INCONCLUSIVE" in terminal and "INCONCLUSIVE" in terminal
    assert f"model/all: judged@10 0.1889 -> {1 - share:.4f}, {never}" in terminal
    assert flat(command(demo, out)) in terminal
    md = (out / "report.md").read_text()
    assert md.startswith("## evalret gate: ⚠️ inconclusive (20 of 21 checks cannot tell")
    assert "⚠️ inconclusive" in md and f"| model | all | 10 | 0.1889 | {1 - share:.4f} |" in md
    assert command(demo, out).replace("_", "\\_") in md.replace("<code>", "").replace("</code>", "")
    comment = (out / "comment.md").read_text()
    assert "⚠️ inconclusive" in comment.splitlines()[1]
    assert "### Inconclusive checks (20)" in comment.split("<details>")[0]
    assert command(demo, out).replace("_", "\\_") in comment
    suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "0" and suite.get("skipped") == "20"
    cases = {case.get("name", ""): case for case in suite.iter("testcase")}
    floor = cases.pop(
        "judged@10 judged_min 0.0188934"
    )  # the judged@k floor (a tenth of 0.1889) passes
    assert floor.find("skipped") is None and floor.find("failure") is None
    for case in cases.values():
        skipped = case.find("skipped")
        assert skipped is not None and skipped.text is not None
        assert skipped.get("message", "").startswith("inconclusive: ")
        assert command(demo, out) in skipped.text and "judged_current=" in skipped.text
    for c in drop_checks(report):  # the judged-only form is the baseline's: it cannot tell
        assert c["condensed_current"] == pytest.approx(c["condensed_baseline"]), c
        assert f"judged-only {c['metric']}:judged" in c["message"]


def test_the_printed_judge_line_runs_as_pasted(demo: Demo, tmp_path: Path) -> None:
    """The judge line a failing run prints (#39) runs as pasted: in a shell, in the directory
    the run ran in (its config elsewhere, a --set whose value needs quoting, a narrow
    terminal), it exits 0 and writes its labels where it says, a file of the index's own."""
    runs = tmp_path / "runs dir"
    runs.mkdir()
    change = write_run(runs / "change.trec", mostly_unjudged(demo))
    work = tmp_path / "work"
    work.mkdir()
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "COLUMNS": "60",  # the line is longer: it must still print as one line
        "EVALRET_CACHE_DIR": str(tmp_path / "cache"),
    }
    with ChatServer({}) as server:
        judge = {"name": server.state.name, "base_url": server.base_url, "api_key_env": None}
        config = demo.root / "judged.yaml"
        config.write_text(demo.config.read_text() + f"judge: {json.dumps(judge)}\n")
        run = ["evalret", "run", "-c", str(config), "--baseline", str(demo.baseline)]
        run += ["--no-progress", "--set", f"indexes.model.path={change}"]
        run += ["--set", "gate.unjudged.policy=fail"]
        done = subprocess.run(run, cwd=work, env=env, capture_output=True, text=True, check=False)
        assert done.returncode == 1, done.stdout + done.stderr
        printed = [x.strip() for x in done.stdout.splitlines() if "evalret judge" in x]
        assert len(printed) == 1 and printed[0].startswith("evalret judge "), done.stdout
        assert "add a judge: section" not in done.stdout  # the config has one
        pasted = subprocess.run(
            printed[0], shell=True, cwd=work, env=env, capture_output=True, text=True, check=False
        )
        assert pasted.returncode == 0, pasted.stdout + pasted.stderr
        words = shlex.split(printed[0])
    assert words[words.index("--out") + 1] == "labels.model.jsonl"
    labels = [json.loads(x) for x in (work / "labels.model.jsonl").read_text().splitlines()]
    assert labels and server.state.requests == len(labels)
    ranked = {q: ids[:10] for q, ids in mostly_unjudged(demo).items()}
    assert all(x["doc_id"] in ranked[x["query_id"]] for x in labels)
    assert all(x["doc_id"] not in demo.qrels[x["query_id"]] for x in labels)


def test_policy_fail_fails_the_gate(demo: Demo) -> None:
    """Policy fail: the same change exits 1; the checks stay inconclusive and JUnit counts them
    as failures of type inconclusive."""
    code, output, out = demo.gate("change", mostly_unjudged(demo), "gate.unjudged.policy=fail")
    assert code == 1, output
    report = json.loads((out / "report.json").read_text())
    assert report["gate"]["verdict"] == "fail"
    assert report["gate"]["unjudged"] == {"max_drop": 0.1, "policy": "fail", "min_judged": None}
    assert all(c["status"] == "inconclusive" and not c["passed"] for c in drop_checks(report))
    terminal = flat(output)
    assert "GATE FAILED: 20 of 21 checks failed (20 of them inconclusive, policy fail)" in terminal
    assert flat(command(demo, out, "gate.unjudged.policy=fail")) in terminal
    md = (out / "report.md").read_text()
    assert "fails: policy fail" in md
    # the config has no judge: section: the pasted command would stop there, so it says so first
    assert "add a judge: section to the config (https://" in terminal
    assert "Add a `judge:` section to the config ([how](https://" in md
    suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "20" and suite.get("skipped") == "0"
    failures = [f for f in suite.iter("failure")]
    assert len(failures) == 20 and {f.get("type") for f in failures} == {"inconclusive"}
    assert all(command(demo, out, "gate.unjudged.policy=fail") in (f.text or "") for f in failures)


def test_a_change_within_max_drop_gets_the_normal_verdict(demo: Demo) -> None:
    """judged@10 falls, but less than max_drop: no check is inconclusive, the figures are
    recorded. The last result swapped for an unjudged document passes; the top 10 reversed
    (the same documents judged, relevant ones lower) fails as a regression, exit 1."""
    swapped = {q: ids[:9] + demo.unjudged(q, 1) for q, ids in demo.top.items()}
    code, output, out = demo.gate("swapped", swapped)
    report = json.loads((out / "report.json").read_text())
    checks = drop_checks(report)
    assert all(c["status"] in ("pass", "fail") for c in checks)
    fell = [c["judged_baseline"] - c["judged_current"] for c in checks]
    assert all(0 <= f <= 0.1 for f in fell) and max(fell) > 0
    verdict = report["gate"]["verdict"]
    assert verdict in ("pass", "fail") and code == (verdict == "fail"), output
    assert "INCONCLUSIVE" not in output and "inconclusive" not in (out / "report.md").read_text()

    reversed_ = {q: ids[::-1] for q, ids in demo.top.items()}
    code, output, out = demo.gate("reversed", reversed_)
    report = json.loads((out / "report.json").read_text())
    assert code == 1 and report["gate"]["verdict"] == "fail", output
    fails = [c for c in drop_checks(report) if c["status"] == "fail"]
    assert fails and all(c["metric"] == "map" for c in fails)
    assert all(c["judged_current"] == c["judged_baseline"] for c in drop_checks(report))


def test_baseline_without_judged_figures_cannot_be_inconclusive(demo: Demo) -> None:
    """An older baseline (no judged@k per slice): the checks say they cannot be inconclusive
    and keep their normal verdict (the mostly unjudged change fails), no crash."""
    saved = json.loads(demo.baseline.read_text())
    for s in saved["indexes"]["model"]["slices"].values():
        del s["judged"]
    demo.baseline.write_text(json.dumps(saved))
    code, output, out = demo.gate("change", mostly_unjudged(demo))
    assert code == 1, output
    report = json.loads((out / "report.json").read_text())
    for c in drop_checks(report):
        assert c["status"] == "fail" and c["judged_baseline"] is None and c["judged_k"] == 10
        assert "the baseline (from an older evalret?) has no judged@10 figure" in c["message"]


def test_unjudged_null_never_makes_a_check_inconclusive(demo: Demo) -> None:
    code, output, out = demo.gate("change", mostly_unjudged(demo), "gate.unjudged=null")
    assert code == 1, output
    report = json.loads((out / "report.json").read_text())
    assert "unjudged" not in report["gate"]
    assert all(c["status"] == "fail" for c in drop_checks(report))


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ("gate.unjudged.policy=maybe", "gate.unjudged.policy"),
        ("gate.unjudged.max_drop=1.5", "gate.unjudged.max_drop"),
        ("gate.unjudged.k=10", "gate.unjudged.k"),
    ],
)
def test_unjudged_settings_are_strict(demo: Demo, setting: str, named: str) -> None:
    code, output, _ = demo.gate("change", mostly_unjudged(demo), setting)
    assert code == 2, output
    assert named in flat(output)


# --- the core ----------------------------------------------------------------------------------


SAME = {"recall@10": np.array([0.7, 0.7]), "map": np.array([0.6, 0.6])}  # judged-only forms


def _checks(
    judged_now: float,
    judged_base: float | None,
    unjudged: Unjudged | None,
    condensed_now: dict[str, np.ndarray] | None = SAME,
    significance: Significance | None = None,
) -> list[Check]:
    """The drop checks of recall@10 and map on one slice, with judged@20 of each side and the
    judged-only forms of the baseline (``SAME``) and of the run (``condensed_now``; None: the
    run has none)."""
    current = {"i": {"recall@10": np.array([0.5, 0.5]), "map": np.array([0.5, 0.5])}}
    baseline = {"i": {"recall@10": np.array([0.6, 0.6]), "map": np.array([0.5, 0.5])}}
    rules = resolve_rules(
        {"recall@10": Threshold(min=0.1, max_drop=0.01), "map": Threshold(max_drop_pct=5)},
        [],
        ["i"],
        ["all"],
    )
    masks = {"all": np.array([True, True])}
    checks = evaluate_gate(current, baseline, masks, rules)
    figures = {"i": {"all": {5: 0.9, 20: judged_now}}}
    base = {"i": {"all": {5: 0.9, 20: judged_base}}}
    condensed = CondensedSides({"i": condensed_now} if condensed_now else {}, {"i": SAME}, masks)
    # recall@10 reads judged@10, which neither side has
    return mark_inconclusive(checks, JudgedSides(figures, base), unjudged, condensed, significance)


def test_judged_cutoff_is_the_metrics_or_the_largest() -> None:
    assert judged_cutoff("ndcg@10", [5, 100]) == 10
    assert judged_cutoff("map", [5, 100]) == 100
    assert judged_cutoff("mrr", []) is None


@pytest.mark.parametrize(
    ("now", "base", "expected"),
    [
        (0.5, 0.6, "pass"),  # fell exactly max_drop: still conclusive
        (0.49, 0.6, "inconclusive"),
        (0.9, 0.6, "pass"),  # more judged than the baseline
    ],
)
def test_a_fall_of_exactly_max_drop_is_conclusive(now: float, base: float, expected: str) -> None:
    checks = _checks(now, base, Unjudged(max_drop=0.1, policy="warn"))
    by_kind = {c.kind: c for c in checks}
    assert by_kind["min"].status == "pass" and by_kind["min"].judged_k is None  # not a drop check
    pct = by_kind["max_drop_pct"]  # map: judged@20, the largest cutoff
    assert (pct.judged_k, pct.judged_current, pct.judged_baseline) == (20, now, base)
    assert pct.status == expected and pct.passed
    assert by_kind["max_drop"].status == "fail"  # recall@10: no judged@10 figure in the baseline
    assert "no judged@10 figure" in by_kind["max_drop"].message
    assert gate_verdict(checks) == "fail"
    assert gate_verdict([c for c in checks if c.kind != "max_drop"]) == (
        "inconclusive" if expected == "inconclusive" else "pass"
    )


def test_inconclusive_overrides_a_pass_and_a_failure_alike() -> None:
    """Every drop check of the slice is inconclusive, passing or not; policy fail blocks."""
    pct = next(c for c in _checks(0.0, 0.6, Unjudged(0.1, "warn")) if c.kind == "max_drop_pct")
    assert pct.status == "inconclusive" and pct.passed and pct.unjudged_policy == "warn"
    assert "100% of the new top 20 was never judged" in pct.message
    failing = _checks(0.0, 0.6, Unjudged(0.1, "fail"))
    blocked = next(c for c in failing if c.kind == "max_drop_pct")
    assert blocked.status == "inconclusive" and not blocked.passed
    assert _checks(0.0, 0.6, None)[-1].status == "pass"  # gate.unjudged null


def test_an_old_report_reads_and_writes_back_unchanged() -> None:
    """A gate section of an older evalret (no status, judged figures or unjudged): read, each
    check's outcome follows ``passed``, and it dumps back without the new keys."""
    from evalret.data.schema import GateSection

    saved = json.loads((REPO / "baselines" / "demo.json").read_text())["gate"]
    gate = GateSection.model_validate(saved)
    assert gate.verdict == "pass" and not gate.inconclusive
    assert all(c.outcome == "pass" for c in gate.checks)
    assert json.loads(gate.model_dump_json()) == saved


# --- compare -----------------------------------------------------------------------------------


def test_compare_shows_judged_at_k_of_a_and_b_and_bs_unjudged_documents(demo: Demo) -> None:
    """`evalret compare BASELINE CHANGE`: judged@10 of A beside B on every slice (compare.json,
    terminal, compare.md, report.html) and B's most frequent unjudged documents, counted as the
    run file and the golden set say, with an escaped snippet. B was run with --set, which
    compare.json records on its side (it once made compare exit 3)."""
    from collections import Counter

    from evalret.report.compare_rows import snippet
    from evalret.report.escape import html_text, markdown

    ranking = mostly_unjudged(demo)
    _, _, out = demo.gate("change", ranking)
    cmp = demo.root / "cmp"
    code, output = invoke(
        "compare", str(demo.baseline), str(out / "report.json"), "--out", str(cmp), "--no-progress"
    )
    assert code == 0, output
    result = json.loads((cmp / "compare.json").read_text())
    assert result["b"]["overrides"] == {"indexes.model.path": str(demo.root / "change.trec")}
    base = json.loads(demo.baseline.read_text())["indexes"]["model"]["slices"]
    now = json.loads((out / "report.json").read_text())["indexes"]["model"]["slices"]
    for name, sc in result["indexes"]["model"].items():
        assert sc["judged"]["judged@10"] == {
            "a": base[name]["judged"]["judged@10"],
            "b": now[name]["judged"]["judged@10"],
        }
    counts = Counter(d for q, ids in ranking.items() for d in ids[:10] if d not in demo.qrels[q])
    unjudged = result["unjudged"]
    assert (unjudged["index"], unjudged["k"], unjudged["n_queries"]) == ("model", 10, 244)
    listed = [(d["id"], d["lists"]) for d in unjudged["documents"]]
    assert listed == sorted(counts.items(), key=lambda p: (-p[1], p[0]))[:10]
    terminal = flat(output)
    a_all, b_all = base["all"]["judged"]["judged@10"], now["all"]["judged"]["judged@10"]
    assert "judged@10 on all" in terminal and f"model {a_all:.4f} {b_all:.4f}" in terminal
    first = unjudged["documents"][0]
    assert f"{first['id']} in {first['lists']} lists" in terminal
    md = (cmp / "compare.md").read_text()
    assert "Share of the top k judged (judged@10), A beside B:" in md
    assert f"| all | {a_all:.4f} | {b_all:.4f} | {b_all - a_all:+.4f} |" in md
    from evalret.data.schema import UnjudgedDoc

    doc = UnjudgedDoc.model_validate(first)
    assert f"| <code>{first['id']}</code> | {first['lists']} | {markdown(snippet(doc))} |" in md
    html = (cmp / "report.html").read_text()
    assert "most frequent unjudged documents" in html and html_text(snippet(doc)) in html


# --- the action's gate step and the pre-commit hook ----------------------------------------------


def test_action_gate_step_takes_an_inconclusive_exit_0(demo: Demo, tmp_path: Path) -> None:
    """gate.sh passes exit 0 on as the verdict when report.json says inconclusive (policy
    warn), and exit 1 when it says fail (policy fail): never 3, "evalret did not finish"."""
    import os
    import subprocess
    import sys

    change = write_run(tmp_path / "change.trec", mostly_unjudged(demo))
    for policy, expected in (("warn", "0"), ("fail", "1")):
        config = tmp_path / f"{policy}.yaml"
        config.write_text(
            CONFIG.format(golden=DEMO, run=change) + f"  unjudged: {{policy: {policy}}}\n"
        )
        outputs = tmp_path / f"github_output_{policy}"
        outputs.write_text("")
        env = {
            **{k: v for k, v in os.environ.items() if k != "EVALRET_RUN_ID"},
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": str(REPO / "src"),
            "EVALRET_CONFIG": str(config),
            "EVALRET_BASELINE": str(demo.baseline),
            "EVALRET_OUT": str(tmp_path / f"out-{policy}"),
            "GITHUB_OUTPUT": str(outputs),
        }
        gate_sh = REPO / ".github" / "actions" / "evalret" / "gate.sh"
        done = subprocess.run(["bash", str(gate_sh)], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        step = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
        assert step["exit-code"] == expected, done.stdout + done.stderr
        report = json.loads((tmp_path / f"out-{policy}" / "report.json").read_text())
        assert report["gate"]["verdict"] == ("inconclusive" if policy == "warn" else "fail")


def test_hook_says_inconclusive_and_not_blocking() -> None:
    """The pre-commit hook's lines for an inconclusive gate: INCONCLUSIVE, not blocking, and
    each slice's judged@k of baseline and current with the share never judged."""
    from evalret.data.schema import GateSection
    from evalret.report.hook_view import hook_lines
    from helpers import gate_check

    check = gate_check(
        status="inconclusive",
        judged_k=10,
        judged_baseline=0.19,
        judged_current=0.02,
        unjudged_policy="warn",
    )
    gate = GateSection(
        verdict="inconclusive",
        baseline="b.json",
        baseline_fingerprint=None,
        changed={},
        significance=None,
        checks=[check, gate_check(name="other")],
        notes=[],
        unjudged={"max_drop": 0.1, "policy": "warn"},
    )
    lines = hook_lines("evalret-gate", gate, Path("b.json"), Path("r/report.md"))
    assert lines[0].startswith("evalret-gate: INCONCLUSIVE: 1 of 2 checks against b.json")
    assert "not blocking" in lines[0]
    assert (
        "  exact/all: judged@10 0.1900 -> 0.0200, 98% of the new top 10 never judged "
        "(1 check inconclusive)" in lines
    )


# --- inconclusive needs a reason (#35) ---------------------------------------------------------


def test_a_judged_only_drop_past_the_threshold_fails_whatever_the_policy() -> None:
    """judged@k fell, but the judged-only form dropped past the threshold too: failed, under
    policy warn as under fail; within it: inconclusive."""
    worse = {"recall@10": np.array([0.5, 0.5]), "map": np.array([0.6, 0.6])}
    for policy in ("warn", "fail"):
        by_kind = {c.kind: c for c in _checks(0.0, 0.6, Unjudged(0.1, policy), worse)}
        pct = by_kind["max_drop_pct"]  # map: its judged-only form did not move
        assert pct.status == "inconclusive" and pct.passed == (policy == "warn")
        assert (pct.condensed_baseline, pct.condensed_current) == (0.6, 0.6)
    # recall@10 reads judged@10, absent: it keeps its own verdict; give it judged@10 figures
    current = {"i": {"recall@10": np.array([0.5, 0.5])}}
    baseline = {"i": {"recall@10": np.array([0.6, 0.6])}}
    masks = {"all": np.array([True, True])}
    rules = resolve_rules({"recall@10": Threshold(max_drop=0.15)}, [], ["i"], ["all"])
    checks = evaluate_gate(current, baseline, masks, rules)
    assert [c.status for c in checks] == ["pass"]  # a drop of 0.1 is within 0.15
    judged = JudgedSides({"i": {"all": {10: 0.0}}}, {"i": {"all": {10: 0.6}}})
    for now, expected in ((0.4, "fail"), (0.6, "inconclusive")):
        condensed = CondensedSides(
            {"i": {"recall@10": np.array([now, 0.4])}},
            {"i": {"recall@10": np.array([0.8, 0.4])}},
            masks,
        )
        (c,) = mark_inconclusive(checks, judged, Unjudged(0.1, "warn"), condensed)
        assert c.status == expected, c.message
        if expected == "fail":  # a passing check fails once the labels say why
            assert (
                not c.passed and "FAILED although judged@10 fell from 0.6000 to 0.0000" in c.message
            )
            assert (
                "judged-only recall@10:judged 0.6000 -> 0.4000 dropped more than 0.15" in c.message
            )


def test_without_judged_only_figures_a_check_cannot_be_inconclusive() -> None:
    """A baseline or run without the judged-only forms (an older evalret): the check keeps its
    own verdict, the message says why."""
    by_kind = {c.kind: c for c in _checks(0.0, 0.6, Unjudged(0.1, "warn"), None)}
    pct = by_kind["max_drop_pct"]
    assert pct.status == "pass" and pct.condensed_current is None
    assert "no judged-only map:judged figure" in pct.message
    assert "cannot be inconclusive" in pct.message


def test_a_judged_only_drop_that_is_not_significant_stays_inconclusive() -> None:
    """With significance, the judged-only drop must be significant (corrected across the
    judged-only tests) to fail."""
    sig = Significance(
        "randomization", alpha=0.05, correction="holm", samples=1000, seed=0, power=0.8
    )
    two = {"recall@10": np.array([0.7, 0.7]), "map": np.array([0.5, 0.55])}  # exact: p = 1/4
    pct = next(
        c for c in _checks(0.0, 0.6, Unjudged(0.1, "warn"), two, sig) if c.kind == "max_drop_pct"
    )
    assert pct.status == "inconclusive", pct.message
    assert (
        "dropped more than 5%, not significant (randomization, holm-adjusted p = 0.25)"
        in pct.message
    )


def test_the_judged_floor_defaults_to_a_tenth_of_the_baselines() -> None:
    judged = JudgedSides({"i": {"all": {5: 0.5, 10: 0.01}}}, {"i": {"all": {5: 0.5, 10: 0.2}}})
    (floor,) = judged_floor_checks(judged, Unjudged(), ["i"], 100)
    assert (floor.kind, floor.metric, floor.threshold, floor.status) == (
        "judged_min", "judged@10", pytest.approx(0.02), "fail",
    )  # fmt: skip
    assert "0.1 x the baseline's 0.2000" in floor.message and "document ids" in floor.message
    (fixed,) = judged_floor_checks(judged, Unjudged(min_judged=0.005), ["i"], 100)
    assert fixed.passed and "gate.unjudged.min_judged" in fixed.message
    assert judged_floor_checks(judged, Unjudged(min_judged=0), ["i"], 100) == []
    assert judged_floor_checks(judged, None, ["i"], 100) == []
    alone = JudgedSides(judged.current, None)  # no baseline: no default floor
    assert judged_floor_checks(alone, Unjudged(), ["i"], 100) == []
    assert judged_floor_checks(alone, Unjudged(min_judged=0.05), ["i"], 100)[0].status == "fail"


def random_ranking(demo: Demo, seed: int = 0) -> Ranking:
    rng = np.random.default_rng(seed)
    return {q: [demo.docs[i] for i in rng.permutation(len(demo.docs))[:DEPTH]] for q in demo.top}


def shifted_ids(demo: Demo) -> Ranking:
    """The baseline's rankings with every document id mapped to the next one in the corpus: a
    retriever that maps ids wrongly."""
    following = dict(zip(demo.docs, demo.docs[1:] + demo.docs[:1], strict=True))
    return {q: [following[d] for d in demo.deep(q)] for q in demo.top}


@pytest.mark.parametrize("broken", [random_ranking, shifted_ids, lost])
def test_a_broken_retriever_fails_the_default_gate(demo: Demo, broken) -> None:
    """A random ranking, wrongly mapped ids, or a ranking that lost the judged documents: every
    top 10 mostly unjudged, yet the gate fails (exit 1) under the default policy warn, on the
    judged-only drops; the judged@10 floor names the ids of the random one."""
    code, output, out = demo.gate(broken.__name__, broken(demo))
    assert code == 1, output
    report = json.loads((out / "report.json").read_text())
    assert report["gate"]["verdict"] == "fail"
    drops = drop_checks(report)
    fell = [c for c in drops if c["judged_current"] < c["judged_baseline"] - 0.1]
    failed = [c for c in fell if c["status"] == "fail"]
    assert all("FAILED although judged@10 fell" in c["message"] for c in failed)
    heading = "of them although judged@k fell: the judged-only metric dropped too)"
    assert f"{len(failed)} {heading}" in flat(output)
    assert f"{len(failed)} {heading}" in (out / "report.md").read_text().splitlines()[0]
    floor = next(c for c in report["gate"]["checks"] if c["kind"] == "judged_min")
    assert len(failed) == len(fell) > 0
    if broken is random_ranking:  # judged@10 0.01, below a tenth of the baseline's 0.19
        assert not floor["passed"] and "document ids" in floor["message"], floor


def test_min_judged_is_settable_and_strict(demo: Demo) -> None:
    code, output, out = demo.gate("floor", mostly_unjudged(demo), "gate.unjudged.min_judged=0.05")
    assert code == 1, output
    report = json.loads((out / "report.json").read_text())
    (floor,) = [c for c in report["gate"]["checks"] if c["kind"] == "judged_min"]
    assert floor["threshold"] == 0.05 and not floor["passed"]
    assert report["gate"]["unjudged"]["min_judged"] == 0.05
    code, output, out = demo.gate("nofloor", mostly_unjudged(demo), "gate.unjudged.min_judged=0")
    assert code == 0, output
    report = json.loads((out / "report.json").read_text())
    assert not [c for c in report["gate"]["checks"] if c["kind"] == "judged_min"]
    code, output = invoke("run", "-c", str(demo.config), "--set", "gate.unjudged.min_judged=2")
    assert code == 2 and "gate.unjudged.min_judged" in output, output


def test_rankings_no_deeper_than_the_cutoff_cannot_be_inconclusive(demo: Demo) -> None:
    """A ranking cut at rank 10 cannot show where its judged documents went: no judged-only
    recall@10 is recorded for it, so its checks keep their own verdict (a drop fails) and say
    to search deeper; map, over the whole ranking, still has its judged-only form."""
    shallow = {q: ids[:10] for q, ids in mostly_unjudged(demo).items()}
    code, output, out = demo.gate("shallow", shallow)
    assert code == 1, output
    report = json.loads((out / "report.json").read_text())
    assert "recall@10" not in report["indexes"]["model"]["condensed"]
    assert "map" in report["indexes"]["model"]["condensed"]
    recall = [c for c in drop_checks(report) if c["metric"] == "recall@10"]
    assert recall and all(c["status"] == "fail" for c in recall)
    assert all("raise search_depth" in c["message"] for c in recall)
