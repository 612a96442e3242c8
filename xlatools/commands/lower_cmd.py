"""`xlatools lower`: lower a function to HLO, StableHLO or a jaxpr without running it."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def lower(
    fn: str = typer.Argument(..., help="FILE.py:FUNCTION or MODULE:FUNCTION."),
    input_shapes: Optional[str] = typer.Option(None, "--input-shapes", help="""Positional inputs, e.g. '[("x", "f32[2,4,3]"), ("y", "f32[3,2]")]'."""),
    constants: Optional[str] = typer.Option(None, "--constants", help="""Keyword constants, JSON or Python dict, e.g. '{"alpha": 2.0}'."""),
    ir_format: str = typer.Option("hlo", "--ir-format", help="hlo, stablehlo or jaxpr."),
    ir_human_dest: Optional[Path] = typer.Option(None, "--ir-human-dest", help="Write the IR text here (default: stdout)."),
    ir_dest: Optional[Path] = typer.Option(None, "--ir-dest", help="Write the serialized HloModuleProto here (--ir-format hlo)."),
    optimized: bool = typer.Option(False, "--optimized", help="The HLO after XLA's optimisation passes (compiles for this backend)."),
    python: Optional[str] = typer.Option(None, "--python", help="Interpreter with jax that does the lowering (default: this one)."),
    platform: str = typer.Option("cpu", "--platform", help="auto, cpu or gpu: the backend to lower and compile for."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable summary on stdout (IR text only in files)."),
    timeout: float = typer.Option(300, "--timeout", help="Give up after this many seconds."),
) -> None:
    """Lower FN for the given input shapes and constants; write the IR and print XLA's cost analysis."""
    import json

    from xlatools import console
    from xlatools.errors import UsageError
    from xlatools.fsutil import check_output, write_output
    from xlatools.run.lower import cost_rows, execute_lower, plan_lower
    from xlatools.run.target import probe, resolve_python

    if platform not in ("auto", "cpu", "gpu"):
        raise UsageError(f"--platform {platform}: expected auto, cpu or gpu")
    request = plan_lower(fn, input_shapes, constants, ir_format, optimized, str(ir_dest) if ir_dest else None, Path.cwd())
    for dest, option in ((ir_human_dest, "--ir-human-dest"), (ir_dest, "--ir-dest")):
        if dest is not None:
            check_output(dest, option)  # before the (slow) lowering
    interpreter = resolve_python(python)
    target = probe(interpreter, platform, frontend="jax")
    console.step(f"lowering {fn} to {request.ir_format}{' (optimised)' if optimized else ''} "
                 f"with jax {target.jax} ({interpreter})")
    lowered = execute_lower(request, fn, interpreter, platform, target.gpu_platform(), timeout)
    answer, text = lowered.answer, lowered.text
    if ir_human_dest is not None:
        write_output(ir_human_dest, text, "--ir-human-dest")
    elif not as_json:
        typer.echo(text, nl=False)
    if ir_dest is not None:
        write_output(ir_dest, lowered.proto, "--ir-dest")
    cost = answer.get("cost_analysis") or {}
    if as_json:
        answer.update(ir_format=request.ir_format, optimized=optimized, inputs=request.inputs, constants=request.constants,
                      ir_human_dest=str(ir_human_dest) if ir_human_dest else None, ir_dest=str(ir_dest) if ir_dest else None)
        if ir_human_dest is None:
            answer["ir_text"] = text
        typer.echo(json.dumps(answer, indent=2))
        return
    for dest, what in ((ir_human_dest, "IR text"), (ir_dest, "HloModuleProto")):
        if dest is not None:
            console.info(f"wrote {what} to {dest}")
    if cost:
        console.info("cost analysis: " + ", ".join(f"{k} {v:g}" for k, v in cost_rows(cost)))
    memory = answer.get("memory_analysis")
    if memory:
        console.info("memory: " + ", ".join(f"{k.replace('_size_in_bytes', '')} {v} B" for k, v in memory.items()))
