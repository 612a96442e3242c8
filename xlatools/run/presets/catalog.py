"""Presets: named bundles of XLA flags, environment and vmodule settings, as data.

Shipped in xlatools/run/presets/*.yaml; more come from XLATOOLS_PRESET_PATH
(colon separated directories), the user config dir (<config>/xlatools/presets)
and a profile's `run.define_presets`. A later source may not silently replace
a preset of the same name: that is an error, as for profiles.

Values may contain `{bundle}`, replaced by the run's bundle directory.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlatools.errors import Problem, ProfileError, UsageError
from xlatools.records.run import PresetRef
from xlatools.run.env import MAX_VLOG
from xlatools.run.flags import flag_name, min_version, value_problem
from xlatools.run.frontends import FRONTENDS

SHIPPED_DIR = Path(__file__).resolve().parent
KINDS = ("dump", "log", "jax", "gpu", "frontend")
_KEYS = {"kind", "description", "xla_flags", "env", "vmodule", "min_jaxlib", "max_jaxlib", "frontend"}


@dataclass(frozen=True)
class Preset:
    name: str
    kind: str
    description: str
    source: str
    xla_flags: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    vmodule: dict[str, int] = field(default_factory=dict)
    min_jaxlib: str | None = None
    max_jaxlib: str | None = None
    frontend: str | None = None  # the frontend this preset is for (tf-clustering: tensorflow); None: any

    def jaxlib_range(self) -> tuple[str | None, str | None]:
        """Versions that accept this preset: its own bounds, narrowed by the flag table."""
        from packaging.version import Version

        lows = [v for v in (self.min_jaxlib, min_version([flag_name(f) for f in self.xla_flags])) if v]
        low = max(lows, key=Version) if lows else None
        return low, self.max_jaxlib

    def ref(self) -> PresetRef:
        """How a run records the preset it used."""
        return PresetRef(name=self.name, kind=self.kind, source=self.source)

    def info(self) -> "PresetInfo":
        """The preset as `presets list/show` show it: its jaxlib range narrowed by the flag table."""
        low, high = self.jaxlib_range()
        return PresetInfo(
            name=self.name,
            kind=self.kind,
            description=self.description,
            xla_flags=list(self.xla_flags),
            env=dict(self.env),
            vmodule=dict(self.vmodule),
            min_jaxlib=low,
            max_jaxlib=high,
            frontend=self.frontend,
            source=self.source,
        )


@dataclass(kw_only=True)
class PresetInfo:
    name: str
    kind: str
    description: str
    xla_flags: list[str]
    env: dict[str, str]
    vmodule: dict[str, int]
    min_jaxlib: str | None
    max_jaxlib: str | None
    frontend: str | None
    source: str

    def versions(self) -> str:
        """`0.4.30 .. 0.10.2`, `>= 0.10.2`, `<= 0.5.0` or `any`."""
        low, high = self.min_jaxlib, self.max_jaxlib
        if low and high:
            return f"{low} .. {high}"
        return f">= {low}" if low else f"<= {high}" if high else "any"


def shape_problems(name: str, spec: dict, source: str) -> list[Problem]:  # raw YAML in, checked here
    """The type problems of one definition (its known keys), each keyed `NAME.KEY...`."""
    from xlatools.records.base import validate
    from xlatools.run.presets.shape import PresetShape

    try:
        validate({k: v for k, v in spec.items() if k in _KEYS}, PresetShape, Path(source), "preset definitions")
    except UsageError as exc:
        return [
            Problem(
                f"{problem.message}{_EXPECTED.get(_top(problem.key), '')}", file=source, key=f"{name}.{problem.key}"
            )
            for problem in exc.problems
        ]
    return []


_EXPECTED = {
    "env": " (env must map names to strings)",
    "xla_flags": " (xla_flags must be a list of --xla_... strings)",
    "vmodule": " (vmodule must map source file names to levels)",
    "min_jaxlib": " (a quoted version string)",
    "max_jaxlib": " (a quoted version string)",
}


def _top(key: str | None) -> str:
    return (key or "").split(".")[0].split("[")[0]


def parse_preset(name: str, spec: object, source: str, trusted: bool = False) -> tuple[Preset | None, list[Problem]]:
    """Validate one preset definition; returns the problems instead of raising, to report all at once.
    Types go through the records reader (shape_problems) unless `trusted` (the shipped presets, which a
    test validates so); what the types cannot say (kinds, flag names and values, levels) is checked here."""
    where = dict(file=source, key=name)
    if not isinstance(spec, dict):
        return None, [Problem("a preset must be a mapping (kind, description, xla_flags, env, vmodule)", **where)]
    problems = []
    for key in spec:
        if key not in _KEYS:
            close = difflib.get_close_matches(str(key), sorted(_KEYS), n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"known keys: {', '.join(sorted(_KEYS))}"
            problems.append(Problem(f"unknown key '{key}'", file=source, key=f"{name}.{key}", hint=hint))
    if not trusted:
        typed = shape_problems(name, spec, source)
        if typed:
            return None, problems + typed
    kind = spec.get("kind")
    if kind not in KINDS:
        problems.append(
            Problem(f"kind must be one of {', '.join(KINDS)}, not {kind!r}", file=source, key=f"{name}.kind")
        )
    flags = spec.get("xla_flags") or []
    env = spec.get("env") or {}
    vmodule = spec.get("vmodule") or {}
    if not all(f.startswith("--xla_") for f in flags):
        problems.append(Problem("xla_flags must be a list of --xla_... strings", file=source, key=f"{name}.xla_flags"))
        flags = []
    if not all(0 <= v <= MAX_VLOG for v in vmodule.values()):
        problems.append(
            Problem(f"vmodule must map source file names to levels 0 to {MAX_VLOG}", file=source, key=f"{name}.vmodule")
        )
        vmodule = {}
    for flag in flags:  # typed values, as --xla-flag checks them
        problem = value_problem(flag)
        if problem is not None:
            problems.append(
                Problem(f"{flag}: {problem[0]}", file=source, key=f"{name}.xla_flags", hint=f"e.g. {problem[1]}")
            )
    if spec.get("frontend") is not None and spec.get("frontend") not in FRONTENDS:
        problems.append(Problem(f"frontend must be one of {', '.join(FRONTENDS)}", file=source, key=f"{name}.frontend"))
    if problems:
        return None, problems
    preset = Preset(
        name=name,
        kind=kind,
        description=str(spec.get("description", "")),
        source=source,
        xla_flags=tuple(flags),
        env={str(k): str(v) for k, v in env.items()},
        vmodule={str(k): int(v) for k, v in vmodule.items()},
        min_jaxlib=spec.get("min_jaxlib"),
        max_jaxlib=spec.get("max_jaxlib"),
        frontend=spec.get("frontend"),
    )
    return preset, []


def preset_dirs() -> list[Path]:
    from platformdirs import user_config_dir

    dirs = [Path(p).expanduser() for p in os.environ.get("XLATOOLS_PRESET_PATH", "").split(os.pathsep) if p]
    return [Path(user_config_dir("xlatools")) / "presets", *dirs]


SHIPPED_JSON = SHIPPED_DIR / "shipped.json"


def shipped_definitions() -> list[tuple[Path, Any]]:
    """The shipped YAML files' contents, parsed (the source of shipped.json)."""
    definitions = []
    for path in sorted(SHIPPED_DIR.glob("*.y*ml")):
        data, problems = _read_yaml(path)
        if problems:
            raise ProfileError(f"{len(problems)} problem(s) in shipped presets", problems=problems)
        definitions.append((path, data))
    return definitions


