"""Build-side checks (with --profile / --source): Docker, images, bazel vs `.bazelversion`,
the tree's bazelrc and configs, the CUDA config, disk space, the lock."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Mapping

from xlatools.doctor.model import Check, fail, ok, skip, warn

GIB = 1 << 30
_RC_IMPORT = re.compile(r"^\s*(?:try-)?import\s+%workspace%/(\S+)\s*$", re.M)


def docker_socket_problem(env: Mapping[str, str]) -> Check | None:
    """Socket missing or not ours to use: said before the SDK's generic connection error."""
    host = env.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    if not host.startswith("unix://"):
        return None
    path = host[len("unix://") :]
    if not os.path.exists(path):
        return fail(
            "docker engine",
            f"no Docker socket at {path} (DOCKER_HOST={env.get('DOCKER_HOST') or 'unset'})",
            "start the engine (`sudo systemctl start docker`), fix DOCKER_HOST, or build with --local",
        )
    if not os.access(path, os.R_OK | os.W_OK):
        return fail(
            "docker engine",
            f"{path} exists but this user may not use it (permission denied)",
            "sudo usermod -aG docker $USER, then log in again (or `newgrp docker`)",
        )
    return None


def check_docker(env: Mapping[str, str]) -> tuple[Check, object | None]:
    """The engine answers a ping; returns the client for the image check."""
    problem = docker_socket_problem(env)
    if problem is not None:
        return problem, None
    from xlatools.builder.engine import START_HINT, connect
    from xlatools.errors import EnvironmentMissing

    try:
        client = connect()
    except EnvironmentMissing as exc:
        return fail("docker engine", exc.message, START_HINT), None
    version = client.version().get("Version", "?")
    return ok(
        "docker engine", f"Docker {version} answers at {env.get('DOCKER_HOST') or 'unix:///var/run/docker.sock'}"
    ), client


def _base_image(spec) -> str | None:
    base = spec.build_args.get("BASE_IMAGE")
    if base or not spec.dockerfile:
        return base
    match = re.search(r"^ARG\s+BASE_IMAGE=(\S+)", Path(spec.dockerfile).read_text(), re.M)
    return match.group(1) if match else None


def check_image(client, spec) -> Check:
    """The build image (or, when it is still to be built, its base image) is on the engine."""
    from docker.errors import ImageNotFound

    def present(ref: str) -> bool:
        try:
            client.images.get(ref)
            return True
        except ImageNotFound:
            return False

    name = "build image"
    if present(spec.ref):
        return ok(name, f"{spec.ref} is present")
    if spec.prebuilt:
        return fail(name, f"{spec.ref} (build.container.image) is not on this engine", f"docker pull {spec.ref}")
    base = _base_image(spec)
    if base and not present(base):
        return warn(
            name,
            f"{spec.ref} is not built yet and its base image {base} is not on this engine",
            f"docker pull {base} (an offline engine needs it imported: `docker load`/`docker import`)",
        )
    return ok(name, f"{spec.ref} will be built on the first build from {base or spec.dockerfile}")


def bazel_version(binary: str) -> str | None:
    """`bazel --version`; a distribution's bazel may say `no_version`: then ask dpkg who installed it."""
    import subprocess

    from xlatools.proctree import run_captured

    try:
        out = run_captured([binary, "--version"], timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"\b(\d+\.\d+\.\d+)", out)
    if match:
        return match.group(1)
    try:
        owner = run_captured(["dpkg-query", "-S", os.path.realpath(binary)], timeout=30)
        package = owner.stdout.split(":", 1)[0].strip() if owner.returncode == 0 else ""
        version = run_captured(["dpkg-query", "-W", "-f=${Version}", package], timeout=30).stdout if package else ""
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.match(r"(?:\d+:)?(\d+\.\d+\.\d+)", version)
    return match.group(1) if match else None


def check_bazel(tree: Path, which: Mapping[str, str | None], version: str | None) -> Check:
    """`which`: paths of bazelisk and bazel on PATH; `version`: the bazel's version (None: unknown)."""
    name = "bazel version"
    wanted_file = tree / ".bazelversion"
    wanted = wanted_file.read_text().strip().splitlines()[0].strip() if wanted_file.is_file() else None
    if which.get("bazelisk"):
        return ok(name, f"bazelisk at {which['bazelisk']} fetches {wanted or 'the latest bazel'} as the tree asks")
    if not which.get("bazel"):
        return warn(
            name,
            f"no bazel on PATH (the tree asks for {wanted or 'any'}); container builds bring their own",
            "for --local builds install bazelisk (it reads .bazelversion)",
        )
    if wanted is None:
        return ok(name, f"bazel {version or '?'} at {which['bazel']}; the tree has no .bazelversion")
    if version is None:
        return warn(
            name,
            f"cannot tell the version of {which['bazel']}; {wanted_file} asks for {wanted}",
            "install bazelisk, which reads .bazelversion",
        )
    if version != wanted and not re.fullmatch(wanted.replace(".", r"\.").replace("*", r".*"), version):
        return fail(
            name,
            f"bazel {version} at {which['bazel']}, but {wanted_file} asks for {wanted}",
            f"install bazelisk (reads .bazelversion) or bazel {wanted}; JAX's build.py takes --bazel_path",
        )
    return ok(name, f"bazel {version} matches .bazelversion")


