"""URL forms: which archive a JAX tree will fetch for a commit, read from the tree (pure).

A pinning file either computes the URL and top folder from the commit (workspace.bzl:
`"https://.../{commit}".format(commit = XLA_COMMIT)`, strip prefix maybe from `XLA_COMMIT[:7]`),
so the digest must be the one of exactly that archive; or it holds literal URLs (WORKSPACE,
MODULE.bazel) that `pin apply` rewrites together with the digest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xlatools.pin import starlark
from xlatools.pin.lock import Archive
from xlatools.pin.upstream import expand

# "literal".format(commit = NAME) or "literal".format(commit = NAME[:7])
_FORMAT = re.compile(r"""(["'])([^"'\n]*)\1\s*\.format\(\s*commit\s*=\s*[A-Za-z_]+(\[:(\d+)\])?\s*\)""")
_HEX40 = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class Form:
    urls: tuple[str, ...]  # URL templates ({commit}, {commit[:N]})
    strip_prefix: str | None  # template, or None when the file names none
    where: str  # the file (and call) it was read from
    derived: bool  # True: the tree computes it from the commit; False: literal values apply rewrites

    def matches(self, archive: Archive, commit: str) -> bool:
        if not any(expand(url, commit) in archive.urls for url in self.urls):
            return False
        return self.strip_prefix is None or expand(self.strip_prefix, commit) == archive.strip_prefix

    def render(self) -> str:
        prefix = f", top folder {self.strip_prefix}" if self.strip_prefix is not None else ""
        return f"{self.urls[0]}{prefix} ({self.where})"


def _derived(source: str) -> str | None:
    match = _FORMAT.search(source)
    if match is None:
        return None
    template = match.group(2)
    return template.replace("{commit}", f"{{commit[:{match.group(4)}]}}") if match.group(4) else template


def _literal_template(value: str, commit: str | None) -> str:
    return value.replace(commit, "{commit}") if commit else value


def read_form(text: str, call: starlark.Call, where: str) -> Form | None:
    """The form of one archive rule call (`urls` and `strip_prefix` keyword arguments)."""
    urls_arg, prefix_arg = call.kwarg("urls"), call.kwarg("strip_prefix")
    if urls_arg is None:
        return None
    urls_source = urls_arg.value.of(text)
    derived_url = _derived(urls_source)
    prefix_source = prefix_arg.value.of(text) if prefix_arg else None
    if derived_url is not None:
        prefix = _derived(prefix_source) if prefix_source else None
        return Form((derived_url,), prefix, where, True)
    urls = starlark.literal(text, urls_arg.value)
    urls = [urls] if isinstance(urls, str) else urls
    if not isinstance(urls, list) or not urls or not all(isinstance(u, str) for u in urls):
        return None
    found = _HEX40.search(urls[0])
    commit = found.group() if found else None
    prefix = starlark.literal(text, prefix_arg.value) if prefix_arg else None
    prefix = _literal_template(prefix, commit) if isinstance(prefix, str) else None
    return Form(tuple(_literal_template(u, commit) for u in urls), prefix, where, False)


def archive_for(archives: tuple[Archive, ...], form: Form | None, commit: str) -> Archive | None:
    """The lock's archive this form fetches. A literal form (we rewrite its URLs) takes the main
    archive when none of the lock's forms is the tree's; a derived one must match."""
    if not archives:
        return None
    if form is None:
        return archives[0]
    for archive in archives:
        if form.matches(archive, commit):
            return archive
    return None if form.derived else archives[0]
