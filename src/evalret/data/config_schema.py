"""The config's JSON Schema, made from the pydantic models of ``evalret.data.config``: what
`evalret config schema` prints, what ``evalret/schemas/config.schema.json`` ships (a test keeps
the file equal to this), and what `evalret init` writes beside a starter config for editors.

The schema is written in JSON Schema draft-07, the dialect editors' YAML support (the Red Hat
YAML extension's yaml-language-server) validates: pydantic's ``$defs`` become ``definitions``,
a ``$ref`` with sibling keywords (a section's description and default) is wrapped in ``allOf``
(draft-07 ignores a ``$ref``'s siblings), and OpenAPI's ``discriminator`` is left out (the
``oneOf`` of the members, each with its own ``const`` tag, says the same). Keys keep the models'
field order, so the text is stable from one run to the next.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from evalret.data.config import Config

DIALECT = "http://json-schema.org/draft-07/schema#"
TITLE = "evalret config"
SHIPPED = ("schemas", "config.schema.json")  # inside the evalret package
REGENERATE = "evalret config schema > src/evalret/schemas/config.schema.json"


def _draft07(node: Any) -> Any:
    """``node`` with pydantic's 2020-12 spellings rewritten as draft-07 says them."""
    if isinstance(node, list):
        return [_draft07(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _draft07(v) for k, v in node.items() if k != "discriminator"}
    if "$ref" in out and len(out) > 1:
        ref = out.pop("$ref")
        out = {"allOf": [{"$ref": ref}], **out}
    return out


def config_json_schema() -> dict[str, Any]:
    """The JSON Schema of an evalret config file (the models' ``extra="forbid"`` is
    ``additionalProperties: false`` at every level)."""
    body = Config.model_json_schema(ref_template="#/definitions/{model}")
    definitions = body.pop("$defs", {})
    body.pop("title", None)
    schema = {"$schema": DIALECT, "title": TITLE, **_draft07(body)}
    schema["definitions"] = _draft07(definitions)
    return schema


def config_schema_text() -> str:
    """The schema as the JSON text shipped and printed: two-space indents, UTF-8, a final
    newline."""
    return json.dumps(config_json_schema(), indent=2, ensure_ascii=False) + "\n"


def shipped_schema_text() -> str:
    """The schema file shipped in the package (``evalret/schemas/config.schema.json``)."""
    return resources.files("evalret").joinpath(*SHIPPED).read_text(encoding="utf-8")
