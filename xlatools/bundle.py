"""Artifact bundles: one fresh directory per run, replay, build, ..., never reused, and the one
lifecycle every bundle-writing command goes through.

Layout: `<out>/<UTC time>-<name>-<short id>/` holding `manifest.json` (written atomically,
first with status "running", then with the outcome) and whatever the work produced;
`<out>/latest` points at the newest finished run (or build) bundle, and `<out>/latest-<kind>`
at the newest finished bundle of each other kind (`latest-replay`, `latest-reduce`, `latest-debug`),
so a replay never moves the `latest` the next command of a run needs.

`bundle_session` is the lifecycle: it creates the bundle, writes the running manifest, treats
SIGTERM as Ctrl-C, and on the way out writes the final manifest with the file index whatever
happened, through the disk-full reserve when it must. One failure policy for every kind:
- the body sets the outcome of what it ran (`session.finish(status)`), else the bundle is ok;
- Ctrl-C / SIGTERM: `interrupted` (exit 130); a TimedOut: `timeout` (124);
- an OSError (a record that cannot be written, a full disk): `error`, exit 3, with the reason;
- any other XlaToolsError: the status its exit code stands for (1 failed, 2/3 error), its message;
- anything else (a bug): `error`, exit 70, with the exception named, then it propagates as it is
  (cli.main writes the crash log).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Iterator, TypeVar

from xlatools.errors import (
    EXIT_INTERNAL,
    EXIT_MISSING,
    EnvironmentMissing,
    Interrupted,
    UsageError,
    XlaToolsError,
    exit_code_for,
)
from xlatools.fsutil import atomic_write_json, sha256_file, write_failure
from xlatools.records.base import MANIFEST, BundleRecord, FileEntry, to_json
from xlatools.vocab import Status

if TYPE_CHECKING:
    from xlatools.console import Reporter

RESERVE = ".manifest-reserve"
RESERVE_BYTES = 64 * 1024
_STATUS_OF_EXIT = {1: Status.FAILED, 124: Status.TIMEOUT, 130: Status.INTERRUPTED}

Record = TypeVar("Record", bound=BundleRecord)


def safe_name(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.")
    return cleaned[:60] or "bundle"


def utc_now(timespec: str = "milliseconds") -> str:
    """An ISO 8601 UTC time stamp ending in Z, as every record of ours writes it."""
    return datetime.now(timezone.utc).isoformat(timespec=timespec).replace("+00:00", "Z")


LATEST_KINDS = ("run", "build")  # the kinds `latest` points at; every other kind has `latest-<kind>`


def latest_name(kind: str) -> str:
    """The name of the link to the newest finished bundle of `kind` in its output folder."""
    return "latest" if kind in LATEST_KINDS else f"latest-{kind}"


@dataclass
class Bundle:
    path: Path
    kind: str
    name: str
    id: str
    created: str  # ISO 8601 UTC

    @classmethod
    def create(cls, out_root: Path, name: str, kind: str) -> "Bundle":
        """Make a new, empty bundle directory; never returns an existing one."""
        out_root = Path(out_root)
        try:
            out_root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise write_failure(
                exc, f"cannot create output directory {out_root}: {exc.strerror}", hint="pick another --out"
            ) from None
        now = datetime.now(timezone.utc)
        stamp = now.strftime("%Y%m%dT%H%M%SZ")
        for _ in range(20):
            short = os.urandom(3).hex()  # as secrets.token_hex(3), without that module's imports on the run path
            path = out_root / f"{stamp}-{safe_name(name)}-{short}"
            try:
                path.mkdir()  # exist_ok=False: a collision picks a new id
            except FileExistsError:
                continue
            except OSError as exc:
                raise write_failure(
                    exc, f"cannot create a bundle in {out_root}: {exc.strerror}", hint="pick another --out"
                ) from None
            bundle = cls(path, kind, name, short, now.isoformat(timespec="seconds"))
            bundle._reserve()
            return bundle
        raise UsageError(f"could not create a fresh bundle directory under {out_root}")

    def _reserve(self) -> None:
        """Space kept for the final manifest: when the disk fills up during a run, this file is
        removed to make room for a manifest that says so. Without that much space no bundle is
        started: the folder goes again, so no bundle without a manifest is ever left."""
        try:
            with open(self.path / RESERVE, "wb") as handle:
                handle.write(b"\0" * RESERVE_BYTES)
        except OSError as exc:
            import shutil

            shutil.rmtree(self.path, ignore_errors=True)
            raise write_failure(
                exc, f"cannot start a bundle in {self.path.parent}: {exc.strerror}", hint="pick another --out"
            ) from None

    def blocked_latest(self) -> str | None:
        """Why `<out>/latest` (or `latest-<kind>`) does not point at this bundle: something that is not a link
        stands where the link goes (a folder or file of the user's, never replaced); None when it is free."""
        link = self.path.parent / latest_name(self.kind)
        if os.path.islink(link) or not os.path.lexists(link):
            return None
        what = "a folder" if link.is_dir() else "a file"
        return (
            f"{link} is {what}, not a link xlatools made: it is left as it is, so it does not point at this bundle "
            f"({self.path.name}); name the bundle itself (or move {link.name} away) to read this one"
        )

    def _point_latest(self) -> None:
        link = self.path.parent / latest_name(self.kind)
        if self.blocked_latest():
            return  # the user's own folder or file there stays untouched
        tmp = self.path.parent / f".latest.{os.getpid()}.{self.id}"  # one temp name for every kind's link
        try:
            os.symlink(self.path.name, tmp)
            os.replace(tmp, link)  # atomic: readers see the old or the new target
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass

    def write_manifest(self, record: BundleRecord, use_reserve: bool = False) -> Path:
        """The one writer of every manifest: stamps the bundle's identity, always redacts secrets,
        writes atomically.

        A final manifest (any status but "running") points `<out>/latest` (a run or build) or
        `<out>/latest-<kind>` (any other kind) at this bundle: the newest finished one of its kind.
        `use_reserve` frees the space kept at creation first (the disk is full)."""
        from xlatools.redact import redact

        if not isinstance(record.status, Status):
            raise ValueError(f"bad bundle status {record.status!r}")
        record.kind, record.name, record.id, record.created = self.kind, self.name, self.id, self.created
        if use_reserve:
            (self.path / RESERVE).unlink(missing_ok=True)
        final = record.status != Status.RUNNING
        # The "running" manifest is replaced at the end: only the final one is worth an fsync.
        atomic_write_json(self.path / MANIFEST, redact(to_json(record)), durable=final)
        if final:
            (self.path / RESERVE).unlink(missing_ok=True)
            self._point_latest()
        return self.path / MANIFEST

    def file_index(self, exclude: tuple[str, ...] = (MANIFEST, RESERVE)) -> list[FileEntry]:
        """Every file in the bundle with its size and sha256, sorted by path."""
        entries = []
        for root, dirs, files in os.walk(self.path):
            dirs.sort()
            for filename in sorted(files):
                full = Path(root) / filename
                rel = full.relative_to(self.path).as_posix()
                if rel in exclude or full.is_symlink() or not full.is_file():
                    continue
                entries.append(FileEntry(path=rel, size=full.stat().st_size, sha256=sha256_file(full)))
        return entries

    def archive(self) -> Path:
        """Write `<bundle>.tar.gz` beside the bundle (atomically) and return its path."""
        import tarfile

        target = self.path.parent / f"{self.path.name}.tar.gz"
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            with tarfile.open(tmp, "w:gz") as tar:
                tar.add(self.path, arcname=self.path.name)
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return target


class BundleSession(Generic[Record]):
    """A bundle being written: its record (of one kind), the running manifest, and how it ends (once)."""

    def __init__(self, bundle: Bundle, record: Record):
        self.bundle = bundle
        self.record = record
        self.finished = False

    @property
    def path(self) -> Path:
        return self.bundle.path

    def adopt(self, record: Record) -> None:
        """Take `record` as this bundle's record from now on (one that needed the bundle's path to be made)."""
        record.bundle, record.started = self.record.bundle, record.started or self.record.started
        self.record = record

    def save(self) -> None:
        """(Re)write the running manifest, e.g. once the program has started."""
        self.bundle.write_manifest(self.record)

    def finish(self, status: Status, exit_code: int | None = None, error: str | None = None) -> Record:
        """The final manifest: the outcome, the time, the file index. `exit_code` defaults to the status's."""
        record = self.record
        record.status = status
        record.exit_code = exit_code_for(status) if exit_code is None else exit_code
        record.error = error if error is not None else record.error
        record.finished = utc_now()
        record.files = self.bundle.file_index()
        self.bundle.write_manifest(record)
        self.finished = True
        return record

    def record_failure(self, status: Status, exit_code: int, error: str) -> None:
        """Best effort after something went wrong: the final manifest through the reserve if the
        disk is full, and a bundle that never got a manifest is removed (it explains nothing)."""
        from xlatools.proctree import held_interrupts

        self.finished = True
        record = self.record
        record.status, record.exit_code, record.error, record.finished = status, exit_code, error, utc_now()
        again: KeyboardInterrupt | None = None
        try:
            record.files = self.bundle.file_index()
        except OSError:
            pass
        except KeyboardInterrupt as exc:  # Ctrl-C again while hashing a large bundle: the manifest, without the index
            again = exc
        with held_interrupts():  # the manifest is written (or the bundle removed) whatever comes meanwhile
            self._write_last_manifest(record)
        if again is not None:
            raise again

    def _write_last_manifest(self, record: Record) -> None:
        for use_reserve in (False, True):
            try:
                self.bundle.write_manifest(record, use_reserve=use_reserve)
                return
            except OSError:
                continue
        if not (self.path / MANIFEST).exists():
            import shutil

            shutil.rmtree(self.path, ignore_errors=True)

    def fail(self, exc: BaseException) -> BaseException | None:
        """Record how `exc` ended the bundle; returns the error to raise instead of `exc`, if any."""
        where = f"{self.record.kind} record: {self.path}"
        if isinstance(exc, (KeyboardInterrupt, Interrupted)):
            self.record_failure(Status.INTERRUPTED, Interrupted.exit_code, "interrupted")
            return Interrupted(f"interrupted; {where}") if isinstance(exc, KeyboardInterrupt) else None
        if isinstance(exc, OSError):
            reason = f"cannot write the {self.record.kind} records: {exc.strerror or exc}" + (
                f" ({exc.filename})" if exc.filename else ""
            )
            self.record_failure(Status.ERROR, EXIT_MISSING, reason)
            error = EnvironmentMissing(
                f"{reason}; {where}", hint="free some space (or pick another --out) and run again"
            )
            error.disk_full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
            return error
        if isinstance(exc, XlaToolsError):
            self.record_failure(_STATUS_OF_EXIT.get(exc.exit_code, Status.ERROR), exc.exit_code, exc.message)
            return None
        self.record_failure(Status.ERROR, EXIT_INTERNAL, f"internal error: {type(exc).__name__}: {exc}")
        return None


@contextlib.contextmanager
def bundle_session(
    out_root: Path, record: Record, *, name: str, write_running: bool = True, reporter: Reporter | None = None
) -> Iterator[BundleSession[Record]]:
    """Create a fresh bundle for `record` under `out_root` and see it through to its final manifest.

    `write_running=False`: the body writes the running manifest itself (`session.save()`), e.g.
    right after the program starts, so that start is not delayed by it. `reporter` warns, at the end, when
    the `latest` link could not be pointed at the bundle (a folder or file of the user's stands there)."""
    from xlatools.proctree import held_interrupts, sigterm_as_interrupt

    session: BundleSession[Record] | None = None
    with sigterm_as_interrupt():  # CI cancels with SIGTERM: finish the bundle as for Ctrl-C
        try:
            with held_interrupts():  # made and kept as one step: an interrupt now ends it with its manifest
                bundle = Bundle.create(Path(os.path.abspath(out_root)), name, record.kind)
                record.bundle = str(bundle.path)
                record.started = record.started or utc_now()
                session = BundleSession(bundle, record)
            if write_running:
                session.save()
            yield session
            if not session.finished:
                session.finish(Status.OK)
        except BaseException as exc:
            if session is None or session.finished:
                raise  # no bundle yet, or the outcome is recorded; this is what the command reports
            replacement = session.fail(exc)
            if replacement is not None:
                raise replacement from None
            raise
        finally:
            blocked = bundle.blocked_latest() if session is not None and session.finished else None
            if blocked and reporter is not None:
                reporter.warn(blocked)
