"""Execute a BuildPlan: prepare the tree, build or reuse the image, run the
command (container or host), collect wheels into a build bundle and dist/.

The bundle's manifest is written when the build starts (status "running") and
again with the outcome, whatever it is: ok, failed or interrupted.
"""

from __future__ import annotations

import collections
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from xlatools.errors import BuildFailed, Interrupted, XlaToolsError
from xlatools.proctree import sigterm_as_interrupt
from xlatools.remote.credentials import Credentials, private_rc_text, remove_private_rc, scrub, write_private_rc

LOG_NAME = "build.log"
Explain = Callable[[Path], "tuple[list[dict[str, Any]], str]"]
TAIL_LINES = 25


class LogSink:
    """Each output line goes to build.log and, live, to stderr; the tail is kept for errors."""

    def __init__(self, path: Path, echo: bool, secrets: tuple[str, ...] = ()):
        self.handle = open(path, "a", encoding="utf-8", buffering=1)
        self.echo = echo
        self.tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self.secrets = secrets  # remote credentials: bazel's --announce_rc would print them

    def __call__(self, line: str) -> None:
        line = scrub(line, self.secrets)
        self.handle.write(line + "\n")
        self.tail.append(line)
        if self.echo:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()

    def close(self) -> None:
        self.handle.close()


def _collect_wheels(stage: Path, bundle_dir: Path, dist: Path) -> list[dict[str, Any]]:
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
        wheels.append({
            "name": wheel.name,
            "size": kept.stat().st_size,
            "sha256": sha256_file(kept),
            "path": f"wheels/{wheel.name}",
            "dist_path": str(dist / wheel.name),
        })
    return wheels


def _make_host_dirs(plan) -> None:
    # Created by us (the invoking user) before docker sees them: a bind mount
    # of a missing path would otherwise be created root-owned by the engine.
    for mount in plan.mounts:
        if not mount.read_only:
            Path(mount.source).mkdir(parents=True, exist_ok=True)
    Path(plan.stage_dir).mkdir(parents=True, exist_ok=True)
    Path(plan.bazel_cache).mkdir(parents=True, exist_ok=True)


def _process_counts(log: Path) -> dict[str, Any] | None:
    """bazel's summary of how it ran the actions (cache hits, local), from the log."""
    from xlatools.remote.stats import process_counts_of_log

    counts = process_counts_of_log(log)
    return counts.to_json() if counts else None


@dataclass
class BuildOutcome:
    manifest: dict[str, Any]  # as written, plus "bundle": its directory
    error: XlaToolsError | None  # for the CLI to raise once it has reported the manifest

    def raise_for_status(self) -> dict[str, Any]:
        if self.error is not None:
            raise self.error
        return self.manifest


def _run_command(plan, client, sink: LogSink, keep_container: bool, rebuild_image: bool,
                 manifest: dict[str, Any], durations: dict[str, float], credentials: Credentials) -> int:
    """The image (container mode), then the build command; its exit status."""
    from xlatools import console

    if credentials.options:  # only now, and removed when the build ends (execute's finally)
        from xlatools.builder.plan import C_GOOGLE_CREDENTIALS

        google = C_GOOGLE_CREDENTIALS if plan.mode == "container" else None
        write_private_rc(Path(plan.private_rc), private_rc_text(credentials, plan.config_name, google))

    if plan.mode == "local":
        from xlatools.builder.local import run_local

        with console.group(f"build on this host in {plan.workdir}"):
            t = time.monotonic()
            exit_code = run_local(plan, sink)
        durations["build_s"] = round(time.monotonic() - t, 3)
        return exit_code
    from xlatools.builder.engine import ensure_image, run_container

    with console.group(f"image {plan.image.ref}"):
        t = time.monotonic()
        image = ensure_image(client, plan.image, rebuild_image, sink)
        durations["image_s"] = round(time.monotonic() - t, 3)
        manifest["image"] = {"ref": image.ref, "id": image.id, "built": image.built}
        console.step(f"image {'built' if image.built else 'reused'}: {image.ref} ({image.id[:19]})")
    with console.group(f"build in container {plan.container_name}"):
        t = time.monotonic()
        exit_code = run_container(client, plan, sink, keep_container)
    durations["build_s"] = round(time.monotonic() - t, 3)
    return exit_code


