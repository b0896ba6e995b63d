"""`evalret config schema`: the JSON Schema of the config file (evalret.data.config_schema), for
editors and for checking configs with any JSON Schema validator."""

from __future__ import annotations

from evalret.data.config_schema import config_schema_text


def config_schema_command() -> str:
    """The config's JSON Schema as JSON text (the file shipped in the package holds the same)."""
    return config_schema_text()
