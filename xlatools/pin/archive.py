"""Archive safety checks, run on the bytes while they stream in (no second pass).

A checker thread reads the tar stream fed by the downloader and refuses:
members outside the expected top folder (`xla-<commit>`), absolute or `..` paths,
links pointing out of the archive, device files. GitHub archives carry the commit in
a pax global header; when present it must be the commit we asked for.
"""

from __future__ import annotations

import posixpath
import queue
import tarfile
import threading

from xlatools.errors import PinError


class _ChunkPipe:
    """A read-only file object over chunks handed over by another thread."""

    def __init__(self) -> None:
        self._chunks: queue.Queue[bytes | None] = queue.Queue(maxsize=64)
        self._buffer = memoryview(b"")
        self._eof = False

    def put(self, chunk: bytes | None) -> None:
        self._chunks.put(chunk)

    def read(self, size: int = -1) -> bytes:
        parts: list[bytes] = []
        wanted = size if size >= 0 else float("inf")
        while wanted > 0 and not self._eof:
            if not self._buffer:
                chunk = self._chunks.get()
                if chunk is None:
                    self._eof = True
                    break
                self._buffer = memoryview(chunk)
            piece = self._buffer[: int(min(wanted, len(self._buffer)))]
            self._buffer = self._buffer[len(piece) :]
            parts.append(bytes(piece))
            wanted -= len(piece)
        return b"".join(parts)

    def drain(self) -> None:
        while not self._eof:
            if self._chunks.get() is None:
                self._eof = True


def member_problem(member: tarfile.TarInfo, prefix: str) -> str | None:
    """Why this member is unacceptable, or None (pure)."""
    name = member.name
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return f"absolute member path '{name}'"
    if ".." in parts:
        return f"member path '{name}' climbs out with '..'"
    top = prefix.split("/")[0]
    if parts[0] != top:
        return f"member '{name}' is outside the expected top folder '{top}/'"
    if member.ischr() or member.isblk() or member.isfifo():
        return f"member '{name}' is a device or pipe"
    if member.issym() or member.islnk():
        target = member.linkname
        if target.startswith("/"):
            return f"link '{name}' points to absolute path '{target}'"
        base = posixpath.dirname(name) if member.issym() else ""
        resolved = posixpath.normpath(posixpath.join(base, target))
        if resolved == ".." or resolved.startswith("../") or resolved.split("/")[0] != top:
            return f"link '{name}' points outside the archive ('{target}')"
    return None


class ArchiveChecker:
    def __init__(self, prefix: str, commit: str | None, label: str) -> None:
        self.prefix = prefix.strip("/")
        self.commit = commit
        self.label = label
        self.problem: str | None = None
        self.members = 0
        self._pipe = _ChunkPipe()
        self._thread = threading.Thread(target=self._run, name="archive-check", daemon=True)
        self._thread.start()

    def feed(self, chunk: bytes) -> None:
        self._pipe.put(chunk)

    def _run(self) -> None:
        seen_prefix = False
        try:
            with tarfile.open(fileobj=self._pipe, mode="r|*") as tar:
                for member in tar:
                    self.members += 1
                    if self.members == 1:
                        self.problem = self._commit_problem(tar.pax_headers.get("comment"))
                    self.problem = self.problem or member_problem(member, self.prefix)
                    if self.problem:
                        break
                    name = member.name.rstrip("/")
                    seen_prefix = seen_prefix or name == self.prefix or name.startswith(self.prefix + "/")
            if not self.problem and not seen_prefix:
                self.problem = f"no member under '{self.prefix}/' (empty archive or wrong strip prefix)"
        except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
            self.problem = f"not a readable tar archive ({exc})"
        finally:
            self._pipe.drain()  # never leave the feeding thread blocked

    def _commit_problem(self, comment: str | None) -> str | None:
        comment = (comment or "").strip()
        if self.commit and len(comment) == 40 and comment != self.commit:
            return f"archive says it is commit {comment}, expected {self.commit}"
        return None

    def finish(self) -> None:
        """Wait for the check of everything fed; raise PinError if the archive is unsafe."""
        self._pipe.put(None)
        self._thread.join()
        if self.problem:
            raise PinError(
                f"refusing archive {self.label}: {self.problem}",
                hint="the archive is unsafe or not the pinned source; check the URL and the commit",
            )

    def abort(self) -> None:
        self._pipe.put(None)
        self._thread.join()
