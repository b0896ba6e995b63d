"""Adversarial checks of the store interface (engines/stores/, engines/retrievers/store.py) with
the real packages: ways a store could soften a gate's verdict or break a guarantee.

- LanceDB: an existing table whose vector index was built for another metric is refused at
  ``metric`` (LanceDB would silently search it by brute force, and recall would read 1.0).
- Qdrant: local mode builds no index and searches exactly, so ``build:`` / ``search:`` there
  would be measured as recall 1.0 whatever they say: refused at their key.
- Scratch leftovers: a process holding a scratch session, killed with SIGKILL, leaves its
  collection in the local store; the next scratch session there drops it and says so in the
  cache notes; a live process's collection is never dropped (engines/stores/common.py). In a
  Milvus Lite ``.db`` likewise, and without ``connect.path`` the killed run's temporary
  directory.
- Ties at the cut follow the tie rule in every local driver, twice alike.
- Documents a store lets through a filter are dropped and counted, the fetch widens past them;
  a filter keeping no document ranks nothing (it crashed the widening check).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
import pytest
from lancedb.index import IvfFlat

import evalret
from evalret.data.config import Config, StoreIndexConfig
from evalret.engines.retrievers.store import StoreRetriever
from evalret.engines.stores.common import stale_scratch
from evalret.errors import ConfigError
from test_stores import _random, job_of, scratch


def _lance_existing(path: Path, **more: Any) -> StoreRetriever:
    settings = StoreIndexConfig.model_validate(
        {
            "type": "store",
            "driver": "lancedb",
            "connect": {"path": path},
            "collection": "docs",
            "id_field": "id",
        }
        | more
    )
    return StoreRetriever("prod", settings, Config())


def test_a_lancedb_index_of_another_metric_is_refused(tmp_path: Path) -> None:
    """A table indexed for L2, searched as ``metric: ip``: a ConfigError naming
    indexes.prod.metric and the index's metric (not a brute-force scan read as the index);
    ``metric: l2`` searches it; ``bypass_vector_index`` (a flat scan asked for) is not refused."""
    docs = _random(300, 8, 1)
    db = lancedb.connect(str(tmp_path / "l"))
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(docs.ravel()), 8)
    table = db.create_table(
        "docs", pa.table({"id": [f"d{i:05d}" for i in range(300)], "vector": vectors})
    )
    table.create_index("vector", config=IvfFlat(distance_type="l2", num_partitions=4))
    job = job_of(docs, _random(5, 8, 2), 5)
    with pytest.raises(ConfigError, match=r"indexes\.prod\.metric: .*L2.* \(metric l2\)"):
        _lance_existing(tmp_path / "l", metric="ip").retrieve(job)
    with pytest.raises(ConfigError, match=r"indexes\.prod\.metric: "):
        _lance_existing(tmp_path / "l", metric="cosine").retrieve(job)
    assert _lance_existing(tmp_path / "l", metric="l2").retrieve(job).ids.shape == (5, 5)
    flat = _lance_existing(tmp_path / "l", metric="ip", search={"bypass_vector_index": True})
    assert flat.retrieve(job).ids.shape == (5, 5)


HOLDER = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    from evalret.data.config import StoreIndexConfig
    from evalret.engines.stores import ScratchRows, driver_of

    driver, path = sys.argv[1], sys.argv[2]
    connect = {"path": path} if path != "-" else {}  # "-": a temporary directory
    settings = StoreIndexConfig.model_validate(
        {"type": "store", "driver": driver, "mode": "scratch", "connect": connect}
    )
    vectors = np.random.default_rng(0).standard_normal((40, 8)).astype("float32")
    rows = ScratchRows([f"d{i:05d}" for i in range(40)], vectors)
    with driver_of(driver).open(settings, "s", rows, lambda n: None):
        print("ready", flush=True)
        time.sleep(120)
    """
)


def _hold(driver: str, path: Path | str, tmp: Path | None = None) -> subprocess.Popen[str]:
    """A process holding a scratch session of ``driver`` in ``path`` ("-": none, a temporary
    directory in ``tmp``), once it is loaded."""
    env = os.environ | {"PYTHONPATH": str(Path(evalret.__file__).parents[1])}
    if tmp is not None:
        env["TMPDIR"] = str(tmp)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, driver, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def _kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait()


