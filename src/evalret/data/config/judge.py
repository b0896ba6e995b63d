"""``judge``: the LLM judge's settings."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from evalret.data.config.base import StrictModel
from evalret.data.config.endpoints import (
    MAX_API_NAME,
    MAX_RESPONSE_MB,
    MIB,
    OPENAI_URL,
    checked_base_url,
    max_response_field,
)


class JudgeConfig(StrictModel):
    """`evalret judge` (and `run --judge`): the LLM that grades (query, document) pairs through
    an OpenAI-compatible ``POST {base_url}/chat/completions`` (engines/chat_api.py), under the
    same HTTP policy, retries and redaction as the embedding provider."""

    provider: Literal["openai"] = Field("openai", description="an OpenAI-compatible chat API")
    base_url: str = Field(
        OPENAI_URL,
        pattern=r"^https?://[^\s]+$",
        description="the API's base URL (its /chat/completions is called)",
    )
    name: str = Field(
        min_length=1, max_length=MAX_API_NAME, description="the chat model the endpoint serves"
    )
    api_key_env: str | None = Field(
        "OPENAI_API_KEY",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="the environment variable holding the key (null: no key, for a local server)",
    )
    prompt: str = Field(
        "umbrela",
        min_length=1,
        description="umbrela (the built-in prompt) or a template file with {query} and {document}",
    )
    scale: Literal["0-1", "0-2", "0-3", "0-4"] = Field("0-3", description="the grades asked for")
    votes: int = Field(1, ge=1, le=25, description="answers asked per pair; the median is kept")
    temperature: float = Field(0.0, ge=0, le=2, description="sampling temperature sent")
    concurrency: int = Field(4, ge=1, le=64, description="requests in flight")
    max_retries: int = Field(6, ge=0, le=20, description="retries of a 429, 5xx or timeout")
    timeout: float = Field(60.0, gt=0, le=3600, description="seconds a request may take")
    price_per_million_input_tokens: float | None = Field(
        None, ge=0, description="the price of prompt tokens, for the cost"
    )
    price_per_million_output_tokens: float | None = Field(
        None, ge=0, description="the price of answer tokens, for the cost"
    )
    request_fields: dict[str, Any] | None = Field(
        None, description="extra fields sent with every request (e.g. seed, top_p)"
    )
    min_kappa: float | None = Field(
        None,
        ge=-1,
        le=1,
        description="with --calibrate: refuse to write labels when Cohen's kappa is below this",
    )
    max_response_mb: int = max_response_field(MAX_RESPONSE_MB, "the endpoint (one grade)")

    @property
    def response_limit(self) -> int:
        """The most bytes an answer may hold."""
        return self.max_response_mb * MIB

    @field_validator("base_url")
    @classmethod
    def _safe_base_url(cls, value: str) -> str:
        return checked_base_url(value)
