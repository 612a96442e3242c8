"""Profile + source tree + options -> BuildPlan. Pure: no processes, no Docker,
no writes; it reads only the Dockerfile and CA bundle it hashes.

The plan is what `--dry-run` prints and exactly what `execute` consumes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from xlatools.builder.command import STARTUP_PLACEHOLDER, CommandInputs, buildpy_argv, expand_template
from xlatools.builder.image import image_spec
from xlatools.errors import UsageError
from xlatools.records.build import BuildPlan, CredentialRefs, Mount
from xlatools.remote.credentials import credential_refs

__all__ = ["BuildOptions", "BuildPlan", "Mount", "check_source", "plan_build", "profile_for_tree"]

# Where things live inside the build container. Fixed, so that bazel's output
# base (keyed by the workspace path) is reused from one build to the next.
C_SOURCE = "/xlatools/src"
C_OUTPUT = "/xlatools/out"
C_BAZEL_CACHE = "/xlatools/bazel-cache"
C_HOME = "/xlatools/home"
C_XLA = "/xlatools/xla"
C_CA_BUNDLE = "/xlatools/ca-bundle.crt"
C_SECRETS = "/xlatools/secrets"  # the private bazelrc with the remote credentials (read-only)
C_GOOGLE_CREDENTIALS = "/xlatools/google-credentials.json"
PRIVATE_RC = "remote.bazelrc"

LABEL_MANAGED = "org.xlatools.managed"
LABEL_RUN_ID = "org.xlatools.run-id"
LABEL_PROFILE = "org.xlatools.profile"

# Every client that reads a CA bundle from the environment: pip, requests,
# curl, git, OpenSSL-based tools, node.
CA_ENV_NAMES = (
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "PIP_CERT",
    "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO",
    "NODE_EXTRA_CA_CERTS",
)


@dataclass(frozen=True)
class BuildOptions:
    """What the command line and the machine contribute to a plan."""

    source: Path
    out_root: Path  # build bundles go here
    dist_dir: Path  # wheels are copied here after a successful build
    cache_root: Path  # persistent caches (bazel disk cache, container HOME)
    run_id: str
    uid: int
    gid: int
    user_name: str
    local: bool = False
    jobs: int | None = None
    local_xla: Path | None = None  # from the lock or the profile's source.xla.local_path
    config_name: str = "xlatools"
    secrets_root: Path | None = None  # private folder for the credentials rc; default <tmp>/xlatools-<uid>


def _host_path(value: str, origin_file: str | None) -> Path:
    """A path from a profile: `~` expanded, relative ones taken from the profile's directory."""
    path = Path(value).expanduser()
    if not path.is_absolute() and origin_file:
        path = Path(origin_file).resolve().parent / path
    return path.resolve()


def _origin(resolved, *key: str) -> str | None:
    origin = resolved.origin_of(key)
    return origin.file if origin else None


def _profile_local_xla(resolved) -> Path | None:
    xla = resolved.profile.source.xla
    if xla is None or not xla.local_path:
        return None
    return _host_path(xla.local_path, _origin(resolved, "source", "xla", "local_path"))


def profile_for_tree(resolved):
    """The profile as written into .bazelrc.user: without the disk cache,
    whose path depends on where the build runs (it goes on the command line)."""
    profile = resolved.profile
    bazel = profile.bazel.model_copy(update={"disk_cache": None})
    return dataclasses.replace(resolved, profile=profile.model_copy(update={"bazel": bazel}))


@dataclass(frozen=True)
class _HostPaths:
    source: Path
    stage: Path
    bazel_cache: Path
    home: Path
    ca_bundle: Path | None
    local_xla: Path | None


def _host_paths(resolved, options: BuildOptions) -> _HostPaths:
    """Every host path the build touches; profile paths are relative to the profile file."""
    profile = resolved.profile
    cache_root = Path(options.cache_root)
    if profile.bazel.disk_cache:
        bazel_cache = _host_path(profile.bazel.disk_cache, _origin(resolved, "bazel", "disk_cache"))
    else:
        bazel_cache = (cache_root / "bazel-disk-cache").resolve()
    ca = profile.build.container.ca_bundle
    return _HostPaths(
        source=Path(options.source).resolve(),
        stage=(Path(options.out_root) / ".staging" / options.run_id).resolve(),
        bazel_cache=bazel_cache,
        home=(cache_root / "home" / profile.name).resolve(),
        ca_bundle=_host_path(ca, _origin(resolved, "build", "container", "ca_bundle")) if ca else None,
        local_xla=Path(options.local_xla).resolve() if options.local_xla else _profile_local_xla(resolved),
    )


