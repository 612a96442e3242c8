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
    import os
    import subprocess
    import tempfile

    from xlatools import console
    from xlatools.errors import TimedOut, UsageError, XlaToolsError
    from xlatools.fsutil import atomic_write_bytes
    from xlatools.lowering import cost_rows, plan_lower
    from xlatools.target import PROBES, probe, resolve_python

    if platform not in ("auto", "cpu", "gpu"):
        raise UsageError(f"--platform {platform}: expected auto, cpu or gpu")
    request = plan_lower(fn, input_shapes, constants, ir_format, optimized, str(ir_dest) if ir_dest else None, Path.cwd())
    for dest in (ir_human_dest, ir_dest):
        if dest is not None and not dest.parent.resolve().is_dir():
            raise UsageError(f"{dest}: the folder {dest.parent} does not exist")
    interpreter = resolve_python(python)
    target = probe(interpreter, platform)
    env = dict(os.environ)
    if platform == "cpu":
        env["JAX_PLATFORMS"] = "cpu"
    elif platform == "gpu":
        env["JAX_PLATFORMS"] = target.gpu_platform()
    with tempfile.TemporaryDirectory(prefix="xlatools-lower-") as tmp:
        request.text_out = os.path.join(tmp, "ir.txt")
        request.proto_out = os.path.join(tmp, "ir.pb") if ir_dest else None
        with open(os.path.join(tmp, "request.json"), "w") as handle:
            json.dump(request.to_json(), handle)
        answer_path = os.path.join(tmp, "answer.json")
        console.step(f"lowering {fn} to {request.ir_format}{' (optimised)' if optimized else ''} "
                     f"with jax {target.jax} ({interpreter})")
        try:
            proc = subprocess.run([interpreter, str(PROBES / "lower.py"), os.path.join(tmp, "request.json"), answer_path],
                                  env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TimedOut(f"lowering {fn} took longer than {timeout:g} s", hint="raise --timeout") from None
        try:
            with open(answer_path) as handle:
                answer = json.load(handle)
        except (OSError, ValueError):
            tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
            raise XlaToolsError(f"lowering {fn} crashed (exit {proc.returncode}): {tail}") from None
        if not answer["ok"]:
            if proc.stderr.strip() and answer["kind"] != "usage":
                console.err().print(console.escape(proc.stderr.rstrip()))
            cls = UsageError if answer["kind"] == "usage" else XlaToolsError
            raise cls(f"lowering {fn} failed: {answer['message']}")
        text = Path(request.text_out).read_text()
        if ir_human_dest is not None:
            atomic_write_bytes(ir_human_dest, text.encode())
        elif not as_json:
            typer.echo(text, nl=False)
        if ir_dest is not None:
            atomic_write_bytes(ir_dest, Path(request.proto_out).read_bytes())
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
