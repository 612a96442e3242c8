"""The real things the cases spoil: bundles, a repro pack and a bisect state written by the CLI
itself, a JAX tree with its lock, and the programs and interpreters the process cases run."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
from pathlib import Path

from tests.integration.pin.helpers import COMMIT, make_tree

from .core import Context

PROGRAM = """import jax, jax.numpy as jnp
f = jax.jit(lambda x, y: jnp.sin(x) @ y + 1.0)
print(f(jnp.ones((4, 4)), jnp.ones((4, 4)))[0, 0])
"""
PROGRAM_B = PROGRAM.replace("+ 1.0", "+ 2.0")
OK = "print('ok')\n"
NEW_SHA = "36fd883a02fbdabd8c105cf28a973374208a72b17d3849bee9572670d8dd2809"
# A "python" whose probe never answers: it starts a child that would outlive it, then waits.
HANG_PYTHON = "#!/bin/sh\nsleep 300 &\nsleep 300\n"
# A "python" that answers everything after a long pause (signals arrive during the first probe).
SLOW_PYTHON = '#!/bin/sh\nsleep 30 &\nwait\nexec {python} "$@"\n'
SETSID_CHILD = """import os, subprocess, sys, time
subprocess.Popen(["setsid", "sleep", "300"])
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
time.sleep(300)
"""
IGNORE_TERM = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(300)\n"


def cli(ctx: Context, *args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [*ctx.cli, *args],
        cwd=cwd or ctx.work / "fx",
        env={**ctx.base_env(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode not in (0, 2) or "Traceback" in done.stderr:
        raise SystemExit(f"fixture: xlatools {' '.join(args)} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return done


def _bundle(done: subprocess.CompletedProcess) -> str:
    return json.loads(done.stdout)["bundle"]


def make(ctx: Context) -> None:
    fx = ctx.work / "fx"
    fx.mkdir(parents=True)
    for name, text in {
        "prog.py": PROGRAM,
        "prog2.py": PROGRAM_B,
        "ok.py": OK,
        "setsid_child.py": SETSID_CHILD,
        "ignore_term.py": IGNORE_TERM,
    }.items():
        (fx / name).write_text(text)
        ctx.paths[name.split(".")[0]] = str(fx / name)
    for name, text in {"hang_python": HANG_PYTHON, "slow_python": SLOW_PYTHON.format(python=ctx.python)}.items():
        (fx / name).write_text(text)
        (fx / name).chmod(0o755)
        ctx.paths[name] = str(fx / name)
    ctx.paths["python"] = ctx.python
    (ctx.work / "home" / ".config").mkdir(parents=True, exist_ok=True)
    ctx.paths["run"] = _bundle(
        cli(ctx, "run", "prog.py", "--dump", "--preset", "dump:passes", "--out", "runs", "--name", "fx-a", "--json")
    )
    ctx.paths["run_b"] = _bundle(cli(ctx, "run", "prog2.py", "--dump", "--out", "runs", "--name", "fx-b", "--json"))
    cli(ctx, "repro", "pack", ctx.paths["run"], "-o", "repro.tar.gz", "--out", "replays")
    ctx.paths["pack"] = str(fx / "repro.tar.gz")
    ctx.paths["replay"] = str(next(p for p in (fx / "replays").iterdir() if p.is_dir() and not p.is_symlink()))
    dump = Path(ctx.paths["run"]) / "xla_dump"
    texts = sorted(dump.glob("module_*.before_optimizations.txt"), key=lambda p: p.stat().st_size)
    ctx.paths["hlo"] = str(texts[-1])
    ctx.paths["module"] = texts[-1].name.split(".")[1]
    cli(ctx, "bisect", "passes", "--out", "bisect", "--", str(fx / "ok.py"))  # exit 2: good with every pass
    [state] = (fx / "bisect").glob("*/bisect.json")
    ctx.paths["bisect_out"], ctx.paths["bisect_folder"] = str(fx / "bisect"), str(state.parent)
    _tree_and_lock(ctx, fx)


def _tree_and_lock(ctx: Context, fx: Path) -> None:
    tree = make_tree(fx / "jax", "revision_bzl")
    (tree / "build").mkdir()
    (tree / "build" / "build.py").write_text("# stands in for JAX's build/build.py (never run: --dry-run)\n")
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    subprocess.run(["git", "-C", str(tree), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(tree), "-c", "user.name=h", "-c", "user.email=h@localhost", "commit", "-qm", "tree"],
        check=True,
    )
    integrity = "sha256-" + base64.b64encode(bytes.fromhex(NEW_SHA)).decode()
    url = f"https://github.com/openxla/xla/archive/{COMMIT}.tar.gz"
    lock = {
        "lock_version": 2,
        "generator": "hostile",
        "profile": None,
        "made_for": None,
        "dependencies": {
            "xla": {
                "name": "xla",
                "kind": "archive",
                "commit": COMMIT,
                "repo": None,
                "ref": None,
                "urls": [url],
                "sha256": NEW_SHA,
                "integrity": integrity,
                "strip_prefix": f"xla-{COMMIT}",
                "patches": [],
                "resolved_at": "2026-01-01T00:00:00Z",
                "other_archives": [],
            }
        },
    }
    (fx / "xlatools.lock").write_text(json.dumps(lock, indent=2) + "\n")
    ctx.paths["tree"], ctx.paths["lock"] = str(tree), str(fx / "xlatools.lock")
    trial = fx / "jax-trial"
    shutil.copytree(tree, trial, symlinks=True)
    cli(ctx, "pin", "apply", "--source", str(trial), "--lock", str(fx / "xlatools.lock"))
    if (
        hashlib.sha256((trial / "third_party/xla/revision.bzl").read_bytes()).hexdigest()
        == hashlib.sha256((tree / "third_party/xla/revision.bzl").read_bytes()).hexdigest()
    ):
        raise SystemExit("fixture: pin apply did not change the trial tree")


def copy(src: str, dest: Path) -> Path:
    """A private copy of a fixture (file or folder) that a case may spoil."""
    source = Path(src)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, dest, symlinks=True)
    else:
        shutil.copy2(source, dest)
    return dest
