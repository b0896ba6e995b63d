"""Typed faiss indexes (``indexes.<name>: {type: faiss, factory, params, train_size, seed}``): the
factory string and its search parameters refused at the config key when faiss refuses them,
trained seeded (same input, same rankings), kept in the cache like the HNSW graph, searched with
their parameters, and reported like every approximate index (recall of exact search's top k,
metric change, index bytes), also in `evalret sweep`, whose memory front draws them.

The vectors are a hashed bag of words from a Python encoder (no model is loaded); faiss is real.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import faiss
import numpy as np
import pytest

import evalret.engines.retrievers  # noqa: F401  # registers the faiss factory check
from conftest import DEMO, REPO
from evalret.commands.sweep import sweep_command
from evalret.core.ranking import topk_overlap
from evalret.data import faiss_demand
from evalret.data.config import FaissIndexConfig, parse_config
from evalret.data.sweep import SweepReport
from evalret.engines.faiss_factory import (
    TRY_DIMS,
    build_factory_index,
    check_factory,
    index_bytes,
    physical_memory,
    training_rows,
)
from evalret.errors import ConfigError
from evalret.pipeline.evaluate import run_evaluation
from evalret.pipeline.pages import render_run_html
from helpers import HASH_ENCODER, invoke

ENCODER = HASH_ENCODER

IVF = '{type: faiss, factory: "IVF16,PQ8x4np", params: {nprobe: 4}, train_size: 200, seed: 3}'


@pytest.fixture
def encoder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A module ``faiss_index_encoder`` in tmp_path, importable."""
    (tmp_path / "faiss_index_encoder.py").write_text(textwrap.dedent(ENCODER))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("faiss_index_encoder", None)


def _yaml(tmp_path: Path, indexes: str, cache: bool = True) -> str:
    cache_line = f"cache: {{dir: {tmp_path / 'cache'}}}" if cache else "cache: {enabled: false}"
    return (
        f"golden_set: {{path: {DEMO}}}\n{cache_line}\n"
        "model: {provider: python, callable: 'faiss_index_encoder:make'}\n"
        "metrics: [ndcg@10, recall@10]\n"
        "indexes:\n  bm25: {enabled: false}\n  hybrid: {enabled: false}\n" + indexes
    )


@pytest.mark.parametrize(
    ("index", "key", "reason"),
    [
        ('{type: faiss, factory: "IVF64,Garbage"}', "indexes.ivf.factory", "could not parse"),
        ('{type: faiss, factory: "PQ7x3x2"}', "indexes.ivf.factory", "faiss cannot build"),
        (
            '{type: faiss, factory: "IVF16,PQ8", params: {efSearch: 64}}',
            "indexes.ivf.params.efSearch",
            "cannot set 'efSearch'",
        ),
        ('{type: faiss, factory: "HNSW8", params: {nprobe: 4}}', "indexes.ivf.params.nprobe", ""),
        ('{type: faiss, factory: "HNSW8", bogus: 1}', "indexes.ivf.bogus", ""),
        ('{type: faiss, factory: "HNSW8", train_size: 0}', "indexes.ivf.train_size", ""),
    ],
)
def test_a_bad_factory_or_parameter_is_a_config_error_at_its_key(
    tmp_path: Path, index: str, key: str, reason: str
) -> None:
    """faiss's refusal is the config's error, at the key's line, not a faiss traceback."""
    with pytest.raises(ConfigError) as e:
        parse_config(_yaml(tmp_path, f"  ivf: {index}\n"), "c.yaml")
    text = str(e.value)
    assert key in text and "c.yaml:8" in text and reason in text
    assert ".cpp" not in text


def test_evalret_run_refuses_a_bad_factory_before_embedding(tmp_path: Path, encoder: None) -> None:
    """Exit 2 naming the key; nothing was embedded (the cache stays empty)."""
    config = tmp_path / "c.yaml"
    config.write_text(_yaml(tmp_path, '  ivf: {type: faiss, factory: "IVF16,Nope"}\n'))
    code, out = invoke("run", "-c", str(config), "--out", str(tmp_path / "out"), "--no-progress")
    assert code == 2, out
    assert "indexes.ivf.factory" in out and "could not parse code description Nope" in out
    assert not (tmp_path / "cache").exists()


