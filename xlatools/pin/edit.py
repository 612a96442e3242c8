"""What a lock means for a tree of a given layout (pure): the new file contents (`plan`), the
values that disagree (`disagreements`), and whether the tree's own pin files agree (`tree_commits`).

The digest written next to a URL form is the digest of THAT form's archive: workspace.bzl builds
its URL from XLA_COMMIT, so the lock must hold an archive of the form the tree fetches, or the
tree is refused. Files holding literal URLs (WORKSPACE, MODULE.bazel) get the lock's archive of
their form when it has one, else its main archive (URLs and digest are rewritten together).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xlatools.errors import PinError, Problem
from xlatools.pin import lists, starlark
from xlatools.pin.forms import archive_for
from xlatools.pin.layouts import PATCH_LIST_KEYS, PATCH_PREFIX, Field, Layout, find_call, reading, tree_form
from xlatools.pin.lock import Archive, LockEntry
from xlatools.pin.upstream import expand

KEEP = object()  # a field on which the lock has no opinion
REMOVE = object()  # the keyword argument must be absent (an empty list that holds comments also does)
_HEX40 = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class Disagreement:
    file: str
    what: str
    actual: object
    expected: object

    def render(self) -> str:
        if self.expected is REMOVE:
            return f"{self.file}: {self.what} is {self.actual!r}, the lock has no patches there"
        return f"{self.file}: {self.what} is {self.actual!r}, the lock says {self.expected!r}"


def choose_archives(layout: Layout, entry: LockEntry, texts: dict[str, str | None]):
    """(archive per form name, problems): a form the tree derives from the commit must be in the lock."""
    chosen: dict[str, Archive | None] = {}
    problems = []
    for source in layout.forms:
        form = tree_form(layout, source.name, texts)
        archive = archive_for(entry.archives, form, entry.commit)
        if archive is None and form is not None:
            fetched = expand(form.urls[0], entry.commit)
            top = f" (top folder {expand(form.strip_prefix, entry.commit)})" if form.strip_prefix else ""
            have = "; ".join(f"{a.urls[0]} (top folder {a.strip_prefix})" for a in entry.archives)
            problems.append(
                Problem(
                    f"{form.where} fetches {fetched}{top}, a URL form the lock has no digest for; the lock has {have}"
                )
            )
        chosen[source.name] = archive
    return chosen, problems


def refuse_forms(problems: list[Problem], entry: LockEntry) -> None:
    if problems:
        raise PinError(
            f"the lock's {entry.name} archive is not the one this tree fetches "
            f"(its digest would fail the build's checksum)",
            problems=problems,
            hint="re-resolve against the tree: `xlatools pin resolve --profile P --source JAX_DIR` reads "
            "the URL form from it (or set source.{0}.urls and strip_prefix in the profile)".format(entry.name),
        )


def _want(spec: Field, entry: LockEntry, archive: Archive | None, labels: list[str], current):
    kind = spec.value
    if kind == "commit":
        return entry.commit
    if kind == "patches":
        foreign = [i for i in (current or []) if isinstance(i, str) and f":{PATCH_PREFIX}" not in i]
        return foreign + labels if foreign or labels else REMOVE
    if kind in ("patch_strip", "patch_args"):
        return (1 if kind == "patch_strip" else ["-p1"]) if labels else KEEP
    if archive is None:
        return KEEP
    return {
        "sha256": archive.sha256,
        "integrity": archive.integrity,
        "strip_prefix": archive.strip_prefix,
        "urls": list(archive.urls),
    }[kind]


def _current(text: str, spec: Field):
    """(call or None, current value, present?) of one field in one file's text."""
    with reading(spec.file):
        if not spec.functions:
            span = starlark.find_assignment(text, spec.key)
            if span is None:
                raise PinError(
                    f"{spec.file}: no top-level `{spec.key} = ...` found",
                    hint="the file does not have the shape xlatools edits; see docs/pinning.md",
                )
            return None, starlark.literal(text, span), True
        call = find_call(text, spec.functions, spec.match)
        if call is None:
            return None, None, False
        arg = call.kwarg(spec.key)
        return call, (starlark.literal(text, arg.value) if arg else None), arg is not None


