"""What every HTTP section (the embedding provider's, the reranker's, the judge's) shares: the
default base URL, the check of a ``base_url``, and the bounds of an answer's size."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from pydantic import Field

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
