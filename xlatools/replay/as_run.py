"""Is a replay the run's own module? The run's optimised module and compile options, beside its dump files.

A replay recompiles a module from a dumped form (text, proto, snapshot, StableHLO). It reproduces
the run only when it compiles the module the run compiled: same optimised HLO (canonical, so names,
metadata and source locations do not count) under the same compile options. The dump holds both:
`<stem>.<platform>_after_optimizations.txt` and `<stem>.debug_options` (the options that were not
XLA's defaults, e.g. jax's `xla_cpu_enable_fast_min_max: false`), which replay applies to its compile.

Measured: jaxlib 0.4.26's oneDNN softmax rewrite turns a module's 11-instruction softmax into one
`__onednn$softmax` custom call; the same module read back from its text goes through jaxlib's HLO ->
StableHLO import, which folds an identity broadcast, and the rewrite no longer matches: the replay
compiles reduce and fusions instead and computes the right answer the run did not.
"""

from __future__ import annotations

import difflib
import glob
from dataclasses import dataclass
from pathlib import Path

SHOWN_LINES = 4  # lines of the difference named in a message
# Module-header attributes that say how the module was compiled rather than how the run printed it.
_KEPT_HEADER = (
    "entry_computation_layout=",
    "input_output_alias=",
    "is_scheduled=",
    "replica_count=",
    "num_partitions=",
)


@dataclass(frozen=True)
class RunFiles:
    """What the run's dump says about how it compiled one module."""

    optimized: Path | None = None  # the run's after_optimizations text
    debug_options: Path | None = None


def run_files(stem: Path | None) -> RunFiles:
    """The run's files of the dump module at `stem` (`<dump>/module_NNNN.<name>`, ModuleSource.run_stem)."""
    if stem is None:
        return RunFiles()
    pattern = f"{glob.escape(stem.name)}.*after_optimizations.txt"
    after = sorted(p for p in stem.parent.glob(pattern) if p.is_file())
    options = stem.parent / f"{stem.name}.debug_options"
    return RunFiles(after[0] if after else None, options if options.is_file() else None)


def read_debug_options(path: Path | None) -> dict[str, str]:
    """`name: value` lines of a .debug_options file (scalars only), without the dump's own settings."""
    if path is None:
        return {}
    options: dict[str, str] = {}
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return {}
    for line in lines:
        name, colon, value = line.partition(":")
        name, value = name.strip(), value.strip()
        if not colon or not name.startswith("xla_") or name.startswith("xla_dump") or not value or value.endswith("{"):
            continue
        options[name] = value[1:-1] if len(value) > 1 and value[0] == value[-1] == '"' else value
    return options


def _header(line: str) -> str:
    """The HloModule line with only the attributes that change what was compiled (printers differ in the rest:
    sharding-propagation flags, frontend attributes)."""
    from xlatools.hlo.grammar import closing_bracket

    kept = []
    for key in _KEPT_HEADER:
        at = line.find(key)
        if at == -1:
            continue
        start = at + len(key)
        end = closing_bracket(line, start) if start < len(line) and line[start] in "({[" else None
        if end is None:
            end = line.find(",", start)
            end = len(line) if end == -1 else end
        kept.append(line[at:end])
    return "HloModule " + ", ".join(kept)


def compiled_lines(text: str) -> list[str]:
    """The optimised module as lines of canonical HLO, header reduced to what changes the compiled program."""
    from xlatools.run.hlo_canon import canonical_hlo, without_autotuning

    # What GPU autotuning chooses (a kernel's configuration, a fusion's kind) differs between any two GPU compiles
    # (measured on an H200): a replay that chose other kernels still compiled the run's module.
    lines = [_short_operands(without_autotuning(line)) for line in canonical_hlo(text).splitlines()]
    return [_header(line) if line.startswith("HloModule") else line for line in lines if line.strip()]


def _short_operands(line: str) -> str:
    """An instruction with its operands as names only: jaxlib 0.4.x's to_string() prints each operand's shape
    (`custom-call(f32[3]{0} v0)`) where the dump's text does not (`custom-call(v0)`)."""
    from xlatools.hlo.grammar import LITERAL_OPCODES, parse_instruction

    inst = parse_instruction(line)
    if inst is None or inst.opcode in LITERAL_OPCODES or not inst.operands:
        return line
    return f"{'ROOT ' if inst.is_root else ''}{inst.name} = {inst.shape} {inst.opcode}({', '.join(inst.operands)}){inst.tail}"


def difference(run_text: str, replay_text: str) -> str | None:
    """None when the replay compiled the run's module; else what differs, in one line."""
    ours, theirs = compiled_lines(run_text), compiled_lines(replay_text)
    if ours == theirs:
        return None
    diff = list(difflib.unified_diff(ours, theirs, lineterm="", n=0))
    only_run = [line for line in diff if line.startswith("-") and not line.startswith("---") and " = " in line]
    only_replay = [line for line in diff if line.startswith("+") and not line.startswith("+++") and " = " in line]
    count = sum(1 for line in ours if " = " in line), sum(1 for line in theirs if " = " in line)
    shown = "; ".join(line[1:].strip()[:160] for line in only_run[:SHOWN_LINES])
    more = f" (+{len(only_run) - SHOWN_LINES} more)" if len(only_run) > SHOWN_LINES else ""
    gained = f"; {len(only_replay)} instruction line(s) only in the replay's" if only_replay else ""
    return (
        f"the replay compiled a different module than the run ({count[1]} instructions after optimisation "
        f"against the run's {count[0]}); only in the run's: {shown or '-'}{more}{gained}"
    )


def dumped_by(source: Path) -> str | None:
    """The jaxlib version of the run whose dump holds `source` (a run bundle, its xla_dump/ or a file in it), when a
    run manifest says it. Only a replay on that jaxlib is expected to compile the run's own module."""
    from xlatools.errors import UsageError
    from xlatools.records import read_bundle
    from xlatools.records.run import RunManifest

    path = Path(source)
    for folder in (path, *list(path.parents)[:3]):  # a bundle, its xla_dump/ or jax_ir/ (p<N>/ of a process), a file
        if not (folder / "manifest.json").is_file():
            continue
        try:
            record = read_bundle(folder)
        except UsageError:
            return None
        return record.jax.jaxlib if isinstance(record, RunManifest) and record.jax else None
    return None


def compare_with_run(files: RunFiles, replay_optimized: Path) -> str | None:
    """difference() of the run's optimised text and the replay's (None when either is missing or they agree)."""
    if files.optimized is None:
        return None
    try:
        return difference(files.optimized.read_text(errors="replace"), replay_optimized.read_text(errors="replace"))
    except OSError:
        return None
