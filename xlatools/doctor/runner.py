"""Which checks a doctor run makes (a pure plan from the options) and running them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from xlatools.doctor.model import Check, DoctorOptions, Report, skip

SECTIONS = ("target", "env", "native", "gpu", "disk", "build", "tree")


@dataclass(frozen=True)
class DoctorPlan:
    python: str
    profile: str | None
    tree: Path | None
    sections: tuple[str, ...]
    strict: bool = False


def plan_doctor(options: DoctorOptions, python: str) -> DoctorPlan:
    """The sections to check: the target always; the build side with --profile or --source."""
    sections = ["target", "env", "native", "gpu", "disk"]
    if options.profile or options.source:
        sections.append("build")
    if options.source:
        sections.append("tree")
    tree = Path(options.source).resolve() if options.source else None
    return DoctorPlan(python, options.profile, tree, tuple(sections), options.strict)


def run_doctor(plan: DoctorPlan, env: Mapping[str, str] | None = None) -> Report:
    from xlatools.doctor.facts import target_facts

    env = dict(os.environ if env is None else env)
    report = Report(strict=plan.strict)
    facts = target_facts(plan.python)
    if "target" in plan.sections:
        report.checks += _target_checks(facts, env)
    if "env" in plan.sections:
        report.checks += _env_checks(facts, env)
    if "native" in plan.sections:
        from xlatools.doctor.checks_native import check_native

        report.checks += check_native(list(facts.shared_objects), env, system_dirs())
        from xlatools.doctor.checks_debug import check_gdb, check_ptrace

        report.checks += [check_gdb(env), check_ptrace()]
    if "gpu" in plan.sections:
        report.checks += _gpu_checks(facts, env)
    if "disk" in plan.sections:
        from xlatools.doctor.checks_build import check_disk

        report.checks.append(check_disk("dumps", Path.cwd() / "artifacts", warn_gib=5, fail_gib=1))
    if plan.profile:
        report.checks.append(_frontend_check(plan.profile, plan.python))
    if "build" in plan.sections:
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


def _target_checks(facts, env: Mapping[str, str]) -> list[Check]:
    from xlatools.doctor import checks_target as t
    from xlatools.errors import XlaToolsError

    checks = [t.check_python(facts), t.check_installed(facts), t.check_compatible(facts), t.check_plugins(facts)]
    if any(c.status == "fail" for c in checks[1:3]):
        checks.append(skip("devices", "jax cannot start with these versions (see above)"))
        return checks
    from xlatools.run.target import cached_probe, probe

    cached = cached_probe(facts.python, "auto") is not None
    target, error = None, None
    try:
        target = probe(facts.python, "auto")
    except XlaToolsError as exc:
        error = exc.message
    checks.append(t.check_devices(facts, target, error, env.get("JAX_PLATFORMS"), cached))
    return checks


def _env_checks(facts, env: Mapping[str, str]) -> list[Check]:
    from xlatools.doctor import checks_env as e

    def unknown(names_to_flags: dict[str, str]) -> list[str]:
        from xlatools.run.target import Target, unknown_flags

        if not facts.jaxlib:
            from xlatools.errors import EnvironmentMissing

            raise EnvironmentMissing("no jaxlib is installed")
        origin = os.path.join(facts.jaxlib_dir, "__init__.py") if facts.jaxlib_dir else None
        return unknown_flags(Target(python=facts.python, jaxlib=facts.jaxlib, jaxlib_origin=origin), names_to_flags)[0]

    return [
        e.check_xla_flags(env, unknown),
        e.check_libtpu_args(env, any(p.startswith("libtpu") for p in facts.plugins)),
        e.check_tf_cpp(env),
        e.check_compilation_cache(env),
        e.check_platforms(env, facts.plugins),
        e.check_visible_devices(env, facts.plugins),
        e.check_loader_env(env),
    ]


def _gpu_checks(facts, env: Mapping[str, str]) -> list[Check]:
    from xlatools.doctor.checks_native import check_cuda_libs, check_gpu_driver, driver_version

    if not any("cuda" in p for p in facts.plugins):
        return [skip("GPU (driver, cuDNN, NCCL)", "no CUDA plugin installed")]
    dirs = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p] + system_dirs()
    found = {so: next((os.path.join(d, so) for d in dirs if os.path.isfile(os.path.join(d, so))), None)
             for so in ("libcudnn.so.9", "libnccl.so.2")}
    return [check_gpu_driver(facts.plugins, driver_version()), check_cuda_libs(facts.plugins, facts.cuda_libs, found)]

