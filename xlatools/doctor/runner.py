"""Which checks a doctor run makes (a pure plan from the options) and running them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Mapping

from xlatools.doctor.model import Check, DoctorOptions, Report, skip
from xlatools.run.target import ProbedInterpreter
from xlatools.vocab import CheckStatus


class Section(StrEnum):
    TARGET = "target"
    ENV = "env"
    NATIVE = "native"
    GPU = "gpu"
    DISK = "disk"
    BUILD = "build"
    TREE = "tree"


@dataclass(frozen=True, kw_only=True)
class DoctorPlan:
    python: str
    profile: str | None
    tree: Path | None
    sections: tuple[Section, ...]
    strict: bool = False


def plan_doctor(options: DoctorOptions, python: str) -> DoctorPlan:
    """The sections to check: the target always; the build side with --profile or --source."""
    sections = [Section.TARGET, Section.ENV, Section.NATIVE, Section.GPU, Section.DISK]
    if options.profile or options.source:
        sections.append(Section.BUILD)
    if options.source:
        sections.append(Section.TREE)
    tree = Path(options.source).resolve() if options.source else None
    return DoctorPlan(
        python=python, profile=options.profile, tree=tree, sections=tuple(sections), strict=options.strict
    )


def run_doctor(plan: DoctorPlan, env: Mapping[str, str] | None = None) -> Report:
    """Probe the target once (run's probe: facts without starting jax, then its devices; cached)
    and make the planned checks."""
    from xlatools.run.target import cached_probe, probe

    env = dict(os.environ if env is None else env)
    report = Report(strict=plan.strict)
    cached = cached_probe(plan.python, "auto", "jax") is not None
    target = probe(plan.python, "auto", "jax", require=False)  # a target that cannot run it at all: exit 3
    if Section.TARGET in plan.sections:
        report.checks += _target_checks(target, env, cached)
    if Section.ENV in plan.sections:
        report.checks += _env_checks(target, env)
    if Section.NATIVE in plan.sections:
        from xlatools.doctor.checks_native import check_native

        report.checks += check_native(list(target.shared_objects), env, system_dirs()) + _debugger_checks(env)
    if Section.GPU in plan.sections:
        report.checks += _gpu_checks(target, env)
    if Section.DISK in plan.sections:
        from xlatools.doctor.checks_build import check_disk

        report.checks.append(check_disk("dumps", Path.cwd() / "artifacts", warn_gib=5, fail_gib=1))
    if plan.profile:
        report.checks.append(_frontend_check(plan.profile, plan.python))
    if Section.BUILD in plan.sections:
        from xlatools.doctor.build_side import build_checks

        report.checks += build_checks(plan.profile, plan.tree, env)
    return report


def _frontend_check(profile_ref: str, python: str) -> Check:
    """Whether the target runs the frontend the profile's runs ask for (run.frontend)."""
    from xlatools.doctor.checks_target import check_run_frontend
    from xlatools.errors import XlaToolsError
    from xlatools.profiles import load
    from xlatools.run.frontends import check_frontend
    from xlatools.run.target import probe

    profile = load(profile_ref).profile
    frontend = check_frontend(profile.run.frontend, f"profile {profile.name} run.frontend")
    target, error = None, None
    if frontend:
        try:
            target = probe(python, "auto", frontend)
        except XlaToolsError as exc:
            error = exc.message
    return check_run_frontend(profile.name, frontend, target, error)


def system_dirs() -> list[str]:
    from xlatools.doctor.native import DEFAULT_DIRS, conf_dirs

    return list(dict.fromkeys(conf_dirs() + list(DEFAULT_DIRS)))


def _target_checks(target: ProbedInterpreter, env: Mapping[str, str], cached: bool) -> list[Check]:
    from xlatools.doctor import checks_target as t

    checks = [t.check_python(target), t.check_installed(target), t.check_compatible(target), t.check_plugins(target)]
    if any(c.status == CheckStatus.FAIL for c in checks[1:3]):
        checks.append(skip("devices", "jax cannot start with these versions (see above)"))
        return checks
    checks.append(t.check_devices(target, env.get("JAX_PLATFORMS"), cached))
    return checks


def _env_checks(target: ProbedInterpreter, env: Mapping[str, str]) -> list[Check]:
    from xlatools.doctor import checks_env as e

    def unknown(names_to_flags: dict[str, str]) -> list[str]:
        from xlatools.run.flag_probe import unknown_flags

        if not target.jaxlib:
            from xlatools.errors import EnvironmentMissing

            raise EnvironmentMissing("no jaxlib is installed")
        return unknown_flags(target, names_to_flags)[0]

    plugins = target.plugin_versions
    return [
        e.check_xla_flags(env, unknown),
        e.check_libtpu_args(env, any(p.startswith("libtpu") for p in plugins)),
        e.check_tf_cpp(env),
        e.check_compilation_cache(env),
        e.check_platforms(env, plugins),
        e.check_visible_devices(env, plugins),
        e.check_loader_env(env),
    ]


def _debugger_checks(env: Mapping[str, str]) -> list[Check]:
    """gdb (crash backtraces, `xlatools debug`) and whether a debugger may attach here."""
    from xlatools.debug.gdb import attach_error, gdb_version, locate_gdb, ptrace_scope
    from xlatools.doctor.checks_debug import check_gdb, check_ptrace

    gdb, found = locate_gdb(env)
    return [check_gdb(gdb, gdb_version(gdb) if gdb else None, found), check_ptrace(ptrace_scope(), attach_error())]


def _gpu_checks(target: ProbedInterpreter, env: Mapping[str, str]) -> list[Check]:
    from xlatools.doctor.checks_native import check_cuda_libs, check_gpu_driver, driver_version

    plugins = target.plugin_versions
    if not any("cuda" in p for p in plugins):
        return [skip("GPU (driver, cuDNN, NCCL)", "no CUDA plugin installed")]
    dirs = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p] + system_dirs()
    found = {
        so: next((os.path.join(d, so) for d in dirs if os.path.isfile(os.path.join(d, so))), None)
        for so in ("libcudnn.so.9", "libnccl.so.2")
    }
    return [check_gpu_driver(plugins, driver_version()), check_cuda_libs(plugins, target.cuda_libs, found)]
