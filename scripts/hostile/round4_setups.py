"""What round 4's cases (cases_round4.py) set up: Slurm commands that answer badly (stand-ins on PATH), a cached
release environment that is this interpreter, an HloSnapshot under a name that does not say so, files a
profile's credentials point at, and the checks those cases add to the harness's own."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

from . import fixtures
from .core import Run, marked_processes

PROBES = Path(__file__).resolve().parents[2] / "xlatools" / "replay" / "probes"

# A Slurm that takes jobs: sbatch runs the batch script in the background (its srun runs the task command itself).
SBATCH_RUNS = """#!/bin/sh
for a; do last=$a; done
case "$*" in *--test-only*) echo "sbatch: Job 4242 to start at now on localhost in partition debug" >&2; exit 0;; esac
(SLURM_PROCID=0 sh "$last" >/dev/null 2>&1 &)
echo 4242
"""
# A Slurm that queues jobs and never runs them.
SBATCH_QUEUES = """#!/bin/sh
case "$*" in *--test-only*) echo "sbatch: Job 4242 to start at now on localhost in partition debug" >&2; exit 0;; esac
echo 4242
"""
# A site's sbatch that prints bytes that are not UTF-8 (and no job id).
SBATCH_BYTES = """#!/bin/sh
printf '\\377\\376 submitted \\351\\n'
printf 'sbatch: \\377 note\\n' >&2
"""
SRUN = """#!/bin/sh
while [ "${1#--}" != "$1" ]; do shift; done
exec "$@"
"""


def _show_job(state: str, reason: str = "None") -> str:
    return (
        f'#!/bin/sh\necho "JobId=4242 JobName=x JobState={state} Reason={reason} ExitCode=0:0 '
        'NodeList=localhost Partition=debug"\n'
    )


def fake_slurm(sbatch: str = SBATCH_RUNS, squeue: str = "", show_job: str = _show_job("COMPLETED"), srun: str = SRUN):
    """Slurm's commands in {dir}/bin (the case puts it first on PATH): `squeue` prints `squeue` (a state, or a
    script of its own), `scontrol show job` what `show_job` prints."""

    def setup(run: Run) -> None:
        squeue_script = squeue if squeue.startswith("#!") else f"#!/bin/sh\nprintf '%s' '{squeue}'\n"
        for name, text in {
            "sbatch": sbatch,
            "squeue": squeue_script,
            "scontrol": show_job,
            "scancel": "#!/bin/sh\nexit 0\n",
            "sinfo": '#!/bin/sh\necho "debug* up 1 idle"\n',
            "srun": srun,
        }.items():
            run.write(f"bin/{name}", text, mode=0o755)

    return setup


def slurm_env() -> dict[str, str]:
    return {"PATH": "{dir}/bin:" + os.environ.get("PATH", "/usr/bin:/bin")}


def show_job(state: str, reason: str = "None") -> str:
    return _show_job(state, reason)


def stop_worker(run: Run, proc: subprocess.Popen) -> None:
    """SIGSTOP replay's worker once it runs (a stuck worker: the replay's --timeout must end it)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for pid, cmd in marked_processes(run.token):
            if "oracle_worker.py" in cmd:
                os.kill(pid, signal.SIGSTOP)  # ours: this case's marker is in its environment
                return
        time.sleep(0.05)


def release_env(version: str, python: str, python_version: str = "3.11"):
    """A cached release environment of jax `version` (bisect/envs.py's layout) that is this interpreter: the
    stages that need release environments run offline."""

    def setup(run: Run) -> None:
        env = run.path(f".cache-xlatools/envs/jax-{version}-py{python_version}-cpu")
        (env / "bin").mkdir(parents=True, exist_ok=True)
        (env / "bin" / "python").write_text(f'#!/bin/sh\nexec "{run.fmt(python)}" "$@"\n')  # its own venv
        (env / "bin" / "python").chmod(0o755)
        (env / "xlatools-env.json").write_text(json.dumps({"name": env.name, "created": "2026-01-01T00:00:00Z"}))

    return setup


