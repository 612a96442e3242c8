"""Round 4 (issue 43): what wave 4 added (Slurm, replay workers, recorded inputs, `latest*` links, many processes)
and what the two earlier rounds still missed, as four classes named after the issue's headings: waits that had no
bound (`hangs`), exit 70 for what a user or a tool sent (`internal`), files left half-written (`halfwritten`) and
wrong answers or unclear messages (`answers`); processes left behind count as round 3's `leftovers`. Each case
takes seconds (the Slurm ones use stand-in commands on PATH; round4_setups.py)."""

from __future__ import annotations

import json
import signal

from . import fixtures
from .cases_debug import _tree, setup_argv
from .cases_processes import _signal_when
from .cases_reduce import STILL_SINE, reduce_argv
from .core import Case, Run
from .round4_setups import (
    SBATCH_BYTES,
    SBATCH_QUEUES,
    credentials_profile,
    dump_in_bundle,
    fake_slurm,
    issue_links_resolve,
    no_reduce_state,
    no_temp_files,
    release_env,
    renamed_snapshot,
    says,
    show_job,
    slurm_env,
    stop_worker,
    unique_configurations,
)

CLASSES = ("hangs", "internal", "halfwritten", "answers")
SLURM_RUN = ["run", "{ok}", "--executor", "slurm", "--out", "out"]
SECRET = "hostile-pw-91c2e7"
PATH_FLAG = f"--xla-flag=--xla_gpu_cuda_data_dir=/opt/u:{SECRET}@cuda"
# An oracle that is quick on the input and on the result's re-checks, and slow on every smaller candidate.
SLOW_ON_CANDIDATES = (
    "#!/bin/sh\nfor hlo; do :; done\n"
    '[ "$(grep -c . "$hlo")" -lt 300 ] && sleep 300\n'
    "grep -q ' sine(' \"$hlo\" && exit 1\nexit 0\n"
)
SETSID_DAEMON = "import subprocess\nsubprocess.Popen(['setsid', 'sleep', '300'])\n"


def _script(name: str, text: str):
    def setup(run: Run) -> None:
        run.write(name, text, mode=0o755)

    return setup


def _both(*setups):
    def setup(run: Run) -> None:
        for one in setups:
            one(run)

    return setup


def _module_of(lines: int):
    """A module of `lines` adds between two sines: a reduction with something to do."""

    def setup(run: Run) -> None:
        body = ["HloModule m", "", "ENTRY main {", "  p = f32[8] parameter(0)", "  v0 = f32[8] sine(p)"]
        body += [f"  v{i} = f32[8] add(v{i - 1}, p)" for i in range(1, lines)]
        body += [f"  ROOT r = f32[8] sine(v{lines - 1})", "}"]
        run.write("m.txt", "\n".join(body) + "\n")

    return setup


def _recorded(kind: str):
    """A copy of the fixture run whose recorded snapshot of its program's module is a link to /dev/zero, or a FIFO."""

    def setup(run: Run) -> None:
        fixtures.copy(run.ctx.paths["run"], run.path("b"))
        stem = f"b/recorded/module_{int(run.ctx.paths['hlo'].split('module_')[1][:4]):04d}.{run.ctx.paths['module']}"
        if kind == "dev-zero":
            run.path(f"{stem}.snapshot.0.pb").parent.mkdir(parents=True, exist_ok=True)
            run.path(f"{stem}.snapshot.0.pb").symlink_to("/dev/zero")
        else:
            run.fifo(f"{stem}.snapshot.0.pb")

    return setup


def _spoiled_state(shape: str):
    def setup(run: Run) -> None:
        fixtures.copy(run.ctx.paths["reduce_root"], run.path("out"))
        path = run.path("out") / run.ctx.paths["reduce_state"]
        state = json.loads(path.read_text())
        if shape == "argument-missing":
            state["best"]["inputs"] = {name: "arg:99" for name in state["best"]["inputs"]}
        else:
            state["values"] = {"v0": {"path": "/dev/zero", "index": 0}}
        path.write_text(json.dumps(state))

    return setup


