"""What every HTTP section (the embedding provider's, the reranker's, the judge's) shares: the
default base URL, the check of a ``base_url``, the bounds of an answer's size, and the chat
endpoint the judge's section and ``synth.chat`` share."""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from evalret.data.config.base import StrictModel
from evalret.data.config.dsn import url_port_problem

OPENAI_URL = "https://api.openai.com/v1"


def checked_base_url(value: str) -> str:
    """An API's ``base_url`` (the embedding provider's, the http reranker's, the judge's),
    refused (never masked) with user info, a query string or a fragment: a secret in the URL
    would travel into every report, fingerprint and message that names the endpoint (the message
    does not repeat it); and refused with a port that is no port."""
    parts = urlsplit(value)
    if "@" in parts.netloc:
        raise ValueError("user info (user:password@) is refused: put the key in api_key_env")
    if parts.query or parts.fragment or value.rstrip().endswith(("?", "#")):
        raise ValueError(
            "a query string or fragment is refused (it may hold a credential, and the "
            "request path is appended after it): put the key in api_key_env"
        )
    problem = url_port_problem(value)
    if problem:
        raise ValueError(problem)
    if not parts.hostname:
        raise ValueError("no host: write it as scheme://host[:port]/path")
    return value


# an answer's body, as sent and decoded (engines/http_policy.py), unless max_response_mb says:
# far more than a judge's or a reranker's answer, and more than an embedding answer of 256 texts
# of 4,096 dimensions as JSON numbers (about 27 MB)
MAX_RESPONSE_MB = 64
MIB = 1024 * 1024
MAX_API_NAME = 256  # characters of a model name an API is sent (ids, deployments, ARNs)


def max_response_field(default: int | None, reads: str) -> Any:
    """The ``max_response_mb`` field of an HTTP section (``reads``: what it bounds)."""
    return Field(
        default,
        ge=1,
        le=16384,
        description=f"MiB an answer of {reads} may hold, as sent and decoded (gzip, deflate)",
    )


class ChatEndpointConfig(StrictModel):
    """An OpenAI-compatible chat endpoint (``POST {base_url}/chat/completions``,
    engines/chat_api.py) under the same HTTP policy, retries and redaction as the embedding
    provider: what the judge's section and ``synth.chat`` share."""

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
    max_response_mb: int = max_response_field(MAX_RESPONSE_MB, "the endpoint (one answer)")

    @property
    def response_limit(self) -> int:
        """The most bytes an answer may hold."""
        return self.max_response_mb * MIB

    @field_validator("base_url")
    @classmethod
    def _safe_base_url(cls, value: str) -> str:
        return checked_base_url(value)
