"""The digest of a JSON-able value: sha256 of its canonical JSON (keys sorted, anything that is not
JSON written as its str). Fingerprints and cache keys are made with it, so equal settings give
equal digests whatever the order they were written in."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def json_digest(obj: Any) -> str:
    """Hex sha256 of ``obj`` as canonical JSON (``json.dumps(sort_keys=True, default=str)``)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()
