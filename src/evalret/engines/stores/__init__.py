"""Vector databases as indexes (``type: store``): one driver per store, imported only when a
config names it (each store's package is an optional extra). The protocol is in driver.py, the
shared search in search.py, the retriever in engines/retrievers/store.py."""

from __future__ import annotations

import importlib

from evalret.engines.stores.driver import Hit, ScratchRows, StoreDriver, StoreSession

__all__ = ["DRIVERS", "Hit", "ScratchRows", "StoreDriver", "StoreSession", "driver_of"]

# driver name -> the module whose DRIVER implements it
DRIVERS = {
    "qdrant": "evalret.engines.stores.qdrant",
    "chroma": "evalret.engines.stores.chroma",
    "lancedb": "evalret.engines.stores.lancedb",
    "milvus": "evalret.engines.stores.milvus",
    "pgvector": "evalret.engines.stores.pgvector",
}


def driver_of(name: str) -> StoreDriver:
    """The driver registered as ``name`` (a config's ``driver``)."""
    driver: StoreDriver = importlib.import_module(DRIVERS[name]).DRIVER
    return driver
