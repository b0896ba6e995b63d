"""The relevance rule, in one place: a judged grade counts as relevant when it is at least the
relevance level (trec_eval's ``-l``), whose default is ``DEFAULT_RELEVANCE_LEVEL``.

Every layer that decides relevance (the metrics, the golden set's readers, health alignment, the
examples of a comparison) calls ``is_relevant``; every default level is this constant. The module
imports nothing heavy: the command line's option defaults read it without loading numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    import numpy as np

DEFAULT_RELEVANCE_LEVEL = 1  # trec_eval's default -l


@overload
def is_relevant(grade: int, level: int) -> bool: ...
@overload
def is_relevant(grade: np.ndarray, level: int) -> np.ndarray: ...
def is_relevant(grade: int | np.ndarray, level: int) -> bool | np.ndarray:
    """Whether ``grade`` is relevant at relevance ``level``: grade >= level, for one grade or
    elementwise for an array of grades. A lower grade is non-relevant (a negative one is not
    even judged: ``is_judged``)."""
    return grade >= level


@overload
def is_judged(grade: int) -> bool: ...
@overload
def is_judged(grade: np.ndarray) -> np.ndarray: ...
def is_judged(grade: int | np.ndarray) -> bool | np.ndarray:
    """Whether a grade in the qrels is a judgment: a negative grade is trec_eval's "pooled but
    not judged" (non-relevant in every metric, unjudged in judged@k, bpref and -J); for one
    grade or elementwise."""
    return grade >= 0
