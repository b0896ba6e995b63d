"""data/arrow_kernels.py gives what pyarrow.compute's function of the same name gives, for the
arguments the run readers pass, through pyarrow._compute and through the fallback (pyarrow.compute
itself, where pyarrow._compute cannot be imported)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from evalret.data import arrow_kernels as kernels

NAMES = [b"q2", b"q10", b"q2", b"", b"q1", b"\xff", b"q10", b"q10 x"]


def _calls() -> Iterator[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    binary = pa.array(NAMES, pa.binary())
    strings = pa.array([n.decode("latin-1") for n in NAMES], pa.string())
    chunked = pa.chunked_array([binary.slice(0, 3), binary.slice(3)])
    numbers = pa.array([3, 1, 3, 7, 1], pa.uint64())
    for column in (binary, strings, chunked, numbers):
        yield "dictionary_encode", (column,), {"memory_pool": pa.system_memory_pool()}
        yield "unique", (column,), {}
    for column in (binary, strings, numbers):
        yield "array_sort_indices", (column,), {}
        yield "not_equal", (column.slice(1), column.slice(0, len(column) - 1)), {}
        yield "take", (column, pa.array([4, 0, 2], pa.int64())), {}
    yield "cast", (pa.array(NAMES[:5], pa.binary()), pa.string()), {}
    yield "cast", (strings, pa.binary()), {}
    yield "any", (pa.array([False, False]),), {}
    yield "any", (pa.array([False, True]),), {}
    yield "match_substring_regex", (strings, r"\s|^$"), {}
    lists = pa.array([[{"a": 1}], [], [{"a": 2}, {"a": 3}]])
    yield "list_flatten", (lists,), {}
    yield "list_parent_indices", (lists,), {}
    yield "index_in", (binary,), {"value_set": pa.array([b"q10", b"q1"], pa.binary())}


@pytest.mark.parametrize("fallback", [False, True], ids=["pyarrow._compute", "fallback"])
def test_each_kernel_is_pyarrow_computes(monkeypatch: pytest.MonkeyPatch, fallback: bool) -> None:
    kernels._compute.cache_clear()
    if fallback:  # an import of pyarrow._compute fails: pyarrow.compute serves
        monkeypatch.setitem(sys.modules, "pyarrow._compute", None)
    try:
        assert (kernels._compute() is pc) is fallback
        for name, args, kwargs in _calls():
            mine, theirs = (
                getattr(kernels, name)(*args, **kwargs),
                getattr(pc, name)(*args, **kwargs),
            )
            assert type(mine) is type(theirs), name
            assert mine.equals(theirs), name
    finally:
        kernels._compute.cache_clear()


def test_a_cast_is_checked() -> None:
    with pytest.raises(pa.ArrowInvalid):
        kernels.cast(pa.array([b"\xff"], pa.binary()), pa.string()).validate(full=True)
    with pytest.raises(pa.ArrowInvalid):  # (as the array's own cast)
        pa.array([b"\xff"], pa.binary()).cast(pa.string()).validate(full=True)
