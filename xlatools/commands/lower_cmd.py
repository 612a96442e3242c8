"""`xlatools lower`: lower a function to HLO, StableHLO or a jaxpr without running it."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from xlatools.commands.options import EnumChoice, JsonOption, PlatformOption, PythonOption, TimeoutOption
from xlatools.vocab import IrFormat, Platform


def lower(
    fn: str = typer.Argument(..., help="FILE.py:FUNCTION or MODULE:FUNCTION."),
    input_shapes: Optional[str] = typer.Option(
        None, "--input-shapes", help="""Positional inputs, e.g. '[("x", "f32[2,4,3]"), ("y", "f32[3,2]")]'."""
    ),
    constants: Optional[str] = typer.Option(
        None, "--constants", help="""Keyword constants, JSON or Python dict, e.g. '{"alpha": 2.0}'."""
    ),
    ir_format: IrFormat = typer.Option(
        IrFormat.HLO, "--ir-format", click_type=EnumChoice(IrFormat), help="hlo, stablehlo or jaxpr."
    ),
    ir_human_dest: Optional[Path] = typer.Option(
        None, "--ir-human-dest", help="Write the IR text here (default: stdout)."
    ),
    ir_dest: Optional[Path] = typer.Option(
        None, "--ir-dest", help="Write the serialized HloModuleProto here (--ir-format hlo)."
    ),
    optimized: bool = typer.Option(
        False, "--optimized", help="The HLO after XLA's optimisation passes (compiles for this backend)."
    ),
    python: PythonOption = None,
    platform: PlatformOption = Platform.CPU,
    as_json: JsonOption = False,
    timeout: TimeoutOption = 300,
) -> None:
    """Lower FN for the given input shapes and constants; write the IR and print XLA's cost analysis.

    Defaults: --python this interpreter, --platform cpu, --timeout 300. With --json the IR text
    goes into the JSON (or only into --ir-human-dest)."""
    import json

    from xlatools.console import Reporter
    from xlatools.fsutil import check_output, write_output
    from xlatools.records.base import to_json
    from xlatools.run.lower import cost_rows, execute_lower, plan_lower
    from xlatools.run.target import probe, resolve_python

    reporter = Reporter()
    request = plan_lower(
        fn, input_shapes, constants, ir_format, optimized, str(ir_dest) if ir_dest else None, Path.cwd()
    )
    for dest, option in ((ir_human_dest, "--ir-human-dest"), (ir_dest, "--ir-dest")):
        if dest is not None:
            check_output(dest, option)  # before the (slow) lowering
    interpreter = resolve_python(python)
    platform = platform or Platform.CPU
    target = probe(interpreter, platform, frontend="jax", reporter=reporter)
    reporter.step(
        f"lowering {fn} to {request.ir_format}{' (optimised)' if optimized else ''} "
        f"with jax {target.jax} ({interpreter})"
    )
    lowered = execute_lower(request, fn, interpreter, platform, target.gpu_platform(), timeout or 300, reporter)
    answer, text = lowered.answer, lowered.text
    if ir_human_dest is not None:
        write_output(ir_human_dest, text, "--ir-human-dest")
    elif not as_json:
        typer.echo(text, nl=False)
    if ir_dest is not None:
        write_output(ir_dest, lowered.proto, "--ir-dest")
    if as_json:
        data = {
            **to_json(answer),
            "ir_format": request.ir_format.value,
            "optimized": optimized,
            "inputs": request.inputs,
            "constants": request.constants,
            "ir_human_dest": str(ir_human_dest) if ir_human_dest else None,
            "ir_dest": str(ir_dest) if ir_dest else None,
        }
        if ir_human_dest is None:
            data["ir_text"] = text
        typer.echo(json.dumps(data, indent=2))
        return
    for dest, what in ((ir_human_dest, "IR text"), (ir_dest, "HloModuleProto")):
        if dest is not None:
            reporter.info(f"wrote {what} to {dest}")
    if answer.cost_analysis:
        reporter.info("cost analysis: " + ", ".join(f"{k} {v:g}" for k, v in cost_rows(answer.cost_analysis)))
    if answer.memory_analysis:
        reporter.info(
            "memory: "
            + ", ".join(f"{k.replace('_size_in_bytes', '')} {v} B" for k, v in answer.memory_analysis.items())
        )
