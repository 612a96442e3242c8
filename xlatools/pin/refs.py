"""Resolve a branch or tag to a commit with `git ls-remote` (a URL or a local path)."""

from __future__ import annotations

import re
from pathlib import Path

from xlatools.errors import FetchError, PinError
from xlatools.gitcmd import run_git

_HEX40 = re.compile(r"^[0-9a-f]{40}$")


def is_commit(value: str) -> bool:
    return bool(_HEX40.match(value))


def pick_commit(listing: str, ref: str) -> str | None:
    """The commit `ref` names in `git ls-remote` output (pure).

    Preference: an exact full ref name; then a tag (its peeled `^{}` line, which is the
    commit an annotated tag points at); then a branch.
    """
    found: dict[str, str] = {}
    for line in listing.splitlines():
        sha, _, name = line.partition("\t")
        if is_commit(sha.strip()):
            found[name.strip()] = sha.strip()
    candidates = [ref] if ref.startswith("refs/") else []
    candidates += [f"refs/tags/{ref}", f"refs/heads/{ref}"]
    for name in candidates:
        if name + "^{}" in found:
            return found[name + "^{}"]
        if name in found:
            return found[name]
    return None


def ls_remote(repo: str, ref: str) -> str:
    """Run `git ls-remote REPO REF...`; repo may be a URL or a local directory."""
    if not repo:
        raise PinError(f"cannot resolve ref '{ref}': no `repo` to ask", hint="set `repo:` (a git URL or a local path)")
    target = repo
    if "://" not in repo and not repo.startswith("git@"):
        path = Path(repo).expanduser()
        if not path.exists():
            raise PinError(f"repo {repo}: no such directory", hint="`repo:` is a git URL or a local git checkout")
        target = str(path.resolve())
    patterns = [ref] if ref.startswith("refs/") else [f"refs/heads/{ref}", f"refs/tags/{ref}", f"refs/tags/{ref}^{{}}"]
    done = run_git(
        "ls-remote",
        target,
        *patterns,
        needed_for="resolving a `ref` needs `git ls-remote`; or pin `commit:` (40 hex) instead",
        timeout_hint="check the network, or pin `commit:` instead of `ref:`",
    )
    if done.returncode != 0:
        detail = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
        raise FetchError(
            f"git ls-remote {repo} failed: {detail}",
            hint="check the repo URL/path and the network, or pin `commit:` instead of `ref:`",
        )
    return done.stdout


def resolve_ref(repo: str, ref: str) -> str:
    commit = pick_commit(ls_remote(repo, ref), ref)
    if commit is None:
        raise PinError(
            f"ref '{ref}' not found in {repo}",
            hint="use a branch or tag name that exists there (git ls-remote REPO shows them)",
        )
    return commit
