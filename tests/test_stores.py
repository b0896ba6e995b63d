"""Vector databases through the store interface (``type: store``, engines/stores/): every driver
with the real package, in scratch mode on seeded random vectors.

- **Filter conformance**: on test_filters' documents (missing keys, ints against floats,
  booleans, strings, a key holding two types) and every filter below ($ne / $nin on absent keys,
  nested $and / $or), searched as deep as the corpus, each query gets back exactly the documents
  core/filters.py keeps: the store's translation keeps nothing more and nothing less.
- **A flat collection equals exact search** (same documents in the same order) and reports the
  store's own description.

A driver's approximate settings and its existing-collection mode are tested in its own file.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalret.core.filters import MetadataColumns, eligibility, parse_filter
from evalret.core.ranking import id_rank
from evalret.data.config import Config, StoreIndexConfig
from evalret.engines.faiss_index import build_exact, search
from evalret.engines.retrievers.base import SearchJob
from evalret.engines.retrievers.store import StoreRetriever
from test_filters import DOCS, FILTERS

# the local drivers (pgvector's conformance is in test_pgvector.py: it needs a server)
DRIVERS = ["lancedb", "qdrant", "chroma"]

CONFORMANCE = [
    *FILTERS,
    {"year": 2021.0},  # a float operand: the int 2021 and the float 2021.0 both equal it
    {"year": {"$in": [2020.0, 2024]}},
    {"year": {"$ne": 2020}},  # keeps the string year and the documents without one
    {"year": "2022"},  # the string year alone
    {"open": False},
    {"open": {"$in": [True, False]}},
    {"open": {"$ne": True}},  # keeps open: 1 (a number) and the documents without open
    {"open": 1},
    {"lang": {"$nin": ["de"]}, "open": {"$ne": False}},
    {"$or": [{"$and": [{"lang": "en"}, {"open": True}]}, {"missing": {"$nin": ["x"]}}]},
    {"$and": [{"$or": [{"lang": "fr"}, {"lang": "de"}]}, {"year": {"$gte": 2021}}]},
    {"$or": [{"missing": "x"}, {"lang": {"$in": ["zz"]}}]},  # nothing
]


def _random(n: int, dim: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def job_of(
    docs: np.ndarray, queries: np.ndarray, depth: int, raw: list[Any] | None = None
) -> SearchJob:
    """A job over ``docs`` (ids d00000...); with ``raw``, the documents' metadata cycles through
    test_filters.DOCS and query i has filter ``raw[i]`` (None: none)."""
    ids = [f"d{i:05d}" for i in range(len(docs))]
    job = SearchJob(
        doc_ids=ids,
        doc_texts=ids,
        query_texts=[f"q{i}" for i in range(len(queries))],
        doc_vectors=docs,
        query_vectors=queries,
        rank=id_rank(ids),
        depth=depth,
        earlier={},
        progress=lambda _label, _total: lambda _n: None,
        timed=lambda _label: contextlib.nullcontext(),
        query_ids=[f"q{i}" for i in range(len(queries))],
    )
    if raw is None:
        return job
    metadata = [DOCS[i % len(DOCS)] for i in range(len(docs))]
    filters = [None if f is None else parse_filter(f) for f in raw]
    return replace(
        job,
        eligibility=eligibility(filters, MetadataColumns(metadata)),
        filters=filters,
        doc_metadata=metadata,
    )


def scratch(driver: str, tmp_path: Path, **more: Any) -> StoreRetriever:
    """A scratch-mode store index of ``driver`` in ``tmp_path`` (flat unless ``build``)."""
    settings = StoreIndexConfig.model_validate(
        {"type": "store", "driver": driver, "mode": "scratch", "connect": {"path": tmp_path / "s"}}
        | more
    )
    return StoreRetriever("store", settings, Config())


@pytest.mark.parametrize("driver", DRIVERS)
def test_filter_conformance(driver: str, tmp_path: Path) -> None:
    """Every filter keeps, in the store, exactly the documents core/filters.py keeps."""
    docs = _random(60, 8, 3)
    raw: list[Any] = [*CONFORMANCE, None]
    job = job_of(docs, _random(len(raw), 8, 4), 60, raw)
    retriever = scratch(driver, tmp_path)
    retriever.check_filters([f for f in job.filters if f is not None])
    got = retriever.retrieve(job)
    assert job.eligibility is not None
    for qi, f in enumerate(raw):
        mask = job.eligibility.mask(qi)
        expected = set(range(60)) if mask is None else set(np.flatnonzero(mask).tolist())
        assert {int(d) for d in got.ids[qi] if d >= 0} == expected, json.dumps(f)
    params = retriever.params()
    assert "documents_outside_filter" not in params and "queries_short" not in params


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_flat_collection_equals_exact_search(driver: str, tmp_path: Path) -> None:
    """Flat (no index built): the same top 10 as exact search, scores within float32's
    rounding; the store's description in the params."""
    docs, queries = _random(300, 16, 1), _random(20, 16, 2)
    job = job_of(docs, queries, 10)
    retriever = scratch(driver, tmp_path)
    got = retriever.retrieve(job)
    exact = search(build_exact(docs), queries, 10, job.rank)
    assert got.ids.tolist() == exact.ids.tolist()
    np.testing.assert_allclose(got.scores, exact.scores, atol=1e-5)
    params = retriever.params()
    assert params["type"] == f"store.{driver}" and params["store"]["rows"] == 300
    assert not (tmp_path / "s").exists() or not any(
        p.name.startswith("evalret_scratch_") for p in (tmp_path / "s").iterdir()
    )
