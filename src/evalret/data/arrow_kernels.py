"""The pyarrow compute kernels the run readers call, called without importing pyarrow.compute.

``import pyarrow.compute`` builds a Python wrapper, with its signature and docstring, for every
kernel in Arrow's registry (some 20 ms of `evalret score`'s start, for the handful used here).
Each function below calls its kernel by name through ``call_function`` of ``pyarrow._compute``
(the compiled module pyarrow.compute itself wraps), with the options pyarrow.compute's wrapper
of that name passes for the same arguments, so the results are the same arrays. The names and
arguments are pyarrow.compute's, so this module stands in for it (``... as pc``); pyarrow's own
array methods that go through pyarrow.compute (``cast``, ``take``, ``unique``) are called here
instead. Where ``pyarrow._compute`` cannot be imported (a pyarrow that moved it), the same calls
go through pyarrow.compute.
"""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def _compute() -> Any:
    """The module holding ``call_function`` and the options classes: ``pyarrow._compute``, or
    pyarrow.compute where that cannot be imported."""
    try:
        import pyarrow._compute as compute
    except ImportError:
        import pyarrow.compute as compute
    return compute


def _call(name: str, args: list[Any], options: Any = None, memory_pool: Any = None) -> Any:
    return _compute().call_function(name, args, options, memory_pool)


def cast(arr: Any, target_type: Any) -> Any:
    """``arr`` cast to ``target_type``, checked (pyarrow's ``arr.cast(target_type)``)."""
    import pyarrow as pa

    return _call("cast", [arr], _compute().CastOptions.safe(pa.lib.ensure_type(target_type)))


def take(data: Any, indices: Any) -> Any:
    """The values of ``data`` at ``indices``, bounds checked (``data.take(indices)``)."""
    return _call("take", [data, indices], _compute().TakeOptions(boundscheck=True))


def dictionary_encode(array: Any, *, memory_pool: Any = None) -> Any:
    return _call("dictionary_encode", [array], memory_pool=memory_pool)


def unique(array: Any) -> Any:
    return _call("unique", [array])


def not_equal(x: Any, y: Any) -> Any:
    return _call("not_equal", [x, y])


def any(array: Any) -> Any:  # pyarrow.compute's name (this module stands in for it)
    return _call("any", [array])


def array_sort_indices(array: Any) -> Any:
    return _call("array_sort_indices", [array])


def match_substring_regex(strings: Any, pattern: str) -> Any:
    return _call("match_substring_regex", [strings], _compute().MatchSubstringOptions(pattern))


def list_flatten(lists: Any) -> Any:
    return _call("list_flatten", [lists])


def list_parent_indices(lists: Any) -> Any:
    return _call("list_parent_indices", [lists])


def index_in(values: Any, *, value_set: Any) -> Any:
    return _call("index_in", [values], _compute().SetLookupOptions(value_set=value_set))
