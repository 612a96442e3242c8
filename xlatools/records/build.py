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
