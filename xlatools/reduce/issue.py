"""ISSUE.md: a ready upstream bug report of a reduced module (pure rendering from an IssueFacts record)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from xlatools.records.reduce import RanWith, Verdict
from xlatools.records.run import Device
from xlatools.vocab import OracleKind


@dataclass(kw_only=True)
class IssueFacts:
    module_name: str
    oracle: str  # the oracle in words
    oracle_kind: OracleKind
    instructions_before: int
    instructions_after: int
    reduced_hlo: str
    verdict: Verdict  # the last re-check's
    test: RanWith
    reference: RanWith | None
    platform: str
    xla_flags: list[str]
    disabled_passes: list[str]
    culprit_pass: str | None
    inputs_text: str
    test_outputs_text: str
    reference_outputs_text: str
    rechecks: str
    native_frames: list[str] = field(default_factory=list)  # the top frames of native-backtrace.txt (a crash)
    original_frames: list[str] = field(default_factory=list)  # crash oracle: the original module's top frames
    commands: list[tuple[str, str]] = field(default_factory=list)  # (what, command)


def _versions(ran: RanWith | None) -> str:
    if ran is None:
        return "-"
    v, device = ran.versions, ran.device
    return (
        f"jax {v.jax if v else '?'}, jaxlib {v.jaxlib if v else '?'}, Python {v.python_version if v else '?'}, "
        f"device {_device(device)}"
    )


def _device(device: Device | None) -> str:
    """`cpu`, `gpu NVIDIA H200`: the kind only where it says more than the platform (a CPU's kind is `cpu`)."""
    if device is None:
        return "?"
    platform, kind = device.platform or "?", device.kind or ""
    return f"{platform} {kind}" if kind and kind.lower() != platform.lower() else platform


def jaxlib_of(ran: RanWith | None) -> str:
    return (ran.versions.jaxlib if ran and ran.versions else None) or "?"


def _figures(verdict: Verdict) -> list[str]:
    c = verdict.comparison
    if c is None:
        failure = verdict.failure
        if failure is not None:
            return [
                f"- {failure.failure} during {failure.phase or 'start-up'}"
                + (f" ({failure.signal})" if failure.signal else ""),
                f"- message: {failure.message}",
            ]
        return [f"- the check script exited {verdict.script_exit}"] if verdict.script_exit is not None else []
    if c.message:
        return [f"- {c.message}"]
    lines = [f"- {c.mismatches}/{c.elements} elements differ"]
    if c.nan_mismatches:
        lines.append(f"- {c.nan_mismatches} of them NaN where the other side is not (or the reverse)")
    finite = " among the elements that are numbers on both sides" if c.nan_mismatches else ""
    lines.append(f"- max abs error {c.max_abs_error:.6g}, max rel error {c.max_rel_error:.6g}{finite}")
    for index, row in enumerate(c.outputs):
        lines.append(f"- output {index} {row.dtype}{row.shape}: {row.mismatches} mismatches")
    return lines


TITLES = {
    OracleKind.MISMATCH: "wrong result",
    OracleKind.RECORDED: "result differs from the recorded one",
    OracleKind.ERROR: "compiler/runtime failure",
    OracleKind.SCRIPT: "check script fails",
    OracleKind.CRASH: "crash",
}


def _code(text: str, fence: str = "```") -> list[str]:
    return [fence, text, "```", ""]


def render_issue(f: IssueFacts) -> str:
    jaxlib = jaxlib_of(f.test)
    out = [
        f"# XLA {f.platform}: {TITLES[f.oracle_kind]} in a {f.instructions_after}-instruction module (jaxlib {jaxlib})",
        "",
        f"Reduced by `xlatools reduce` from module `{f.module_name}` ({f.instructions_before} -> "
        f"{f.instructions_after} instructions). Interesting means: {f.oracle}.",
        "",
        f"**What happens:** {f.verdict.reason}. Re-checked: {f.rechecks}.",
        "",
        "## Environment",
        "",
        f"- test: {_versions(f.test)}",
    ]
    if f.reference:
        out.append(f"- reference: {_versions(f.reference)}")
    out.append(f"- XLA flags of the test: `{' '.join(f.xla_flags) or '(none)'}`")
    if f.disabled_passes:
        out.append(f"- passes kept disabled while reducing: {', '.join(f'`{p}`' for p in f.disabled_passes)}")
    if f.culprit_pass:
        out.append(f"- culprit pass named by `xlatools bisect passes`: `{f.culprit_pass}`")
    out += ["", "## Minimal HLO", "", *_code(f.reduced_hlo.rstrip()), "## Inputs", ""]
    none = "(in inputs.npz: the failing run printed none)" if "parameter(" in f.reduced_hlo else "(no parameters)"
    out += [*_code(f.inputs_text.rstrip() or none), *_outcome(f), "## Reproduce", ""]
    for what, command in f.commands:
        out += [f"{what}:", "", *_code(command, "```sh")]
    return "\n".join(out)


def _outcome(f: IssueFacts) -> list[str]:
    """Expected vs actual (a wrong result), or the failure with the crashing thread's top frames."""
    if f.oracle_kind in (OracleKind.MISMATCH, OracleKind.RECORDED):
        return [
            "## Expected (reference) vs actual (test)",
            "",
            *_figures(f.verdict),
            "",
            "Expected:",
            "",
            *_code(f.reference_outputs_text.rstrip() or "-"),
            "Actual:",
            "",
            *_code(f.test_outputs_text.rstrip() or "-"),
        ]
    out = ["## Failure", "", *_figures(f.verdict), ""]
    if f.native_frames:
        every = "every thread's: [native-backtrace.txt](native-backtrace.txt)"
        out += [f"Top native frames of the crashing thread ({every}):", "", "```", *f.native_frames, "```", ""]
    if f.original_frames:
        from xlatools.reduce.oracle import same_frames

        same = {True: "the same top frames", False: "DIFFERENT top frames", None: "frames not known"}[
            same_frames(f.original_frames, f.native_frames)
        ]
        out += [f"The original module died in ({same}):", "", "```", *f.original_frames[:8], "```", ""]
    return out


def commands(
    facts_flags: list[str],
    platform: str,
    reference: str | None,
    pack: str,
    pack_outcome: str = "?",
    oracle_shown: bool = True,
) -> list[tuple[str, str]]:
    """The commands ISSUE.md shows: XLA's run_hlo_module, then xlatools (replay and the repro pack)."""
    env = f"XLA_FLAGS={shlex.quote(' '.join(facts_flags))} " if facts_flags else ""
    ref_platform = {"cpu": "cpu"}.get(reference or "", "")
    run_hlo = (
        f"{env}run_hlo_module --platform={platform} --reference_platform={ref_platform} "
        f"--input_format=hlo reduced.hlo.txt"
    )
    replay = "xlatools replay reduced.hlo.txt --inputs inputs.npz" + (
        " --reference cpu" if reference == "cpu" else " --reference-python GOOD_PYTHON" if reference else ""
    )
    replay += "".join(f" --xla-flag {shlex.quote(f)}" for f in facts_flags)
    return [
        (
            "With XLA's run_hlo_module (bazel target; its random inputs may not show a value-dependent bug: "
            "the inputs above are in inputs.npz)",
            run_hlo,
        ),
        ("With xlatools (the exact inputs)", replay),
        (
            _pack_words(reference, pack_outcome, oracle_shown),
            f"xlatools repro run {pack} --python PYTHON_WITH_THE_SAME_JAXLIB",
        ),
    ]


def _pack_words(reference: str | None, pack_outcome: str, oracle_shown: bool = True) -> str:
    if not oracle_shown:  # a check script or a reference interpreter judged it bad; a replay alone sees `ok`
        return (
            f"With the repro pack (module, inputs, flags): it records the oracle's verdict, but its replay alone "
            f"gives {pack_outcome}, so `repro run` answers nothing-to-reproduce (exit 5); the failure shows with "
            "the oracle above (the check script, or --reference-python)"
        )
    if reference == "python":  # another interpreter's path does not travel in a pack
        return (
            f"With the repro pack (module, inputs, flags; it carries no reference interpreter, so the outcome it "
            f"recorded is the test's alone: {pack_outcome}; the mismatch shows with --reference-python as above)"
        )
    return f"With the repro pack (module, inputs, flags; the outcome it recorded: {pack_outcome}; exit 1 = reproduced)"
