"""``judge``: the LLM judge's settings (its endpoint: endpoints.ChatEndpointConfig)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalret.data.config.endpoints import MAX_RESPONSE_MB, ChatEndpointConfig, max_response_field


class JudgeConfig(ChatEndpointConfig):
    """`evalret judge` (and `run --judge`): the LLM that grades (query, document) pairs through
    an OpenAI-compatible ``POST {base_url}/chat/completions`` (engines/chat_api.py), under the
    same HTTP policy, retries and redaction as the embedding provider."""

    prompt: str = Field(
        "umbrela",
        min_length=1,
        description="umbrela (the built-in prompt) or a template file with {query} and {document}",
    )
    scale: Literal["0-1", "0-2", "0-3", "0-4"] = Field("0-3", description="the grades asked for")
    votes: int = Field(1, ge=1, le=25, description="answers asked per pair; the median is kept")
    min_kappa: float | None = Field(
        None,
        ge=-1,
        le=1,
        description="with --calibrate: refuse to write labels when Cohen's kappa is below this",
    )
    max_response_mb: int = max_response_field(MAX_RESPONSE_MB, "the endpoint (one grade)")
