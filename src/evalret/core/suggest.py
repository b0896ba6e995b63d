""" "Did you mean": the one close match of a mistyped name among the names a registry holds
(difflib's ratio, at least ``CUTOFF``), or none. Commands, options, config keys, metric names,
index types and providers all suggest through here, so a suggestion is always a name that
exists."""

from __future__ import annotations

from collections.abc import Iterable
from difflib import get_close_matches

CUTOFF = 0.6  # difflib's default: "ef_serch" -> "ef_search", "rnu" -> "run"; "x" -> nothing


def suggestion(word: str, names: Iterable[str]) -> str | None:
    """The name of ``names`` closest to ``word`` (never ``word`` itself), or None when none is
    close."""
    candidates = [n for n in dict.fromkeys(names) if n != word]
    matches = get_close_matches(word, candidates, n=1, cutoff=CUTOFF)
    return matches[0] if matches else None


def did_you_mean(word: str, names: Iterable[str]) -> str:
    """``" (did you mean 'ef_search'?)"`` to append to an error, or "" when nothing is close."""
    match = suggestion(word, names)
    return f" (did you mean {match!r}?)" if match is not None else ""
