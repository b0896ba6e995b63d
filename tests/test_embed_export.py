"""`evalret embed --export FILE`: evalret's document vectors out (Parquet or .npz, with the model
identity), then in again through a Python retriever that searches the file exactly, whose
metrics equal the exact index's on every query."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from evalret.data.vector_export import METADATA_KEY, read_export
from helpers import HASH_ENCODER, invoke, marks_its_users

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "golden_sets" / "demo"

ENCODER = HASH_ENCODER

# a user's retriever: the exported file searched exactly (faiss's flat inner product), every
# document returned (evalret applies the tie rule and the depth)
STORE = """
import os
import faiss
import numpy as np
import pyarrow.parquet as pq

_INDEX = {}

def _load():
    if not _INDEX:
        table = pq.read_table(os.environ["EXPORTED_VECTORS"])
        dim = table.schema.field("vector").type.list_size
        flat = table.column("vector").combine_chunks().flatten().to_numpy()
        vectors = np.ascontiguousarray(flat.reshape(-1, dim), dtype=np.float32)
        index = faiss.IndexFlatIP(dim)
        index.add(vectors)
        _INDEX.update(ids=table.column("id").to_pylist(), index=index)
    return _INDEX["ids"], _INDEX["index"]

def search(query_ids, query_texts, query_vectors, depth):
    ids, index = _load()
    scores, rows = index.search(np.ascontiguousarray(query_vectors), len(ids))
    return [
        [(ids[r], float(s)) for s, r in zip(srow, rrow) if r >= 0]
        for srow, rrow in zip(scores, rows)
    ]
