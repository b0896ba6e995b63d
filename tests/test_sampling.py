"""Seeded, stratified samples: the core's draw (shares, floors, overlapping slices, documents),
and a sampled run's plumbing with the stand-in embedder: what is embedded, the report's sample
section and fingerprint, baselines refused or paired, and the section escaped in every view."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

from evalret.core.sampling import sample_documents, sample_queries, seeded_keys
from evalret.data.config import (
    CacheConfig,
    Config,
    GoldenSetConfig,
    SampleConfig,
    parse_config,
)
from evalret.errors import IncomparableError
from evalret.pipeline.evaluate import run_evaluation
from evalret.pipeline.sample import with_sample
from evalret.report.html.run_page import run_html
from evalret.report.markdown import render_markdown
from evalret.report.terminal import render_run
from helpers import HashEmbedder, make_set
from strategies import sliced_queries


def mask(n: int, members: list[int]) -> np.ndarray:
    out = np.zeros(n, dtype=bool)
    out[members] = True
    return out


# --- the core's draw ----------------------------------------------------------------------------


def test_disjoint_slices_keep_their_share_by_hand() -> None:
    """10 queries, slice a = 2 of them, b = the other 8; 5 drawn, no floor: quotas 5*2/10 = 1
    and 5*8/10 = 4, exactly."""
    ids = [f"q{i}" for i in range(10)]
    a = mask(10, [0, 1])
    drawn = sample_queries(ids, [("all", np.ones(10, bool)), ("a", a), ("b", ~a)], 5, 0, 0)
    assert drawn.size == 5 and drawn.n_strata == 2
    assert int(a[drawn.positions].sum()) == 1
    assert drawn.floor_raised == ()


def test_floor_raises_a_small_slice_and_keeps_the_size() -> None:
    """Same set, floor 2: a (share 1) keeps both its queries, b gets the 3 left; a is reported
    as raised by the floor."""
    ids = [f"q{i}" for i in range(10)]
    a = mask(10, [0, 1])
    drawn = sample_queries(ids, [("a", a), ("b", ~a)], 5, 0, 2)
    assert drawn.size == 5
    assert drawn.positions[:2].tolist() == [0, 1]
    assert drawn.floor_raised == ("a",)


def test_floors_may_need_more_than_asked() -> None:
    """Three disjoint slices of 4, floor 3, one query asked: the floors need 9."""
    ids = [f"q{i}" for i in range(12)]
    slices = [(f"s{k}", mask(12, list(range(4 * k, 4 * k + 4)))) for k in range(3)]
    drawn = sample_queries(ids, slices, 1, 0, 3)
    assert drawn.size == 9
    assert all(int(m[drawn.positions].sum()) == 3 for _, m in slices)


def test_uniform_draw_is_the_smallest_keys_and_stable_when_a_query_joins() -> None:
    """Without slices the draw is the n ids with the smallest seeded keys; adding one query
    changes at most one member of the sample."""
    ids = [f"q{i}" for i in range(200)]
    drawn = sample_queries(ids, [], 20, 7, 5)
    keys = seeded_keys(ids, 7, "query")
    assert sorted(drawn.positions.tolist()) == sorted(np.argsort(keys)[:20].tolist())
    grown = sample_queries([*ids, "q-new"], [], 20, 7, 5)
    before = {ids[i] for i in drawn.positions}
    after = {[*ids, "q-new"][i] for i in grown.positions}
    assert len(before - after) <= 1
    other_seed = sample_queries(ids, [], 20, 8, 5)
    assert other_seed.positions.tolist() != drawn.positions.tolist()


def test_whole_set_when_n_is_not_below_it() -> None:
    """Asking for as many queries as there are keeps them all, in order."""
    drawn = sample_queries(["a", "b", "c"], [("x", mask(3, [0]))], 3, 0, 10)
    assert drawn.positions.tolist() == [0, 1, 2]


@settings(max_examples=200, deadline=None)
@given(sliced_queries())
def test_draw_properties(case: tuple) -> None:
    """Any overlapping slices: distinct positions in file order; exactly n unless the floors
    need more (never more than they need); every slice but ``all`` keeps min(floor, size);
    reruns equal; without a floor every stratum is within one query of its quota."""
    ids, slices, n, seed, floor = case
    total = len(ids)
    drawn = sample_queries(ids, slices, n, seed, floor)
    p = drawn.positions
    assert p.tolist() == sorted(set(p.tolist())) and (p < total).all()
    floors = sum(min(floor, int(m.sum())) for _, m in slices if not m.all())
    assert min(n, total) <= drawn.size <= max(min(n, total), floors)
    for _, m in slices:  # a slice of every query (all) holds the whole sample instead
        assert int(m[p].sum()) >= (min(floor, int(m.sum())) if not m.all() else drawn.size)
    assert sample_queries(ids, slices, n, seed, floor).positions.tolist() == p.tolist()
    if n < total:
        free = sample_queries(ids, slices, n, seed, 0)
        assert free.size == n
        rows = np.column_stack([m for _, m in slices]) if slices else np.ones((total, 1))
        _, stratum = np.unique(rows, axis=0, return_inverse=True)
        stratum = stratum.reshape(-1)
        for s in np.unique(stratum):
            quota = n * int((stratum == s).sum()) / total
            assert abs(int((stratum[free.positions] == s).sum()) - quota) < 1


def test_documents_keep_the_judged_then_seeded_distractors() -> None:
    """Kept documents always; distractors up to m, the same on a rerun; never fewer than kept."""
    ids = [f"d{i}" for i in range(100)]
    keep = mask(100, [3, 50, 99])
    docs = sample_documents(ids, keep, 10, 0)
    assert len(docs) == 10 and {3, 50, 99} <= set(docs.tolist())
    assert docs.tolist() == sorted(docs.tolist())
    assert sample_documents(ids, keep, 10, 0).tolist() == docs.tolist()
    assert sample_documents(ids, keep, 2, 0).tolist() == [3, 50, 99]
    assert len(sample_documents(ids, keep, 500, 0)) == 100


# --- the config ---------------------------------------------------------------------------------


def test_sample_config_defaults_and_dump() -> None:
    """Off by default and absent from the dump; `--sample N` keeps the other settings."""
    assert "sample" not in Config().model_dump(mode="json")
    cfg = parse_config("sample: {queries: 50, documents: 400, seed: 3}\n")
    assert cfg.sample == SampleConfig(queries=50, documents=400, seed=3, min_per_slice=10)
    assert cfg.model_dump(mode="json")["sample"]["documents"] == 400
    assert with_sample(cfg, 20).sample == SampleConfig(queries=20, documents=400, seed=3)
    assert with_sample(Config(), 20).sample == SampleConfig(queries=20)
    assert with_sample(cfg, None) is cfg


@pytest.mark.parametrize(
    ("text", "key"), [("sample: {queries: 0}\n", "sample.queries"), ("sample: {}\n", "sample")]
)
def test_bad_sample_config_names_the_key(text: str, key: str) -> None:
    """A sample without queries or with 0 is refused, naming the key and line."""
    with pytest.raises(Exception, match=key) as info:
        parse_config(text, "cfg.yaml")
    assert "cfg.yaml:1" in str(info.value)


# --- a sampled run (stand-in embedder) ----------------------------------------------------------


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    return make_set(tmp_path / "gs")


def config_for(golden: Path, **sample: int | None) -> Config:
    """The config of a run on ``golden`` with these sample settings (none: the whole set), its
    embedding cache beside the golden set (the session's may hold these texts already)."""
    return Config(
        golden_set=GoldenSetConfig(path=golden),
        sample=SampleConfig.model_validate(sample) if sample else None,
        cache=CacheConfig(dir=golden.parent / "cache"),
    )


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting the texts it is given per kind."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def embed(self, texts, kind, progress=None):  # type: ignore[no-untyped-def]
        self.counts[kind] = self.counts.get(kind, 0) + len(texts)
        return super().embed(texts, kind, progress)


def test_documents_sample_embeds_only_its_corpus(golden: Path) -> None:
    """24 scored queries, 60 documents: a sample of 6 queries and 20 documents embeds 20
    documents holding every judged document of the 6, and says so in the report."""
    embedder = CountingEmbedder()
    cfg = config_for(golden, queries=6, documents=20, seed=1, min_per_slice=1)
    ev = run_evaluation(cfg, embedder=embedder)
    r = ev.report
    assert embedder.counts == {"document": 20, "query": 6}
    assert len(r.query_ids) == 6 and r.golden_set.n_queries_evaluated == 6
    assert r.golden_set.n_documents == 60  # the golden set as read
    s = r.sample
    assert s is not None and (s.n_queries, s.n_queries_total) == (6, 24)
    judged = {d for q in r.query_ids for d in ev.golden_set.qrels[q]}
    assert (s.n_documents, s.n_documents_total, s.n_documents_judged) == (20, 60, len(judged))
    assert s.slices["all"].sampled == 6 and s.slices["all"].total == 24
    assert any("optimistic" in n for n in s.notes)
    assert judged <= set(ev.golden_set.doc_ids)
    assert r.fingerprint.sample is not None
    assert r.fingerprint.sample["document_digest"] == s.document_digest


def test_slices_keep_their_full_set_membership(golden: Path) -> None:
    """Frequency slices are cut on the whole set, then restricted: a sampled head query is a head
    query of the full run."""
    full = run_evaluation(config_for(golden), embedder=HashEmbedder()).report
    sampled = run_evaluation(config_for(golden, queries=8), embedder=HashEmbedder()).report
    for name, info in sampled.slices.items():
        members = {sampled.query_ids[i] for i in info.members}
        full_members = {full.query_ids[i] for i in full.slices[name].members}
        assert members <= full_members, name
        assert info.n_queries >= min(10, full.slices[name].n_queries)  # the default floor


def test_full_run_report_and_digest_are_unchanged_by_the_feature(golden: Path) -> None:
    """A run without ``sample`` has no sample key in report.json, its fingerprint or config."""
    report = run_evaluation(config_for(golden), embedder=HashEmbedder()).report
    data = json.loads(report.model_dump_json())
    assert "sample" not in data and "sample" not in data["fingerprint"]
    assert "sample" not in data["config"]


def test_query_sample_gates_against_the_same_queries_of_a_full_baseline(golden: Path) -> None:
    """The gate pairs the sampled queries with the baseline's: baseline values are its means
    over those queries, and the same embedder passes with zero deltas."""
    base = run_evaluation(config_for(golden), embedder=HashEmbedder()).report
    ev = run_evaluation(
        config_for(golden, queries=10, seed=4),
        embedder=HashEmbedder(),
        baseline=base,
        baseline_source="base.json",
    )
    gate = ev.report.gate
    assert gate is not None
    drops = [c for c in gate.checks if c.kind == "max_drop"]
    assert drops and all(c.passed for c in drops)  # (the stand-in's 10 query vectors collapse)
    position = {q: i for i, q in enumerate(base.query_ids)}
    for c in drops:
        members = [ev.report.query_ids[i] for i in ev.report.slices[c.slice].members]
        scores = base.indexes[c.index].per_query[c.metric]
        assert c.baseline == pytest.approx(np.mean([scores[position[q]] for q in members]))
        assert c.delta == 0


def test_baselines_refused_on_other_terms(golden: Path) -> None:
    """A documents sample against a full baseline, a query run against a documents-sampled
    baseline, a run with queries the baseline lacks: refused (exit 2); the same sample passes."""
    full = run_evaluation(config_for(golden), embedder=HashEmbedder()).report
    docs_cfg = config_for(golden, queries=6, documents=20, min_per_slice=1)
    docs = run_evaluation(docs_cfg, embedder=HashEmbedder()).report
    small_cfg = config_for(golden, queries=5, min_per_slice=0)
    small = run_evaluation(small_cfg, embedder=HashEmbedder()).report
    for cfg, baseline, message in (
        (docs_cfg, full, "this run samples the corpus"),
        (config_for(golden, queries=6, min_per_slice=1), docs, "made on a sampled corpus"),
        (config_for(golden), small, "it lacks 19 of the 24 queries"),
    ):
        with pytest.raises(IncomparableError, match=message) as info:
            run_evaluation(cfg, embedder=HashEmbedder(), baseline=baseline, baseline_source="b")
        assert info.value.exit_code == 2
    ev = run_evaluation(docs_cfg, embedder=HashEmbedder(), baseline=docs, baseline_source="b")
    assert ev.report.gate is not None
    assert all(c.passed for c in ev.report.gate.checks if c.kind == "max_drop")


def test_sample_section_is_escaped_in_every_view(tmp_path: Path) -> None:
    """A hostile tag (a slice name) reaches the sample section of report.md, report.html and
    the terminal only escaped."""
    gs = make_set(tmp_path / "gs")
    lines = (gs / "queries.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["tags"] = ["<img src=x onerror=alert(1)>"]
    lines[0] = json.dumps(first)
    (gs / "queries.jsonl").write_text("\n".join(lines) + "\n")
    cfg = config_for(gs, queries=5, min_per_slice=1)
    report = run_evaluation(cfg, embedder=HashEmbedder()).report
    assert report.sample is not None and report.sample.slices["<img src=x onerror=alert(1)>"]
    html = run_html(report)
    assert 'id="sample"' in html and "<img src=x" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    md = render_markdown(report)
    assert "**Sampled run**" in md and "<img" not in md
    from rich.console import Console

    console = Console(record=True, width=200)
    console.print(render_run(report, []))
    assert "sample of 5 of 24 queries" in console.export_text()


def test_compare_refuses_runs_on_different_corpus_samples(golden: Path) -> None:
    """The same sampled queries searched in the whole corpus and in a sampled one: `evalret
    compare` refuses them (exit 2)."""
    from evalret.data.baseline import check_comparable

    a = run_evaluation(config_for(golden, queries=6, min_per_slice=1), embedder=HashEmbedder())
    cfg = config_for(golden, queries=6, documents=20, min_per_slice=1)
    b = run_evaluation(cfg, embedder=HashEmbedder())
    assert a.report.query_ids == b.report.query_ids
    with pytest.raises(IncomparableError, match="searched corpora differ"):
        check_comparable(a.report, b.report)
    check_comparable(b.report, b.report)


def test_documents_not_below_the_corpus_are_the_whole_corpus(golden: Path) -> None:
    """documents: 500 on a corpus of 60 cuts nothing: no document digest, and a full baseline
    is gated on the sampled queries."""
    base = run_evaluation(config_for(golden), embedder=HashEmbedder()).report
    cfg = config_for(golden, queries=6, documents=500, min_per_slice=1)
    ev = run_evaluation(cfg, embedder=HashEmbedder(), baseline=base, baseline_source="b")
    s = ev.report.sample
    assert s is not None and s.n_documents == 60 and s.document_digest is None
    assert any("the whole corpus is searched" in n for n in s.notes)
    assert ev.report.gate is not None


def test_documents_below_the_judged_keep_every_judged_document(golden: Path) -> None:
    """documents: 2 when the sampled queries judge more: every judged document is kept (the
    metrics need them), no distractor, and a note says so."""
    cfg = config_for(golden, queries=6, documents=2, min_per_slice=1)
    ev = run_evaluation(cfg, embedder=HashEmbedder())
    s = ev.report.sample
    assert s is not None and s.n_documents_judged is not None
    assert s.n_documents == s.n_documents_judged > 2
    assert any("so no distractor was added" in n for n in s.notes)
