"""The record of a build bundle (`xlatools build`, the builds of `bisect commits`) and the plan it ran.

The plan is a record too: `builder.plan.plan_build` makes it, `builder.execute` consumes it, the
manifest keeps it and `--dry-run --json` prints it. Field names and shapes are those of the
manifests xlatools has written since schema 1 (tests/fixtures/bundles-v1/build-ok)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from xlatools.records.base import OMIT_NONE, BundleRecord

BuildMode = Literal["container", "local"]


@dataclass(frozen=True, kw_only=True)
class Mount:
    source: str  # host path
    target: str  # path inside the container
    read_only: bool
    purpose: str


@dataclass(frozen=True, kw_only=True)
class ImageSpec:
    ref: str  # what the container runs: a derived tag, or the profile's ready image
    prebuilt: bool  # True: the profile named a ready image; xlatools never builds it
    dockerfile: str | None = None
    build_args: dict[str, str] = field(default_factory=dict)
    ca_bundle: str | None = None  # host path, baked in as xlatools-ca.crt
    content_hash: str | None = None


@dataclass(frozen=True, kw_only=True)
class SecretRef:
    """Where one secret comes from: exactly one of an environment variable or an absolute file path."""

    env: str | None = None
    file: str | None = None

    def describe(self) -> str:
        return f"${self.env}" if self.env else f"file {self.file}"


@dataclass(frozen=True, kw_only=True)
class CredentialRefs:
    """A profile's remote credentials as sources, never values: safe to plan, print and record
    (remote.credentials.resolve_credentials reads the values when a build starts)."""

    basic_auth: SecretRef | None = None
    headers: tuple[tuple[str, SecretRef], ...] = ()  # (header name, its value's source)
    google_credentials: str | None = None  # absolute host path; bazel reads the file itself

    def describe(self) -> list[str]:
        rows = [f"basic auth from {self.basic_auth.describe()}"] if self.basic_auth else []
        rows += [f"header {name} from {ref.describe()}" for name, ref in self.headers]
        if self.google_credentials:
            rows.append(f"--google_credentials file {self.google_credentials}")
        return rows


@dataclass(frozen=True, kw_only=True)
class BuildPlan:
    """Everything a build does, decided before it starts (what `--dry-run` prints)."""

    profile: str
    chain: tuple[str, ...]
    mode: BuildMode
    source: str
    stage_dir: str  # host dir the build writes wheels into (mounted at C_OUTPUT)
    dist_dir: str
    bazel_cache: str  # host path of the bazel disk cache
    image: ImageSpec | None
    container_name: str | None
    labels: dict[str, str]
    network: str | None
    mounts: tuple[Mount, ...]
    env: dict[str, str]
    user: str
    workdir: str
    argv: tuple[str, ...]
    config_name: str
    bazelrc: str  # the managed block written into <source>/.bazelrc.user
    wheels: tuple[str, ...]
    remote_cache: str | None = None
    remote_executor: str | None = field(default=None, metadata=OMIT_NONE)
    # Where the credentials come from (never their values); with them, the private bazelrc that carries
    # them: its host path (written when the build starts, removed when it ends) and as the build sees it.
    credentials: CredentialRefs | None = field(default=None, metadata=OMIT_NONE)
    private_rc: str | None = field(default=None, metadata=OMIT_NONE)
    private_rc_seen: str | None = field(default=None, metadata=OMIT_NONE)
    local_xla: str | None = None  # host path of a local XLA checkout
    notes: tuple[str, ...] = ()


@dataclass(kw_only=True)
class TreeInfo:
    """What the build changed in the source tree before it ran."""

    bazelrc: str = ""  # the managed block in .bazelrc.user: added, updated, unchanged
    pin_changed: list[str] = field(default_factory=list)  # files the lock's pin rewrote


@dataclass(kw_only=True)
class PinInfo:
    """The lock a build was pinned with."""

    lock_file: str | None = None
    lock: dict[str, Any] = field(default_factory=dict)  # the lock file's own JSON (docs/pinning.md; pin.lock reads it)


@dataclass(kw_only=True)
class ImageUsed:
    ref: str
    id: str
    built: bool  # False: an image with the same content tag was reused


@dataclass(kw_only=True)
class WheelRecord:
    name: str
    size: int
    sha256: str
    path: str  # in the bundle
    dist_path: str  # the copy in the profile's output_dir


@dataclass(kw_only=True)
class BuildHint:
    """A known failure signature found in a failed build's log (the doctor's table)."""

    id: str
    explanation: str
    fix: str
    link: str = ""
    line_number: int = 0
    line: str = ""


@dataclass(frozen=True, kw_only=True)
class BazelProcesses:
    """How bazel ran a build's actions, from its summary lines in the build log
    (`INFO: 9 processes: 4 remote cache hit, 2 internal, 3 linux-sandbox.`), summed over its invocations."""

    total: int
    by_kind: dict[str, int]  # "remote cache hit", "disk cache hit", "internal", "linux-sandbox", ...
    cache_hits: int  # served by a cache (bazel 4 counts disk-cache hits as "remote cache hit" too)
    actions: int  # what a cache could have served: all but bazel's internal processes
    hit_share: float | None  # cache_hits / actions; None without actions


@dataclass(kw_only=True)
class BuildManifest(BundleRecord):
    kind: Literal["build"] = "build"
    profile: str
    mode: BuildMode
    plan: BuildPlan
    pin: PinInfo | None = None
    tree: TreeInfo = field(default_factory=TreeInfo)
    log: str = "build.log"
    image: ImageUsed | None = field(default=None, metadata=OMIT_NONE)  # container builds only
    wheels: list[WheelRecord] = field(default_factory=list)
    returncode: int | None = None  # the build command's own status
    durations: dict[str, float] = field(default_factory=dict)  # image_s, build_s, total_s
    log_tail: list[str] = field(default_factory=list)  # the last lines of build.log when it did not succeed
    hints: list[BuildHint] = field(default_factory=list)
    kept_container: str | None = field(default=None, metadata=OMIT_NONE)  # --keep-container
    bazel_processes: BazelProcesses | None = None  # None: the log shows no bazel summary (it did not get that far)