def rc_texts(tree: Path) -> dict[str, str]:
    """The tree's .bazelrc and the workspace files it imports that exist, by name."""
    texts: dict[str, str] = {}
    pending = [".bazelrc"]
    while pending:
        rel = pending.pop(0)
        path = tree / rel
        if rel in texts or not path.is_file():
            continue
        texts[rel] = path.read_text(encoding="utf-8", errors="replace")
        pending += _RC_IMPORT.findall(texts[rel])
    return texts


def check_bazelrc_imports_user(tree: Path) -> Check:
    from xlatools.bazelrc import imports_user_rc

    name = ".bazelrc imports .bazelrc.user"
    rc = tree / ".bazelrc"
    if not rc.is_file():
        return fail(name, f"{rc} does not exist", "add a .bazelrc with `try-import %workspace%/.bazelrc.user`")
    if not imports_user_rc(rc.read_text(encoding="utf-8", errors="replace")):
        return fail(
            name,
            f"{rc} does not import .bazelrc.user: the profile's config is never seen by bazel",
            f"append `try-import %workspace%/.bazelrc.user` to {rc}",
        )
    return ok(name, f"{rc} try-imports .bazelrc.user")


def defined_configs(texts: Mapping[str, str]) -> set[str]:
    return {m for text in texts.values() for m in re.findall(r"^\s*[a-z_-]+:([A-Za-z0-9_.-]+)\s", text, re.M)}


def check_profile_configs(tree: Path, configs: list[str]) -> Check:
    name = "profile configs in the tree"
    if not configs:
        return ok(name, "the profile enables no upstream config")
    texts = rc_texts(tree)
    missing = [c for c in configs if c not in defined_configs(texts)]
    if missing:
        return fail(
            name,
            f"--config={', --config='.join(missing)} not defined in {', '.join(texts) or 'any .bazelrc'} "
            "(bazel: Config value ... is not defined in any .rc file)",
            "drop them from bazel.configs, or use a tree that defines them (newer JAX)",
        )
    return ok(name, f"{', '.join(configs)} defined in the tree")


def check_cuda_config(profile, tree: Path | None) -> Check:
    """A CUDA build must reach bazel with --config=cuda, or it dies on `nccl.h: No such file`."""
    name = "CUDA config"
    if profile.target.backend != "cuda":
        return skip(name, f"backend {profile.target.backend}")
    if profile.build.command is None:
        cuda_wheels = [w for w in profile.build.wheels if "cuda" in w]
        if not cuda_wheels:
            return fail(
                name,
                f"backend cuda but wheels {profile.build.wheels}: build.py adds --config=cuda only for CUDA wheels",
                "add jax-cuda-plugin (and jax-cuda-pjrt) to build.wheels",
            )
        how = f"build.py adds --config=cuda for {', '.join(cuda_wheels)}"
    elif "cuda" in profile.bazel.configs or any("--config=cuda" in t for t in profile.build.command):
        how = "the profile passes --config=cuda"
    else:
        return fail(
            name,
            "backend cuda with a custom build.command and no --config=cuda",
            "add cuda to bazel.configs (or --config=cuda to build.command)",
        )
    if tree is not None and "cuda" not in defined_configs(rc_texts(tree)):
        return fail(name, f"{how}, but the tree's bazelrc defines no cuda config", "use a JAX tree with CUDA support")
    return ok(name, how)


def check_disk(label: str, path: Path, warn_gib: float, fail_gib: float) -> Check:
    name = f"disk space: {label}"
    probe = Path(path)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = shutil.disk_usage(probe).free / GIB
    evidence = f"{free:.1f} GiB free at {probe}" + (f" (for {path})" if probe != Path(path) else "")
    if free < fail_gib:
        return fail(name, evidence + f"; needs at least {fail_gib:g} GiB", f"free space or point {label} elsewhere")
    if free < warn_gib:
        return warn(name, evidence + f"; {warn_gib:g} GiB recommended", f"free space or point {label} elsewhere")
    return ok(name, evidence)


def check_lock(tree: Path, lock_path: Path) -> Check:
    name = "lock vs tree"
    if not lock_path.is_file():
        return skip(name, f"no {lock_path}")
    from xlatools.errors import XlaToolsError
    from xlatools.pin.lock import load_lock
    from xlatools.pin.verify import verify_tree

    try:
        problems = verify_tree(load_lock(lock_path), tree)
    except XlaToolsError as exc:
        return fail(name, f"{lock_path}: {exc.message}", exc.hint or "run `xlatools pin verify` for details")
    if problems:
        return fail(
            name,
            f"{len(problems)} disagreement(s): {problems[0]}",
            f"`xlatools pin apply --source {tree} --lock {lock_path}`, or regenerate the lock",
        )
    return ok(name, f"{tree} agrees with {lock_path}")