"""

# documents' metadata written as a user would: unicode, nested objects and lists, a big integer
METADATA = [
    {"lang": "日本語", "tags": ["é", "ß", {"deep": [1, 2.5, None, True]}]},
    {"emoji": "✓ ok", "n": 2**60, "nested": {"a": {"b": {"c": "ünïcödé"}}}},
    None,  # no metadata: {}
]


def _golden(directory: Path) -> Path:
    """The demo's golden set with metadata on its first documents (METADATA)."""
    directory.mkdir(parents=True)
    shutil.copy(DEMO / "queries.jsonl", directory / "queries.jsonl")
    lines = (DEMO / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    out = []
    for i, line in enumerate(lines):
        doc = json.loads(line)
        if i < len(METADATA):
            doc.pop("metadata", None)
            if METADATA[i] is not None:
                doc["metadata"] = METADATA[i]
        out.append(json.dumps(doc, ensure_ascii=False) + "\n")
    (directory / "corpus.jsonl").write_text("".join(out), encoding="utf-8")
    return directory


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp_path with a hashing encoder and the store plug-in importable, the demo's golden set
    with metadata, and a config (exact index and the store; a cache of its own)."""
    (tmp_path / "export_encoder.py").write_text(textwrap.dedent(ENCODER))
    (tmp_path / "export_store.py").write_text(textwrap.dedent(STORE))
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("export_encoder", "export_store"):
        sys.modules.pop(name, None)
    golden = _golden(tmp_path / "golden")
    (tmp_path / "cfg.yaml").write_text(
        f"golden_set: {{path: {golden}}}\n"
        "metrics: [ndcg@10, recall@10, mrr@10, map@100]\n"
        f"cache: {{dir: {tmp_path / 'cache'}}}\n"
        "model: {provider: python, callable: 'export_encoder:make', options: {dim: 64}}\n"
        "indexes:\n"
        "  hnsw: {enabled: false}\n  bm25: {enabled: false}\n  hybrid: {enabled: false}\n"
        "  store: {type: python, callable: 'export_store:search'}\n"
        "gate: {indexes: [exact, store]}\n"
    )
    return tmp_path


def _export(config: Path, target: Path, *extra: str) -> str:
    code, output = invoke(
        "embed", "-c", str(config), "--no-progress", "--export", str(target), *extra
    )
    assert code == 0, output
    return output


def _per_query(report: dict[str, Any], index: str) -> dict[str, Any]:
    return report["indexes"][index]["per_query"]


def _round_trip(config: Path, exported: Path, out: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`run` with the store plug-in reading ``exported``: its metrics equal the exact index's
    on every query and in every slice."""
    monkeypatch.setenv("EXPORTED_VECTORS", str(exported))
    code, output = invoke("run", "-c", str(config), "--no-progress", "-o", str(out))
    assert code == 0, output
    report = json.loads((out / "report.json").read_text())
    exact, store = _per_query(report, "exact"), _per_query(report, "store")
    assert exact and exact == store
    slices = {n: report["indexes"][n]["slices"] for n in ("exact", "store")}
    assert slices["exact"] == slices["store"]
    # every document and query was read from the cache the export filled
    cache = report["embedding"]["cache"]
    assert cache["document"]["misses"] == 0 and cache["query"]["misses"] == 0


def test_export_then_a_store_then_run_equals_exact(
    world: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's round trip: `embed --export` fills the cache and writes the file; a Python
    retriever searching the file exactly gives the exact index's metrics, per query."""
    exported = world / "vectors.parquet"
    output = _export(world / "cfg.yaml", exported)
    assert "export: 338 document vector(s) of dimension 64 (parquet)" in output
    _round_trip(world / "cfg.yaml", exported, world / "run", monkeypatch)


def _demo_docs() -> list[dict[str, Any]]:
    return [json.loads(x) for x in (DEMO / "corpus.jsonl").read_text().splitlines()]


def test_the_parquet_file_holds_evalret_s_rows_and_model(world: Path) -> None:
    """One row per document in the golden set's order: id, the vector the cache holds
    (normalised), the sha256 of the text embedded, the metadata as written; the model identity
    in the key-value metadata."""
    exported = world / "vectors.parquet"
    _export(world / "cfg.yaml", exported)
    schema = pq.read_schema(exported)
    assert schema.names == ["id", "vector", "text_sha256", "metadata"]
    assert str(schema.field("vector").type) == "fixed_size_list<element: float>[64]"
    columns, carried = read_export(exported)
    docs = _demo_docs()
    assert columns["id"] == [d["id"] for d in docs]
    texts = [(d.get("title", "") + " " + d["text"]).strip() for d in docs]
    assert columns["text_sha256"] == [hashlib.sha256(t.encode()).hexdigest() for t in texts]
    vectors = columns["vector"]
    assert vectors.dtype == np.float32 and vectors.shape == (338, 64)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # metadata round trip: unicode, nested values and a big integer as written; {} without one
    meta = [json.loads(m) for m in columns["metadata"]]
    own = [d.get("metadata", {}) for d in docs[len(METADATA) :]]
    assert meta[: len(METADATA)] == [m or {} for m in METADATA] and meta[len(METADATA) :] == own
    assert "日本語" in columns["metadata"][0]  # written as text, not \\u escapes
    model = carried["model"]
    assert carried["format"] == 1 and carried["rows"] == 338
    assert model["name"] == "export_encoder:make" and model["dimension"] == 64
    assert model["normalize"] is True and model["metric"] == "ip"
    assert model["query_prefix"] == "" and model["document_prefix"] == ""
    assert model["identity"]["callable"] == "export_encoder:make"
    namespaces = [p.name for p in (world / "cache" / "embeddings").iterdir()]
    assert namespaces == [model["fingerprint"][:32]]
    assert json.loads(schema.metadata[METADATA_KEY.encode()]) == carried


def test_npz_holds_the_same_rows(world: Path) -> None:
    """The .npz form: the same columns and model identity, readable without pickle."""
    _export(world / "cfg.yaml", world / "v.parquet")
    output = _export(world / "cfg.yaml", world / "v.npz")
    assert "(npz)" in output and "0 embedded" in output  # the cache held every vector
    parquet, carried_p = read_export(world / "v.parquet")
    npz, carried_n = read_export(world / "v.npz")
    assert carried_p == carried_n
    for key in ("id", "text_sha256", "metadata"):
        assert parquet[key] == npz[key]
    assert np.array_equal(parquet["vector"], npz["vector"])
    with np.load(world / "v.npz", allow_pickle=False) as data:
        assert sorted(data.files) == sorted(["id", "vector", "text_sha256", "metadata", "evalret"])
        assert data["vector"].dtype == np.float32


def test_npz_round_trip_equals_exact(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The .npz file's vectors searched exactly give the exact index's metrics too."""
    _export(world / "cfg.yaml", world / "v.npz")
    columns, _ = read_export(world / "v.npz")
    import pyarrow as pa

    # the plug-in reads Parquet: the .npz's columns rewritten as one, nothing else changed
    dim = columns["vector"].shape[1]
    flat = pa.array(columns["vector"].reshape(-1), pa.float32())
    table = pa.table({"id": columns["id"], "vector": pa.FixedSizeListArray.from_arrays(flat, dim)})
    pq.write_table(table, world / "from-npz.parquet")
    _round_trip(world / "cfg.yaml", world / "from-npz.parquet", world / "run", monkeypatch)


@pytest.mark.parametrize("suffix", [".parquet", ".npz"])
def test_the_same_vectors_give_the_same_bytes(world: Path, suffix: str) -> None:
    """Nothing time-dependent is written: two exports (the first embedding, the second reading
    the cache) are byte-identical."""
    first, second = world / f"a{suffix}", world / f"b{suffix}"
    _export(world / "cfg.yaml", first)
    _export(world / "cfg.yaml", second)
    assert first.read_bytes() == second.read_bytes()


def test_dimension_is_honoured(world: Path) -> None:
    """`--dimension 16`: the vectors are the run's (the first 16 dimensions, normalised
    again), and the identity says so."""
    _export(world / "cfg.yaml", world / "full.parquet")
    _export(world / "cfg.yaml", world / "short.npz", "--dimension", "16")
    full, _ = read_export(world / "full.parquet")
    short, carried = read_export(world / "short.npz")
    assert short["vector"].shape == (338, 16)
    assert carried["model"]["dimension"] == 16 and carried["model"]["truncate_dim"] == 16
    assert (
        carried["model"]["fingerprint"]
        != read_export(world / "full.parquet")[1]["model"]["fingerprint"]
    )
    # the unnormalised hash counts, cut to 16 and normalised, are the full vectors' first 16
    # dimensions normalised again (both are one positive scale of the same counts)
    cut = full["vector"][:, :16]
    norms = np.linalg.norm(cut, axis=1, keepdims=True)
    nonzero = norms[:, 0] > 0
    assert np.allclose(short["vector"][nonzero], (cut / np.where(norms > 0, norms, 1))[nonzero])


def test_prefixes_are_in_the_identity(world: Path) -> None:
    """The prefixes as fed travel with the vectors (a store's queries need the query one)."""
    _export(
        world / "cfg.yaml",
        world / "p.parquet",
        "--set",
        "model.query_prefix='query: '",
        "--set",
        "model.document_prefix='passage: '",
    )
    _, carried = read_export(world / "p.parquet")
    assert carried["model"]["query_prefix"] == "query: "
    assert carried["model"]["document_prefix"] == "passage: "


def test_export_without_a_dense_index_embeds_the_documents(world: Path) -> None:
    """A config none of whose indexes needs vectors (the store alone) still exports every
    document."""
    text = (world / "cfg.yaml").read_text().replace("[exact, store]", "[store]")
    (world / "store.yaml").write_text(
        text.replace(
            "  hnsw: {enabled: false}", "  exact: {enabled: false}\n  hnsw: {enabled: false}"
        )
    )
    output = _export(world / "store.yaml", world / "v.parquet")
    assert "0 text(s)" not in output
    columns, _ = read_export(world / "v.parquet")
    assert len(columns["id"]) == 338 and columns["vector"].shape == (338, 64)


@pytest.mark.parametrize("name", ["v.csv", "v.PARQUET.json", "v"])
def test_an_unknown_suffix_is_refused(world: Path, name: str) -> None:
    code, output = invoke(
        "embed", "-c", str(world / "cfg.yaml"), "--no-progress", "--export", str(world / name)
    )
    flat = " ".join(output.split())
    assert code == 2 and ".parquet or .npz" in flat
    assert not (world / name).exists() and not (world / "cache").exists()  # nothing embedded


def test_export_with_shard_is_refused(world: Path) -> None:
    code, output = invoke(
        "embed",
        "-c",
        str(world / "cfg.yaml"),
        "--no-progress",
        "--shard",
        "1/2",
        "--export",
        str(world / "v.parquet"),
    )
    assert code == 2 and "--export with --shard" in " ".join(output.split())
    assert not (world / "v.parquet").exists() and not (world / "cache").exists()


@pytest.mark.parametrize(
    "target",
    ["cfg.yaml", "golden/corpus.jsonl", "golden/new.parquet", "export_store.py"],
)
def test_export_never_overwrites_an_input(world: Path, target: str) -> None:
    """The export over the config, a golden-set file, into the golden set's directory, or over
    a plug-in's source is refused (exit 2), the file unchanged and nothing embedded."""
    path = world / target
    path.parent.mkdir(parents=True, exist_ok=True)
    before = path.read_bytes() if path.exists() else None
    if target.endswith(".parquet"):
        code, output = invoke(
            "embed", "-c", str(world / "cfg.yaml"), "--no-progress", "--export", str(path)
        )
    else:  # a link with the right suffix to the input
        link = world / "link.npz"
        link.symlink_to(path)
        code, output = invoke(
            "embed", "-c", str(world / "cfg.yaml"), "--no-progress", "--export", str(link)
        )
    assert code == 2, output
    assert "--export" in output
    assert (path.read_bytes() if path.exists() else None) == before
    assert not (world / "cache").exists()


def test_export_into_the_embedding_cache_is_refused(world: Path) -> None:
    _export(world / "cfg.yaml", world / "v.parquet")
    namespace = next((world / "cache" / "embeddings").iterdir())
    code, output = invoke(
        "embed",
        "-c",
        str(world / "cfg.yaml"),
        "--no-progress",
        "--export",
        str(namespace / "v.parquet"),
    )
    assert code == 2 and "--export" in output
    assert not (namespace / "v.parquet").exists()


def _docs_example(page: str, heading: str) -> str:
    """The first ```python block under ``heading`` of docs/``page``."""
    text = (REPO / "docs" / page).read_text()
    section = text.split(heading, 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_lancedb_example_loads_the_export(
    world: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The how-to's LanceDB example, run on an export: every row loaded, a document's own vector
    finds it first. LanceDB is no dependency of evalret, only of its tests (the test extra)."""
    _export(world / "cfg.yaml", world / "vectors.parquet")
    monkeypatch.chdir(world)
    code = _docs_example("how-to/python-retrievers.md", "## Load your store with evalret's vectors")
    exec(compile(code, "python-retrievers.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "export_encoder:make 64 ip ''" in printed
    first = _demo_docs()[0]["id"]
    assert f"[('{first}'" in printed


# --- the packaged model ----------------------------------------------------------------------


@pytest.fixture(scope="module")
@marks_its_users("model")
def demo_world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo config (the packaged model) with a cache of its own, plus the store plug-in."""
    base = tmp_path_factory.mktemp("export-demo")
    (base / "export_store.py").write_text(textwrap.dedent(STORE))
    text = (REPO / "configs" / "default.yaml").read_text()
    text = text.replace("path: ../golden_sets/demo", f"path: {DEMO}")
    text = text.replace("dir: ../reports", f"dir: {base / 'reports'}")
    text = text.replace(
        "  hybrid:                 # reciprocal",
        "  store: {type: python, callable: 'export_store:search'}\n"
        "  hybrid:                 # reciprocal",
    )
    (base / "cfg.yaml").write_text(text + f"cache:\n  dir: {base / 'cache'}\n")
    return base


def test_demo_model_round_trip(demo_world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the packaged model: export, then the store plug-in reading the file gives the
    exact index's metrics on every query; the identity names the model."""
    monkeypatch.syspath_prepend(str(demo_world))
    sys.modules.pop("export_store", None)
    exported = demo_world / "demo.parquet"
    _export(demo_world / "cfg.yaml", exported)
    _, carried = read_export(exported)
    assert carried["model"]["name"] == "all-MiniLM-L6-v2"
    assert carried["model"]["dimension"] == 384
    assert carried["model"]["identity"]["weights_sha256"]
    _round_trip(demo_world / "cfg.yaml", exported, demo_world / "run", monkeypatch)


def test_a_sample_exports_the_documents_the_run_searches(
    world: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `sample`, the run searches the documents kept for the drawn queries: the export
    holds those, and the round trip still equals exact."""
    with (world / "cfg.yaml").open("a") as f:
        f.write("sample: {queries: 20, documents: 100, seed: 3}\n")
    _export(world / "cfg.yaml", world / "v.parquet")
    columns, _ = read_export(world / "v.parquet")
    assert len(columns["id"]) == 100
    _round_trip(world / "cfg.yaml", world / "v.parquet", world / "run", monkeypatch)
