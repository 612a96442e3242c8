"""Cases, one run of a case (the CLI as a subprocess in its own session), and the checks every
case gets: exit code, no traceback, a message, nothing half-written, no orphan, no secret."""

from __future__ import annotations

import gzip
import json
import os
import re
import secrets
import signal
import stat
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

MARK = "HOSTILE_CASE"  # every process a case starts inherits it: how orphans are found
BUNDLE_NAME = re.compile(r"^\d{8}T\d{6}Z-.+-[0-9a-f]{6}$")
TEMP_NAME = re.compile(r"(^\..+\.tmp$)|(^\.unpack-)|(^xlatools-probe-)|(^\.latest\.)|(\.partial$)|(^tmp[a-z0-9_]{6,}$)")
CLEAN_MESSAGE = re.compile(r"^(error|Error|interrupted|timed out|timeout|cannot-run)\b", re.M)


@dataclass
class Case:
    cls: str
    name: str
    argv: list[str]  # xlatools arguments; "{key}" is replaced by a fixture path or "{dir}" (the case folder)
    expect: frozenset[int] = frozenset({2})
    setup: Callable[["Run"], None] | None = None
    env: dict[str, str] = field(default_factory=dict)
    secret: str | None = None  # must appear in no file written and in no output
    absent: tuple[str, ...] = ()  # paths (case-relative) that must not exist afterwards
    unchanged: tuple[str, ...] = ()  # paths whose contents must be as setup left them
    mention: tuple[str, ...] = ()  # texts the message must hold (what, where)
    forbid: tuple[str, ...] = ()  # texts no output may hold
    timeout: float = 60.0
    action: Callable[["Run", subprocess.Popen], None] | None = None  # e.g. a signal at the right moment
    wrapper: str | None = None  # "closed-stdout", "full-stdout", "no-dac"
    max_rss_mib: float | None = None
    max_seconds: float | None = None
    needs_root: bool = False
    cold_cache: bool = False  # its own, empty probe cache (the first probe happens in the case)
    check: Callable[["Run", "Result"], list[str]] | None = None

    @property
    def id(self) -> str:
        return f"{self.cls}/{self.name}"


@dataclass
class Result:
    cls: str
    name: str
    exit: int | None
    seconds: float
    problems: list[str]
    stdout: str = ""
    stderr: str = ""
    rss_mib: float | None = None
    skipped: str | None = None

    @property
    def clean(self) -> bool:
        return self.skipped is None and not self.problems

    def to_json(self) -> dict:
        return {
            "class": self.cls,
            "name": self.name,
            "exit": self.exit,
            "seconds": round(self.seconds, 2),
            "clean": self.clean,
            "problems": self.problems,
            "rss_mib": self.rss_mib,
            "skipped": self.skipped,
            "stderr_tail": self.stderr[-600:],
        }


@dataclass
class Context:
    """Where everything lives: the work folder, the fixtures (made once), the CLI to drive."""

    work: Path
    cli: list[str]
    python: str  # the interpreter of the CLI (also the default target)
    paths: dict[str, str] = field(default_factory=dict)  # fixture name -> path
    root: bool = os.geteuid() == 0

    def base_env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TERM", "USER", "LOGNAME")}
        home = self.work / "home"
        return {
            **keep,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XLATOOLS_CACHE_DIR": str(self.work / "cache"),
            "JAX_PLATFORMS": "cpu",
            "NO_COLOR": "1",
            "COLUMNS": "200",
            "PYTHONDONTWRITEBYTECODE": "1",
            # loopback only: any package-index question goes to a closed local port and fails fast
            "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
            "PIP_RETRIES": "0",
            "PIP_TIMEOUT": "2",
            "PIP_CONFIG_FILE": os.devnull,
            "UV_INDEX_URL": "http://127.0.0.1:9/simple",
            "UV_OFFLINE": "1",
            "no_proxy": "*",
            "NO_PROXY": "*",
        }


