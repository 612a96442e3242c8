"""The program's own packages for every release environment: `--with REQ` (repeatable) and `--requirements FILE`.

Each is a requirement in pip's syntax (`flax`, `optax==0.2.8`, `equinox>=0.13`), checked before anything
runs. uv resolves them together with each release's pinned `jax==X jaxlib==X`: the newest version of each
package that accepts that jax, unless the requirement pins one. jax and jaxlib themselves are refused (each
environment pins its own), and so are a requirements file's option lines (`-r`, `--index-url`, `-e`): an
index comes from uv's own configuration, as for the releases.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from xlatools.errors import UsageError

PINNED_BY_STEPS = frozenset({"jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt", "jax-cuda13-plugin"})


def _one(text: str, where: str) -> str:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        requirement = Requirement(text)
    except InvalidRequirement as exc:
        raise UsageError(
            f"{where} {text!r}: not a requirement ({exc})", hint="pip's syntax, e.g. --with flax or --with optax==0.2.8"
        ) from None
    if requirement.url:
        raise UsageError(
            f"{where} {text!r}: a URL requirement", hint="name a package from the index, e.g. flax==0.12.8"
        )
    if canonicalize_name(requirement.name) in PINNED_BY_STEPS:
        raise UsageError(
            f"{where} {text!r}: each step environment pins its own {requirement.name}",
            hint="give the program's other packages only; the releases are what is bisected",
        )
    return str(requirement)


def read_requirements_file(path: Path) -> list[str]:
    """Requirement lines of a requirements file (comments and blank lines left out)."""
    from xlatools.fsutil import read_user_text

    found = []
    for number, raw in enumerate(read_user_text(path, "requirements file").splitlines(), 1):
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        if line.startswith("-"):
            raise UsageError(
                f"{path}:{number}: {line.split()[0]}: option lines are not read here",
                hint="list requirements only; an index goes into uv's configuration (uv.toml, UV_INDEX_URL)",
            )
        found.append(_one(line, f"{path}:{number}:"))
    return found


def program_requirements(given: Sequence[str], files: Sequence[Path]) -> tuple[str, ...]:
    """Every --with and --requirements line, checked, in order, without repeats."""
    found = [_one(text, "--with") for text in given]
    for path in files:
        found += read_requirements_file(Path(path))
    return tuple(dict.fromkeys(found))
