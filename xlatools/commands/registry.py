"""Every `xlatools` command: where it lives and its one-line help (what `xlatools --help` lists
without importing any command module)."""

from __future__ import annotations

from typing import NamedTuple


class Entry(NamedTuple):
    module: str  # in xlatools.commands
    attribute: str
    kind: str  # "command" or "group" (a typer app of subcommands)
    summary: str  # the first sentence of its help, for `xlatools --help` (a test keeps them equal)


# Every command. Command modules are imported only when needed: typer reads the signature of
# every command it is given, so a run builds only the command it invokes (about 20 ms less per start).
COMMANDS: dict[str, Entry] = {
    "profiles": Entry("profiles_cmd", "app", "group", "List, show, validate and describe build-and-debug profiles."),
    "pin": Entry(
        "pin_cmd",
        "app",
        "group",
        "Pin XLA (and TensorFlow for old JAX) by commit and verified sha256; apply the pin to a JAX tree.",
    ),
    "bazelrc": Entry(
        "bazelrc_cmd",
        "bazelrc",
        "command",
        "Render a profile's bazel settings as one named bazel config; the build.py line that uses it goes to stderr.",
    ),
    "run": Entry(
        "run_cmd",
        "run",
        "command",
        "Run a program (a smoke program, a script or a module) with XLA dump/log presets into a fresh bundle.",
    ),
    "presets": Entry("presets_cmd", "app", "group", "List and show the presets `xlatools run --preset` accepts."),
    "inspect": Entry(
        "inspect_cmd",
        "inspect",
        "command",
        "The run (status, command, versions, presets, flags) and its "
        "modules (source line, stages, per-pass steps, instruction counts, files, bytes), or one module's passes.",
    ),
    "lower": Entry(
        "lower_cmd",
        "lower",
        "command",
        "Lower FN for the given input shapes and constants; write the IR and print XLA's cost analysis.",
    ),
    "build": Entry(
        "build_cmd", "build", "command", "Build jaxlib wheels for a profile: in a Docker container by default."
    ),
    "clean": Entry(
        "clean_cmd",
        "clean",
        "command",
        "Remove xlatools build containers left behind (--keep-container, a killed client).",
    ),
    "doctor": Entry(
        "doctor_cmd",
        "doctor",
        "command",
        "Check the target interpreter, the environment, "
        "native libraries and (with --profile/--source) the build side; each check says ok/warn/fail, its "
        "evidence and the fix.",
    ),
    "explain": Entry(
        "doctor_cmd",
        "explain",
        "command",
        "Scan a log for known failure signatures and say what each means and how to fix it.",
    ),
    "diff": Entry(
        "compare_cmd",
        "diff",
        "command",
        "Compare two runs: run level (versions, flags, env), modules (matched by name + input fingerprint), passes.",
    ),
    "explain-cache": Entry(
        "explain_cache_cmd",
        "explain_cache",
        "command",
        "Explain recompiles and persistent-cache misses part by part: argument signature, HLO, compile options, "
        "XLA flags, jaxlib, devices, process, cache folder.",
    ),
    "report": Entry(
        "compare_cmd",
        "report",
        "command",
        "Write one self-contained HTML report: run summary, modules, "
        "pass timelines, logs, and the diff of two bundles.",
    ),
    "replay": Entry(
        "replay_cmd",
        "replay",
        "command",
        "Compile and run dumped HLO modules in a target interpreter; compare with the snapshot and references.",
    ),
    "repro": Entry(
        "repro_cmd", "app", "group", "Portable repro packs: pack a bundle's modules, replay a pack anywhere."
    ),
    "reduce": Entry(
        "reduce_cmd",
        "reduce",
        "command",
        "Reduce an HLO module to a minimal one that is still "
        "interesting; write reduced.hlo.txt, inputs, a repro pack and ISSUE.md.",
    ),
    "triage": Entry(
        "triage_cmd",
        "triage",
        "command",
        "Triage a regression between two jax releases: bisect the "
        "releases, dump both sides, diff them, bisect the passes, reduce the module that differs, isolate its "
        "instructions and write ISSUE.md linking every finding.",
    ),
    "bisect": Entry(
        "bisect_cmd",
        "app",
        "group",
        "Find the first bad jax release, XLA/JAX commit or HLO pass; measure every release; find the switch that recovers (resumable; see docs/bisect.md).",
    ),
    "cache": Entry(
        "cache_cmd",
        "app",
        "group",
        "Show and free cached environments (one per jax release used by `bisect releases`).",
    ),
    "debug": Entry(
        "debug_cmd",
        "app",
        "group",
        "Native debugging: stop in an HLO pass under gdb, list pass entry points, write debugger configs.",
    ),
}
