"""ISSUE.md: a ready upstream bug report of a reduced module (pure rendering from an IssueFacts record)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any


@dataclass
class IssueFacts:
    module_name: str
    oracle: str  # the oracle in words
    oracle_kind: str
    instructions_before: int
    instructions_after: int
    reduced_hlo: str
    verdict_reason: str
    figures: dict[str, Any]
    test_versions: dict[str, Any]
    reference_versions: dict[str, Any] | None
    platform: str
    xla_flags: list[str]
    disabled_passes: list[str]
    culprit_pass: str | None
    inputs_text: str
    test_outputs_text: str
    reference_outputs_text: str
    rechecks: str
    commands: list[tuple[str, str]] = field(default_factory=list)  # (what, command)


def _versions(data: dict[str, Any] | None) -> str:
    if not data:
        return "-"
    v = data.get("versions") or {}
    device = data.get("device") or {}
    return (f"jax {v.get('jax', '?')}, jaxlib {v.get('jaxlib', '?')}, Python {v.get('python', '?')}, "
            f"device {device.get('platform', '?')} {device.get('kind', '')}".rstrip())


def _figures(figures: dict[str, Any]) -> list[str]:
    if "mismatches" not in figures:
        return [f"- {k}: {v}" for k, v in figures.items() if k not in ("dir", "outputs")]
    lines = [f"- {figures.get('mismatches')}/{figures.get('elements')} elements differ, "
             f"{figures.get('nan_mismatches', 0)} of them NaN where the other side is not (or the reverse)",
             f"- max abs error {figures.get('max_abs_error', 0):.6g}, max rel error {figures.get('max_rel_error', 0):.6g}"]
    for index, row in enumerate(figures.get("outputs") or []):
        lines.append(f"- output {index} {row.get('dtype')}{row.get('shape')}: {row.get('mismatches')} mismatches")
    return lines


def render_issue(f: IssueFacts) -> str:
    title = {"mismatch": "wrong result", "recorded": "result differs from the recorded one",
             "error": "compiler/runtime failure", "script": "check script fails"}.get(f.oracle_kind, "bug")
    jaxlib = (f.test_versions.get("versions") or {}).get("jaxlib", "?")
    out = [f"# XLA {f.platform}: {title} in a {f.instructions_after}-instruction module (jaxlib {jaxlib})", "",
           f"Reduced by `xlatools reduce` from module `{f.module_name}` ({f.instructions_before} -> "
           f"{f.instructions_after} instructions). Interesting means: {f.oracle}.", "",
           f"**What happens:** {f.verdict_reason}. Re-checked: {f.rechecks}.", "", "## Environment", "",
           f"- test: {_versions(f.test_versions)}"]
    if f.reference_versions:
        out.append(f"- reference: {_versions(f.reference_versions)}")
    out.append(f"- XLA flags of the test: `{' '.join(f.xla_flags) or '(none)'}`")
    if f.disabled_passes:
        out.append(f"- passes kept disabled while reducing: {', '.join(f'`{p}`' for p in f.disabled_passes)}")
    if f.culprit_pass:
        out.append(f"- culprit pass named by `xlatools bisect passes`: `{f.culprit_pass}`")
    out += ["", "## Minimal HLO", "", "```", f.reduced_hlo.rstrip(), "```", "", "## Inputs", "", "```",
            f.inputs_text.rstrip() or "(no parameters)", "```", ""]
    if f.oracle_kind in ("mismatch", "recorded"):
        out += ["## Expected (reference) vs actual (test)", "", *_figures(f.figures), "", "Expected:", "", "```",
                f.reference_outputs_text.rstrip() or "-", "```", "", "Actual:", "", "```",
                f.test_outputs_text.rstrip() or "-", "```", ""]
    else:
        out += ["## Failure", "", *_figures(f.figures), ""]
    out += ["## Reproduce", ""]
    for what, command in f.commands:
        out += [f"{what}:", "", "```sh", command, "```", ""]
    return "\n".join(out)


def commands(facts_flags: list[str], platform: str, reference: str | None, pack: str,
             pack_outcome: str = "?") -> list[tuple[str, str]]:
    """The commands ISSUE.md shows: XLA's run_hlo_module, then xlatools (replay and the repro pack)."""
    env = f"XLA_FLAGS={shlex.quote(' '.join(facts_flags))} " if facts_flags else ""
    ref_platform = {"cpu": "cpu"}.get(reference or "", "")
    run_hlo = (f"{env}run_hlo_module --platform={platform} --reference_platform={ref_platform} "
               f"--input_format=hlo reduced.hlo.txt")
    replay = "xlatools replay reduced.hlo.txt --inputs inputs.npz" + (" --reference cpu" if reference == "cpu" else
                                                                        " --reference-python GOOD_PYTHON" if reference else "")
    replay += "".join(f" --xla-flag {shlex.quote(f)}" for f in facts_flags)
    return [("With XLA's run_hlo_module (bazel target; its random inputs may not show a value-dependent bug: "
             "the inputs above are in inputs.npz)", run_hlo),
            ("With xlatools (the exact inputs)", replay),
            (f"With the repro pack (module, inputs, flags; the outcome it recorded: {pack_outcome}; 1 = reproduced)",
             f"xlatools repro run {pack} --python PYTHON_WITH_THE_SAME_JAXLIB")]