def test_a_dimension_faiss_cannot_split_is_refused_when_built(
    tmp_path: Path, encoder: None
) -> None:
    """PQ7 builds at the config check's dimensions, not over 64-dimensional vectors: a
    ConfigError naming the key and the dimension."""
    config = parse_config(_yaml(tmp_path, '  ivf: {type: faiss, factory: "PQ7np"}\n'), "c.yaml")
    with pytest.raises(ConfigError, match=r"indexes\.ivf\.factory: .*dimension 64"):
        run_evaluation(config)


def test_training_is_seeded_and_the_same_input_gives_the_same_index() -> None:
    """The training sample is drawn with the seed; two builds of the same settings serialize to
    the same bytes; another seed trains another index."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((600, 32)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    cfg = FaissIndexConfig(type="faiss", factory="OPQ4,IVF8,PQ4np", train_size=300, seed=5)
    rows = training_rows(600, cfg)
    assert len(rows) == 300 and np.all(np.diff(rows) > 0)
    assert np.array_equal(rows, training_rows(600, cfg))
    first = faiss.serialize_index(build_factory_index(x, cfg, "ivf"))
    again = faiss.serialize_index(build_factory_index(x, cfg, "ivf"))
    assert np.array_equal(first, again)
    other = cfg.model_copy(update={"seed": 6})
    assert not np.array_equal(training_rows(600, other), rows)
    assert not np.array_equal(faiss.serialize_index(build_factory_index(x, other, "ivf")), first)


def test_reported_like_every_approximate_index(tmp_path: Path, encoder: None) -> None:
    """The index's ANN section: recall@k of exact's top k and every metric's change, as computed
    here from the rankings, and its index bytes: the serialized size of the index it searched
    (the cached file holds the same bytes). HNSW's section says its bytes too."""
    config = parse_config(_yaml(tmp_path, f"  ivf: {IVF}\n"), "c.yaml")
    ev = run_evaluation(config)
    r = ev.report
    section = r.ann["ivf"]
    all_ = section.slices["all"]
    exact, ivf = ev.rankings["exact"], ev.rankings["ivf"]
    assert all_.recall["recall@10"] == pytest.approx(topk_overlap(ivf.ids, exact.ids, 10).mean())
    assert 0 < all_.recall["recall@10"] < 1  # nprobe 4 of 16 lists: approximate
    per_query = {n: np.array(r.indexes[n].per_query["ndcg@10"]) for n in ("exact", "ivf")}
    delta = (per_query["ivf"] - per_query["exact"]).mean()
    assert all_.metric_deltas["ndcg@10"] == pytest.approx(delta)
    cached = list((tmp_path / "cache" / "indexes").glob("faiss-*.faiss"))
    assert len(cached) == 1
    assert section.index_bytes == cached[0].stat().st_size
    assert section.bytes_per_vector == pytest.approx(section.index_bytes / 338)
    assert (
        "hnsw" in r.ann
        and r.ann["hnsw"].index_bytes is not None
        and r.ann["hnsw"].index_bytes > 338 * 64 * 4
    )
    assert r.indexes["ivf"].params == {
        "type": "faiss.index_factory",
        "factory": "IVF16,PQ8x4np",
        "metric": "inner_product",
        "params": {"nprobe": 4},
        "train_size": 200,
        "seed": 3,
    }
    assert json.loads(r.model_dump_json())["ann"]["ivf"]["index_bytes"] > 0
    page = render_run_html(r, None, ev.golden_set)
    size = f"{section.index_bytes / 2**20:.2f} MiB ({section.bytes_per_vector:,.0f} bytes a vector)"
    assert section.distances_per_query is not None and section.distances_per_query < 338
    work = f"{section.distances_per_query:,.0f} distances a query"
    assert f"Its cost: index {size}, {work}." in page


