"""Debugger configurations for a debug-built JAX tree: VS Code's launch.json (a Python launch and a
C++ "(gdb) Attach") and a gdb init file, both mapping bazel's recorded source paths to real ones.

Bazel compiles in its execroot and records paths as `/proc/self/cwd/...` (jaxlib's own files,
which live in the tree) and `/proc/self/cwd/external/xla/...` (XLA, under the output base).
plan_setup() is pure apart from asking bazel for its output base; write_setup() merges into
existing files: other configurations and other gdb lines are kept.
"""

from __future__ import annotations

import getpass
import hashlib
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from xlatools.errors import UsageError

GDBINIT = Path(".xlatools") / "gdbinit"
LAUNCH = Path(".vscode") / "launch.json"
BLOCK = "debug setup"


@dataclass(frozen=True)
class SetupRequest:
    tree: Path
    profile: str
    workspace: Path
    python: str
    program: str | None
    output_base: Path | None
    gdb: str


@dataclass
class SetupPlan:
    launch_path: Path
    gdbinit_path: Path
    substitutions: list[tuple[str, str]]  # (recorded prefix, real folder), most specific first
    configurations: list[dict]  # launch.json entries, as VS Code's schema spells them
    output_base: str
    output_base_from: str  # --output-base, bazel info, or the default bazel uses
    warnings: list[str] = field(default_factory=list)

    def gdbinit_block(self) -> str:
        return "".join(f"set substitute-path {gdb_quoted(old)} {gdb_quoted(new)}\n" for old, new in self.substitutions)

    def describe(self) -> list[str]:
        lines = [f"output base: {self.output_base} ({self.output_base_from})"]
        lines += [f"source map:  {old} -> {new}" for old, new in self.substitutions]
        lines += [
            f"launch.json: {self.launch_path} ({', '.join(c['name'] for c in self.configurations)})",
            f"gdb init:    {self.gdbinit_path} (gdb -x {self.gdbinit_path} ...)",
        ]
        return lines


def gdb_quoted(argument: str) -> str:
    """One argument as gdb's argument splitter reads it back whole: spaces, quotes and backslashes kept."""
    return '"' + argument.replace("\\", "\\\\").replace('"', '\\"') + '"'


def debug_info_warnings(profile_name: str) -> list[str]:
    """The project's debug-info check: does the profile really give -g to XLA and jaxlib sources?"""
    from xlatools.bazelrc import bazel_options
    from xlatools.debuginfo import XLA_SAMPLE, check_debug_info, debug_info_for
    from xlatools.profiles import load

    profile = load(profile_name).profile
    warnings = check_debug_info(profile)
    if not warnings and not debug_info_for(bazel_options(profile.bazel), XLA_SAMPLE).has_debug_info:
        warnings.append(
            f"profile {profile_name} gives XLA sources no debug info (no -g): gdb will show functions "
            "but no source lines; build with --profile dbg-cpu for those"
        )
    return warnings


def default_output_base(tree: Path, env: Mapping[str, str]) -> Path:
    """Where bazel puts a workspace's output base unless told otherwise: the MD5 of its path under
    ~/.cache/bazel/_bazel_$USER (bazel's documented default output_user_root)."""
    user = env.get("USER") or getpass.getuser()
    root = (
        Path(env.get("TEST_TMPDIR") or Path(env.get("HOME", "~")).expanduser() / ".cache" / "bazel") / f"_bazel_{user}"
    )
    return root / hashlib.md5(str(tree).encode()).hexdigest()


