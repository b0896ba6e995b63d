"""What `evalret run --dry-run` would embed and cost (``EmbeddingPlan``)."""

from __future__ import annotations

# the closed vocabularies are the core's, defined once there
from evalret.data.schema.base import (
    BUILT_WHEN_USED,
    _Model,
)


class PlannedKind(_Model):
    """What a run would embed of one kind of text (``evalret run --dry-run``)."""

    model_config = BUILT_WHEN_USED

    texts: int
    cached: int
    to_embed: int
    tokens: int  # of the texts to embed, as sent (after their prefix)
    requests: int | None  # provider openai: requests the texts to embed would take
    cost: float | None  # tokens x model.price_per_million_tokens, when the price is set


class EmbeddingPlan(_Model):
    """What `evalret run` would embed and what it would cost; nothing is embedded or sent."""

    model_config = BUILT_WHEN_USED

    model: str  # the model's source, as reports name it
    provider: str
    endpoint: str | None  # provider openai
    cache: str | None  # the cache directory (None: the cache is off)
    tokenizer: str  # how tokens were counted (tiktoken, or the documented estimate)
    tokenizer_note: str | None
    price_per_million_tokens: float | None
    # the config key that sets the price (model.price_per_million_tokens), None when the
    # provider takes none (a local model: nothing to pay)
    price_key: str | None = None
    document: PlannedKind
    query: PlannedKind
    # one line per enabled rerank index: what it would ask (nothing is sent in a dry run)
    rerank: list[str] = []