def test_cached_like_the_hnsw_graph_and_searched_with_its_params(
    tmp_path: Path, encoder: None
) -> None:
    """The second run reads the index back (the same rankings); a run at another nprobe reads
    the same file (search parameters do not shape the index) and ranks differently; without a
    cache the index is built, with the same rankings."""
    config = parse_config(_yaml(tmp_path, f"  ivf: {IVF}\n"), "c.yaml")
    first = run_evaluation(config)
    assert first.report.embedding.cache is not None
    assert first.report.embedding.cache.model_extra == {"faiss.ivf": "built"}
    again = run_evaluation(config)
    assert again.report.embedding.cache is not None
    assert again.report.embedding.cache.model_extra == {"faiss.ivf": "hit"}
    assert np.array_equal(first.rankings["ivf"].ids, again.rankings["ivf"].ids)
    wide = IVF.replace("nprobe: 4", "nprobe: 16")
    every_list = run_evaluation(parse_config(_yaml(tmp_path, f"  ivf: {wide}\n"), "c.yaml"))
    assert every_list.report.embedding.cache is not None
    assert every_list.report.embedding.cache.model_extra == {"faiss.ivf": "hit"}
    assert len(list((tmp_path / "cache" / "indexes").glob("faiss-*.faiss"))) == 1
    wide_recall = every_list.report.ann["ivf"].slices["all"].recall["recall@10"]
    assert wide_recall is not None
    assert wide_recall > first.report.ann["ivf"].slices["all"].recall["recall@10"]
    uncached = run_evaluation(parse_config(_yaml(tmp_path, f"  ivf: {IVF}\n", False), "c.yaml"))
    assert np.array_equal(first.rankings["ivf"].ids, uncached.rankings["ivf"].ids)
    assert first.report.fingerprint.digest != every_list.report.fingerprint.digest
    code, out = invoke("cache", "clear", "--dir", str(tmp_path / "cache"))
    assert code == 0, out
    assert not list((tmp_path / "cache" / "indexes").glob("faiss-*.faiss"))


def test_sweep_varies_factory_indexes_and_draws_them_against_bytes(
    tmp_path: Path, encoder: None
) -> None:
    """A sweep over nprobe and the factory string: every point measures the faiss index's cost
    and size (the ANN section's bytes), and the memory front is drawn on the page."""
    config = tmp_path / "c.yaml"
    config.write_text(_yaml(tmp_path, f"  ivf: {IVF}\n  hnsw: {{enabled: false}}\n"))
    sweep_command(
        config=config,
        sets=["indexes.ivf.params.nprobe=1,16", 'indexes.ivf.factory="IVF16,PQ8x4np","IVF16,SQ8"'],
        out=tmp_path / "sweep",
        repeats=1,
    )
    report = SweepReport.model_validate_json((tmp_path / "sweep" / "sweep.json").read_text())
    assert len(report.points) == 4
    sizes = {}
    for p in report.points:
        ivf = p.indexes["ivf"]
        assert ivf.cost is not None and ivf.ann_recall is not None
        sizes[p.settings["indexes.ivf.factory"]] = ivf.cost.index_bytes
    assert sizes["IVF16,PQ8x4np"] < sizes["IVF16,SQ8"]  # 4 bytes a vector against 64
    assert report.pareto_memory
    page = (tmp_path / "sweep" / "sweep.html").read_text()
    assert "against index size" in page and "ivf" in page


def test_the_terminal_says_each_approximate_index_and_its_size(
    tmp_path: Path, encoder: None
) -> None:
    """`evalret run`'s ANN lines: the faiss index beside HNSW, each with its size and the
    vectors its search compared; one dim line gives the latency and the machine. The faiss
    index is gated by default, as HNSW is: its recall 0.40 fails the default floor 0.95."""
    config = tmp_path / "c.yaml"
    config.write_text(_yaml(tmp_path, f"  ivf: {IVF}\n"))
    code, out = invoke("run", "-c", str(config), "--out", str(tmp_path / "out"), "--no-progress")
    assert code == 1, out
    assert "GATE FAILED: 1 of" in out and "ivf/all/ann_recall@10 min 0.95" in out
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    lines = {
        line.split(" against ")[0]: line for line in out.splitlines() if line.startswith("ANN ")
    }
    assert set(lines) == {"ANN hnsw", "ANN ivf"}
    mib = report["ann"]["ivf"]["index_bytes"] / 2**20
    per_vector = report["ann"]["ivf"]["bytes_per_vector"]
    work = report["ann"]["ivf"]["distances_per_query"]
    assert lines["ANN ivf"].endswith(
        f"; index {mib:.2f} MiB ({per_vector:,.0f} bytes a vector), {work:,.0f} distances a query"
    )
    assert "bytes a vector)" in lines["ANN hnsw"]
    [latency] = [line for line in out.splitlines() if line.startswith("latency ")]
    assert latency.startswith("latency (machine-dependent; ") and " CPUs, " in latency
    assert all(f"{name} p50 " in latency for name in ("exact", "hnsw", "ivf"))


