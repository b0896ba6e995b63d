"""Deterministic slices of a set of cache keys, for `evalret embed --shard I/N`.

The keys are 16-byte content digests (uint8 [n, 16] rows). The distinct keys are sorted
(byte order) and dealt out round-robin: the key at position p of the sorted list belongs to
shard ``p % N + 1``. The N shards are therefore disjoint, together hold every key, differ in size
by at most one, and depend only on the set of keys (never on their order, their duplicates, or on
which of them a cache already holds).
"""

from __future__ import annotations

import re

import numpy as np

from evalret.errors import InputError

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(spec: str) -> tuple[int, int]:
    """``"I/N"`` -> (I, N) with 1 <= I <= N; InputError (exit 2) saying what is wrong otherwise."""
    match = _SPEC.match(spec)
    if match is None:
        raise InputError(f"--shard {spec!r}: give I/N, the 1-based shard I of N shards (e.g. 1/4)")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1:
        raise InputError(f"--shard {spec!r}: the number of shards N must be at least 1")
    if not 1 <= index <= count:
        raise InputError(f"--shard {spec!r}: the shard I must be from 1 to {count} (1-based)")
    return index, count


def distinct_keys(keys: np.ndarray) -> np.ndarray:
    """The distinct rows of ``keys`` (uint8 [n, 16]), sorted in byte order."""
    if len(keys) == 0:
        return np.zeros((0, keys.shape[1] if keys.ndim == 2 else 16), dtype=np.uint8)
    return np.unique(np.ascontiguousarray(keys, dtype=np.uint8), axis=0)


def shard_keys(keys: np.ndarray, index: int, count: int) -> np.ndarray:
    """The distinct keys of shard ``index`` (1-based) of ``count``: every ``count``-th key of the
    sorted distinct keys, starting at position ``index - 1``."""
    if not 1 <= index <= count:
        raise ValueError(f"shard {index} of {count}")
    return distinct_keys(keys)[index - 1 :: count]


def in_keys(keys: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """bool [n]: which rows of ``keys`` are among the rows of ``chosen`` (both uint8 [., 16])."""
    if len(keys) == 0 or len(chosen) == 0:
        return np.zeros(len(keys), dtype=bool)
    row = np.dtype((np.void, keys.shape[1]))
    wanted = np.ascontiguousarray(keys, dtype=np.uint8).view(row).ravel()
    have = np.ascontiguousarray(chosen, dtype=np.uint8).view(row).ravel()
    return np.isin(wanted, have)


def first_rows_in(keys: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """Rows of ``keys`` in ``chosen``, one (the first) per distinct key, in input order."""
    rows = np.flatnonzero(in_keys(keys, chosen))
    if len(rows) == 0:
        return rows
    _, first = np.unique(keys[rows], axis=0, return_index=True)
    return rows[np.sort(first)]
