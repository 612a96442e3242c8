"""The build-side section of a doctor run: the profile's build plan (the same pure
`plan_build` that `xlatools build` uses), then Docker, image, disk and the source tree."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Mapping

from xlatools.doctor import checks_build as b
from xlatools.doctor.model import Check, fail, ok


def _plan(profile_ref: str, tree: Path | None):
    """(resolved profile, build plan or the Check saying why there is none)."""
    import secrets

    from xlatools.builder.plan import BuildOptions, plan_build
    from xlatools.errors import XlaToolsError
    from xlatools.fsutil import cache_root
    from xlatools.profiles import load

    resolved = load(profile_ref)  # a bad profile is bad input: exit 2, as everywhere
    options = BuildOptions(
        source=tree or Path.cwd(),
        out_root=Path("artifacts/builds"),
        dist_dir=Path(resolved.profile.build.output_dir),
        cache_root=cache_root(),
        run_id=secrets.token_hex(4),
        uid=os.getuid(),
        gid=os.getgid(),
        user_name="xlatools",
    )
    try:
        return resolved, plan_build(resolved, options)
    except XlaToolsError as exc:
        return resolved, fail("build plan", exc.message, exc.hint or "fix the profile")


def build_checks(profile_ref: str | None, tree: Path | None, env: Mapping[str, str]) -> list[Check]:
    checks: list[Check] = []
    resolved, plan = _plan(profile_ref, tree) if profile_ref else (None, None)
    if isinstance(plan, Check):
        checks.append(plan)
        plan = None
    elif plan is not None:
        checks.append(ok("build plan", f"profile {plan.profile} ({' -> '.join(plan.chain)}): {plan.mode} build"))
    if plan is None or plan.mode == "container":
        docker, client = b.check_docker(env)
        checks.append(docker)
        if client is not None and plan is not None and plan.image is not None:
            checks.append(b.check_image(client, plan.image))
    if plan is not None:
        checks.append(b.check_disk("bazel cache", Path(plan.bazel_cache), warn_gib=50, fail_gib=10))
    if resolved is not None:
        checks.append(b.check_cuda_config(resolved.profile, tree))
    if plan is not None:
        from xlatools.doctor.checks_remote import remote_checks

        checks += remote_checks(resolved.profile, plan, env)
    if tree is not None:
        checks += tree_checks(tree, resolved.profile if resolved else None)
    return checks


def tree_checks(tree: Path, profile) -> list[Check]:
    if not tree.is_dir():
        from xlatools.errors import UsageError

        raise UsageError(f"--source {tree}: not a directory", hint="point --source at a JAX checkout")
    which = {"bazelisk": shutil.which("bazelisk"), "bazel": shutil.which("bazel")}
    version = cached_bazel_version(which["bazel"]) if which["bazel"] and not which["bazelisk"] else None
    checks = [b.check_bazel(tree, which, version), b.check_bazelrc_imports_user(tree)]
    if profile is not None:
        checks.append(b.check_profile_configs(tree, list(profile.bazel.configs)))
    checks.append(b.check_lock(tree, Path.cwd() / "xlatools.lock"))
    return checks


def cached_bazel_version(binary: str) -> str | None:
    """`bazel --version` costs a JVM-less but still ~0.2 s start; kept per binary and its mtime."""
    import json

    from xlatools.fsutil import atomic_write_json, cache_root

    path = cache_root() / "doctor" / "bazel-versions.json"
    real = os.path.realpath(binary)
    key = f"{real}:{os.stat(real).st_mtime_ns}"
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError):
        known = {}
    if key not in known:
        known[key] = b.bazel_version(binary)
        try:
            atomic_write_json(path, known)
        except OSError:
            pass
    return known[key]