def test_index_bytes_are_the_serialized_length() -> None:
    """Counted as faiss writes the index, equal to len(serialize_index) (binary: _binary)."""
    x = np.random.default_rng(1).standard_normal((500, 16)).astype(np.float32)
    graph = faiss.IndexHNSWFlat(16, 8)
    graph.add(x)
    codes = faiss.IndexBinaryFlat(64)
    codes.add(np.packbits(x[:, :16] > 0, axis=1).repeat(4, axis=1))
    assert index_bytes(graph) == len(faiss.serialize_index(graph))
    assert index_bytes(codes) == len(faiss.serialize_index_binary(codes))


def test_an_unreadable_cached_index_is_rebuilt(tmp_path: Path, encoder: None) -> None:
    """A truncated cache file is not trusted: the index is built again (status "rebuilt"), with
    the same rankings, and stored whole."""
    config = parse_config(_yaml(tmp_path, f"  ivf: {IVF}\n"), "c.yaml")
    first = run_evaluation(config)
    (path,) = (tmp_path / "cache" / "indexes").glob("faiss-*.faiss")
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    again = run_evaluation(config)
    assert again.report.embedding.cache is not None
    assert again.report.embedding.cache.model_extra == {"faiss.ivf": "rebuilt"}
    assert np.array_equal(first.rankings["ivf"].ids, again.rankings["ivf"].ids)
    assert path.read_bytes() == whole


# --- memory and training data, checked before faiss allocates (issue #35) ----------------------


@pytest.mark.parametrize(
    ("factory", "names"),
    [
        # faiss's own bound on a codebook (nbits <= 24), held for every codebook
        ("PQ16x30", "PQ16x30 trains 16 codebooks of 2**30 = 1,073,741,824 centroids: faiss "),
        ("IVF20M,Flat", "IVF20M trains a codebook of 20,971,520 centroids: faiss refuses more"),
        ("RQ2x25", "RQ2x25 trains 2 codebooks of 2**25 = 33,554,432 centroids"),
        ("IVF99999999999999999999999,Flat", "a codebook of over 10**18 centroids"),
        # the memory of the smallest index the string can make
        ("PQ16x24", "'PQ16x24' takes 1 GiB even over 16-dimensional vectors, before any is added"),
        ("IVF4M,Flat", "allocates 4,194,304 inverted lists): evalret refuses a factory string"),
        ("RR100000000,Flat", "RR100000000 outputs 100,000,000 dimensions"),
        ("RQ100000000x8", "'RQ100000000x8' takes 95.4 GiB even over 1-dimensional vectors"),
        # numbers faiss crashes on (a signal, exit 134 to 139), fails its search on (exit 3), or
        # never finishes building with
        ("PQ4x0", "'PQ4x0' asks for 0 of something"),
        ("RQ0x8", "'RQ0x8' asks for 0 of something"),
        ("IVF0,Flat", "'IVF0' asks for 0 of something"),
        ("IVF16,PQ4x4fs_0", "'PQ4x4fs_0' asks for 0 of something"),
        ("RR0,Flat", "'RR0' asks for 0 of something"),
        ("PCA0,Flat", "'PCA0' asks for 0 of something"),
        ("HNSW1", "'HNSW1': a HNSW graph needs at least 2 neighbours per node"),
        ("IVF16_HNSW1,Flat", "'HNSW1': a HNSW graph needs at least 2"),
        ("NSG4", "'NSG4': a NSG graph needs at least 8 neighbours per node"),
        ("x" * 30_000, "String should have at most 1000 characters"),  # std::regex crashed
    ],
    ids=lambda v: v if len(v) < 40 else f"{v[:8]}...",
)
def test_a_factory_too_large_for_any_vectors_is_refused_unbuilt(
    tmp_path: Path, factory: str, names: str
) -> None:
    """Figures read from the string alone (data/faiss_demand.py), before faiss is called: the
    config check itself never builds the index at its check dimension (PQ16x20 took 6.6 GiB
    there before its refusal)."""
    with pytest.raises(ConfigError) as e:
        parse_config(_yaml(tmp_path, f'  ivf: {{type: faiss, factory: "{factory}"}}\n'), "c.yaml")
    text = str(e.value).replace("\n", "")
    assert "c.yaml:8: indexes.ivf.factory: " in text and names in text, text


