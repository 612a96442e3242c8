"""File-system helpers: atomic writes (temp file in the target dir, then os.replace),
file digests, and the cache root every capability keeps its caches under."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

from xlatools.errors import EnvironmentMissing, UsageError


def atomic_write_bytes(path: Path, data: bytes, mode: int | None = None, durable: bool = True) -> None:
    """Readers see the old file or the new one, never half. `durable` also syncs the data to disk
    first (survives a power cut); records that are rewritten moments later skip that cost."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    import tempfile  # here: a run reaches this module before its program starts, and writes only after

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        if mode is None and path.exists():
            mode = path.stat().st_mode & 0o7777
        os.chmod(tmp, mode if mode is not None else 0o644)
        os.replace(tmp, path)
    except BaseException:
        # Also on Ctrl-C: never leave the temp file behind.
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_text(path: Path, text: str, mode: int | None = None, durable: bool = True) -> None:
    # backslashreplace: a path that is not UTF-8 (os.fsdecode gives surrogates) is shown escaped, never a crash
    atomic_write_bytes(path, text.encode("utf-8", "backslashreplace"), mode, durable)


def atomic_write_json(path: Path, data: Any, durable: bool = True) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False) + "\n", durable=durable)


def check_output(path: Path, option: str, parents: bool = True) -> None:
    """Refuse, before any work, an output path that cannot be written: a folder, a parent that is a
    file, a read-only or unwritable folder; with `parents=False` also a folder that does not exist
    (a typo there is not silently made a new folder). Cheap; write_output() still catches what this misses."""
    path = Path(path)
    if path.is_dir():
        _refuse(path, option, "is a directory", "name a file inside it")
    if not parents and not path.parent.exists():
        _refuse(
            path,
            option,
            f"cannot write: the folder {path.parent} does not exist",
            f"create it first (mkdir -p {path.parent}) or pick another path",
        )
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        _refuse(path, option, f"cannot write: {ancestor} is not a directory")
    if not os.access(ancestor, os.W_OK):
        readonly = bool(os.statvfs(ancestor).f_flag & os.ST_RDONLY)
        _refuse(
            path, option, f"cannot write: {ancestor} is {'on a read-only file system' if readonly else 'not writable'}"
        )


def refuse_links(path: Path, below: Path, what: str) -> None:
    """Refuse to write `path` when it, or a folder between `below` (which the user named) and it, is a
    symbolic link: a file xlatools places itself is never written through a link the user did not name."""
    path, below = Path(path), Path(below)
    current = path
    while current != below and current != current.parent:
        if current.is_symlink():
            raise UsageError(
                f"{what} {path}: {current} is a symbolic link (to {os.readlink(current)}); "
                "xlatools does not write through a link it was not given",
                hint=f"replace the link with a real {'file' if current == path else 'folder'}, "
                "or point the option at where the link leads",
            )
        current = current.parent


def write_output(path: Path, data: bytes | str, option: str, mode: int | None = None, parents: bool = True) -> None:
    """Write a file the user named (`-o`, `--ir-dest`, `--lock`) atomically. Any OSError becomes an
    XlaToolsError naming the option, the path and the reason: exit 2 (pick another path), or exit 3
    when the disk or quota is full."""
    data = data.encode("utf-8") if isinstance(data, str) else data
    path = Path(path)
    check_output(path, option, parents)
    try:
        if path.exists() and not path.is_file() and not path.is_dir():
            # /dev/stdout, a fifo, a device: write into it; replacing it would destroy it.
            with open(path, "wb") as handle:
                handle.write(data)
        else:
            atomic_write_bytes(path.resolve() if path.is_symlink() else path, data, mode)  # keep the user's link
    except OSError as exc:
        culprit = Path(exc.filename2 or exc.filename or path)  # os.replace names (temp, path)
        if culprit.parent == path.parent and culprit.name.startswith(f".{path.name}."):
            reason = f"cannot create a file in {path.parent} ({exc.strerror})"  # our temp file next to it
        elif culprit != path:
            reason = f"cannot write: {culprit}: {exc.strerror}"  # a parent folder, not the file itself
        else:
            reason = f"cannot write: {exc.strerror or exc}"
        raise write_failure(exc, f"{option} {path}: {reason}") from None