SNAPSHOT_MAKER = """
import sys
import numpy as np
sys.path.insert(0, sys.argv[3])  # replay's target-side helpers (jaxcompat: the HLO parser of any jaxlib)
from jaxcompat import proto_from_text
from xlatools.replay.hloproto import schema
text, out = open(sys.argv[1]).read(), sys.argv[2]
module = proto_from_text(text)[0]
snapshot = schema()["HloSnapshot"]()
snapshot.hlo.hlo_module = module
for _ in range(2):  # the fixture module's two f32[4,4] arguments
    literal = snapshot.arguments.add()
    literal.shape.element_type = 11
    literal.shape.dimensions.extend([4, 4])
    literal.shape.layout.minor_to_major.extend([1, 0])
    literal.f32s.extend(np.full(16, 0.5, np.float32).tolist())
open(out, "wb").write(snapshot.SerializeToString())
"""


def renamed_snapshot(run: Run) -> None:
    """`renamed.pb`: an HloSnapshot of the fixture module named like no snapshot, its unoptimised text beside it."""
    fixtures.copy(run.ctx.paths["hlo"], run.path("renamed.before_optimizations.txt"))
    subprocess.run(
        [run.ctx.python, "-c", SNAPSHOT_MAKER, run.ctx.paths["hlo"], str(run.path("renamed.pb")), str(PROBES)],
        check=True,
        capture_output=True,
        timeout=120,
    )


def credentials_profile(shape: str):
    """A profile whose remote cache's Authorization header is read from `token.txt`, spoiled as `shape`."""

    def setup(run: Run) -> None:
        run.write(
            "p.yaml",
            "description: credentials\nbuild:\n  wheels: [jaxlib]\nbazel:\n  remote_cache: grpc://127.0.0.1:9\n"
            "  remote_credentials:\n    headers:\n      Authorization: {file: token.txt}\n",
        )
        if shape == "world-readable":
            run.write("token.txt", "Bearer hostile-token-7f3a\n", mode=0o644)
        elif shape == "fifo":
            run.fifo("token.txt")
        elif shape == "folder":
            run.path("token.txt").mkdir()

    return setup


def says(*texts: str):
    """The case's output (stdout and stderr) holds each of `texts`."""

    def check(run: Run, result) -> list[str]:
        output = result.stdout + result.stderr
        return [f"output does not say {run.fmt(t)!r}" for t in texts if run.fmt(t) not in output]

    return check


def no_temp_files(folder: str):
    def check(run: Run, result) -> list[str]:
        left = (
            [str(p.relative_to(run.dir)) for p in run.path(folder).rglob("*.tmp")] if run.path(folder).exists() else []
        )
        return [f"temporary files left: {left[:4]}"] if left else []

    return check


def no_reduce_state(run: Run, result) -> list[str]:
    left = list(run.path("out").glob(".reduce-state/*")) if run.path("out").exists() else []
    return [f"{len(left)} reduce state folder(s) left: {[p.name for p in left]}"] if left else []


def dump_in_bundle(out: str):
    def check(run: Run, result) -> list[str]:
        bundle = run.path(out) / "latest"
        dumped = list((bundle / "xla_dump").glob("module_*")) if bundle.exists() else []
        stray = [p.name for p in run.dir.iterdir() if p.name.startswith("out") and p.name != out]
        return ([] if dumped else ["the bundle holds no dump files"]) + (
            [f"dumped elsewhere: {stray}"] if stray else []
        )

    return check


def unique_configurations(run: Run, result) -> list[str]:
    names = re.findall(r'"name":\s*"([^"]*)"', run.path("ws/.vscode/launch.json").read_text())
    return [] if len(names) == len(set(names)) == 3 else [f"launch.json holds {len(names)} configurations: {names}"]


def issue_links_resolve(run: Run, result) -> list[str]:
    problems = []
    for issue in run.dir.rglob("ISSUE.md"):
        for target in re.findall(r"\]\(([^)#\s]+)\)", issue.read_text()):
            if "://" not in target and not (issue.parent / target).exists():
                problems.append(f"{issue.relative_to(run.dir)} links to {target}, which does not exist")
    return problems