def _patch_list_edits(text: str, call: starlark.Call, key: str, want) -> list[starlark.Edit]:
    """Item by item, so the list's comments (upstream's placeholder) stay."""
    arg = call.kwarg(key)
    parsed = lists.list_items(text, arg.value) if arg else None
    if parsed is None:
        return starlark.remove_kwarg(text, call, key) if want is REMOVE else starlark.set_kwarg(text, call, key, want)
    items, comments = parsed
    ours = [item for item in items if f":{PATCH_PREFIX}" in item.value]
    wanted = [] if want is REMOVE else want
    if [item.value for item in items] == wanted:
        return []
    if want is REMOVE and not comments and len(ours) == len(items):
        return starlark.remove_kwarg(text, call, key)  # a list only we wrote goes with our last patch
    quote_like = text[items[0].start] if items and text[items[0].start] in "'\"" else '"'
    foreign = len(items) - len(ours)
    return lists.edit_list(text, arg.value, ours, wanted[foreign:], quote_like)


def _same_shape_list_edits(text: str, call: starlark.Call, key: str, want) -> list[starlark.Edit]:
    """A list of strings replaced by one as long: each string in place, so indentation and comments stay."""
    arg = call.kwarg(key)
    parsed = lists.list_items(text, arg.value) if arg is not None and isinstance(want, list) else None
    if parsed is None or len(parsed[0]) != len(want) or not want:
        return []
    return [
        starlark.Edit(item.start, item.value_end, starlark.quote(value, text[item.start : item.value_end]))
        for item, value in zip(parsed[0], want)
        if item.value != value
    ]


def plan(layout: Layout, entry: LockEntry, texts: dict[str, str | None], labels: list[str]) -> dict[str, str]:
    """New contents of the layout's files (only those that change)."""
    chosen, problems = choose_archives(layout, entry, texts)
    refuse_forms(problems, entry)
    new = {name: text for name, text in texts.items() if text is not None}
    listed_patches = False
    for spec in layout.fields:
        text = new.get(spec.file)
        if text is None:
            if spec.required:
                raise PinError(f"{spec.file} is missing", hint=f"layout {layout.id} needs it; see docs/pinning.md")
            continue
        call, current, present = _current(text, spec)
        if spec.functions and call is None:
            if spec.required:
                raise PinError(
                    f"{spec.file}: no {spec.what.rsplit('.', 1)[0]} call found",
                    hint="the file does not have the shape xlatools edits; see docs/pinning.md",
                )
            continue
        listed_patches = listed_patches or spec.key in PATCH_LIST_KEYS
        want = _want(spec, entry, chosen.get(spec.form), labels, current)
        if want is KEEP:
            continue
        if not spec.functions:
            edits = starlark.set_assignment(text, spec.key, want)
        elif spec.value == "patches" and present:
            edits = _patch_list_edits(text, call, spec.key, want)
        elif want is REMOVE:
            edits = []
        else:
            edits = _same_shape_list_edits(text, call, spec.key, want) or starlark.set_kwarg(text, call, spec.key, want)
        new[spec.file] = starlark.apply_edits(text, edits)
    if labels and not listed_patches:
        raise PinError(
            f"the tree has no place to list patches ({layout.description})",
            hint="apply the patches yourself, or drop `patches:` from the profile",
        )
    return {name: text for name, text in new.items() if text != texts.get(name)}


def disagreements(
    layout: Layout, entry: LockEntry, texts: dict[str, str | None], labels: list[str]
) -> tuple[list[Disagreement], list[Problem]]:
    """Values that differ from the lock, and URL forms of the tree the lock has no digest for."""
    chosen, problems = choose_archives(layout, entry, texts)
    found = []
    for spec in layout.fields:
        text = texts.get(spec.file)
        if text is None:
            if spec.required:
                found.append(Disagreement(spec.file, "file", "missing", "present"))
            continue
        call, current, present = _current(text, spec)
        if spec.functions and call is None:
            if spec.required:
                found.append(Disagreement(spec.file, spec.what.rsplit(".", 1)[0], "missing", "present"))
            continue
        want = _want(spec, entry, chosen.get(spec.form), labels, current)
        if want is KEEP or (want is REMOVE and (not present or current == [])):
            continue  # an empty list (upstream's commented placeholder) is "no patches"
        if want is REMOVE or current != want:
            found.append(Disagreement(spec.file, spec.what, current if present else "absent", want))
    return found, problems


def tree_commits(layout: Layout, texts: dict[str, str | None]) -> dict[str, str]:
    """The commit each of the tree's pin files names (revision.bzl's XLA_COMMIT, MODULE.bazel's URL, ...)."""
    commits = {}
    for spec in layout.fields:
        text = texts.get(spec.file)
        if text is None or spec.file in commits or spec.value not in ("commit", "urls", "strip_prefix"):
            continue
        _, current, present = _current(text, spec)
        value = current[0] if isinstance(current, list) and current else current
        found = _HEX40.search(value) if present and isinstance(value, str) else None
        if found:
            commits[spec.file] = found.group()
    return commits
