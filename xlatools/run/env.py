"""The program's environment, built layer by layer with the origin of every value.

Precedence is a property of the value's origin, not of the order in which the plan
adds it: `Layer` orders the origins (environment < preset < profile < command line <
xlatools), and a value from a lower layer never replaces one from a higher layer.
Within one layer, the later mention wins (presets in the order given).
XLA_FLAGS and TF_CPP_VMODULE are merged item by item, not replaced whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from xlatools.errors import UsageError
from xlatools.records.run import EnvChangeRecord, OverrideRecord
from xlatools.run.flags import flag_name, join_flags, parse_env_flags, validate_flag
from xlatools.run.frontends import TF_XLA_FLAGS


class Layer(IntEnum):
    """Where a setting came from, lowest precedence first."""

    ENVIRONMENT = 0  # the caller's shell
    PRESET = 1
    PROFILE = 2
    COMMAND_LINE = 3
    XLATOOLS = 4  # what the run itself needs: dumps into the bundle, cache off, log level for VLOG


@dataclass(frozen=True)
class Source:
    layer: Layer
    detail: str  # as shown to users: "preset hlo", "profile dbg-cpu", "--env", "xlatools (bundle)"

    def __str__(self) -> str:
        return self.detail


ENVIRONMENT = Source(Layer.ENVIRONMENT, "environment")


def split_assignment(item: str, option: str, sep: str = "=") -> tuple[str, str]:
    key, found, value = item.partition(sep)
    if not found or not key.strip():
        example = {"--env": "JAX_TRACEBACK_FILTERING=off", "--vmodule": "hlo_pass_pipeline=1"}.get(option, "KEY=VALUE")
        raise UsageError(f"{option} {item!r}: expected KEY{sep}VALUE", hint=f"e.g. {option} {example}")
    return key.strip(), value


MAX_VLOG = 100  # TF_CPP_MAX_VLOG_LEVEL and vmodule levels are C++ ints; XLA's VLOGs go up to about 5


def parse_vmodule(value: str, where: str) -> dict[str, int]:
    levels: dict[str, int] = {}
    for item in (part for part in value.split(",") if part.strip()):
        module, level = split_assignment(item, where)
        try:
            levels[module] = int(level)
        except ValueError:
            raise UsageError(
                f"{where} {item!r}: the level must be a whole number", hint="e.g. hlo_pass_pipeline=1"
            ) from None
        if not 0 <= levels[module] <= MAX_VLOG:
            raise UsageError(f"{where} {item!r}: the level must be 0 to {MAX_VLOG}", hint="e.g. hlo_pass_pipeline=1")
    return levels


@dataclass(frozen=True)
class Override:
    """A flag that a higher (or later) setting replaced."""

    flag: str
    by: str
    origin: Source  # of the replaced flag
    source: Source  # of the flag that replaced it

    def record(self) -> OverrideRecord:
        return OverrideRecord(flag=self.flag, by=self.by, from_=str(self.origin), source=str(self.source))


@dataclass
class FlagLayers:
    """XLA flags by name, each with its source; precedence as in `Layer`."""

    flags: dict[str, tuple[str, Source]] = field(default_factory=dict)
    overridden: list[Override] = field(default_factory=list)

    def add(self, flags: list[str], source: Source) -> None:
        for flag in flags:
            name = flag_name(flag)
            old = self.flags.get(name)
            if old is not None and old[1].layer > source.layer:
                if old[0] != flag:
                    self.overridden.append(Override(flag, old[0], source, old[1]))
                continue
            if old is not None and old[0] != flag:
                self.overridden.append(Override(old[0], flag, old[1], source))
            self.flags.pop(name, None)  # re-insert: the order shows the layer it came from
            self.flags[name] = (flag, source)

    def final(self) -> list[str]:
        return [flag for flag, _ in self.flags.values()]

    def sources(self) -> dict[str, str]:
        return {flag: str(source) for flag, source in self.flags.values()}


@dataclass(frozen=True)
class EnvChange:
    name: str
    value: str | None  # None: removed
    source: Source
    previous: str | None  # the caller's value, when it had one

    def record(self) -> EnvChangeRecord:
        return EnvChangeRecord(name=self.name, value=self.value, previous=self.previous, source=str(self.source))


class EnvBuilder:
    """Collects environment settings layer by layer, remembering where each came from."""

    def __init__(self, caller: dict[str, str]):
        self.caller = caller
        self.values: dict[str, tuple[str | None, Source]] = {}
        self.flags = FlagLayers()
        self.tf_flags = FlagLayers()  # TensorFlow's TF_XLA_FLAGS: the same parser, merged the same way
        self.vmodule: dict[str, tuple[int, Source]] = {}
        # The caller's flags get the checks of --xla-flag: a bad value is refused before launch, not by XLA's abort.
        caller_flags = caller.get("XLA_FLAGS", "")
        self.flags.add(
            [validate_flag(f, "XLA_FLAGS in the environment") for f in parse_env_flags(caller_flags)]
            if caller_flags.strip()
            else [],
            ENVIRONMENT,
        )
        caller_tf = caller.get(TF_XLA_FLAGS, "")
        self.tf_flags.add(
            [validate_flag(f, f"{TF_XLA_FLAGS} in the environment") for f in parse_env_flags(caller_tf, TF_XLA_FLAGS)]
            if caller_tf.strip()
            else [],
            ENVIRONMENT,
        )
        self.add_vmodule(parse_vmodule(caller.get("TF_CPP_VMODULE", ""), "TF_CPP_VMODULE"), ENVIRONMENT)

    def set(self, name: str, value: str | None, source: Source) -> None:
        if name == "XLA_FLAGS":
            flags = parse_env_flags(value or "")
            for flag in flags:
                validate_flag(flag, f"XLA_FLAGS from {source}")
            self.flags.add(flags, source)
        elif name == TF_XLA_FLAGS:
            self.tf_flags.add(
                [validate_flag(f, f"{name} from {source}") for f in parse_env_flags(value or "", name)], source
            )
        elif name == "TF_CPP_VMODULE":
            self.add_vmodule(parse_vmodule(value or "", f"TF_CPP_VMODULE from {source}"), source)
        elif name not in self.values or self.values[name][1].layer <= source.layer:
            self.values[name] = (value, source)

    def get(self, name: str) -> tuple[str | None, Source | None]:
        return self.values.get(name, (None, None))

    def add_vmodule(self, levels: dict[str, int], source: Source) -> None:
        for module, level in levels.items():
            if module not in self.vmodule or self.vmodule[module][1].layer <= source.layer:
                self.vmodule[module] = (level, source)

    def changes(self) -> list[EnvChange]:
        merged = Source(Layer.XLATOOLS, "merged")
        changes = []
        for name, (value, source) in self.values.items():
            if value != self.caller.get(name):
                changes.append(EnvChange(name, value, source, self.caller.get(name)))
        final_flags = join_flags(self.flags.final())
        if final_flags != self.caller.get("XLA_FLAGS", ""):
            changes.append(EnvChange("XLA_FLAGS", final_flags or None, merged, self.caller.get("XLA_FLAGS")))
        final_tf = join_flags(self.tf_flags.final())
        if final_tf != self.caller.get(TF_XLA_FLAGS, ""):
            changes.append(EnvChange(TF_XLA_FLAGS, final_tf or None, merged, self.caller.get(TF_XLA_FLAGS)))
        vmodule = ",".join(f"{m}={lvl}" for m, (lvl, _) in self.vmodule.items())
        if vmodule != self.caller.get("TF_CPP_VMODULE", ""):
            changes.append(EnvChange("TF_CPP_VMODULE", vmodule or None, merged, self.caller.get("TF_CPP_VMODULE")))
        return changes
