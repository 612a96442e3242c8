"""jax's StableHLO of each compiled module, tied to the module of the XLA dump it became (pure, plus one listing).

What XLA compiles is the StableHLO jax hands it. The dump's before_optimizations text is XLA's print of that
module after its conversion to HLO; compiling the text again goes through jaxlib's HLO -> StableHLO import, which
can change the module (jaxlib 0.4.26: the oneDNN softmax rewrite no longer matches, 24 instructions instead of
the run's 2). The StableHLO compiles the run's own module: replay tries it first (replay/jobs.py).

Where each release puts it (measured on the CPU, jax/jaxlib 0.4.20 ... 0.12; jax's `jax_dump_ir_to`):
  jax 0.4.20-0.4.23   JAX_DUMP_IR_TO=DIR: DIR/jax_ir<N>_<module>.mlir             (jax's compile counter)
  jax 0.4.24-0.4.31   JAX_DUMP_IR_TO=DIR: DIR/jax_ir<N>_<module>_compile.mlir     (_export: jax.export's, not compiled)
  jax 0.4.35-0.12     JAX_DUMP_IR_TO=DIR: DIR/jax_ir<NNNN>_<module>_compile.mlir  (4 digits)
  jaxlib 0.8.0-0.10.0 XLA's dump also: <module>_<microseconds>/module.mlir         (no module id)
  jaxlib 0.10.1-0.12  XLA's dump: module_NNNN.<module>/module.mlir                 (the same bytes as jax's)
A dumping run sets JAX_DUMP_IR_TO=<bundle>/jax_ir (run/plan.py) unless its jaxlib writes module_NNNN.<module>/.

Tying a file to its module: jax counts the modules it compiles and XLA numbers them, both in the order of
compilation within one process, so the k-th StableHLO file of a name is the k-th module of that name (by id).
A name with as many files as modules is tied; one whose counts differ (a module regex, a dump cut short) is left
untied rather than tied to the wrong module.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from xlatools.hlo.dump_names import process_folder

FOLDER = "jax_ir"  # <bundle>/jax_ir (a multi-process run: <bundle>/jax_ir/p<N>)
FIRST_JAXLIB_WITH_MODULE_MLIR = "0.10.1"  # XLA's dump holds module_NNNN.<module>/module.mlir from this release on
# jax <= 0.4.23 wrote no stage (jax_ir<N>_<module>.mlir); later ones name it: compile (what XLA compiled), export, ...
_JAX_FILE = re.compile(r"jax_ir(?P<n>\d+)_(?P<name>.+?)(?P<stage>_compile|_export|_verification)?\.mlir")
_XLA_FOLDER = re.compile(r"(?P<name>.+)_(?P<micros>\d{13,})/module\.mlir")  # jaxlib 0.8.0-0.10.0


def parse_jax_ir_name(name: str) -> tuple[int, str] | None:
    """(jax's counter, module name) of `jax_ir<N>_<module>_compile.mlir` (or jax <= 0.4.23's `jax_ir<N>_<module>.mlir`);
    None for another file (another stage)."""
    found = _JAX_FILE.fullmatch(name)
    return (int(found["n"]), found["name"]) if found and found["stage"] in (None, "_compile") else None


def is_xla_stablehlo(rel: str) -> bool:
    """`rel` (a path in an XLA dump) is jaxlib 0.8.0-0.10.0's `<module>_<microseconds>/module.mlir`."""
    return _XLA_FOLDER.fullmatch(rel) is not None


def _key(name: str) -> str:
    """A module name as both jax's and XLA's file names keep it (jax drops what XLA replaces)."""
    return re.sub(r"[^\w.()-]", "", name)


def jax_ir_folder(dump_root: Path) -> Path | None:
    """The jax IR folder beside a bundle's dump (`xla_dump` -> `jax_ir`, `xla_dump/p1` -> `jax_ir/p1`), if any."""
    process = process_folder(dump_root.name)
    folder = dump_root.parent.parent / FOLDER / dump_root.name if process is not None else dump_root.parent / FOLDER
    return folder if folder.is_dir() and not folder.is_symlink() else None


def dump_root_of(jax_file: Path) -> Path:
    """The XLA dump a jax IR file of a bundle belongs to (`jax_ir/f.mlir` -> `xla_dump`, `jax_ir/p1/f` -> `xla_dump/p1`)."""
    folder = jax_file.parent
    if process_folder(folder.name) is not None and folder.parent.name == FOLDER:
        return folder.parent.parent / "xla_dump" / folder.name
    return folder.parent / "xla_dump"


def written_names(folder: Path) -> set[str]:
    """The module names jax wrote StableHLO files of in `folder` (as both jax's and XLA's file names keep them)."""
    return {_key(parsed[1]) for path in folder.iterdir() if (parsed := parse_jax_ir_name(path.name))}


def wrote(names: set[str], module_name: str) -> bool:
    return _key(module_name) in names


def tie(modules: list[tuple[int, str]], files: list[tuple[int, str, str]]) -> dict[int, str]:
    """Module id -> file (pure). `modules`: (id, name) of the dump; `files`: (order, module name, file) of the
    StableHLO files, `order` the order they were written in."""
    by_name: dict[str, list[int]] = {}
    for module_id, name in sorted(modules):
        by_name.setdefault(_key(name), []).append(module_id)
    written: dict[str, list[str]] = {}
    for _, name, file in sorted(files):
        written.setdefault(_key(name), []).append(file)
    tied: dict[int, str] = {}
    for key, ids in by_name.items():
        if len(written.get(key, ())) == len(ids):
            tied.update(zip(ids, written[key]))
    return tied


def stablehlo_files(dump_root: Path, modules: list[tuple[int, str]], other_files: list[str]) -> dict[int, str]:
    """Module id -> its StableHLO as jax wrote it (a path relative to `dump_root`, e.g. `../jax_ir/jax_ir1_jit_f_
    compile.mlir`), or as jaxlib 0.8.0-0.10.0's XLA wrote it (`jit_f_1795828628952/module.mlir`, from the dump's
    `other_files`). Modules with XLA's own module_NNNN.<name>/module.mlir need neither."""
    folder = jax_ir_folder(dump_root)
    found: list[tuple[int, str, str]] = []
    if folder is not None:
        for path in folder.iterdir():
            parsed = parse_jax_ir_name(path.name)
            if parsed and path.is_file() and not path.is_symlink():
                found.append((parsed[0], parsed[1], Path(os.path.relpath(path, dump_root)).as_posix()))
    if not found:
        for rel in other_files:
            if xla := _XLA_FOLDER.fullmatch(rel):
                found.append((int(xla["micros"]), xla["name"], rel))
    return tie(modules, found)


def dump_to(frontend: str, jaxlib: str | None) -> str | None:
    """Where a dumping run of `frontend` on `jaxlib` has jax write its StableHLO (`{bundle}/jax_ir`); None where
    the XLA dump holds it already (module_NNNN.<module>/module.mlir) or the frontend is not jax."""
    if frontend != "jax":
        return None
    from packaging.version import InvalidVersion, Version

    try:
        if jaxlib and Version(jaxlib) >= Version(FIRST_JAXLIB_WITH_MODULE_MLIR):
            return None
    except InvalidVersion:
        pass  # an unknown version: written, at the cost of a copy where XLA writes it too
    return "{bundle}/" + FOLDER
