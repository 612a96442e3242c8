"""YAML files a user points us at (profiles, presets, build-log signatures), read defensively.

PyYAML's safe loader still follows aliases without limit (a 1 KB "billion laughs" file
expands to a billion nodes in whoever walks it), recurses once per nesting level (50,000
levels: RecursionError, or a crash in the C loader), and leaves unknown tags to whoever
constructs the node. Here every file is checked before anyone walks it: a regular file,
at most MAX_BYTES of UTF-8, nesting at most MAX_DEPTH, at most MAX_NODES nodes once
aliases are expanded, and only the standard tags plus the ones a caller allows. Anything
else is a `YamlRefused` naming the file (and line), in well under a second.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xlatools.errors import Problem, UsageError

MAX_BYTES = 8 << 20
MAX_DEPTH = 64
MAX_NODES = 200_000
STANDARD_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "map", "seq", "timestamp", "merge")
)


class YamlRefused(UsageError):
    """A YAML file that is not read: its problem says which file, where, and why."""

    def __init__(self, problem: Problem):
        super().__init__(problem.render(), problems=[])
        self.problem = problem


def read_text(path: Path, display: str | None = None) -> str:
    """The UTF-8 text of a regular file of at most MAX_BYTES (a FIFO is never opened: it would block)."""
    from xlatools.fsutil import read_user_text

    try:
        return read_user_text(path, "YAML file", MAX_BYTES)
    except UsageError as exc:  # the same words, located for the caller's problem list
        raise YamlRefused(Problem(exc.message.split(": ", 1)[-1], file=display or str(path))) from None


def _loader_class():
    import yaml

    class Loader(yaml.SafeLoader):
        """The pure-Python safe loader with a depth limit while composing (the C one cannot be limited)."""

        depth = 0

        def compose_node(self, parent, index):
            self.depth += 1
            try:
                if self.depth > MAX_DEPTH:
                    mark = self.peek_event().start_mark
                    raise yaml.composer.ComposerError(None, None, f"nested deeper than {MAX_DEPTH} levels", mark)
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    return Loader


def compose(text: str, file: str, allowed_tags: frozenset[str] = frozenset()):
    """The node graph of the one document in `text` (None when empty), checked as the module says."""
    import yaml

    loader = _loader_class()(text)
    try:
        root = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise YamlRefused(
            Problem(
                f"malformed YAML: {exc.problem or exc.context or 'cannot parse'}",
                file=file,
                line=mark.line + 1 if mark else None,
            )
        ) from None
    except yaml.YAMLError as exc:
        raise YamlRefused(Problem(f"malformed YAML: {exc}", file=file)) from None
    except RecursionError:
        raise YamlRefused(Problem(f"nested deeper than {MAX_DEPTH} levels", file=file)) from None
    finally:
        loader.dispose()
    if root is not None:
        _check_graph(root, file, STANDARD_TAGS | allowed_tags)
    return root


def _check_graph(root, file: str, tags: frozenset[str]) -> None:
    """Tags allowed, and the size once aliases are expanded (a node reached twice counts twice)."""
    import yaml

    sizes: dict[int, int] = {}
    order, seen, stack = [], set(), [root]
    while stack:  # nodes in an order where every child comes after its parent
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        if node.tag not in tags:
            raise YamlRefused(
                Problem(
                    f"tag {node.tag.replace('tag:yaml.org,2002:', '!!')} is not allowed here",
                    file=file,
                    line=node.start_mark.line + 1,
                    hint="plain values, lists and mappings only",
                )
            )
        stack.extend(_children(node, yaml))
    for node in reversed(order):  # children before parents
        sizes[id(node)] = 1 + sum(sizes[id(child)] for child in _children(node, yaml))
        if sizes[id(node)] > MAX_NODES:
            raise YamlRefused(
                Problem(
                    f"expands to more than {MAX_NODES} values (aliases reused over and over)",
                    file=file,
                    line=node.start_mark.line + 1,
                    hint="write the values out; anchors and aliases are for small reuse",
                )
            )


def _children(node, yaml) -> list:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def load(text: str, file: str) -> Any:
    """Plain Python data (dicts, lists, scalars) from checked YAML text."""
    import yaml

    root = compose(text, file)
    if root is None:
        return None
    try:
        return yaml.constructor.SafeConstructor().construct_document(root)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise YamlRefused(
            Problem(f"malformed YAML: {exc.problem}", file=file, line=mark.line + 1 if mark else None)
        ) from None


def load_file(path: Path, display: str | None = None) -> Any:
    return load(read_text(path, display), display or str(path))