@pytest.fixture
def holders() -> Iterator[list[subprocess.Popen[str]]]:
    """Processes a test starts, killed at its end whatever happens."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            _kill(proc)


def _scratch_names(driver: str, path: Path) -> list[str]:
    """The scratch collections (or Milvus Lite databases) in the local store, by the store's
    own client."""
    if driver == "qdrant":
        from qdrant_client import QdrantClient

        client = QdrantClient(path=str(path))
        names = [c.name for c in client.get_collections().collections]
        client.close()
    elif driver == "chroma":
        import chromadb

        names = [c.name for c in chromadb.PersistentClient(path=str(path)).list_collections()]
    else:
        names = [p.name for p in path.glob("evalret_scratch_*")]
    return sorted(n for n in names if n.startswith("evalret_scratch_"))


@pytest.mark.parametrize("driver", ["lancedb", "qdrant", "chroma", "milvus"])
def test_a_killed_runs_scratch_collection_is_dropped_by_the_next(
    driver: str, tmp_path: Path, holders: list[subprocess.Popen[str]]
) -> None:
    """SIGKILL while the scratch collection is loaded: it stays in ``connect.path``; the next
    scratch session there drops it (counted in the cache notes) and leaves nothing."""
    path = tmp_path / "s"
    holders.append(_hold(driver, path))
    pid = holders[0].pid
    _kill(holders[0])
    left = _scratch_names(driver, path)
    assert len(left) == 1 and left[0].startswith(f"evalret_scratch_{pid}_")
    docs = _random(40, 8, 1)
    retriever = scratch(driver, tmp_path)
    assert retriever.retrieve(job_of(docs, _random(3, 8, 2), 5)).ids.shape == (3, 5)
    assert _scratch_names(driver, path) == []
    note = retriever.cache_notes()["store.store"]
    assert note.endswith("; 1 scratch collections of killed runs dropped")


def test_a_live_runs_scratch_collection_is_kept(
    tmp_path: Path, holders: list[subprocess.Popen[str]]
) -> None:
    """A scratch session opening beside another live run in the same LanceDB directory leaves
    that run's table alone (and this process's own names are never stale)."""
    path = tmp_path / "s"
    holders.append(_hold("lancedb", path))
    theirs = _scratch_names("lancedb", path)
    retriever = scratch("lancedb", tmp_path)
    retriever.retrieve(job_of(_random(40, 8, 1), _random(3, 8, 2), 5))
    assert _scratch_names("lancedb", path) == theirs
    assert "killed runs" not in retriever.cache_notes()["store.store"]
    mine = f"evalret_scratch_{os.getpid()}_00ff"
    live = f"evalret_scratch_{holders[0].pid}_abcd.db"
    assert stale_scratch([mine, live, "evalret_scratch_x_1", "docs"]) == []


@pytest.mark.parametrize("driver", ["lancedb", "qdrant", "chroma", "milvus"])
def test_ties_at_the_cut_follow_the_tie_rule(driver: str, tmp_path: Path) -> None:
    """Sixty documents share one vector, the queries' nearest: far more than the fetch holds.
    A flat collection ranks the ten with the highest ids among them (the tie rule: score, then
    document id descending), as exact search does, and two runs agree."""
    docs = _random(200, 8, 1)
    docs[20:80] = docs[20]
    queries = np.repeat(docs[20:21], 3, axis=0) + 0.01 * _random(3, 8, 2)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    job = job_of(docs, queries.astype(np.float32), 10)
    first = scratch(driver, tmp_path).retrieve(job)
    again = scratch(driver, tmp_path).retrieve(job)
    assert first.ids.tolist() == again.ids.tolist() == [list(range(79, 69, -1))] * 3


def test_documents_a_store_lets_through_the_filter_are_dropped_and_the_fetch_widens(
    tmp_path: Path,
) -> None:
    """An existing table whose ``lang`` column says "en" for every document (the golden set:
    a third of them): the store returns documents the filter excludes; they are dropped and
    counted, the fetch widens past them, and each query still ranks exactly the exact filtered
    top 10 (no query short)."""
    docs, queries = _random(300, 8, 1), _random(6, 8, 2)
    db = lancedb.connect(str(tmp_path / "l"))
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(docs.ravel()), 8)
    ids = [f"d{i:05d}" for i in range(300)]
    db.create_table("docs", pa.table({"id": ids, "vector": vectors, "lang": ["en"] * 300}))
    job = job_of(docs, queries, 10, [{"lang": "en"}] * 6)
    retriever = _lance_existing(tmp_path / "l")
    got = retriever.retrieve(job)
    assert job.eligibility is not None
    for qi in range(6):
        mask = job.eligibility.mask(qi)
        assert mask is not None
        scores = np.where(mask, docs @ queries[qi], -np.inf)
        assert got.ids[qi].tolist() == np.argsort(-scores, kind="stable")[:10].tolist()
    params = retriever.params()
    assert params["documents_outside_filter"] > 0 and "queries_short" not in params


@pytest.mark.parametrize(
    ("more", "key"),
    [
        ({"mode": "scratch", "build": {"m": 4}}, "indexes.q.build.m"),
        ({"mode": "scratch", "search": {"hnsw_ef": 8}}, "indexes.q.search.hnsw_ef"),
        ({"collection": "docs", "search": {"hnsw_ef": 8}}, "indexes.q.search.hnsw_ef"),
    ],
)
def test_qdrant_settings_local_mode_ignores_are_refused(
    more: dict[str, Any], key: str, tmp_path: Path
) -> None:
    """In local mode (a path, or in memory) an HNSW setting cannot take effect: a ConfigError
    at its key, before anything is embedded, rather than an exact search gated as the HNSW the
    config describes; on a server the same settings are accepted."""
    for connect in ({"path": tmp_path / "q"}, {}):
        settings = StoreIndexConfig.model_validate(
            {"type": "store", "driver": "qdrant", "connect": connect} | more
        )
        if connect or more.get("mode") == "scratch":
            with pytest.raises(ConfigError, match=rf"{key}: qdrant's local mode"):
                StoreRetriever("q", settings, Config())
    server = {"type": "store", "driver": "qdrant", "connect": {"url": "http://127.0.0.1:6333"}}
    StoreRetriever("q", StoreIndexConfig.model_validate(server | more), Config())


def test_a_killed_runs_collection_in_a_milvus_lite_database_is_dropped(
    tmp_path: Path, holders: list[subprocess.Popen[str]]
) -> None:
    """``connect.path`` a Milvus Lite ``.db``: the killed run's scratch collection inside it is
    dropped by the next scratch session, the user's own collection left alone."""
    import pymilvus
    from milvus_lite.server_manager import server_manager_instance

    path = tmp_path / "s.db"
    client = pymilvus.MilvusClient(uri=str(path))
    client.create_collection("mine", dimension=8)
    client.close()
    server_manager_instance.release_server(str(path))  # the holder opens it next
    holders.append(_hold("milvus", path))
    _kill(holders[0])
    settings = {"type": "store", "driver": "milvus", "mode": "scratch", "connect": {"path": path}}
    retriever = StoreRetriever("store", StoreIndexConfig.model_validate(settings), Config())
    retriever.retrieve(job_of(_random(40, 8, 1), _random(3, 8, 2), 5))
    assert retriever.cache_notes()["store.store"].endswith(
        "; 1 scratch collections of killed runs dropped"
    )
    client = pymilvus.MilvusClient(uri=str(path))
    assert client.list_collections() == ["mine"]
    client.close()