@pytest.mark.parametrize(
    ("index", "key", "says"),
    [
        ('"IVF16,Flat", params: {nprobe: -5}', "nprobe", "from 1 to 2,147,483,647"),
        ('"IVF16,Flat", params: {nprobe: 0}', "nprobe", "not 0"),
        ('"IVF16,Flat", params: {nprobe: 2.5}', "nprobe", "whole number"),
        ('"IVF16,Flat", params: {nprobe: 3000000000}', "nprobe", "not 3000000000"),
        ('"IVF16,Flat", params: {max_codes: -1}', "max_codes", "from 0 to"),
        ('"IVF16_HNSW8,Flat", params: {quantizer_efSearch: -3}', "quantizer_efSearch", "from 1"),
        ('"HNSW8", params: {efSearch: 0}', "efSearch", "from 1 to 16,777,216"),
        ('"HNSW8", params: {efSearch: 2147483647}', "efSearch", "a candidate list this long"),
        ('"IVF16,PQ8", params: {ht: -1}', "ht", "from 0 to"),
        ('"IVF16,PQ8,RFlat", params: {k_factor_rf: 0}', "k_factor_rf", "from 1 to"),
        ('"IVF16,Flat", params: {verbose: 1}', "verbose", "print its progress on stdout"),
    ],
)
def test_a_search_parameter_out_of_range_is_refused_at_its_key(
    tmp_path: Path, index: str, key: str, says: str
) -> None:
    """`nprobe: -5` reached faiss's search and ended as an internal error (exit 3); every
    ParameterSpace parameter is a C int with a least value, checked when the config is read."""
    with pytest.raises(ConfigError) as e:
        parse_config(_yaml(tmp_path, f"  ivf: {{type: faiss, factory: {index}}}\n"), "c.yaml")
    text = str(e.value).replace("\n", "")
    assert f"c.yaml:8: indexes.ivf.params.{key}: " in text and says in text, text


@pytest.mark.parametrize(
    ("index", "key"),
    [
        ('  ivf: {type: faiss, factory: "IVF16,Flat", seed: 3000000000}\n', "indexes.ivf.seed"),
        ('  ivf: {type: faiss, factory: "IVF16,Flat", threads: 100000}\n', "indexes.ivf.threads"),
        ("  hnsw: {ef_search: 3000000000}\n", "indexes.hnsw.ef_search"),
        ("  hnsw: {ef_construction: 0}\n", "indexes.hnsw.ef_construction"),
        ("  hnsw: {m: 3000000000}\n", "indexes.hnsw.m"),
        ("  hnsw: {threads: 100000}\n", "indexes.hnsw.threads"),
    ],
)
def test_graph_and_build_settings_faiss_cannot_take_are_refused(
    tmp_path: Path, index: str, key: str
) -> None:
    """faiss takes these as C ints (a seed or efSearch past 2**31 was an OverflowError, exit 3),
    allocates an efSearch-long list, and starts as many OpenMP threads as asked (100,000 crash
    it): each is bounded in the config."""
    yaml_text = _yaml(tmp_path, "").replace("  hnsw: {enabled: false}\n", "") + index
    with pytest.raises(ConfigError, match=rf"{key}: Input should be (less|greater) than"):
        parse_config(yaml_text, "c.yaml")


