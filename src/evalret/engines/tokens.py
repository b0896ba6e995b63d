"""Counting the tokens an embedding API will bill, before anything is sent.

For an OpenAI model, tiktoken counts exactly when it is installed *and* its encoding file is
already in tiktoken's cache: tiktoken downloads the file on first use, and evalret never fetches
data at run time, so a missing file means the estimate instead of a download. Everywhere else
the count is an estimate: one token per four bytes of UTF-8, rounded up, per text. That is close
for English prose under OpenAI's tokenizers (about four characters a token), high for plain
ASCII identifiers, and low for code, digits-heavy text and non-Latin scripts (a CJK character is
three bytes but often one or two tokens).
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ESTIMATE = "estimate: ceil(UTF-8 bytes / 4) per text"
# where tiktoken's encodings are published: tiktoken caches each file under sha1(url)
_ENCODING_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


TOKENS_PER_TEXT = 256  # besides one per byte: the most tokens a text can count for (specials)
# the most tokens an answer can count for beyond its text: the hidden reasoning of a reasoning
# model (the largest output any chat API allows is 128k tokens today)
HIDDEN_OUTPUT_TOKENS = 262_144


def max_tokens(texts: Sequence[str]) -> int:
    """The most tokens any tokenizer makes of ``texts``: one per UTF-8 byte (a byte-level BPE
    never makes more) and ``TOKENS_PER_TEXT`` per text (special and template tokens). A usage
    figure a server reports beyond it is no token count."""
    size = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)
    return size + TOKENS_PER_TEXT * len(texts)


def estimate_tokens(text: str) -> int:
    """The documented estimate: ceil(UTF-8 bytes / 4), at least 1."""
    return max(1, math.ceil(len(text.encode("utf-8")) / 4))


@dataclass(frozen=True)
class TokenCounter:
    """Counts tokens per text; ``method`` says how (tiktoken's encoding, or the estimate)."""

    count: Callable[[str], int]
    method: str
    note: str | None = None  # why tiktoken was not used, when it is installed

    def total(self, texts: Sequence[str]) -> int:
        return sum(self.count(t) for t in texts)


def _tiktoken_cache_dir() -> Path:
    """The directory tiktoken reads cached encodings from (its documented variables)."""
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if os.environ.get(variable):
            return Path(os.environ[variable])
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def token_counter(model: str) -> TokenCounter:
    """tiktoken's counter for ``model`` when it is installed, knows the model and has its
    encoding cached locally; else the estimate, with a note saying why."""
    try:
        import tiktoken
        from tiktoken.model import encoding_name_for_model
    except ImportError:
        return TokenCounter(estimate_tokens, ESTIMATE)
    try:
        name = encoding_name_for_model(model)
    except KeyError:
        return TokenCounter(estimate_tokens, ESTIMATE, f"tiktoken does not know {model!r}")
    key = hashlib.sha1(_ENCODING_URL.format(name).encode()).hexdigest()
    if not (_tiktoken_cache_dir() / key).is_file():
        note = f"tiktoken's {name} file is not cached here (evalret never downloads it)"
        return TokenCounter(estimate_tokens, ESTIMATE, note)
    encoding = tiktoken.get_encoding(name)
    return TokenCounter(
        lambda t: len(encoding.encode(t, disallowed_special=())), f"tiktoken {name}"
    )
