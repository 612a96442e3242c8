"""What a run runs: a built-in smoke program, a script, or a module (`-m`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from xlatools.errors import UsageError
from xlatools.records.run import ProgramRecord

ProgramKind = Literal["smoke", "script", "module"]
SMOKE_DIR = Path(__file__).resolve().parent / "smoke"
SMOKE_PROGRAMS = ("dot", "matmul", "conv", "reduce", "while", "grad", "collectives")  # smoke:all
GROUP_SMOKE_PROGRAMS = ("multiprocess",)  # not in smoke:all: it needs several processes (run --processes)


@dataclass(frozen=True)
class Program:
    kind: ProgramKind
    name: str  # smoke names joined by ",", the script path, or the module
    args: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return {"smoke": f"smoke:{self.name}", "module": f"-m {self.name}"}.get(self.kind, self.name)

    def record(self) -> ProgramRecord:
        return ProgramRecord(kind=self.kind, name=self.name, args=list(self.args), label=self.label)


def refuse_program_and_module(argv: list[str], program: str | None, module: str | None) -> None:
    """`run prog.py -m json.tool` names two programs; `run -m tool prog.py` passes prog.py to the module.

    Only the command line's order tells them apart (the parser gives both as PROGRAM and -m)."""
    if not (program and module) or "-m" not in argv or program not in argv:
        return
    if argv.index(program) < argv.index("-m"):
        raise UsageError(
            f"both a program ({program}) and a module (-m {module}) were given",
            hint=f"run one: `xlatools run {program}` or `xlatools run -m {module} [ARGS]`",
        )


def parse_program(program: str | None, module: str | None, args: list[str], cwd: Path) -> Program:
    if module and program:
        # `-m mod a b`: typer hands us the first extra word as PROGRAM.
        args = [program, *args]
        program = None
    if module:
        return Program("module", module, tuple(args))
    if not program or program == "smoke:all":
        return Program("smoke", ",".join(SMOKE_PROGRAMS), tuple(args))
    if program.startswith("smoke:"):
        names = [n for n in program[len("smoke:") :].split(",") if n]
        known = SMOKE_PROGRAMS + GROUP_SMOKE_PROGRAMS
        for name in names:
            if name not in known:
                import difflib

                close = difflib.get_close_matches(name, known, n=1)
                hint = f"did you mean 'smoke:{close[0]}'? " if close else ""
                raise UsageError(f"unknown smoke program '{name}'", hint=f"{hint}known: all, {', '.join(known)}")
        if not names:
            raise UsageError("smoke: needs a name", hint=f"e.g. smoke:dot; known: all, {', '.join(known)}")
        return Program("smoke", ",".join(names), tuple(args))
    path = Path(program).expanduser()
    if not path.is_absolute():
        path = cwd / path
    hint = "give a .py file, `-m module`, or smoke:NAME (smoke:all runs every built-in smoke program)"
    if not path.exists():
        raise UsageError(f"program not found: {program}", hint=hint)
    if not path.is_file():
        what = "a folder" if path.is_dir() else "not a regular file"
        raise UsageError(f"program {program} is {what}", hint=hint)
    if path.suffix != ".py":
        raise UsageError(f"program {program} is not a .py file", hint="for a module use -m NAME")
    try:
        with open(path, "rb") as handle:  # refused here, not after a bundle was made for it
            handle.read(1)
    except OSError as exc:
        raise UsageError(f"program {program} cannot be read: {exc.strerror}", hint="check its permissions") from None
    return Program("script", str(path), tuple(args))
