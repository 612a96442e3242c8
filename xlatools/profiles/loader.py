"""Load a profile: read YAML with origins, resolve `extends`, merge, validate.

All problems found on the way (in the profile and its parents) are collected
and raised together as one ProfileError.
"""

from __future__ import annotations

import difflib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xlatools.errors import Problem, ProfileError, UsageError
from xlatools.profiles import search
from xlatools.profiles.yamlnodes import Node, Origin, YamlLoadError, load_file, merge, origins, to_plain

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails


@dataclass(frozen=True)
class ResolvedProfile:
    profile: Any  # xlatools.profiles.model.Profile
    path: Path
    chain: tuple[str, ...]  # names in merge order, the profile itself last
    origins: dict[tuple, Origin] = field(repr=False)

    def origin_of(self, key_path: tuple) -> Origin | None:
        """Where a value was set: the deepest path with a known origin."""
        for end in range(len(key_path), 0, -1):
            found = self.origins.get(key_path[:end])
            if found is not None:
                return found
        return None


def display_path(path: Path) -> str:
    """Paths under the working directory are shown relative to it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


class _Resolver:
    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.cache: dict[Path, tuple[Node, tuple[str, ...]] | None] = {}

    def resolve(self, file: search.ProfileFile, stack: tuple[Path, ...]) -> tuple[Node, tuple[str, ...]] | None:
        real = file.path.resolve()
        if real in self.cache:
            return self.cache[real]
        shown = display_path(file.path)
        own = self._own(file, shown)
        if own is None:
            self.cache[real] = None
            return None
        tree, values = own
        merged, chain = self._inherited(values.get("extends"), file, shown, stack + (real,))
        # Name and description describe one file; they are not inherited.
        if merged is not None:
            merged = Node(
                {k: v for k, v in merged.value.items() if k not in ("name", "description", "extends")}, merged.origin
            )
        own_tree = Node(values, tree.origin)
        result = own_tree if merged is None else merge(merged, own_tree)
        self.cache[real] = (result, chain + (file.name,))
        return self.cache[real]

    def _own(self, file: search.ProfileFile, shown: str) -> tuple[Node, dict[str, Node]] | None:
        """The file's own tree and keys (its `name` checked against the file name), or None (problems noted)."""
        try:
            tree = load_file(file.path, shown)
        except YamlLoadError as exc:
            self.problems += exc.problems
            return None
        if tree is None:
            self.problems.append(Problem("empty profile", file=shown, hint="a profile needs at least a `description:`"))
            return None
        if not isinstance(tree.value, dict):
            self.problems.append(
                Problem("a profile must be a mapping of keys to values", file=shown, line=tree.origin.line)
            )
            return None
        own = dict(tree.value)
        name_node = own.get("name")
        if name_node is not None and name_node.value != file.name:
            self.problems.append(
                Problem(
                    f"name '{name_node.value}' does not match the file name '{file.path.name}'",
                    file=shown,
                    line=name_node.origin.line,
                    key="name",
                    hint="drop `name:` (it defaults to the file name) or rename the file",
                )
            )
        own["name"] = Node(file.name, name_node.origin if name_node else tree.origin)
        return tree, own

    def _inherited(
        self, extends: Node | None, file: search.ProfileFile, shown: str, stack: tuple[Path, ...]
    ) -> tuple[Node | None, tuple[str, ...]]:
        """What the `extends:` parents give, merged in order, and their chain of names."""
        merged: Node | None = None
        chain: tuple[str, ...] = ()
        for parent_ref, line in self._parents(extends, shown):
            try:
                parent_file = search.locate(parent_ref, near=file.path.parent)
            except (UsageError, ProfileError) as exc:
                hint = exc.hint or (exc.problems[0].hint if exc.problems else None)
                self.problems.append(
                    Problem(f"extends: {exc.message}", file=shown, line=line, key="extends", hint=hint)
                )
                continue
            if parent_file.path.resolve() in stack:
                cycle = " -> ".join([display_path(p) for p in stack] + [display_path(parent_file.path)])
                self.problems.append(Problem(f"extends cycle: {cycle}", file=shown, line=line, key="extends"))
                continue
            resolved = self.resolve(parent_file, stack)
            if resolved is None:
                continue
            parent_tree, parent_chain = resolved
            merged = parent_tree if merged is None else merge(merged, parent_tree)
            chain += tuple(name for name in parent_chain if name not in chain)
        return merged, chain

    def _parents(self, node: Node | None, shown: str) -> list[tuple[str, int]]:
        if node is None or node.value is None:
            return []
        if isinstance(node.value, str):
            return [(node.value, node.origin.line)]
        if isinstance(node.value, list) and all(isinstance(item.value, str) for item in node.value):
            return [(item.value, item.origin.line) for item in node.value]
        self.problems.append(
            Problem(
                "extends must be a profile name or a list of names", file=shown, line=node.origin.line, key="extends"
            )
        )
        return []


