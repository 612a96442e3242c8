"""The program a run starts and the run's own settings (PROGRAM, ARGS, -m, --profile, --preset, ...): one
group of options that `xlatools run` and `xlatools debug` take through `with_program_options`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, List, Optional

import typer

from xlatools.commands.options import (
    OutOption,
    PlatformOption,
    ProfileOption,
    PythonOption,
    TimeoutOption,
    XlaFlagOption,
)
from xlatools.vocab import Platform

# Declared once here, in this order.
ProgramArgument = Annotated[
    Optional[str], typer.Argument(help="A .py file or smoke:NAME (smoke:all, the default, runs every smoke program).")
]
ProgramArgsArgument = Annotated[Optional[List[str]], typer.Argument(help="Arguments for the program, after --.")]
ModuleOption = Annotated[Optional[str], typer.Option("-m", help="Run a module (python -m MODULE) instead of a file.")]
PresetOption = Annotated[
    List[str],
    typer.Option("--preset", help="A dump, log, jax or frontend preset (repeatable); see `xlatools presets list`."),
]
VmoduleOption = Annotated[
    List[str], typer.Option("--vmodule", help="C++ VLOG level per source file, FILE=N (repeatable).")
]
VlogOption = Annotated[Optional[int], typer.Option("--vlog", help="C++ VLOG level everywhere (TF_CPP_MAX_VLOG_LEVEL).")]
EnvOption = Annotated[
    List[str], typer.Option("--env", help="Set an environment variable for the program, K=V (repeatable).")
]
FrontendOption = Annotated[
    Optional[str],
    typer.Option(
        "--frontend", help="jax, tensorflow or torch-xla (default: the profile's, a frontend preset's, else detected)."
    ),
]
NameOption = Annotated[Optional[str], typer.Option("--name", help="Bundle name (default: from the program).")]
_PROGRAM_PARAMETERS = {  # parameter -> (its option, its default)
    "program": (ProgramArgument, None),
    "args": (ProgramArgsArgument, None),
    "module": (ModuleOption, None),
    "profile": (ProfileOption, None),
    "preset": (PresetOption, []),
    "xla_flag": (XlaFlagOption, []),
    "vmodule": (VmoduleOption, []),
    "vlog": (VlogOption, None),
    "env": (EnvOption, []),
    "python": (PythonOption, None),
    "frontend": (FrontendOption, None),
    "out": (OutOption, Path("artifacts")),
    "name": (NameOption, None),
    "timeout": (TimeoutOption, None),
    "platform": (PlatformOption, None),
}


@dataclass(frozen=True, kw_only=True)
class ProgramOptions:
    """The program options of one command line, as `with_program_options` hands them to a command."""

    program: Optional[str] = None
    args: list[str] = field(default_factory=list)
    module: Optional[str] = None
    profile: Optional[str] = None
    presets: list[str] = field(default_factory=list)
    xla_flags: list[str] = field(default_factory=list)
    vmodule: list[str] = field(default_factory=list)
    vlog: Optional[int] = None
    env: list[str] = field(default_factory=list)
    python: Optional[str] = None
    frontend: Optional[str] = None
    out: Path = Path("artifacts")
    name: Optional[str] = None
    timeout: Optional[float] = None
    platform: Optional[Platform] = None

    def run_request(self, argv: list[str], cwd: Path, **more):
        """The run's request (run.plan.RunRequest); `more`: the command's own fields (dump, quiet, ...)."""
        from xlatools.run.plan import RunRequest
        from xlatools.run.program import parse_program, refuse_program_and_module

        refuse_program_and_module(argv, self.program, self.module)
        return RunRequest(
            program=parse_program(self.program, self.module, self.args, cwd),
            python=self.python,
            presets=self.presets,
            xla_flags=self.xla_flags,
            vmodule=self.vmodule,
            vlog=self.vlog,
            env=self.env,
            platform=self.platform,
            timeout=self.timeout,
            name=self.name,
            frontend=self.frontend,
            **more,
        )


def with_program_options(command):
    """Give `command` the program options where its `program_options: ProgramOptions` parameter
    stands; they reach it as one ProgramOptions. typer reads the signature made here."""
    import functools
    import inspect
    import typing

    hints = typing.get_type_hints(command, include_extras=True)
    parameters = []
    for parameter in inspect.signature(command).parameters.values():
        if parameter.name == "program_options":
            parameters += [
                inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=option)
                for name, (option, default) in _PROGRAM_PARAMETERS.items()
            ]
        else:
            parameters.append(parameter.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints[parameter.name]))

    @functools.wraps(command)
    def with_options(**values):
        given = {name: values.pop(name) for name in _PROGRAM_PARAMETERS}
        options = ProgramOptions(
            program=given["program"],
            args=list(given["args"] or []),
            module=given["module"],
            profile=given["profile"],
            presets=list(given["preset"]),
            xla_flags=list(given["xla_flag"]),
            vmodule=list(given["vmodule"]),
            vlog=given["vlog"],
            env=list(given["env"]),
            python=given["python"],
            frontend=given["frontend"],
            out=given["out"],
            name=given["name"],
            timeout=given["timeout"],
            platform=given["platform"],
        )
        return command(program_options=options, **values)

    with_options.__signature__ = inspect.Signature(parameters, return_annotation=hints.get("return"))
    with_options.__annotations__ = {p.name: p.annotation for p in parameters}
    return with_options
