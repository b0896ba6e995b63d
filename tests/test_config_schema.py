"""The config's JSON Schema (evalret.data.config_schema): `evalret config schema` prints it, the
package ships it (and the shipped file is what the models give today), it validates every config
of the repository and refuses an unknown key at any depth, as the models do; `evalret init`
writes it beside the starter config, which names it on its first line for editors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from evalret.commands.init import SCHEMA_FILE, SCHEMA_LINE
from evalret.data.config import Config, parse_config
from evalret.data.config_schema import (
    DIALECT,
    REGENERATE,
    config_json_schema,
    config_schema_text,
    shipped_schema_text,
)
from evalret.errors import ConfigError
from helpers import invoke

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft7Validator:
    schema = json.loads(shipped_schema_text())
    jsonschema.Draft7Validator.check_schema(schema)  # a valid draft-07 schema itself
    return jsonschema.Draft7Validator(schema)


def _errors(validator: jsonschema.Draft7Validator, data: Any) -> list[str]:
    return [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(data)
    ]


def test_the_shipped_schema_is_the_generated_one() -> None:
    assert shipped_schema_text() == config_schema_text(), (
        f"src/evalret/schemas/config.schema.json is stale: regenerate it with `{REGENERATE}`"
    )


def test_config_schema_prints_the_schema() -> None:
    code, output = invoke("config", "schema")
    assert code == 0, output
    assert output == config_schema_text()
    schema = json.loads(output)
    assert list(schema)[:2] == ["$schema", "title"]
    assert schema["$schema"] == DIALECT and schema["title"] == "evalret config"


def test_the_schema_text_is_stable() -> None:
    """Two generations give the same bytes, with the models' key order (not sorted)."""
    assert config_schema_text() == config_schema_text()
    assert list(config_json_schema()["properties"])[:3] == ["golden_set", "model", "indexes"]


def _repo_configs() -> list[Path]:
    """Every YAML file the repository tracks that is an evalret config: a mapping whose keys
    are all config keys (workflows, hooks and actions are not)."""
    listed = subprocess.run(
        ["git", "ls-files", "*.yaml", "*.yml"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    found = []
    for rel in listed:
        data = yaml.safe_load((REPO / rel).read_text(encoding="utf-8"))
        if isinstance(data, dict) and data and set(data) <= set(Config.model_fields):
            found.append(REPO / rel)
    return found


def test_the_schema_validates_every_config_of_the_repository(
    validator: jsonschema.Draft7Validator,
) -> None:
    configs = _repo_configs()
    names = {p.relative_to(REPO).as_posix() for p in configs}
    assert {"configs/default.yaml", "src/evalret/templates/evalret.yaml"} <= names
    for path in configs:
        text = path.read_text(encoding="utf-8")
        parse_config(text, str(path))  # the models take it
        assert _errors(validator, yaml.safe_load(text)) == [], path


# where -> (a config with an unknown key there, the same config without it)
UNKNOWN_KEYS = {
    "top level": ("modell: {name: x}\n", "model: {name: x}\n"),
    "a section": ("gate:\n  baseline: b.json\n  treshold: {}\n", "gate:\n  baseline: b.json\n"),
    "two levels down": (
        "gate:\n  significance:\n    alpah: 0.05\n",
        "gate:\n  significance:\n    alpha: 0.05\n",
    ),
    "a provider's model": (
        "model:\n  provider: openai\n  name: m\n  batch_size: 3\n",
        "model:\n  provider: openai\n  name: m\n  max_batch: 3\n",
    ),
    "a built-in index": (
        "indexes:\n  hnsw:\n    ef: 16\n",
        "indexes:\n  hnsw:\n    ef_search: 16\n",
    ),
    "a typed index": (
        "indexes:\n  mine:\n    type: run\n    path: r.trec\n    fromat: trec\n",
        "indexes:\n  mine:\n    type: run\n    path: r.trec\n    format: trec\n",
    ),
    "a reranker": (
        "indexes:\n  r:\n    type: rerank\n    of: exact\n"
        "    reranker: {provider: python, callable: 'm:f', batch: 2}\n",
        "indexes:\n  r:\n    type: rerank\n    of: exact\n"
        "    reranker: {provider: python, callable: 'm:f'}\n",
    ),
    "a list item": (
        "slices:\n  custom:\n    - {name: s, tag: t, tags: [u]}\n",
        "slices:\n  custom:\n    - {name: s, tag: t}\n",
    ),
}


@pytest.mark.parametrize("where", list(UNKNOWN_KEYS))
def test_an_unknown_key_is_refused_at_any_depth(
    where: str, validator: jsonschema.Draft7Validator
) -> None:
    """The schema refuses what the models refuse, an unknown key wherever it is, and takes the
    same config without that key."""
    bad, good = UNKNOWN_KEYS[where]
    with pytest.raises(ConfigError, match=r"unknown key|not read with"):
        parse_config(bad)
    assert _errors(validator, yaml.safe_load(bad)) != []
    parse_config(good)
    assert _errors(validator, yaml.safe_load(good)) == []


def test_every_mapping_of_the_schema_forbids_other_keys() -> None:
    """extra="forbid" of the models is additionalProperties false in every object of the schema;
    the one mapping that takes keys of its own (indexes: the typed indexes) takes only a typed
    index there."""
    schema = config_json_schema()
    objects = {"(root)": schema, **schema["definitions"]}
    for name, node in objects.items():
        extra = node.get("additionalProperties")
        if name == "IndexesConfig":
            assert {r["$ref"] for r in extra["oneOf"]} >= {"#/definitions/RunIndexConfig"}
        else:
            assert extra is False, name


def test_values_of_the_wrong_type_are_refused(validator: jsonschema.Draft7Validator) -> None:
    """The strict models take no '10' for 10 nor 1 for true: neither does the schema."""
    for text in ("bootstrap: {samples: '1000'}\n", "cache: {enabled: 1}\n", "metrics: []\n"):
        with pytest.raises(ConfigError):
            parse_config(text)
        assert _errors(validator, yaml.safe_load(text)) != [], text
    assert _errors(validator, yaml.safe_load("model: {name: m, batch_size: 8}\n")) == []


def test_init_points_the_config_at_the_schema_beside_it(
    tmp_path: Path, validator: jsonschema.Draft7Validator
) -> None:
    """`evalret init` writes the schema file beside the config and names it, relative to the
    config, on the config's first line (what yaml-language-server reads), so it works offline;
    the starter config validates against it."""
    code, output = invoke("init", str(tmp_path))
    assert code == 0, output
    config = (tmp_path / "evalret.yaml").read_text(encoding="utf-8")
    first = config.splitlines()[0]
    assert first == SCHEMA_LINE.rstrip("\n") == f"# yaml-language-server: $schema={SCHEMA_FILE}"
    schema_path = (tmp_path / "evalret.yaml").parent / first.split("$schema=", 1)[1]
    assert schema_path.read_text(encoding="utf-8") == shipped_schema_text()
    written = jsonschema.Draft7Validator(json.loads(schema_path.read_text(encoding="utf-8")))
    assert _errors(written, yaml.safe_load(config)) == []
    parse_config(config)
