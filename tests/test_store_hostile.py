"""Adversarial checks of the store interface (engines/stores/, engines/retrievers/store.py) with
the real packages: ways a store could soften a gate's verdict or break a guarantee.

- LanceDB: an existing table whose vector index was built for another metric is refused at
  ``metric`` (LanceDB would silently search it by brute force, and recall would read 1.0).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
import pytest
from lancedb.index import IvfFlat

from evalret.data.config import Config, StoreIndexConfig
from evalret.engines.retrievers.store import StoreRetriever
from evalret.errors import ConfigError
from test_stores import _random, job_of


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
