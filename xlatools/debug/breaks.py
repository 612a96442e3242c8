"""Which shared objects of a target hold HLO passes, their pass maps (cached), and the
breakpoints that `--break-pass NAME` / `--break SYMBOL` become (pure)."""

from __future__ import annotations

import difflib
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.debug.passmap import CACHE_VERSION, ROOT, PassClass, PassMap, build_pass_map
from xlatools.errors import EnvironmentMissing, UsageError
from xlatools.records.debug import Breakpoint

if TYPE_CHECKING:
    from xlatools.console import Reporter

_MIN_BYTES = 1 << 20  # the libraries that carry XLA are tens to hundreds of MB


@dataclass
class PassCatalog:
    maps: list[PassMap] = field(default_factory=list)

    def named(self) -> dict[str, list[tuple[PassMap, PassClass]]]:
        out: dict[str, list[tuple[PassMap, PassClass]]] = {}
        for pass_map in self.maps:
            for name, classes in pass_map.named().items():
                out.setdefault(name, []).extend((pass_map, c) for c in classes)
        return dict(sorted(out.items()))


@dataclass(frozen=True, kw_only=True)
class PassRow:
    """One row of `xlatools debug passes`: a pass class with a constant name."""

    pass_: str
    cls: str
    name: str | None
    name_from: str | None
    entry: str | None
    entry_display: str | None
    entry_from: str | None
    library: str  # the file's name


def package_dirs(frontend: str, origin: str | None) -> list[Path]:
    """The package folders whose shared objects carry a target's XLA: jaxlib's and its plugins'
    (`origin` is jaxlib's __init__.py), or tensorflow's / torch_xla's."""
    if not origin:
        return []
    package = Path(origin).parent
    dirs = [package]
    if frontend == "jax":
        dirs += list(package.parent.glob("jax_plugins")) + list(package.parent.glob("jax_cuda*_p*"))
    return dirs


def pass_libraries(package_dirs: list[Path], cache_dir: Path) -> list[Path]:
    """Shared objects under the frontend's package folders whose symbols name xla::HloPassInterface
    (a file with a cached pass map is not read again)."""
    found = []
    for folder in package_dirs:
        for path in sorted(Path(folder).rglob("*.so*")):
            try:
                if not path.is_file() or path.stat().st_size < _MIN_BYTES:
                    continue
                cached = _cached(path.resolve(), cache_dir)
                if cached.classes if cached is not None else _mentions(path, ROOT.encode()):
                    found.append(path.resolve())
            except OSError:
                continue
    return list(dict.fromkeys(found))


def _mentions(path: Path, needle: bytes, chunk: int = 1 << 24) -> bool:
    """A plain scan for the name (the string table is near the end; this is I/O bound, ~0.2 s per 300 MB)."""
    with open(path, "rb") as handle:
        tail = b""
        while block := handle.read(chunk):
            if needle in tail + block:
                return True
            tail = block[-len(needle) :]
    return False


def _cache_file(path: Path, cache_dir: Path) -> Path:
    stat = path.stat()
    key = hashlib.sha256(f"{CACHE_VERSION}:{path}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:20]
    return cache_dir / f"passmap-{key}.json"


def _cached(path: Path, cache_dir: Path) -> PassMap | None:
    from xlatools.records.base import read_record

    try:
        return read_record(_cache_file(path, cache_dir), PassMap, "pass map cache")
    except UsageError:
        return None  # none yet, or damaged: the library is read again


def load_pass_map(path: Path, cache_dir: Path, reporter: Reporter | None = None) -> PassMap:
    """The pass map of one library, from the cache while the file is unchanged."""
    cached = _cached(path, cache_dir)
    if cached is not None:
        return cached
    if reporter is not None:
        reporter.step(f"reading the HLO pass classes of {path} (a few seconds; cached afterwards)")
    result = build_pass_map(path)
    try:
        from xlatools.fsutil import atomic_write_json
        from xlatools.records.base import to_json

        atomic_write_json(_cache_file(path, cache_dir), to_json(result), durable=False)
    except OSError:
        pass  # a cache we cannot write costs a second next time, nothing more
    return result


def catalog_for(libraries: list[Path], cache_dir: Path, reporter: Reporter | None = None) -> PassCatalog:
    if not libraries:
        raise EnvironmentMissing(
            "no shared object of the target holds HLO passes (xla::HloPassInterface)",
            hint="check --python, or name the library with --library PATH",
        )
    return PassCatalog([load_pass_map(path, cache_dir, reporter) for path in libraries])


def plan_breakpoints(catalog: PassCatalog, pass_names: list[str], symbols: list[str]) -> list[Breakpoint]:
    """One breakpoint per distinct entry of each named pass (checking the object's class where other
    passes share that entry), then the user's own locations. Unknown pass names are refused."""
    named = catalog.named()
    unknown = [name for name in pass_names if name not in named]
    if unknown:
        close = difflib.get_close_matches(unknown[0], list(named), n=3)
        raise UsageError(
            f"--break-pass {unknown[0]}: no pass of that name in the target's symbols"
            + (f" (did you mean {', '.join(close)}?)" if close else ""),
            hint="`xlatools debug passes` lists the names found; --break SYMBOL stops anywhere else",
        )
    users: dict[tuple[str, str], set[str]] = {}  # (library, entry) -> classes of every name running it
    for pass_map in catalog.maps:
        for item in pass_map.classes:
            if item.entry:
                users.setdefault((pass_map.library, item.entry), set()).add(item.name or "?")
    out: list[Breakpoint] = []
    for name in dict.fromkeys(pass_names):
        entries: dict[tuple[str, str], list[str]] = {}
        for pass_map, item in named[name]:
            if item.entry:
                entries.setdefault((pass_map.library, item.entry), []).append(item.cls)
        if not entries:
            raise UsageError(
                f"--break-pass {name}: the target has the pass but no entry function for it",
                hint="use --break with a function of that pass",
            )
        for (library, entry), classes in entries.items():
            shared = users[(library, entry)] != {name}
            out.append(
                Breakpoint(
                    label=f"pass {name}",
                    location=entry,
                    pass_=name,
                    classes=tuple(sorted(classes)) if shared else (),
                    library=library,
                )
            )
    out += [Breakpoint(label=f"symbol {symbol}", location=symbol) for symbol in dict.fromkeys(symbols)]
    return out


def dump_pass_regex(pass_names: list[str]) -> str:
    """--xla_dump_hlo_pass_re for the named passes: XLA then dumps each module just before them."""
    import re

    return "^(" + "|".join(re.escape(n) for n in dict.fromkeys(pass_names)) + ")$"


def passes_table(catalog: PassCatalog, grep: str | None = None) -> list[PassRow]:
    """The rows `xlatools debug passes` shows: one per pass class with a constant name (and, with
    `grep`, whose pass or class name contains it, in any case: `simplif` finds AlgebraicSimplifier)."""
    needle = grep.lower() if grep else None
    return [
        PassRow(
            pass_=name,
            cls=item.cls,
            name=item.name,
            name_from=item.name_from,
            entry=item.entry,
            entry_display=item.entry_display,
            entry_from=item.entry_from,
            library=os.path.basename(pass_map.library),
        )
        for name, items in catalog.named().items()
        for pass_map, item in items
        if not needle or needle in name.lower() or needle in item.cls.lower()
    ]