def _judge(plan, exit_code: int, wheels: list[dict[str, Any]], log: Path, tail) -> XlaToolsError | None:
    """The build's error, if it failed: a non-zero status, or success without a wheel."""
    if exit_code != 0:
        return BuildFailed(
            f"the build failed with exit status {exit_code}; last lines of {log}:\n  " + "\n  ".join(tail),
            exit_code,
            hint=f"full log: {log}; the manifest records the plan that ran",
        )
    if not wheels:
        return BuildFailed(f"the build succeeded but left no wheel in {plan.stage_dir}", 1,
                           hint="a custom build.command must write wheels into {output}")
    return None


def execute(plan, *, out_root: Path, tree_info: dict[str, Any], pin: dict[str, Any] | None,
            keep_container: bool = False, rebuild_image: bool = False, echo: bool = True,
            client=None, explain: Explain | None = None, credentials: Credentials = Credentials()) -> BuildOutcome:
    """Run the build and write its bundle; failures come back in the outcome, not raised.

    `explain(log)` -> (hints, text) scans a failed build's log for known failure signatures
    (the command passes doctor's; the builder does not depend on it)."""
    from xlatools.bundle import Bundle, host_info, utc_now

    bundle = Bundle.create(out_root, plan.profile, kind="build")
    manifest: dict[str, Any] = {
        "status": "running", "profile": plan.profile, "mode": plan.mode, "started": utc_now(),
        "plan": plan.to_dict(), "pin": pin, "tree": tree_info, "host": host_info(), "log": LOG_NAME,
    }
    bundle.write_manifest(manifest)
    sink = LogSink(bundle.path / LOG_NAME, echo, credentials.secrets)
    durations: dict[str, float] = {}
    t0 = time.monotonic()
    status, exit_code, error = "failed", None, None
    try:
        with sigterm_as_interrupt():
            _make_host_dirs(plan)
            exit_code = _run_command(plan, client, sink, keep_container, rebuild_image, manifest, durations,
                                     credentials)
            if exit_code == 0:
                manifest["wheels"] = _collect_wheels(Path(plan.stage_dir), bundle.path, Path(plan.dist_dir))
            error = _judge(plan, exit_code, manifest.get("wheels", []), bundle.path / LOG_NAME, sink.tail)
            status = "ok" if error is None else "failed"
            if exit_code != 0 and explain is not None:
                manifest["hints"], explained = explain(bundle.path / LOG_NAME)  # known failure signatures
                if explained:
                    error.hint = f"{error.hint}\n{explained}"
    except KeyboardInterrupt:
        status = "interrupted"
        if plan.mode == "container":
            cleanup = f"container {plan.container_name} kept" if keep_container else "container removed"
        else:
            cleanup = "build process tree stopped"
        error = Interrupted(f"build interrupted; {cleanup}; record in {bundle.path}")
    except XlaToolsError as exc:
        error = exc
        manifest["error"] = exc.message
    finally:
        sink.close()
        shutil.rmtree(plan.stage_dir, ignore_errors=True)
        remove_private_rc(plan.private_rc)
        manifest["bazel_processes"] = _process_counts(bundle.path / LOG_NAME)
        durations["total_s"] = round(time.monotonic() - t0, 3)
        if keep_container and plan.container_name:
            manifest["kept_container"] = plan.container_name
        xlatools_exit = 0 if error is None else error.exit_code
        manifest.update(status=status, exit_code=xlatools_exit, returncode=exit_code, finished=utc_now(), durations=durations,
                        log_tail=list(sink.tail) if status != "ok" else [])
        manifest.setdefault("wheels", [])
        manifest.setdefault("hints", [])
        manifest["files"] = bundle.file_index()
        bundle.write_manifest(manifest)
    manifest["bundle"] = str(bundle.path)
    return BuildOutcome(manifest, error)
