"""pgvector's part of the adversarial checks of tests/test_store_hostile.py (a real Postgres,
test_pgvector.py's server): an existing table whose vector index serves another metric than
``metric`` is refused at ``metric``, not searched by a sequential scan (exact: recall 1.0)
while the index the table is deployed with goes unmeasured."""

from __future__ import annotations

from typing import Any

import pytest

from evalret.data.config import Config, StoreIndexConfig
from evalret.engines.retrievers.base import SearchJob
from evalret.engines.retrievers.store import StoreRetriever
from evalret.errors import ConfigError
from test_pgvector import ENV, dsn, server  # noqa: F401  (the fixtures, one server per module)
from test_pgvector_store import docs_table  # noqa: F401

pytest.importorskip("psycopg")


def _existing(**more: Any) -> StoreRetriever:
    settings = StoreIndexConfig.model_validate(
        {"type": "store", "driver": "pgvector", "connect": {"dsn_env": ENV}, "collection": "docs"}
        | more
    )
    return StoreRetriever("prod", settings, Config())


def test_an_index_of_another_metric_is_refused(
    docs_table: tuple[SearchJob, str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``docs`` has an HNSW index with vector_ip_ops: searched as l2 or cosine, a ConfigError
    naming indexes.prod.metric and the operator class; as ip it is searched."""
    job, reader = docs_table
    monkeypatch.setenv(ENV, reader)
    for metric in ("l2", "cosine"):
        with pytest.raises(ConfigError, match=r"indexes\.prod\.metric: .*vector_ip_ops"):
            _existing(metric=metric).retrieve(job)
    assert _existing(metric="ip").retrieve(job).ids.shape == (5, 10)