@pytest.mark.parametrize(
    ("index", "says"),
    [
        (
            '{type: faiss, factory: "PQ16x20"}',
            "'PQ16x20' cannot be trained on 338 vectors (the whole corpus, 338 documents): "
            "PQ16x20 trains 16 codebooks of 2**20 = 1,048,576 centroids, and faiss's k-means "
            "needs at least one training vector per centroid (1,048,576; 39 per centroid, "
            "40,894,464, to train well)",
        ),
        ('{type: faiss, factory: "IVF400,Flat"}', "IVF400 trains a codebook of 400 centroids"),
        (
            '{type: faiss, factory: "IVF64,Flat", train_size: 50}',
            "cannot be trained on 50 vectors (indexes.ivf.train_size: 50)",
        ),
        ('{type: faiss, factory: "OPQ8,IVF8,PQ8np", train_size: 200}', "OPQ8 trains 8 codebooks"),
        ('{type: faiss, factory: "LSQ2x10"}', "LSQ2x10 trains 2 codebooks of 2**10 = 1,024"),
    ],
)
def test_a_corpus_too_small_to_train_the_index_is_refused_before_embedding(
    tmp_path: Path, encoder: None, index: str, says: str
) -> None:
    """The demo's 338 documents cannot train 2**20 centroids: exit 2 naming the key and the
    figures, before anything is embedded (the cache stays empty) and before faiss allocates
    the codebooks."""
    config = tmp_path / "c.yaml"
    config.write_text(_yaml(tmp_path, f"  ivf: {index}\n"))
    code, out = invoke("run", "-c", str(config), "--out", str(tmp_path / "out"), "--no-progress")
    assert code == 2, out
    flat = out.replace("\n", "")
    assert "indexes.ivf.factory: " in flat and says in flat, out
    assert not (tmp_path / "cache").exists() and not (tmp_path / "out").exists()


def test_building_checks_training_data_and_memory_before_faiss_allocates() -> None:
    """build_factory_index (run, sweep) checks the vectors it is given: too few to train a
    codebook, or codebooks and transforms that take more than the machine's memory, are a
    ConfigError naming the key and the figures, raised before faiss builds anything."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 32)).astype(np.float32)
    cfg = FaissIndexConfig(type="faiss", factory="IVF8,PQ8x9", train_size=200)
    with pytest.raises(
        ConfigError, match=r"indexes\.pq\.factory: .* on 200 vectors .*2\*\*9 = 512"
    ):
        build_factory_index(x, cfg, "pq")
    memory = physical_memory()
    assert memory is not None
    wide = FaissIndexConfig(type="faiss", factory="RR60000000,Flat")  # passes the config
    many = rng.standard_normal((2000, 512)).astype(np.float32)
    need = 512 * 60_000_000 * 4 + 2000 * 60_000_000 * 4  # the matrix and the rotated vectors
    assert need > memory  # about 560 GiB
    with pytest.raises(ConfigError, match=r"more than this machine's memory") as e:
        build_factory_index(many, wide, "rr")
    assert "indexes.rr.factory: 'RR60000000,Flat' over 2,000 vectors of dimension 512" in str(
        e.value
    )


def test_the_config_check_builds_at_the_smallest_dimension_it_can() -> None:
    """check_factory tries dimensions smallest first, where the codebooks are smallest, and
    builds nothing past faiss_demand.CHECK_BYTES; what faiss refuses is still said in its words."""
    assert TRY_DIMS[0] == 1 and TRY_DIMS[-1] == 1680 and 16 in TRY_DIMS
    assert check_factory("PQ16x20", {}) is None  # built at 16 dimensions: 64 MiB
    assert faiss_demand.bytes_at(faiss_demand.parse("PQ16x20"), 1680) > 6 * 2**30
    problem = check_factory("IVF64,Garbage", {})
    assert problem is not None and "could not parse code description Garbage" in problem[1]


def test_pq16x20_is_refused_within_a_small_address_space(tmp_path: Path, encoder: None) -> None:
    """`evalret run` with PQ16x20 on the demo, in a process limited to 1.5 GiB of address space:
    the refusal (exit 2, the figures) comes without the 6.6 GiB faiss allocated for the codebooks
    at the config check's dimension (under this limit that was std::bad_alloc, exit 3)."""
    config = tmp_path / "c.yaml"
    config.write_text(_yaml(tmp_path, '  ivf: {type: faiss, factory: "PQ16x20"}\n'))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(tmp_path)]),
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MALLOC_ARENA_MAX": "2",
    }
    limit = 3 * 2**29

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    done = subprocess.run(
        [sys.executable, "-m", "evalret", "run", "-c", str(config), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        env=env,
        preexec_fn=cap,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert "'PQ16x20' cannot be trained on 338 vectors" in done.stderr.replace("\n", "")
