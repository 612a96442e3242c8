"""YAML loading that keeps where every value came from.

A file becomes a tree of `Node`s (mapping, sequence or scalar) that each carry
their origin (file, line). The tag `!replace` on a mapping or list marks it as
replacing the parent profile's value instead of merging with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from xlatools.errors import Problem

REPLACE_TAG = "!replace"


@dataclass(frozen=True)
class Origin:
    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class Node:
    value: Any  # dict[str, Node] | list[Node] | scalar
    origin: Origin
    replace: bool = field(default=False)

    def get(self, key: str) -> "Node | None":
        return self.value.get(key) if isinstance(self.value, dict) else None


class YamlLoadError(Exception):
    def __init__(self, problems: list[Problem]):
        super().__init__("; ".join(p.render() for p in problems))
        self.problems = problems


_scalars = yaml.constructor.SafeConstructor()


def _convert(node: yaml.Node, file: str, problems: list[Problem], key_line: int | None = None) -> Node:
    origin = Origin(file, (key_line if key_line is not None else node.start_mark.line + 1))
    replace = node.tag == REPLACE_TAG
    if isinstance(node, yaml.MappingNode):
        items: dict[str, Node] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
                problems.append(Problem("keys must be plain strings", file=file, line=line))
                continue
            key = key_node.value
            if key in items:
                problems.append(
                    Problem(f"duplicate key '{key}' (first at line {items[key].origin.line})", file=file, line=line)
                )
                continue
            items[key] = _convert(value_node, file, problems, key_line=line)
        return Node(items, origin, replace)
    if isinstance(node, yaml.SequenceNode):
        return Node([_convert(item, file, problems) for item in node.value], origin, replace)
    if replace:
        problems.append(Problem(f"{REPLACE_TAG} applies to lists and mappings only", file=file, line=origin.line))
        return Node(node.value, origin)
    try:
        return Node(_scalars.construct_object(node), origin)
    except yaml.MarkedYAMLError as exc:  # e.g. a !!timestamp that is no date
        problems.append(Problem(f"malformed value: {exc.problem}", file=file, line=origin.line))
        return Node(node.value, origin)


def load_file(path: Path, display: str | None = None) -> Node | None:
    """Parse one YAML file into a Node tree; None if the file holds no document. The file is read
    and checked (size, depth, aliases, tags) by `xlatools.yamlfile` before anything walks it."""
    from xlatools.yamlfile import YamlRefused, compose, read_text

    file = display or str(path)
    try:
        root = compose(read_text(path, file), file, allowed_tags=frozenset({REPLACE_TAG}))
    except YamlRefused as exc:
        raise YamlLoadError([exc.problem]) from None
    if root is None:
        return None
    problems: list[Problem] = []
    tree = _convert(root, file, problems, key_line=1)
    if problems:
        raise YamlLoadError(problems)
    return tree


def to_plain(node: Node) -> Any:
    if isinstance(node.value, dict):
        return {key: to_plain(child) for key, child in node.value.items()}
    if isinstance(node.value, list):
        return [to_plain(child) for child in node.value]
    return node.value


def origins(node: Node, prefix: tuple = ()) -> dict[tuple, Origin]:
    """Origin of every key and list item, by path (keys are str, indices int)."""
    found = {prefix: node.origin}
    if isinstance(node.value, dict):
        for key, child in node.value.items():
            found.update(origins(child, prefix + (key,)))
    elif isinstance(node.value, list):
        for index, child in enumerate(node.value):
            found.update(origins(child, prefix + (index,)))
    return found


def merge(base: Node, child: Node) -> Node:
    """Mappings merge key by key, lists append (skipping equal items), scalars
    replace; a child node tagged !replace replaces whatever was there."""
    if child.replace:
        return Node(child.value, child.origin)
    if isinstance(base.value, dict) and isinstance(child.value, dict):
        merged = dict(base.value)
        for key, value in child.value.items():
            merged[key] = merge(merged[key], value) if key in merged else _plain_copy(value)
        return Node(merged, child.origin)
    if isinstance(base.value, list) and isinstance(child.value, list):
        seen = [to_plain(item) for item in base.value]
        items = list(base.value)
        for item in child.value:
            plain = to_plain(item)
            if plain not in seen:
                seen.append(plain)
                items.append(item)
        return Node(items, child.origin)
    return _plain_copy(child)


def _plain_copy(node: Node) -> Node:
    # A value with no counterpart in the parent: the !replace mark has no meaning any more.
    return Node(node.value, node.origin) if node.replace else node
