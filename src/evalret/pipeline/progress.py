"""Progress bars as the commands take them: a context manager, opened by the command around the
long step alone (the CLI's rich bars, or none), that yields a factory (description, total) ->
advance(n), or None for no bars."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

ProgressFactory = Callable[[str, int], Callable[[int], None]]
ProgressBars = Callable[[], AbstractContextManager[ProgressFactory | None]]


def no_bars() -> AbstractContextManager[ProgressFactory | None]:
    """No progress bars: yields None."""
    return nullcontext(None)