def _command(profile, options: BuildOptions, seen: dict[str, str | None]) -> list[str]:
    """The argv, with paths as the build sees them (`seen`)."""
    extra_bazel = []
    remotes = (profile.bazel.remote_cache or "", profile.bazel.remote_executor or "")
    if seen["ca"] and any(url.startswith(("https://", "grpcs://")) for url in remotes):
        extra_bazel.append(f"--tls_certificate={seen['ca']}")
    # The credentials reach bazel through a private rc file (a startup option), never the command line.
    startup = (f"--bazelrc={seen['rc']}",) if seen.get("rc") else ()
    inputs = CommandInputs(
        source=seen["source"],
        output=seen["output"],
        wheels=tuple(profile.build.wheels),
        python_version=profile.target.python,
        config_name=options.config_name,
        bazel_cache=seen["cache"],
        jobs=options.jobs or profile.bazel.jobs,
        local_xla=seen["xla"],
        extra_bazel_options=tuple(extra_bazel),
        startup_options=startup,
    )
    if profile.build.command:
        if startup and STARTUP_PLACEHOLDER not in profile.build.command:
            raise UsageError(
                "the profile has bazel.remote_credentials but build.command has no "
                f"{STARTUP_PLACEHOLDER}, so bazel would never see them",
                hint=f"put {STARTUP_PLACEHOLDER} right after `bazel` in build.command",
            )
        return expand_template(profile.build.command, inputs)
    return buildpy_argv(profile, inputs)


def _private_rc(options: BuildOptions, refs: CredentialRefs | None) -> Path | None:
    """Host path of this build's private rc (in a folder only the user can read), when there are credentials."""
    if refs is None:
        return None
    import tempfile

    root = (
        Path(options.secrets_root) if options.secrets_root else Path(tempfile.gettempdir()) / f"xlatools-{options.uid}"
    )
    return (root / options.run_id / PRIVATE_RC).resolve()


def _mounts(host: _HostPaths, refs: CredentialRefs | None, private_rc: Path | None) -> tuple[Mount, ...]:
    mounts = [
        _mount(host.source, C_SOURCE, False, "source tree"),
        _mount(host.stage, C_OUTPUT, False, "wheels written by this build"),
        _mount(host.bazel_cache, C_BAZEL_CACHE, False, "bazel disk cache (persistent)"),
        _mount(host.home, C_HOME, False, "HOME: bazel output base and downloads (persistent per profile)"),
    ]
    if host.local_xla:
        mounts.append(_mount(host.local_xla, C_XLA, True, "local XLA checkout (--local_xla_path)"))
    if host.ca_bundle:
        mounts.append(_mount(host.ca_bundle, C_CA_BUNDLE, True, "CA bundle for pip, git and bazel"))
    if private_rc:
        mounts.append(_mount(private_rc.parent, C_SECRETS, True, "private bazelrc with the remote credentials"))
    if refs and refs.google_credentials:
        mounts.append(_mount(Path(refs.google_credentials), C_GOOGLE_CREDENTIALS, True, "--google_credentials file"))
    return tuple(mounts)