def load(ref: str) -> ResolvedProfile:
    """Load a profile by name or path; raises ProfileError listing every problem."""
    file = search.locate(ref)
    resolver = _Resolver()
    resolved = resolver.resolve(file, ())
    if resolved is None:
        raise _profile_error(ref, resolver.problems)
    tree, chain = resolved
    from pydantic import ValidationError

    from xlatools.profiles.model import Profile

    # Validate even when extends had problems, so one run reports everything.
    where = origins(tree)
    problems = list(resolver.problems)
    try:
        profile = Profile.model_validate(to_plain(tree))
    except ValidationError as exc:
        problems += _validation_problems(exc, where, display_path(file.path))
    if problems:
        problems.sort(key=lambda p: (p.file or "", p.line or 0))
        raise _profile_error(ref, problems)
    return ResolvedProfile(profile, file.path, chain, where)


def _profile_error(ref: str, problems: list[Problem]) -> ProfileError:
    count = len(problems)
    noun = "problem" if count == 1 else "problems"
    return ProfileError(f"profile '{ref}' has {count} {noun}", problems=problems)


def format_key(loc: tuple) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _validation_problems(exc: Any, where: dict[tuple, Origin], fallback_file: str) -> list[Problem]:
    from xlatools.profiles.model import Profile

    problems = []
    for error in exc.errors():
        # pydantic adds the union member or validator name to the location; drop it.
        loc = tuple(part for part in error["loc"] if isinstance(part, int) or not _is_type_tag(part))
        origin = None
        for end in range(len(loc), -1, -1):
            origin = where.get(loc[:end])
            if origin is not None:
                break
        hint = None
        if error["type"] == "extra_forbidden":
            message = f"unknown key '{loc[-1]}'"
            allowed = _fields_at(Profile, loc[:-1])
            close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"allowed here: {', '.join(allowed)}"
        else:
            message = _expected(error)
            value = error.get("input")
            if error["type"] == "string_type" and isinstance(value, (int, float)) and not isinstance(value, bool):
                hint = f'quote it in YAML: "{value}"'
        problems.append(
            Problem(
                message,
                file=origin.file if origin else fallback_file,
                line=origin.line if origin else None,
                key=format_key(loc),
                hint=hint,
            )
        )
    return _unique(problems)


def _unique(problems: list[Problem]) -> list[Problem]:
    # A union (e.g. version-or-false) reports one error per member at the same key.
    seen: dict[tuple, Problem] = {}
    for problem in problems:
        key = (problem.file, problem.line, problem.key)
        if key in seen:
            first = seen[key]
            if problem.message not in first.message:
                seen[key] = Problem(
                    f"{first.message}, or {problem.message}",
                    first.file,
                    first.line,
                    first.key,
                    first.hint or problem.hint,
                )
        else:
            seen[key] = problem
    return list(seen.values())


def _is_type_tag(part: str) -> bool:
    return (
        part in ("str", "int", "float", "bool", "list", "dict")
        or "[" in part
        or part.startswith(("function-", "constrained-", "literal"))
    )


def _expected(error: ErrorDetails) -> str:
    message = error["msg"]
    if message.startswith("Value error, "):
        return message[len("Value error, ") :]
    if message.startswith("Input should be "):
        message = "expected " + message[len("Input should be ") :]
    elif message.startswith("String should match pattern "):
        message = "expected a value matching " + message[len("String should match pattern ") :]
    message = message[0].lower() + message[1:]
    value = error.get("input")
    if error["type"] != "missing" and not isinstance(value, (dict, list)):
        return f"{message}; got {value!r}"
    return message


def _fields_at(model: type, loc: tuple) -> list[str]:
    """Field names of the model found by walking `loc` from `model`."""
    current: Any = model
    for part in loc:
        current = _unwrap(current, item=isinstance(part, int))
        if isinstance(part, int):
            continue
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            return []
        current = fields[part].annotation
    current = _unwrap(current, item=False)
    return list(getattr(current, "model_fields", {}))


def _unwrap(annotation: Any, item: bool) -> Any:
    """Strip Optional/Annotated (and, for list items, the list) to reach a model."""
    for _ in range(6):
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if origin is typing.Annotated:
            annotation = args[0]
        elif origin in (typing.Union, types.UnionType):
            models = [a for a in args if hasattr(a, "model_fields") or typing.get_origin(a) is list]
            annotation = models[0] if models else args[0]
        elif item and origin is list:
            annotation, item = args[0], False
        else:
            break
    return annotation
