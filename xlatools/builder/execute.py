"""Execute a BuildPlan: prepare the tree, build or reuse the image, run the
command (container or host), collect wheels into a build bundle and dist/.

The bundle goes through the one lifecycle (`bundle.bundle_session`): the manifest says
"running" when the build starts and holds the outcome at the end, whatever it is. Anything
that stops the build itself (the command fails, the image cannot be built, the engine goes
away) is a `failed` build with the exit code of its cause; Ctrl-C or SIGTERM is `interrupted`.
"""

from __future__ import annotations

import collections
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from xlatools.errors import BuildFailed, Interrupted, XlaToolsError
from xlatools.records.build import BuildHint, BuildManifest, BuildPlan, ImageUsed, PinInfo, TreeInfo, WheelRecord
from xlatools.remote.credentials import Credentials
from xlatools.vocab import Status

if TYPE_CHECKING:
    from xlatools.bundle import BundleSession
    from xlatools.console import Reporter

LOG_NAME = "build.log"
# explain(log) -> (the hints found in a failed build's log, the same as text for the error message).
Explain = Callable[[Path], "tuple[Sequence[object], str]"]
TAIL_LINES = 25


class LogSink:
    """Each output line goes to build.log and, live, to the reporter (unless quiet); the tail is kept for errors.
    The remote credentials' values are hidden in every line (bazel's --announce_rc prints the private rc)."""

    def __init__(self, path: Path, reporter: Reporter, secrets: tuple[str, ...] = ()):
        self.handle = open(path, "a", encoding="utf-8", buffering=1)
        self.reporter = reporter
        self.tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self.secrets = secrets

    def __call__(self, line: str) -> None:
        if self.secrets:
            from xlatools.redact import redact_values

            line = redact_values(line, self.secrets)
        self.handle.write(line + "\n")
        self.tail.append(line)
        self.reporter.info(line)

    def close(self) -> None:
        self.handle.close()


def _collect_wheels(stage: Path, bundle_dir: Path, dist: Path) -> list[WheelRecord]:
    """Wheels from the staging dir into the bundle, then copied atomically into dist/."""
    from xlatools.fsutil import sha256_file

    wheels = []
    target_dir = bundle_dir / "wheels"
    for wheel in sorted(stage.rglob("*.whl")):
        target_dir.mkdir(exist_ok=True)
        kept = target_dir / wheel.name
        shutil.move(str(wheel), kept)
        dist.mkdir(parents=True, exist_ok=True)
        tmp = dist / f".{wheel.name}.{os.getpid()}.tmp"
        try:
            shutil.copyfile(kept, tmp)
            os.replace(tmp, dist / wheel.name)  # readers never see half a wheel
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        wheels.append(
            WheelRecord(
                name=wheel.name,
                size=kept.stat().st_size,
                sha256=sha256_file(kept),
                path=f"wheels/{wheel.name}",
                dist_path=str(dist / wheel.name),
            )
        )
    return wheels


def _make_host_dirs(plan: BuildPlan) -> None:
    # Created by us (the invoking user) before docker sees them: a bind mount
    # of a missing path would otherwise be created root-owned by the engine.
    for mount in plan.mounts:
        if not mount.read_only:
            Path(mount.source).mkdir(parents=True, exist_ok=True)
    Path(plan.stage_dir).mkdir(parents=True, exist_ok=True)
    Path(plan.bazel_cache).mkdir(parents=True, exist_ok=True)


@dataclass
class BuildOutcome:
    manifest: BuildManifest  # as written; `bundle` is its directory
    error: XlaToolsError | None  # for the CLI to raise once it has reported the manifest

    def raise_for_status(self) -> BuildManifest:
        if self.error is not None:
            raise self.error
        return self.manifest


@dataclass(frozen=True)
class _Options:
    keep_container: bool
    rebuild_image: bool
    client: object
    explain: Explain | None
    credentials: Credentials


def _run_command(plan: BuildPlan, options: _Options, sink: LogSink, record: BuildManifest, reporter: Reporter) -> int:
    """The image (container mode), then the build command (with the private rc while it runs); its exit status."""
    from xlatools.builder.plan import C_GOOGLE_CREDENTIALS
    from xlatools.remote.credentials import private_rc

    google = C_GOOGLE_CREDENTIALS if plan.mode == "container" else None
    with private_rc(plan.private_rc, options.credentials, plan.config_name, google):
        return _image_and_command(plan, options, sink, record, reporter)


