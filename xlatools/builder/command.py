"""The command a build runs: JAX's `build/build.py build ...` by default, or the
profile's `build.command` template (TensorFlow, PyTorch/XLA, ...). Pure.

Option names follow JAX's build.py (subcommand CLI, late 2024 on); see
JAX's `build/build.py` (its argparse options). build.py turns the CUDA options into hermetic repo_env settings,
so a CUDA jaxlib builds on a machine without a GPU.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from xlatools.errors import UsageError

PLACEHOLDERS = ("source", "output", "wheels", "python", "config", "bazel_cache", "jobs", "xla")
LIST_PLACEHOLDER = "{bazel_options}"
STARTUP_PLACEHOLDER = "{bazel_startup_options}"


@dataclass(frozen=True)
class CommandInputs:
    """Everything the command needs, with paths as the build sees them
    (container paths in a container, host paths with --local)."""

    source: str
    output: str
    wheels: tuple[str, ...]
    python_version: str | None
    config_name: str
    bazel_cache: str
    jobs: int | None
    local_xla: str | None
    # Options for bazel beyond --config=<config_name> (cache, TLS): command-line
    # only, because they depend on where the build runs, not on the profile.
    extra_bazel_options: tuple[str, ...] = ()
    # bazel startup options (before the command): the private rc with remote credentials.
    startup_options: tuple[str, ...] = ()
    python: str = "python3"

    def bazel_options(self) -> list[str]:
        options = [f"--config={self.config_name}", f"--disk_cache={self.bazel_cache}"]
        if self.jobs:
            options.append(f"--jobs={self.jobs}")
        return options + list(self.extra_bazel_options)


def _cuda_options(target) -> list[str]:
    if not target.cuda:
        raise UsageError(
            "the profile builds for CUDA but sets no target.cuda version",
            hint='set target.cuda (e.g. "12.9.1"); build.py needs it for hermetic CUDA',
        )
    options = [f"--cuda_version={target.cuda}"]
    major = target.cuda.split(".")[0]
    if major != "12":  # build.py's default major version; it names the wheels (jax-cuda12-plugin)
        options.append(f"--cuda_major_version={major}")
    if target.cudnn:
        options.append(f"--cudnn_version={target.cudnn}")
    if target.nccl is False:
        options.append("--disable_nccl")
    elif target.nccl:
        options.append(f"--nccl_version={target.nccl}")
    if target.compute_capabilities:
        options.append("--cuda_compute_capabilities=" + ",".join(target.compute_capabilities))
    return options


def manual_buildpy_argv(profile, config_name: str) -> list[str] | None:
    """The `build/build.py build ...` line to run by hand in a JAX tree whose .bazelrc.user holds the profile's
    config (`xlatools bazelrc --source`): its wheels, Python, CUDA/cuDNN/NCCL versions and compute capabilities,
    and --config. None when the profile replaces build.py (`build.command`) or builds for ROCm."""
    target = profile.target
    if profile.build.command or target.backend == "rocm" or not profile.build.wheels:
        return None
    argv = ["python", "build/build.py", "build", f"--wheels={','.join(profile.build.wheels)}"]
    if target.python:
        argv.append(f"--python_version={target.python}")
    if target.backend == "cuda":
        argv += _cuda_options(target)
    return argv + [f"--bazel_options=--config={config_name}"]


def buildpy_argv(profile, inputs: CommandInputs) -> list[str]:
    """`python3 build/build.py build ...` for this profile."""
    target = profile.target
    if target.backend == "rocm":
        raise UsageError(
            "the default build command does not drive ROCm builds yet",
            hint="set build.command in the profile to the command your tree needs",
        )
    if not inputs.wheels:
        raise UsageError("the profile lists no wheels to build", hint="set build.wheels, e.g. [jaxlib]")
    argv = [inputs.python, "build/build.py", "build", f"--wheels={','.join(inputs.wheels)}"]
    if inputs.python_version:
        argv.append(f"--python_version={inputs.python_version}")
    if target.backend == "cuda":
        argv += _cuda_options(target)
    argv += [f"--bazel_startup_options={option}" for option in inputs.startup_options]
    argv += [f"--bazel_options={option}" for option in inputs.bazel_options()]
    if inputs.local_xla:
        argv.append(f"--local_xla_path={inputs.local_xla}")
    # --verbose makes build.py echo the bazel command it runs into the log.
    argv += [f"--output_path={inputs.output}", "--verbose"]
    return argv


def expand_template(template: list[str], inputs: CommandInputs) -> list[str]:
    """The profile's `build.command` with its placeholders filled in."""
    values = {
        "source": inputs.source,
        "output": inputs.output,
        "wheels": ",".join(inputs.wheels),
        "python": inputs.python_version or "",
        "config": inputs.config_name,
        "bazel_cache": inputs.bazel_cache,
        "jobs": str(inputs.jobs or ""),
        "xla": inputs.local_xla or "",
    }
    argv: list[str] = []
    for index, token in enumerate(template):
        if token == LIST_PLACEHOLDER:
            argv += inputs.bazel_options()
            continue
        if token == STARTUP_PLACEHOLDER:
            argv += inputs.startup_options
            continue
        try:
            for _, field, _, _ in string.Formatter().parse(token):
                if field is not None and field not in values:
                    raise KeyError(field)
            argv.append(token.format(**values))
        except KeyError as exc:
            raise UsageError(
                f"build.command[{index}]: unknown placeholder {{{exc.args[0]}}} in {token!r}",
                hint=f"known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)}, and {LIST_PLACEHOLDER} and "
                f"{STARTUP_PLACEHOLDER} as whole arguments; write literal braces as {{{{ and }}}}",
            ) from None
        except (ValueError, IndexError) as exc:
            raise UsageError(
                f"build.command[{index}]: malformed template {token!r}: {exc}",
                hint="write literal braces as {{ and }}",
            ) from None
    if not argv:
        raise UsageError("build.command is empty", hint="remove it to use JAX's build/build.py, or give a command")
    return argv