def write_shipped_json() -> None:
    """Regenerate shipped.json from the shipped YAML: `python -m xlatools.run.presets.catalog`."""
    import json

    from xlatools.fsutil import atomic_write_text

    data = {path.name: content for path, content in shipped_definitions()}
    atomic_write_text(SHIPPED_JSON, json.dumps(data, indent=1) + "\n")


def _shipped() -> list[tuple[str, Any]]:
    """The shipped presets without a YAML parser: every run reads them, and importing and running
    PyYAML cost more than the rest of a run's start-up (tests keep the JSON equal to the YAML)."""
    import json

    try:
        data = json.loads(SHIPPED_JSON.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {path.name: content for path, content in shipped_definitions()}
    deterministic = (data.get("gpu.yaml") or {}).get("deterministic")
    if isinstance(deterministic, dict):  # its flags live in one place: run/determinism.py (MODE)
        from xlatools.run.determinism import mode_flags

        deterministic["xla_flags"] = mode_flags()
    return [(str(SHIPPED_DIR / name), content) for name, content in data.items()]


def _read_yaml(path: Path) -> tuple[Any, list[Problem]]:
    from xlatools.yamlfile import YamlRefused, load_file

    try:
        return load_file(path) or {}, []
    except YamlRefused as exc:
        return None, [exc.problem]


class Catalog:
    """All presets visible to a run, by name."""

    def __init__(self, presets: dict[tuple[str, str], Preset]):
        self.presets = presets  # by (kind, name)

    @classmethod
    def load(
        cls,
        extra: dict[str, Any] | None = None,  # run.define_presets: the profile's raw YAML mapping, validated here
        extra_source: str = "profile run.define_presets",
    ) -> "Catalog":
        presets: dict[tuple[str, str], Preset] = {}
        problems: list[Problem] = []

        def add_all(mapping: Any, source: str, trusted: bool = False) -> None:
            if not isinstance(mapping, dict):
                problems.append(Problem("a preset file must map preset names to definitions", file=source))
                return
            for name, spec in mapping.items():
                preset, found = parse_preset(str(name), spec, source, trusted)
                problems.extend(found)
                if preset is None:
                    continue
                key = (preset.kind, preset.name)
                if key in presets:
                    problems.append(
                        Problem(
                            f"{preset.kind} preset '{name}' is already defined in {presets[key].source}",
                            file=source,
                            key=str(name),
                            hint="give it another name",
                        )
                    )
                    continue
                presets[key] = preset

        for source, data in _shipped():
            add_all(data, source, trusted=True)
        for directory in preset_dirs():
            if directory.is_dir():
                for path in sorted(directory.glob("*.y*ml")):
                    data, found = _read_yaml(path)
                    problems.extend(found)
                    if data is not None:
                        add_all(data, str(path))
        if extra:
            add_all(extra, extra_source)
        if problems:
            raise ProfileError(f"{len(problems)} problem(s) in preset definitions", problems=problems)
        return cls(presets)

    def get(self, ref: str, kind: str | None = None) -> Preset:
        """A preset by `NAME` or `KIND:NAME` (needed where two kinds share a name, e.g. dump:passes, log:passes);
        with `kind`, only a preset of that kind (a `KIND:` of another kind is refused, never used)."""
        if ":" in ref and ref.split(":", 1)[0] in KINDS:
            named, ref = ref.split(":", 1)
            if kind is not None and named != kind:
                dumps = sorted(n for (k, n) in self.presets if k == kind)
                raise UsageError(
                    f"'{named}:{ref}' is a {named} preset; a {kind} preset is expected here",
                    hint=f"{kind} presets: {', '.join(dumps)} (`xlatools presets list`)",
                )
            kind = named
        found = [p for (k, n), p in self.presets.items() if n == ref and (kind is None or k == kind)]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            choices = "; ".join(f"{p.kind}:{p.name} ({p.description})" for p in found)
            raise UsageError(
                f"preset '{ref}' is ambiguous: {choices}", hint=f"say which, e.g. --preset {found[0].kind}:{ref}"
            )
        name, _, tail = ref.partition(":")
        if tail in KINDS and (tail, name) in self.presets:
            close = [f"{tail}:{name}"]  # KIND and NAME written the other way round
        else:
            names = sorted({n for (k, n) in self.presets if kind is None or k == kind})
            close = difflib.get_close_matches(ref, names, n=1)
            # A name two kinds share is itself ambiguous: suggest the qualified forms.
            shared = [f"{k}:{n}" for (k, n) in self.presets if close and n == close[0] and (kind is None or k == kind)]
            close = shared if len(shared) > 1 else close
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        what = f"{kind} preset" if kind else "preset"
        raise UsageError(f"unknown {what} '{ref}'", hint=f"{hint}`xlatools presets list` shows them all")

    def check_profile(self, presets: list[str], dump_preset: str | None, where: dict[str, str]) -> None:
        """Each preset a profile's run section names (`run.presets`, and `run.dump_preset` when given) exists and is
        of its kind; else a profile error naming the file, line and key. `where`: key -> "file:line"."""
        for index, ref in enumerate(presets):
            self.in_profile(ref, f"run.presets[{index}]", where)
        if dump_preset is not None:
            self.in_profile(dump_preset, "run.dump_preset", where, kind="dump")

    def in_profile(self, ref: str, key: str, where: dict[str, str], kind: str | None = None) -> Preset:
        """get() for a preset a profile names at `key` (`run.presets[0]`); `where`: key -> "file:line" (the
        profile's provenance). Unknown or of the wrong kind: a profile error naming the file, line and key."""
        try:
            return self.get(ref, kind)
        except UsageError as exc:
            file, _, line = where.get(key, "").rpartition(":")
            line_no = int(line) if line.isdigit() else None
            located = Problem(exc.message, file=file or None, line=line_no, key=key, hint=exc.hint)
            raise ProfileError(f"the profile names a preset that cannot be used ({ref})", problems=[located]) from None

    def by_kind(self) -> list[Preset]:
        return sorted(self.presets.values(), key=lambda p: (KINDS.index(p.kind), p.name))


if __name__ == "__main__":
    write_shipped_json()