def _hang_cases() -> list[Case]:
    return [
        Case("hangs", "run-processes-20-digits", ["run", "{ok}", "--processes", "9" * 20, "--out", "out"],
             mention=("--processes",), absent=("out",), timeout=60),
        Case("hangs", "run-processes-100000", ["run", "{ok}", "--processes", "100000", "--out", "out"],
             mention=("--processes",), absent=("out",), timeout=60),
        Case("hangs", "run-devices-per-process-100000",
             ["run", "{ok}", "--processes", "2", "--devices-per-process", "100000", "--out", "out"],
             mention=("--devices-per-process",), absent=("out",), timeout=60),
        Case("hangs", "slurm-unknown-state-after-the-tasks", [*SLURM_RUN, "--timeout", "15"], frozenset({0}),
             fake_slurm(squeue="WEIRD", show_job=show_job("WEIRD")), env=slurm_env(), timeout=120,
             check=says("WEIRD")),
        Case("hangs", "slurm-pending-past-the-timeout", [*SLURM_RUN, "--timeout", "2"], frozenset({124}),
             fake_slurm(SBATCH_QUEUES, squeue="PENDING", show_job=show_job("PENDING")), env=slurm_env(), timeout=120,
             check=says("PENDING")),
        Case("hangs", "slurm-squeue-hangs-with-a-child", SLURM_RUN, frozenset({3}),
             fake_slurm(squeue="#!/bin/sh\nsleep 300 &\nsleep 300\n"),
             env={**slurm_env(), "XLATOOLS_SLURM_COMMAND_TIMEOUT_S": "2"}, mention=("squeue",), timeout=120),
        Case("hangs", "replay-worker-stopped", ["replay", "{hlo}", "--timeout", "8", "--out", "out"],
             frozenset({124}), action=stop_worker, timeout=120),
        Case("hangs", "replay-recorded-snapshot-dev-zero", ["replay", "b", "--out", "out"], frozenset({2}),
             _recorded("dev-zero"), mention=("snapshot",), timeout=90, max_rss_mib=400),
        Case("hangs", "replay-recorded-snapshot-fifo", ["replay", "b", "--out", "out"], frozenset({2}),
             _recorded("fifo"), mention=("snapshot",), timeout=90),
        Case("hangs", "reduce-max-time-inside-a-round",
             ["reduce", "m.txt", "--script", "{dir}/slow.sh", "--out", "out", "--max-time", "40", "--rechecks", "1"],
             frozenset({0}), _both(_module_of(300), _script("slow.sh", SLOW_ON_CANDIDATES)), timeout=240),
        Case("hangs", "doctor-python-hangs-without-a-probe-limit", ["doctor", "--python", "{hang_python}"],
             frozenset({1, 3}), cold_cache=True, mention=("hang_python",), timeout=150, max_seconds=90),
        Case("hangs", "triage-sigint-in-a-dumping-run",
             ["triage", "--good", "0.4.30", "--bad", "0.4.31", "--skip", "releases", "--out", "tri", "--", "sleepy.py"],
             frozenset({130}),
             _both(release_env("0.4.30", "{python}"), release_env("0.4.31", "{python}"),
                   _script("sleepy.py", "import subprocess\nsubprocess.run(['sleep', '61'])\n")),
             cold_cache=True, action=_signal_when(signal.SIGINT, "sleep 61", settle=1.0, limit=120), timeout=150,
             check=issue_links_resolve),
    ]  # fmt: skip


def _internal_cases() -> list[Case]:
    out = [
        Case("internal", "slurm-sbatch-prints-bytes", SLURM_RUN, frozenset({3}), fake_slurm(SBATCH_BYTES),
             env=slurm_env(), mention=("sbatch",), timeout=60),
        Case("internal", "doctor-slurm-sbatch-prints-bytes", ["doctor", "--executor", "slurm"], frozenset({0, 1}),
             fake_slurm(SBATCH_BYTES), env=slurm_env(), timeout=90),
        Case("internal", "reduce-state-argument-missing", reduce_argv("out"), frozenset({2}),
             _spoiled_state("argument-missing"), mention=("state.json",), timeout=120),
        Case("internal", "reduce-state-value-dev-zero", reduce_argv("out"), frozenset({2}),
             _spoiled_state("dev-zero"), mention=("state.json",), timeout=120),
    ]  # fmt: skip
    numeric = {
        "replay-timeout-1e12": (["replay", "{hlo}", "--out", "out", "--timeout", "1e12"], "--timeout"),
        "run-timeout-1e12": (["run", "{ok}", "--out", "out", "--timeout", "1e12"], "--timeout"),
        "reduce-timeout-1e12": ([*reduce_argv("out"), "--timeout", "1e12"], "--timeout"),
        "lower-timeout-1e12": (["lower", "x.py:f", "--timeout", "1e12"], "--timeout"),
        "replay-iterations-huge": (["replay", "{hlo}", "--out", "out", "-n", "9" * 20], "--iterations"),
        "reduce-rechecks-huge": ([*reduce_argv("out")[:-1], "9" * 20], "--rechecks"),
        "bisect-confirm-huge": (["bisect", "passes", "--out", "bis", "--confirm", "9" * 20, "--", "{ok}"], "--confirm"),
        "bisect-jobs-huge": (
            ["bisect", "releases", "--good", "0.4.30", "--bad", "0.4.31", "-j", "9" * 20, "--", "{ok}"],
            "--jobs",
        ),
        "build-jobs-huge": (["build", "-p", "base", "--jobs", "9" * 20, "--dry-run"], "--jobs"),
    }
    for name, (argv, option) in numeric.items():
        out.append(Case("internal", name, argv, frozenset({2}), mention=(option,), absent=("out",), timeout=60))
    return out