def _image_and_command(
    plan: BuildPlan, options: _Options, sink: LogSink, record: BuildManifest, reporter: Reporter
) -> int:
    durations = record.durations
    if plan.mode == "local":
        from xlatools.builder.local import run_local

        with reporter.group(f"build on this host in {plan.workdir}"):
            t = time.monotonic()
            exit_code = run_local(plan, sink)
        durations["build_s"] = round(time.monotonic() - t, 3)
        return exit_code
    from xlatools.builder.engine import ensure_image, run_container

    with reporter.group(f"image {plan.image.ref}"):
        t = time.monotonic()
        image = ensure_image(options.client, plan.image, options.rebuild_image, sink)
        durations["image_s"] = round(time.monotonic() - t, 3)
        record.image = ImageUsed(ref=image.ref, id=image.id, built=image.built)
        reporter.step(f"image {'built' if image.built else 'reused'}: {image.ref} ({image.id[:19]})")
    with reporter.group(f"build in container {plan.container_name}"):
        t = time.monotonic()
        exit_code = run_container(options.client, plan, sink, options.keep_container, reporter)
    durations["build_s"] = round(time.monotonic() - t, 3)
    return exit_code


def _judge(plan: BuildPlan, exit_code: int, wheels: list[WheelRecord], log: Path, tail) -> XlaToolsError | None:
    """The build's error, if it failed: a non-zero status, or success without a wheel."""
    if exit_code != 0:
        return BuildFailed(
            f"the build failed with exit status {exit_code}; last lines of {log}:\n  " + "\n  ".join(tail),
            exit_code,
            hint=f"full log: {log}; the manifest records the plan that ran",
        )
    if not wheels:
        return BuildFailed(
            f"the build succeeded but left no wheel in {plan.stage_dir}",
            1,
            hint="a custom build.command must write wheels into {output}",
        )
    return None


def _explain(explain: Explain, log: Path, error: XlaToolsError, record: BuildManifest) -> None:
    """Known failure signatures in a failed build's log, into the manifest and the error's hint."""
    from xlatools.records import to_json

    hints, explained = explain(log)
    record.hints = [BuildHint(**to_json(hint)) for hint in hints]
    if explained:
        error.hint = f"{error.hint}\n{explained}"


def _build(session: BundleSession, plan: BuildPlan, options: _Options, reporter: Reporter) -> XlaToolsError | None:
    """Run the build inside its bundle and end the bundle; the build's own failure is returned."""
    from xlatools.remote.stats import process_counts_of_log

    record: BuildManifest = session.record
    log = session.path / LOG_NAME
    sink = LogSink(log, reporter, options.credentials.secrets)
    t0 = time.monotonic()
    error = None
    try:
        _make_host_dirs(plan)
        record.returncode = _run_command(plan, options, sink, record, reporter)
        if record.returncode == 0:
            record.wheels = _collect_wheels(Path(plan.stage_dir), session.path, Path(plan.dist_dir))
        error = _judge(plan, record.returncode, record.wheels, log, sink.tail)
        if record.returncode != 0 and options.explain is not None:
            _explain(options.explain, log, error, record)
    except KeyboardInterrupt:
        if plan.mode == "container":
            cleanup = f"container {plan.container_name} kept" if options.keep_container else "container removed"
        else:
            cleanup = "build process tree stopped"
        raise Interrupted(f"build interrupted; {cleanup}; record in {session.path}") from None
    except XlaToolsError as exc:
        if isinstance(exc, Interrupted):
            raise
        error = exc  # the image, the container or the engine stopped the build: a failed build
    finally:
        sink.close()
        shutil.rmtree(plan.stage_dir, ignore_errors=True)
        record.bazel_processes = process_counts_of_log(log)
        record.durations["total_s"] = round(time.monotonic() - t0, 3)
        if options.keep_container and plan.container_name:
            record.kept_container = plan.container_name
        record.log_tail = list(sink.tail) if error is not None or record.returncode != 0 else []
    if error is None:
        session.finish(Status.OK)
    else:
        session.finish(Status.FAILED, exit_code=error.exit_code, error=error.message)
    return error


def execute(
    plan: BuildPlan,
    *,
    out_root: Path,
    tree: TreeInfo,
    pin: PinInfo | None,
    reporter: Reporter,
    argv: Sequence[str] = (),
    keep_container: bool = False,
    rebuild_image: bool = False,
    client=None,
    explain: Explain | None = None,
    credentials: Credentials = Credentials(),
) -> BuildOutcome:
    """Run the build and write its bundle; failures come back in the outcome, not raised.

    `explain(log)` -> (hints, text) scans a failed build's log for known failure signatures
    (the command passes doctor's; the builder does not depend on it)."""
    from xlatools.bundle import bundle_session
    from xlatools.records.base import invoked

    record = BuildManifest(
        profile=plan.profile,
        mode=plan.mode,
        plan=plan,
        pin=pin,
        tree=tree,
        log=LOG_NAME,
    )
    invoked(record, argv)
    options = _Options(keep_container, rebuild_image, client, explain, credentials)
    session = None
    try:
        with bundle_session(out_root, record, name=plan.profile, reporter=reporter) as session:
            error = _build(session, plan, options, reporter)
    except XlaToolsError as exc:
        if session is None:
            raise  # no bundle was made (a bad --out): nothing to report but the error
        error = exc
    return BuildOutcome(session.record, error)
