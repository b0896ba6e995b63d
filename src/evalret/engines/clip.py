"""Cutting a text before it is tokenized, without changing what the model sees.

A model reads at most ``max_seq_length`` tokens of a text and a tokenizer drops the rest only
after tokenizing all of it: a 50 MB document costs gigabytes (every byte gets its alignment, every
token its offsets) for 256 tokens kept. ``TextClipper`` hands the tokenizer a prefix of the text
instead, one whose first ``limit`` tokens are certainly the full text's.

A prefix cut mid-word can tokenize its last word differently (a word cut in two, a whitespace
run cut short), but every word before the last is whole and tokenizes as in the full text, as long
as the tokenizer splits words locally (whitespace, punctuation, byte-level regexes, metaspace: the
tokenizers of sentence-transformers models). So a prefix is safe when more than ``limit`` of its
tokens lie before its last word; the clipper tries the first ``CHARS_PER_TOKEN * limit``
characters, and doubles the prefix until that holds (a long whitespace run or a huge word yields
few tokens) or the whole text is reached. A tokenizer that does not split words (one word for the
whole text) is never cut short: the text is kept whole, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# the first prefix tried: this many characters per token of the limit (English prose runs about
# four to five characters a token under WordPiece, so the first try almost always suffices)
CHARS_PER_TOKEN = 8


class TextClipper:
    """Cuts texts to a prefix that tokenizes, up to ``limit`` tokens, exactly as the whole text.

    ``tokenizer`` is a ``tokenizers.Tokenizer`` that splits as the model's does; it is copied, so
    that its truncation and padding settings are left as they were.
    """

    def __init__(self, tokenizer: Any, limit: int) -> None:
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_str(tokenizer.to_str())
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        self.limit = limit
        self.first = max(1, limit) * CHARS_PER_TOKEN

    def _enough(self, prefix: str) -> bool:
        """Whether ``prefix`` has more than ``limit`` tokens before its last (maybe cut) word."""
        words = self.tokenizer.encode(prefix, add_special_tokens=False).word_ids
        if len(words) <= self.limit:
            return False
        last_kept, last = words[self.limit - 1], words[-1]
        return last_kept is not None and last is not None and last_kept < last

    def cut(self, text: str, prefix: str = "") -> str:
        """The shortest prefix of ``text`` tried that is safe when fed after ``prefix`` (a query
        or document prefix, a prompt), or ``text`` itself. ``text`` is never copied whole."""
        if self.limit <= 0:
            return text
        size = self.first
        while size < len(text):
            if self._enough(prefix + text[:size]):
                return text[:size]
            size *= 2
        return text

    def fed(self, texts: Sequence[str], prefix: str = "") -> list[str]:
        """``prefix + text`` for each text, cut: what the model is given."""
        return [prefix + self.cut(t, prefix) for t in texts]


def backend_tokenizer(tokenizer: Any) -> Any | None:
    """The ``tokenizers.Tokenizer`` behind a Hugging Face tokenizer (a fast one), else None."""
    inner = getattr(tokenizer, "backend_tokenizer", None)
    return inner if inner is not None and hasattr(inner, "to_str") else None