def _halfwritten_cases() -> list[Case]:
    big = "import jax, jax.numpy as jnp\nprint(jax.jit(lambda x: x * 2)(jnp.ones((1000, 1000)))[0, 0])\n"
    return [
        Case("halfwritten", "run-record-inputs-on-a-full-disk",
             ["run", "big.py", "--dump", "--record-inputs", "--out", "out"], frozenset({0, 3}),
             lambda r: (r.write("big.py", big), r.mount("out", size="3m")), needs_root=True, timeout=120,
             check=no_temp_files("out")),
        Case("halfwritten", "reduce-on-a-full-disk-leaves-no-state", reduce_argv("out"), frozenset({3}),
             lambda r: r.mount("out", size="200k"), needs_root=True, timeout=120, check=no_reduce_state),
    ]  # fmt: skip


def _answer_cases() -> list[Case]:
    creds = [
        Case("answers", f"doctor-credentials-file-{shape}", ["doctor", "--profile", "p.yaml"], frozenset({1}),
             credentials_profile(shape), timeout=120, check=says("token.txt", said))
        for shape, said in (("missing", "does not exist"), ("world-readable", "can be read by others"),
                            ("fifo", "FIFO"), ("folder", "a folder"))
    ]  # fmt: skip
    secret_run = ["run", "{ok}", "--out", "s", "--name", "sec", PATH_FLAG]

    def made_first(argv):
        def setup(run: Run) -> None:
            import subprocess

            subprocess.run(
                [*run.ctx.cli, *map(run.fmt, argv)], cwd=run.dir, env=run.env, capture_output=True, timeout=120
            )

        return setup

    return creds + [
        Case("answers", "latest-is-a-folder", ["run", "{ok}", "--out", "out"], frozenset({0}),
             lambda r: r.write("out/latest/mine.txt", "mine"), unchanged=("out/latest/mine.txt",),
             check=says("latest is a folder")),
        Case("answers", "latest-replay-is-a-file", ["replay", "{hlo}", "--out", "out"], frozenset({0}),
             lambda r: r.write("out/latest-replay", "mine"), unchanged=("out/latest-replay",),
             check=says("latest-replay is a file"), timeout=120),
        Case("answers", "slurm-node-fail", SLURM_RUN, frozenset({3}),
             fake_slurm(SBATCH_QUEUES, squeue="", show_job=show_job("NODE_FAIL", "NodeDown")), env=slurm_env(),
             mention=("NODE_FAIL", "NodeDown"), timeout=60),
        Case("answers", "doctor-slurm-time-limit-with-a-space",
             ["doctor", "--executor", "slurm", "--time-limit", "x y"], frozenset({2}), fake_slurm(),
             env=slurm_env(), mention=("--time-limit",), forbid=("--time 'x y'",)),
        Case("answers", "replay-dump-a-run-preset", ["replay", "{hlo}", "--dump", "gpu:f32", "--out", "out"],
             frozenset({2}), mention=("--dump", "gpu:f32"), absent=("out",)),
        Case("answers", "run-profile-preset-unknown", ["run", "{ok}", "--profile", "p.yaml", "--out", "out"],
             frozenset({2}), lambda r: r.write("p.yaml", "description: x\nrun:\n  presets: [gpu:nosuch]\n"),
             mention=("p.yaml:3", "run.presets[0]"), absent=("out",)),
        Case("answers", "profiles-validate-preset-unknown", ["profiles", "validate", "p.yaml"], frozenset({2}),
             lambda r: r.write("p.yaml", "description: x\nrun:\n  presets: [gpu:nosuch]\n"),
             check=says("run.presets[0]", "nosuch")),
        Case("answers", "replay-snapshot-named-like-no-snapshot", ["replay", "renamed.pb", "--out", "out"],
             frozenset({0}), renamed_snapshot, timeout=120, check=says("snapshot (")),
        Case("answers", "reduce-a-pack-module", ["reduce", "{pack}", "--module", "{module}", "--script",
             "{still_sine}", "--out", "out", "--rechecks", "1"], frozenset({0}), timeout=180),
        Case("answers", "secret-in-a-path-flag-run-archive", [*secret_run[:-1], "--archive", PATH_FLAG],
             frozenset({0}), secret=SECRET, timeout=90),
        Case("answers", "secret-in-a-path-flag-report", ["report", "s/latest", "-o", "r.html"], frozenset({0}),
             made_first(secret_run), secret=SECRET, timeout=120),
        Case("answers", "secret-in-a-path-flag-diff-html", ["diff", "s/latest", "{run_b}", "--html", "d.html"],
             frozenset({0, 1}), made_first(secret_run), secret=SECRET, timeout=120),
        Case("answers", "secret-in-a-path-flag-pack-refused", ["repro", "pack", "s/latest", "-o", "p.tar.gz",
             "--out", "rp"], frozenset({2}), made_first(["run", "{prog}", "--dump", *secret_run[1:]]), secret=SECRET,
             absent=("p.tar.gz",),
             mention=("xla_gpu_cuda_data_dir",), timeout=120),
        Case("answers", "bisect-passes-module-nosuch",
             ["bisect", "passes", "--module", "nosuch", "--out", "bis", "--", "{ok}"], frozenset({2}),
             mention=("no module 'nosuch'",), forbid=("nothing to bisect",), timeout=90),
        Case("answers", "run-dump-out-with-quotes", ["run", "{prog}", "--dump", "--out", 'out "q" dir'],
             frozenset({0}), timeout=120, check=dump_in_bundle('out "q" dir')),
        Case("answers", "debug-setup-a-name-twice", setup_argv(), frozenset({0}), _duplicated_launch,
             check=unique_configurations, timeout=90),
        Case("answers", "run-program-in-a-folder-not-utf8", ["run", "caf\udce9/p.py", "--out", "out"],
             frozenset({0}), _in_odd_folder, check=says("helper 1")),
    ]  # fmt: skip


