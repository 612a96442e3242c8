"""`--local`: the plan's command as a host process (CI runners that already are containers)."""

from __future__ import annotations

import os
import subprocess

from xlatools.errors import EnvironmentMissing
from xlatools.proctree import end_tree, held_interrupts


def run_local(plan, sink) -> int:
    env = dict(os.environ)
    env.update(plan.env)
    proc: subprocess.Popen | None = None
    try:
        # Own session: Ctrl-C reaches us, and we stop the whole process tree
        # (build.py, bazel client) ourselves, in order, in `finally`. Started and kept as one step.
        with held_interrupts():
            proc = _start(plan, env)
        assert proc.stdout is not None
        for raw in iter(proc.stdout.readline, b""):
            sink(raw.decode("utf-8", errors="replace").rstrip("\n"))
        return proc.wait()
    finally:
        if proc is not None and proc.poll() is None:
            end_tree(proc, grace=10)  # build.py and the bazel client get time to stop cleanly
        if proc is not None and proc.stdout:
            proc.stdout.close()


def _start(plan, env: dict[str, str]) -> subprocess.Popen:
    try:
        return subprocess.Popen(
            list(plan.argv),
            cwd=plan.workdir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    except FileNotFoundError:
        raise EnvironmentMissing(
            f"--local: {plan.argv[0]} not found on PATH", hint="install it, or build in a container (drop --local)"
        ) from None
