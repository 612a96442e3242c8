"""What a run's dump flags asked for, against what its dump holds (pure): a kind that was asked for and
produced nothing is a warning in the summary, the manifest and `inspect`, never silence.

The GPU is where this bites: `--xla_dump_hlo_snapshots` writes no snapshot there (FIELD_NOTES §10), so
replay would fall back to made-up inputs; `--record-inputs` records the arguments instead (run/recorder.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from xlatools.run.dumps import DumpIndex

SNAPSHOT_FLAG = "--xla_dump_hlo_snapshots"


def _files(index: DumpIndex) -> list[str]:
    return [name for module in index.modules.values() for name in module.files]


# flag -> (what it writes, how the dump shows it, what to do when it wrote nothing)
EXPECTED: dict[str, tuple[str, Callable[[DumpIndex], bool], str]] = {
    SNAPSHOT_FLAG: (
        "execution snapshots (*.snapshot.*.pb)",
        lambda index: any(m.snapshots for m in index.modules.values()),
        "this backend writes none (XLA's GPU backend does not); run again with --record-inputs, and "
        "xlatools records each module's arguments and results itself, or replay uses random inputs",
    ),
    "--xla_dump_hlo_as_proto": (
        "HLO protos (*.hlo.pb)",
        lambda index: any(f.endswith(".hlo.pb") for f in _files(index)),
        "replay reads the text instead",
    ),
    "--xla_dump_hlo_as_html": (
        "HTML pages (*.html)",
        lambda index: any(f.endswith(".html") for f in _files(index)),
        "this jaxlib may not write them for this backend",
    ),
    "--xla_dump_hlo_pass_re": (
        "HLO after each pass",
        lambda index: any(m.steps for m in index.modules.values()),
        "check the pass regex against the pipeline's pass names",
    ),
}


def missing_dump_kinds(flags: list[str], index: DumpIndex | None) -> list[str]:
    """One warning per requested dump kind that produced nothing, for a dump that holds modules (a dump
    without any module says so on its own); and one for modules that jax's StableHLO files beside the dump
    (jax_ir/) could not be tied to (run/jax_ir.py)."""
    if index is None or not index.modules:
        return []
    asked = {flag.split("=", 1)[0] for flag in flags if flag.partition("=")[2].lower() not in ("false", "0")}
    return [
        f"{flag} was asked for and the dump holds no {what}: {todo}"
        for flag, (what, present, todo) in EXPECTED.items()
        if flag in asked and not present(index)
    ] + untied_stablehlo(index)


def untied_stablehlo(index: DumpIndex) -> list[str]:
    """Where jax wrote its StableHLO beside the dump and some of its modules got none: a replay of those compiles
    their HLO text, which may not be the module the run compiled. (Modules of names jax wrote nothing of were not
    compiled through jax: left alone.)"""
    from xlatools.run.jax_ir import jax_ir_folder, wrote, written_names

    folder = jax_ir_folder(index.root)
    if folder is None:
        return []
    names = written_names(folder)
    untied = [m for m in index.sorted_modules() if m.stablehlo is None and wrote(names, m.name)]
    if not untied:
        return []
    named = ", ".join(f"{m.id:04d} {m.name}" for m in untied[:5]) + (
        f" (+{len(untied) - 5} more)" if len(untied) > 5 else ""
    )
    return [
        f"jax_ir/ holds no StableHLO that can be tied to {len(untied)} module(s) ({named}): their files and the "
        "dump's modules do not count alike (a module regex, a dump cut short?); a replay compiles their HLO text, "
        "which may not be the run's own module (it says so)"
    ]