class Run:
    """One execution of a case: its folder, TMPDIR, environment and mounts."""

    def __init__(self, case: Case, ctx: Context):
        self.case, self.ctx = case, ctx
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", case.name)[:80]
        self.dir = ctx.work / "cases" / case.cls / slug
        self.tmp = ctx.work / "tmp" / f"{case.cls}-{slug}"
        self.token = secrets.token_hex(8)
        self.mounts: list[Path] = []
        self.env = ctx.base_env()
        self.env.update({"TMPDIR": str(self.tmp), MARK: self.token})
        if case.cold_cache:
            self.env["XLATOOLS_CACHE_DIR"] = str(self.dir / ".cache-xlatools")

    def fmt(self, text: str) -> str:
        return text.format_map({**self.ctx.paths, "dir": str(self.dir), "tmp": str(self.tmp)})

    def path(self, rel: str) -> Path:
        return self.dir / self.fmt(rel)

    def write(self, rel: str, data: str | bytes, mode: int | None = None) -> Path:
        path = self.path(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.write_bytes if isinstance(data, bytes) else path.write_text)(data)
        if mode is not None:
            path.chmod(mode)
        return path

    def fifo(self, rel: str) -> Path:
        path = self.path(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() or path.is_symlink():
            if path.is_dir() and not path.is_symlink():
                import shutil

                shutil.rmtree(path)
            else:
                path.unlink()
        os.mkfifo(path)
        return path

    def mount(self, rel: str, size: str = "1m", readonly: bool = False, fill: bool = False) -> Path:
        """A tmpfs at `rel` (root only): read-only, or filled to 0 bytes free, or just small."""
        path = self.path(rel)
        path.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0777", "tmpfs", str(path)],
            check=True,
            capture_output=True,
        )
        self.mounts.append(path)
        if fill:
            _fill(path)
        if readonly:
            subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True, capture_output=True)
        return path

    def unmount(self) -> None:
        for path in reversed(self.mounts):
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


def _fill(path: Path) -> None:
    with open(path / ".filler", "wb") as handle:
        block = b"\0" * 65536
        try:
            while True:
                handle.write(block)
                handle.flush()
        except OSError:
            pass
    for size in (4096, 512, 64, 1):
        try:
            with open(path / f".filler-{size}", "wb") as handle:
                while True:
                    handle.write(b"\0" * size)
                    handle.flush()
        except OSError:
            pass


# ------------------------------------------------------------------ snapshots and scans


def snapshot(*roots: Path) -> dict[str, tuple[int, int, int]]:
    found = {}
    for root in roots:
        if not root.exists():
            continue
        for base, dirs, files in os.walk(root):
            for name in dirs + files:
                full = os.path.join(base, name)
                try:
                    st = os.lstat(full)
                except OSError:
                    continue
                found[full] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return found


def changed(before: dict, after: dict) -> list[str]:
    return sorted(p for p, meta in after.items() if before.get(p) != meta)


def _readable(path: str, limit: int = 64 << 20) -> bytes:
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return b""
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return b""
    if path.endswith((".tar.gz", ".tgz", ".tar")):
        data += _tar_contents(path)
    elif path.endswith(".gz"):
        try:
            data += gzip.decompress(data)[:limit]
        except (OSError, EOFError, ValueError):
            pass
    return data


def _tar_contents(path: str, limit: int = 64 << 20) -> bytes:
    out = []
    try:
        with tarfile.open(path, "r:*") as tar:
            total = 0
            for member in tar:
                if member.isfile() and total + member.size <= limit:
                    handle = tar.extractfile(member)
                    if handle:
                        out.append(handle.read())
                        total += member.size
    except (tarfile.TarError, OSError, EOFError, ValueError):
        pass
    return b"".join(out)


def marked_processes(token: str) -> list[tuple[int, str]]:
    """Live processes carrying this case's marker (the CLI itself is gone by then)."""
    needle = f"{MARK}={token}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if needle not in handle.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/stat", "rb") as handle:
                if b") Z " in handle.read():
                    continue
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmd = handle.read().replace(b"\0", b" ").decode(errors="replace")[:120]
        except OSError:
            continue
        found.append((int(entry), cmd))
    return found