def plan_build(resolved, options: BuildOptions, rendered_bazelrc: str | None = None) -> BuildPlan:
    from xlatools.bazelrc import render

    profile = resolved.profile
    container = profile.build.container
    host = _host_paths(resolved, options)
    refs = credential_refs(resolved)
    private_rc = _private_rc(options, refs)
    seen = _paths_seen(options, host, private_rc)
    if rendered_bazelrc is None:
        rendered_bazelrc = render(profile_for_tree(resolved), options.config_name)
    env = {"PYTHONUNBUFFERED": "1"} | ({name: seen["ca"] for name in CA_ENV_NAMES} if seen["ca"] else {})
    common = dict(
        profile=profile.name,
        chain=tuple(resolved.chain),
        source=str(host.source),
        stage_dir=str(host.stage),
        dist_dir=str(Path(options.dist_dir).resolve()),
        bazel_cache=str(host.bazel_cache),
        user=f"{options.uid}:{options.gid}",
        argv=tuple(_command(profile, options, seen)),
        config_name=options.config_name,
        bazelrc=rendered_bazelrc,
        wheels=tuple(profile.build.wheels),
        remote_cache=profile.bazel.remote_cache,
        remote_executor=profile.bazel.remote_executor,
        credentials=refs,
        private_rc=str(private_rc) if private_rc else None,
        private_rc_seen=seen["rc"],
        local_xla=str(host.local_xla) if host.local_xla else None,
    )
    if options.local:
        env.update(container.env)
        return BuildPlan(
            mode="local",
            image=None,
            container_name=None,
            labels={},
            network=None,
            mounts=(),
            env=env,
            workdir=str(host.source),
            **common,
        )

    mounts = _mounts(host, refs, private_rc)
    # A user with no passwd entry in the image: bazel and getpass need USER.
    env.update({"HOME": C_HOME, "USER": options.user_name, "LOGNAME": options.user_name})
    env.update(container.env)
    return BuildPlan(
        mode="container",
        image=image_spec(resolved, host.ca_bundle),
        container_name=f"xlatools-build-{profile.name}-{options.run_id}",
        labels={LABEL_MANAGED: "1", LABEL_RUN_ID: options.run_id, LABEL_PROFILE: profile.name},
        network=container.network,
        mounts=mounts,
        env=env,
        workdir=C_SOURCE,
        notes=_network_notes(profile.bazel.remote_cache or "", container.network),
        **common,
    )


def _paths_seen(options: BuildOptions, host, private_rc: Path | None) -> dict[str, str | None]:
    """Where the build sees each path: the host's own (a local build), else the container's mount points."""
    if options.local:
        return {
            "source": str(host.source),
            "output": str(host.stage),
            "cache": str(host.bazel_cache),
            "xla": str(host.local_xla) if host.local_xla else None,
            "ca": str(host.ca_bundle) if host.ca_bundle else None,
            "rc": str(private_rc) if private_rc else None,
        }
    else:
        return {
            "source": C_SOURCE,
            "output": C_OUTPUT,
            "cache": C_BAZEL_CACHE,
            "xla": C_XLA if host.local_xla else None,
            "ca": C_CA_BUNDLE if host.ca_bundle else None,
            "rc": f"{C_SECRETS}/{PRIVATE_RC}" if private_rc else None,
        }


def _network_notes(remote_cache: str, network: str | None) -> tuple[str, ...]:
    if ("127.0.0.1" in remote_cache or "localhost" in remote_cache) and network != "host":
        return (
            "the remote cache is on localhost, which a bridged container cannot reach; "
            "set build.container.network: host",
        )
    return ()


def _mount(host: Path, target: str, read_only: bool, purpose: str) -> Mount:
    return Mount(source=str(host), target=target, read_only=read_only, purpose=purpose)


def check_source(plan: BuildPlan, uses_buildpy: bool) -> None:
    """The source tree exists and, for the default command, looks like JAX."""
    source = Path(plan.source)
    without = (
        f"; without a tree, `xlatools bazelrc --profile {plan.profile} --build-command` shows the build.py "
        f"line and `xlatools bazelrc --profile {plan.profile}` the bazel config a build would use"
    )
    if not source.is_dir():
        raise UsageError(
            f"--source {source}: not a directory",
            hint=f"point --source at a JAX checkout (a clone of jax-ml/jax){without}",
        )
    if uses_buildpy and not (source / "build" / "build.py").is_file():
        raise UsageError(
            f"--source {source}: no build/build.py (not a JAX checkout?)",
            hint=f"point --source at the root of a JAX checkout (a clone of jax-ml/jax), or set build.command in the "
            f"profile{without}",
        )
    if plan.local_xla and not Path(plan.local_xla).is_dir():
        raise UsageError(
            f"local XLA checkout {plan.local_xla} (from the lock or source.xla.local_path) is not a directory",
            hint="fix the path, or re-create the lock with `xlatools pin local`",
        )