def _duplicated_launch(run: Run) -> None:
    _tree(run)
    ours = {"type": "debugpy", "request": "launch", "program": "${file}"}
    configurations = [{"name": "xlatools: Python (jaxlib dbg-cpu)", **ours}, {"name": "Mine", **ours}]
    configurations += [{"name": "xlatools: Python (jaxlib dbg-cpu)", **ours, "x": 2}]
    run.write("ws/.vscode/launch.json", json.dumps({"version": "0.2.0", "configurations": configurations}, indent=4))


def _in_odd_folder(run: Run) -> None:
    import os

    folder = os.fsencode(str(run.dir)) + b"/caf\xe9"
    os.mkdir(folder)
    with open(folder + b"/helper.py", "w") as handle:
        handle.write("X = 1\n")
    with open(folder + b"/p.py", "w") as handle:
        handle.write("import helper\nprint('helper', helper.X, __file__)\n")


def _leftover_cases() -> list[Case]:
    return [
        Case("leftovers", "run-processes-leave-a-setsid-daemon", ["run", "bg.py", "--processes", "3", "--out", "out"],
             frozenset({0}), _script("bg.py", SETSID_DAEMON), timeout=120),
        Case("leftovers", "run-leaves-a-setsid-daemon", ["run", "bg.py", "--out", "out"], frozenset({0}),
             _script("bg.py", SETSID_DAEMON), timeout=60),
        Case("leftovers", "reduce-oracle-leaves-a-setsid-daemon",
             ["reduce", "{hlo}", "--script", "{dir}/d.sh", "--out", "out", "--rechecks", "1"], frozenset({0}),
             _script("d.sh", STILL_SINE.replace("for hlo", "setsid sleep 300 &\nfor hlo")), timeout=180),
    ]  # fmt: skip


def cases() -> list[Case]:
    return [*_hang_cases(), *_internal_cases(), *_halfwritten_cases(), *_answer_cases(), *_leftover_cases()]