def test_a_filter_keeping_nothing_that_the_store_lets_through(tmp_path: Path) -> None:
    """The golden set's filter keeps no document, the store's column keeps every one: each
    query ranks nothing (not a crash), every document the store returned above the cut counted
    outside the filter, and the query is not short (it could rank nothing)."""
    docs, queries = _random(100, 8, 1), _random(4, 8, 2)
    db = lancedb.connect(str(tmp_path / "l"))
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(docs.ravel()), 8)
    ids = [f"d{i:05d}" for i in range(100)]
    db.create_table("docs", pa.table({"id": ids, "vector": vectors, "lang": ["es"] * 100}))
    job = job_of(docs, queries, 10, [{"lang": "es"}, None, {"lang": "es"}, None])
    retriever = _lance_existing(tmp_path / "l")
    got = retriever.retrieve(job)
    assert (got.ids[[0, 2]] == -1).all() and (got.ids[[1, 3]] >= 0).all()
    params = retriever.params()
    assert params["documents_outside_filter"] > 0 and "queries_short" not in params


@pytest.mark.parametrize(("driver", "kind"), [("lancedb", "lance"), ("milvus", "milvus")])
def test_a_killed_runs_temporary_store_is_removed_by_the_next(
    driver: str,
    kind: str,
    tmp_path: Path,
    holders: list[subprocess.Popen[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Scratch mode without ``connect.path``: the killed run's temporary directory (its
    document vectors) is removed by the next scratch session without one, and counted; a live
    run's is left."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    holders.append(_hold(driver, "-", tmp_path))
    holders.append(_hold(driver, "-", tmp_path))
    _kill(holders[0])
    dead, live = (f"evalret-{kind}-{p.pid}-" for p in holders)
    names = [p.name for p in tmp_path.iterdir()]
    assert len(names) == 2 and {n.startswith((dead, live)) for n in names} == {True}
    assert any(n.startswith(dead) for n in names)
    settings = {"type": "store", "driver": driver, "mode": "scratch"}
    retriever = StoreRetriever("store", StoreIndexConfig.model_validate(settings), Config())
    retriever.retrieve(job_of(_random(40, 8, 1), _random(3, 8, 2), 5))
    note = retriever.cache_notes()["store.store"]
    assert note.endswith("; 1 scratch collections of killed runs dropped")
    names = [p.name for p in tmp_path.iterdir()]
    assert len(names) == 1 and names[0].startswith(live)
