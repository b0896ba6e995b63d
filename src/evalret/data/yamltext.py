"""The one YAML reader of evalret (configs, ``--set`` values, the pre-commit config): PyYAML's safe
loader, except that a key given twice in one mapping is an error naming both lines.

PyYAML keeps the last of two equal keys without a word, so a second ``gate:`` block would
silently replace the first one and drop every floor it set. Keys brought in by a merge (``<<:``)
may be overridden, as YAML intends: only keys written in the mapping itself are compared.

Aliases are bounded: a document whose aliases expand to more than ``MAX_NODES`` nodes (a
"billion laughs" bomb, nine anchors of nine aliases each) or that holds itself is an error at the
alias, before anything walks, copies or serialises the data (the report's config section would).
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError

MERGE_TAG = "tag:yaml.org,2002:merge"
REPLACED = " (the second would silently replace the first)"


class DuplicateKeyError(ConstructorError):
    """A mapping holds one key twice: ``problem_mark`` is the second, ``context_mark`` the first."""


class StrictLoader(yaml.SafeLoader):
    """The safe loader, refusing a key repeated in a mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            self._refuse_repeated_keys(node)
        return super().construct_mapping(node, deep=deep)

    def _refuse_repeated_keys(self, node: yaml.MappingNode) -> None:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == MERGE_TAG:
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:  # an unhashable key: the safe loader's own error follows
                continue
            if first is not key_node:
                line, again = first.start_mark.line + 1, key_node.start_mark.line + 1
                raise DuplicateKeyError(
                    "while reading a mapping",
                    first.start_mark,
                    f"duplicate key {key!r} on lines {line} and {again}{REPLACED}",
                    key_node.start_mark,
                )


MAX_NODES = 100_000  # nodes of the document once every alias is expanded


class AliasBombError(yaml.MarkedYAMLError):
    """Aliases that expand past MAX_NODES, or a collection that holds itself."""


def _expanded_size(node: yaml.Node, sizes: dict[int, int], open_: set[int]) -> int:
    """How many nodes ``node`` stands for with its aliases expanded (shared nodes count each
    time they are reached); AliasBombError past MAX_NODES or on a cycle."""
    key = id(node)
    if key in sizes:
        return sizes[key]
    if key in open_:
        raise AliasBombError(problem="an alias refers to a collection that holds it",
                             problem_mark=node.start_mark)  # fmt: skip
    size = 1
    if isinstance(node, yaml.CollectionNode):
        open_.add(key)
        for child in node.value:
            for part in child if isinstance(child, tuple) else (child,):
                size += _expanded_size(part, sizes, open_)
                if size > MAX_NODES:
                    raise AliasBombError(
                        problem=f"aliases expand this document past {MAX_NODES:,} values",
                        problem_mark=part.start_mark,
                    )
        open_.discard(key)
    sizes[key] = size
    return size


def compose(text: str) -> yaml.Node | None:
    """The node tree of ``text`` (None for an empty document); yaml.YAMLError when malformed or
    when its aliases expand past MAX_NODES."""
    root = yaml.compose(text, Loader=StrictLoader)
    if root is not None:
        _expanded_size(root, {}, set())
    return root


def construct(root: yaml.Node | None) -> Any:
    """The Python data of a node tree made by ``compose``; yaml.YAMLError on a repeated key,
    ValueError on a scalar that cannot be converted (an integer too long)."""
    if root is None:
        return None
    loader = StrictLoader("")
    try:
        return loader.construct_document(root)
    finally:
        loader.dispose()


def load(text: str) -> Any:
    """The data of the YAML ``text``, as ``yaml.safe_load`` reads it but refusing a repeated key
    and an alias bomb."""
    return construct(compose(text))