def ask_bazel(tree: Path, env: Mapping[str, str]) -> Path | None:
    import shutil

    bazel = shutil.which("bazel", path=env.get("PATH"))
    if bazel is None:
        return None
    try:
        # --batch: answer without starting a bazel server that would outlive this command (the hostile harness
        # found one left running); subprocess.run bounds the client, and in batch mode the client is all there is
        done = subprocess.run(
            [bazel, "--batch", "info", "output_base"],
            cwd=tree,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    line = done.stdout.strip().splitlines()[-1] if done.returncode == 0 and done.stdout.strip() else ""
    return Path(line) if line.startswith("/") else None


def _xla_folders(output_base: Path) -> list[str]:
    """external/xla as this bazel names it (WORKSPACE: xla; Bzlmod: xla~ or xla+)."""
    found = [name for name in ("xla", "xla~", "xla+") if (output_base / "external" / name).exists()]
    return found or ["xla"]


def plan_setup(request: SetupRequest, env: Mapping[str, str]) -> SetupPlan:
    if not request.tree.is_dir():
        raise UsageError(
            f"--source {request.tree}: not a folder", hint="name the JAX tree the debug jaxlib was built from"
        )
    warnings = debug_info_warnings(request.profile)
    output_base, origin = request.output_base, "--output-base"
    if output_base is None:
        output_base, origin = ask_bazel(request.tree, env), "bazel info output_base"
    if output_base is None:
        output_base, origin = (
            default_output_base(request.tree, env),
            "bazel's default; pass --output-base if you set another",
        )
    if not output_base.is_dir():
        warnings.append(
            f"the output base {output_base} does not exist yet (build the tree first, or pass --output-base)"
        )
    substitutions: list[tuple[str, str]] = []
    for name in _xla_folders(output_base):
        real = str(output_base / "external" / name)
        substitutions += [(f"/proc/self/cwd/external/{name}", real), (f"external/{name}", real)]
    substitutions.append(("/proc/self/cwd", str(request.tree)))
    plan = SetupPlan(
        request.workspace / LAUNCH, request.workspace / GDBINIT, substitutions, [], str(output_base), origin, warnings
    )
    plan.configurations = _configurations(request, plan)
    return plan


def _configurations(request: SetupRequest, plan: SetupPlan) -> list[dict]:
    label = f"jaxlib {request.profile}"
    python = {
        "name": f"xlatools: Python ({label})",
        "type": "debugpy",
        "request": "launch",
        "program": request.program or "${file}",
        "python": request.python,
        "console": "integratedTerminal",
        "justMyCode": False,
    }
    attach = {
        "name": f"xlatools: (gdb) Attach ({label})",
        "type": "cppdbg",
        "request": "attach",
        "program": request.python,
        "processId": "${command:pickProcess}",
        "MIMode": "gdb",
        "miDebuggerPath": request.gdb,
        "sourceFileMap": dict(plan.substitutions),
        "setupCommands": [
            {"description": "pretty printing", "text": "-enable-pretty-printing", "ignoreFailures": True},
            {"description": "xlatools source maps", "text": f"source {plan.gdbinit_path}"},
        ],
    }
    return [python, attach]


MAX_CONFIG_BYTES = 8 << 20  # a launch.json or gdb init file larger than this is not one a person keeps


def _existing(path: Path, what: str) -> str | None:
    """The text of a config file we merge into, None when there is none; anything that is not a
    regular UTF-8 file of sane size (a folder, a FIFO, a link loop) is refused before anything is written."""
    import os

    from xlatools.fsutil import read_user_text

    if not os.path.lexists(path):
        return None
    return read_user_text(path, what, MAX_CONFIG_BYTES, hint="fix the file, or move it away and run again")


def write_setup(plan: SetupPlan) -> list[str]:
    """Merge the configurations into launch.json and the block into the gdb init file; what was written.
    Both are read and merged before either is written; when the second write fails, the first is undone."""
    from xlatools.bazelrc import update_block
    from xlatools.debug.jsonc import merge_configurations
    from xlatools.fsutil import refuse_links
    from xlatools.redact import redact, redact_text

    workspace = plan.launch_path.parent.parent
    refuse_links(plan.launch_path, workspace, "--workspace: launch.json")
    refuse_links(plan.gdbinit_path, workspace, "--workspace: gdb init file")
    gdbinit = _existing(plan.gdbinit_path, "gdb init file")
    launch = _existing(plan.launch_path, "launch.json")
    update = update_block(
        gdbinit or "",
        BLOCK,
        redact_text(plan.gdbinit_block()),
        file_label=str(plan.gdbinit_path),
        owner="xlatools debug setup",
    )
    # refuses before any write
    merged = merge_configurations(launch, redact(plan.configurations), str(plan.launch_path))
    writes = [(plan.launch_path, merged, launch)] if merged != launch else []
    writes += [(plan.gdbinit_path, update.text, gdbinit)] if update.changed else []
    _write_all(writes)
    return [str(path) for path, _, _ in writes]


def _write_all(writes: list[tuple[Path, str, str | None]]) -> None:
    """Write each (path, text, previous text); if one fails, put back what the earlier ones replaced."""
    from xlatools.fsutil import check_output, write_output

    for path, _, _ in writes:
        check_output(path, "--workspace")
    done: list[tuple[Path, str | None, bool]] = []
    try:
        for path, text, previous in writes:
            made_folder = not path.parent.exists()
            write_output(path, text, "--workspace")
            done.append((path, previous, made_folder))
    except BaseException:
        for path, previous, made_folder in reversed(done):
            _undo(path, previous, made_folder)
        raise


def _undo(path: Path, previous: str | None, made_folder: bool) -> None:
    from xlatools.fsutil import atomic_write_text

    try:
        if previous is None:
            path.unlink()
            if made_folder:
                path.parent.rmdir()
        else:
            atomic_write_text(path, previous)
    except OSError:
        pass  # the error being raised says what failed; this file keeps what was written
