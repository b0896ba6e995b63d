"""Code a config names by ``"pkg.module:attr.path"``: the Python retriever's function and the
custom encoder's factory are imported here, with one error for either."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from evalret.errors import ConfigError, Problem


def import_callable(key: str, spec: str) -> Callable[..., Any]:
    """The callable ``spec`` ("pkg.module:attr.path") names; ConfigError at the config ``key``
    (exit 2) when it cannot be imported or is not callable."""
    module_name, _, attr = spec.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except Exception as e:  # an import runs user code: any failure is the config's to fix
        raise ConfigError(
            f"{key}: cannot import {spec!r}", [Problem(f"{type(e).__name__}: {e}")]
        ) from e
    if not callable(target):
        raise ConfigError(f"{key}: {spec!r} is not callable")
    return target  # type: ignore[no-any-return]
