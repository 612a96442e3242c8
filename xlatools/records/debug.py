"""The record of a debug bundle (`xlatools debug`): a run of the program under gdb, plus where it
stopped.

A debug session runs the program with the run's own settings, so its manifest is a run manifest
(program, interpreter, jax/frontend versions, presets, flags, environment changes, the program's
outcome) with kind "debug" and the session's fields: gdb, the breakpoints, and one record per
stop with the files it left (paths relative to the bundle). A fatal signal under gdb leaves
native-backtrace.txt, named by the run's own `native_backtrace`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from xlatools.records.base import KEYWORD_KEYS
from xlatools.records.run import RunManifest

DEBUG_SCHEMA = "xlatools.debug/1"


@dataclass(frozen=True, kw_only=True)
class Breakpoint:
    """Where gdb stops: a pass's entry (`pass algsimp`) or the user's own location (`symbol abort`)."""

    __pydantic_config__ = KEYWORD_KEYS
    label: str  # "pass algsimp", "symbol xla::Foo::Bar"
    location: str  # what gdb breaks on (a mangled entry, or the user's location)
    pass_: str | None = None
    classes: tuple[str, ...] = ()  # stop only when `this` is one of these classes (empty: always)
    library: str | None = None


@dataclass(kw_only=True)
class StopRecord:
    """One stop, as gdb's script recorded it; every path is relative to the bundle."""

    __pydantic_config__ = KEYWORD_KEYS
    number: int
    label: str
    dir: str  # stops/N
    backtrace: str  # the stopped thread's native frames
    threads: str  # every thread's
    python_stack: str  # every Python thread's stack (faulthandler)
    pass_: str | None = None
    class_: str | None = None  # the C++ class of the pass object (from its vtable)
    function: str | None = None
    pc: str | None = None
    thread: int | None = None
    thread_name: str | None = None
    module_dump: str | None = None  # the per-pass dump it pairs with (a file of xla_dump/)
    module_file: str | None = None  # its copy: the HLO module the pass receives
    time: float | None = None  # seconds since the epoch


@dataclass(kw_only=True)
class GdbInfo:
    path: str
    version: str | None = None


@dataclass(kw_only=True)
class DebugManifest(RunManifest):
    kind: Literal["debug"] = "debug"  # type: ignore[assignment]
    manifest_schema: str = DEBUG_SCHEMA
    gdb: GdbInfo | None = None
    libraries: list[str] = field(default_factory=list)  # the shared objects the pass map was read from
    breakpoints: list[Breakpoint] = field(default_factory=list)
    max_stops: int = 1
    interactive: bool = False
    hlo_module: str | None = None  # stop only while a module whose name matches this regex compiles
    stops: list[StopRecord] = field(default_factory=list)