def write_failure(exc: OSError, message: str, hint: str = "pick another path"):
    """The error for a write that failed: a full disk or quota is the environment (exit 3, free some
    space), anything else (read-only, not writable, not a folder) is bad input (exit 2, `hint`)."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        full = EnvironmentMissing(message, hint="free some space")
        full.disk_full = True
        return full
    return UsageError(message, hint=hint)


def make_dir(path: Path, option: str = "--out") -> Path:
    """`path` and its parents, or an error naming the option and why (read-only, full, a file in the way)."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_failure(
            exc, f"{option} {path}: cannot create the folder: {exc.strerror}", hint=f"pick another {option}"
        ) from None
    return path


def _refuse(path: Path, option: str, reason: str, hint: str = "pick another path") -> None:
    raise UsageError(f"{option} {path}: {reason}", hint=hint)


def read_user_text(path: Path, what: str, max_bytes: int = 8 << 20, hint: str | None = None) -> str:
    """The UTF-8 text of a file a user points us at (a profile, .bazelrc.user, a log), or UsageError naming
    it: not a regular file (a FIFO is never opened: it would block), larger than `max_bytes`, not UTF-8."""
    import stat

    try:
        info = os.stat(path)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the {what}: {exc.strerror}", hint=hint) from None
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{path}: the {what} is not a regular file", hint=hint)
    if info.st_size > max_bytes:
        raise UsageError(f"{path}: the {what} is {info.st_size} bytes, more than the {max_bytes} read here", hint=hint)
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the {what}: {exc.strerror}", hint=hint) from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: the {what} is not UTF-8 text (byte {exc.start})", hint=hint) from None


def read_cache_json(path: Path, max_bytes: int = 64 << 20) -> dict[str, Any]:  # our own cache file: any JSON object
    """A JSON object from one of our cache files, or {} when it is missing or damaged in any way
    (not a regular file, too big, not UTF-8 or JSON, nested absurdly, not an object): a cache
    that cannot be read only costs time. A FIFO is never opened (it would block)."""
    import stat

    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return {}
        with open(path, "rb") as handle:
            data = json.loads(handle.read().decode("utf-8"))
    except (OSError, ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return {}
    return data if isinstance(data, dict) else {}


def keep_ends(path: Path, head: int = 32 << 10, tail: int = 32 << 10) -> int:
    """Cut a log kept on disk to its first `head` and last `tail` bytes, with a line saying how much was
    dropped between them; the number of bytes dropped (0 when it was small enough). Missing file: 0."""
    try:
        size = os.path.getsize(path)
        if size <= head + tail:
            return 0
        with open(path, "rb") as handle:
            first = handle.read(head)
            handle.seek(size - tail)
            last = handle.read(tail)
    except OSError:
        return 0
    dropped = size - head - tail
    atomic_write_bytes(
        path, first + f"\n[... {dropped} bytes dropped by xlatools ...]\n".encode() + last, durable=False
    )
    return dropped


TAIL_BYTES = 64 * 1024


def tail_bytes(path: Path, max_bytes: int = TAIL_BYTES) -> bytes:
    """The last `max_bytes` of a file, read from its end (logs can be gigabytes); b"" when unreadable."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - max_bytes))
            return handle.read()
    except OSError:
        return b""


def tail_lines(path: Path, lines: int, max_bytes: int = TAIL_BYTES) -> list[str]:
    """The last `lines` lines of a log (from its last `max_bytes`); [] when it is missing or unreadable.
    The one log-tail reader: run summaries, replay jobs, gdb sessions, reduce workers."""
    return tail_bytes(path, max_bytes).decode("utf-8", "replace").splitlines()[-lines:] if lines > 0 else []


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    import hashlib  # here: the run path reaches this module before its program starts, hashing after

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def cache_root() -> Path:
    """XLATOOLS_CACHE_DIR (with ~ expanded), else the user cache dir: target probes, archives,
    bazel caches and environments all live below it."""
    override = os.environ.get("XLATOOLS_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("xlatools"))