def kill_marked(token: str) -> list[tuple[int, str]]:
    found = marked_processes(token)
    for pid, _ in found:
        try:
            os.kill(pid, signal.SIGKILL)  # ours: started by this case (they carry its marker)
        except OSError:
            pass
    return found


# ------------------------------------------------------------------ running one case


def _command(run: Run) -> list[str]:
    argv = [*run.ctx.cli, *[run.fmt(a) for a in run.case.argv]]
    if run.case.wrapper == "closed-stdout":
        return ["sh", "-c", 'exec "$@" >&-', "sh", *argv]
    if run.case.wrapper == "full-stdout":
        return ["sh", "-c", 'exec "$@" >/dev/full', "sh", *argv]
    if run.case.wrapper == "no-dac" and run.ctx.root:  # root without the right to ignore file modes
        return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--", *argv]
    return argv


def _default_sigint() -> None:
    """The CLI as a terminal starts it: a harness started in the background (`cmd &` in a script)
    passes SIGINT on ignored, and xlatools rightly leaves an ignored SIGINT ignored."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait(proc: subprocess.Popen, deadline: float) -> tuple[int | None, float | None]:
    """(exit code or None after a hang, peak RSS in MiB of the CLI and its reaped children)."""
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
            return code, usage.ru_maxrss / 1024
        if time.monotonic() > deadline:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = -9
            return None, usage.ru_maxrss / 1024
        time.sleep(0.02)


def execute(case: Case, ctx: Context) -> Result:
    if case.needs_root and not ctx.root:
        return Result(case.cls, case.name, None, 0.0, [], skipped="needs root (mount, another user)")
    run = Run(case, ctx)
    for folder in (run.dir, run.tmp):
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o777)
    logs = ctx.work / "logs" / case.cls
    logs.mkdir(parents=True, exist_ok=True)
    out_log, err_log = logs / f"{run.dir.name}.out", logs / f"{run.dir.name}.err"
    try:
        if case.setup:
            case.setup(run)
        before = snapshot(run.dir, run.tmp)
        kept = {p: _readable(str(run.path(p))) for p in case.unchanged}
        env = {**run.env, **{k: run.fmt(v) for k, v in case.env.items()}}
        started = time.monotonic()
        with open(out_log, "wb") as out, open(err_log, "wb") as err:
            proc = subprocess.Popen(
                _command(run),
                cwd=run.dir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                preexec_fn=_default_sigint,
            )
            if case.action:
                case.action(run, proc)
            code, rss = _wait(proc, started + case.timeout)
        seconds = time.monotonic() - started
        time.sleep(0.2)  # let a just-orphaned child show up under init
        orphans = kill_marked(run.token)
        result = Result(
            case.cls,
            case.name,
            code,
            seconds,
            [],
            out_log.read_text(errors="replace"),
            err_log.read_text(errors="replace"),
            round(rss, 1) if rss else None,
        )
        result.problems = _problems(run, result, before, kept, orphans)
        return result
    except Exception as exc:  # a harness failure is reported, not hidden
        return Result(case.cls, case.name, None, 0.0, [f"harness: {type(exc).__name__}: {exc}"])
    finally:
        kill_marked(run.token)
        run.unmount()


def _problems(run: Run, result: Result, before: dict, kept: dict, orphans: list) -> list[str]:
    case, problems = run.case, []
    output = result.stdout + result.stderr
    if result.exit is None:
        problems.append(f"hung: killed after {case.timeout:.0f} s")
    elif result.exit not in case.expect:
        problems.append(f"exit {result.exit}, expected {'/'.join(map(str, sorted(case.expect)))}")
    ours = own_traceback(output)
    if ours:
        problems.append(f"traceback: {ours[:160]}")
    if result.exit not in (None, 0, 1) and not CLEAN_MESSAGE.search(result.stderr):
        problems.append("no message on stderr")
    if result.exit not in (None, 0) and (0 not in case.expect or result.exit in (2, 3)):
        for text in case.mention:
            if run.fmt(text) not in result.stderr:
                problems.append(f"message does not name {run.fmt(text)!r}")
    for text in case.forbid:
        if run.fmt(text) in output:
            problems.append(f"output holds {run.fmt(text)!r}")
    if case.max_rss_mib and result.rss_mib and result.rss_mib > case.max_rss_mib:
        problems.append(f"peak RSS {result.rss_mib:.0f} MiB > {case.max_rss_mib:.0f} MiB")
    if case.max_seconds and result.seconds > case.max_seconds:
        problems.append(f"took {result.seconds:.1f} s > {case.max_seconds:.0f} s")
    if orphans:
        problems.append(f"orphans: {len(orphans)} ({orphans[0][1][:60]})")
    after = snapshot(run.dir, run.tmp)
    new = changed(before, after)
    problems += _half_written(run, before, after, new)
    for rel in case.absent:
        if run.path(rel).exists():
            problems.append(f"{run.fmt(rel)} exists (half-written or replaced)")
    for rel, data in kept.items():
        if _readable(str(run.path(rel))) != data:
            problems.append(f"{run.fmt(rel)} was changed")
    if case.secret:
        problems += _secret_leaks(case.secret, result, new)
    if case.check:
        problems += case.check(run, result)
    return problems


def own_traceback(output: str) -> str | None:
    """The exception line of a Python traceback through xlatools' own code (not the program's), if any."""
    lines = output.splitlines()
    for start, line in enumerate(lines):
        if "Traceback (most recent call last)" not in line:
            continue
        frames, end = [], start + 1
        while end < len(lines) and (lines[end].startswith(" ") or not lines[end].strip()):
            frames.append(lines[end])
            end += 1
        if any("/xlatools/" in f and f.strip().startswith("File ") for f in frames) or not frames:
            return lines[end] if end < len(lines) else "?"
    if re.search(r"^(RecursionError|Exception in thread)", output, re.M):
        return "uncaught exception"
    return None


def _half_written(run: Run, before: dict, after: dict, new: list[str]) -> list[str]:
    problems = []
    for path in new:
        name = os.path.basename(path)
        if TEMP_NAME.search(name) and not name.startswith(".cache-"):
            problems.append(f"temp file left: {os.path.relpath(path, run.ctx.work)}")
        elif path.startswith(str(run.tmp) + os.sep) and os.path.dirname(path) == str(run.tmp):
            problems.append(f"left in TMPDIR: {name}")
    for path in new:
        if os.path.basename(path) == "manifest.json":
            try:
                status = json.loads(Path(path).read_text()).get("status")
            except (OSError, ValueError, AttributeError):
                status = "unreadable"
            if status in ("running", "unreadable"):
                problems.append(f"bundle left {status}: {os.path.relpath(os.path.dirname(path), run.dir)}")
        elif stat.S_ISDIR(after[path][0]) and path not in before and BUNDLE_NAME.match(os.path.basename(path)):
            if not os.path.exists(os.path.join(path, "manifest.json")) and "steps" not in path.split(os.sep)[-3:-1]:
                problems.append(f"bundle folder without manifest: {os.path.relpath(path, run.dir)}")
    return problems[:6]


def _secret_leaks(secret: str, result: Result, new: list[str]) -> list[str]:
    leaks = []
    if secret in result.stdout:
        leaks.append("stdout")
    if secret in result.stderr:
        leaks.append("stderr")
    needle = secret.encode()
    for path in new:
        if needle in _readable(path):
            leaks.append(os.path.basename(path))
    return [f"secret in: {', '.join(sorted(set(leaks))[:8])}"] if leaks else []


def python_snippet(code: str) -> list[str]:
    return [sys.executable, "-c", code]
