"""`reduce` and `triage` (issue 20) through every class: secrets in what they write (ISSUE.md, the
reduce state, summary.json, the reduced module's pack, triage.json), their records of the wrong
shape (the reduce state file, a damaged reduce bundle as SOURCE, triage.json, hostile HLO text),
values, writes that fail and signals while reduce's workers run."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from . import fixtures, shapes
from .cases_processes import _signal_when
from .cases_secrets import FLAG, SECRET, URL
from .core import Case, Run

# Interesting (exit 1) while the candidate (the last argument) still computes a sine: a real reduction in seconds.
STILL_SINE = "#!/bin/sh\nfor hlo; do :; done\ngrep -q ' sine(' \"$hlo\" && exit 1\nexit 0\n"
# The same oracle, but from its second call on it waits (signals arrive while the reduction runs).
SLOW_SINE = (
    "#!/bin/sh\nn=$(cat {calls} 2>/dev/null || echo 0)\necho $((n + 1)) > {calls}\n"
    '[ "$n" -ge 1 ] && sleep 300\nfor hlo; do :; done\ngrep -q \' sine(\' "$hlo" && exit 1\nexit 0\n'
)
STAGES = ("releases", "dumps", "diff", "passes", "reduce", "isolate")
SKIP_ALL = [word for stage in STAGES for word in ("--skip", stage)]
ENDS = ["--good", "0.4.30", "--bad", "0.4.31"]


def reduce_argv(out: str = "out", *extra: str) -> list[str]:
    return ["reduce", "{hlo}", "--script", "{still_sine}", "--out", out, "--rechecks", "1", *extra]


def triage_argv(out: str = "tri", *extra: str, program: tuple[str, ...] = ("{ok}",)) -> list[str]:
    return ["triage", *ENDS, *SKIP_ALL, "--out", out, *extra, "--", *program]


def make_fixtures(ctx) -> None:
    """A finished reduction (bundle and state) and a triage folder (every stage skipped: its state and report)."""
    fx = ctx.work / "fx"
    for name, text in {"still_sine": STILL_SINE}.items():
        (fx / name).write_text(text)
        (fx / name).chmod(0o755)
        ctx.paths[name] = str(fx / name)
    done = fixtures.cli(ctx, *[fixtures_fmt(ctx, a) for a in reduce_argv(str(fx / "reduces"), "--json")])
    ctx.paths["reduce_bundle"] = json.loads(done.stdout)["bundle"]
    [state] = (fx / "reduces" / ".reduce-state").glob("*/state.json")
    ctx.paths["reduce_state"] = str(state.relative_to(fx / "reduces"))
    ctx.paths["reduce_root"] = str(fx / "reduces")
    fixtures.cli(ctx, *[fixtures_fmt(ctx, a) for a in triage_argv(str(fx / "triages"))])
    [folder] = (fx / "triages").glob("triage-*")
    ctx.paths["triage_root"], ctx.paths["triage_folder"] = str(fx / "triages"), folder.name


def fixtures_fmt(ctx, text: str) -> str:
    return text.format_map(ctx.paths)


def _copy_root(key: str, dest: str):
    def setup(run: Run) -> None:
        fixtures.copy(run.ctx.paths[key], run.path(dest))

    return setup


def _spoiled(key: str, dest: str, rel: str, shape: str):
    def setup(run: Run) -> None:
        fixtures.copy(run.ctx.paths[key], run.path(dest))
        shapes.spoil(run, f"{dest}/{run.fmt(rel)}", shape)

    return setup


def _hlo(kind: str):
    def setup(run: Run) -> None:
        text = Path(run.ctx.paths["hlo"]).read_text()
        if kind == "fifo":
            run.fifo("m.txt")
        elif kind == "dir":
            run.path("m.txt").mkdir()
        elif kind == "not-utf8":
            run.write("m.txt", text.encode().replace(b"sine", b"s\xffne"))
        elif kind == "binary":
            run.write("m.txt", bytes(range(256)) * 64)
        elif kind == "empty":
            run.write("m.txt", "")
        elif kind == "huge":  # 80 MB: one computation of a million instructions
            body = "".join(f"  s{i} = f32[] sine(f32[] p)\n" for i in range(1_000_000))
            run.write(
                "m.txt", f"HloModule big\n\nENTRY e {{\n  p = f32[] parameter(0)\n{body}  ROOT r = f32[] sine(p)\n}}\n"
            )
        elif kind == "deep-shape":
            run.write(
                "m.txt",
                "HloModule deep\n\nENTRY e {\n  ROOT p = "
                + "(" * 100_000
                + "f32[]"
                + ")" * 100_000
                + " parameter(0)\n}\n",
            )
        elif kind == "deep-operands":
            run.write(
                "m.txt",
                "HloModule deep\n\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT s = f32[] sine("
                + "sine(" * 50_000
                + "p"
                + ")" * 50_000
                + ")\n}\n",
            )
        elif kind == "cyclic":
            run.write("m.txt", "HloModule cyc\n\nENTRY e {\n  a = f32[] sine(b)\n  ROOT b = f32[] sine(a)\n}\n")
        elif kind == "calls-itself":
            run.write(
                "m.txt",
                "HloModule rec\n\nc {\n  x = f32[] parameter(0)\n  ROOT y = f32[] call(x), to_apply=c\n}\n\n"
                "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT s = f32[] call(p), to_apply=c\n}\n",
            )

    return setup


def _secret_cases() -> list[Case]:
    def case(name, argv, expect=(0,), **kw) -> Case:
        return Case("secrets", name, argv, frozenset(expect), secret=SECRET, timeout=180, **kw)

    script = f"{{still_sine}} --token={SECRET}"
    env = ["--env", f"API_TOKEN={SECRET}", "--env", f"DB_URL={URL}", FLAG]
    return [
        case("reduce-xla-flag-url", reduce_argv("out", FLAG)),
        case("reduce-script-token", ["reduce", "{hlo}", "--script", script, "--out", "out", "--rechecks", "1"]),
        case("reduce-json", [*reduce_argv("out", FLAG), "--json"]),
        case(
            "reduce-dry-run-json", ["reduce", "{hlo}", "--script", script, "--out", "out", FLAG, "--dry-run", "--json"]
        ),
        case(
            "reduce-caller-xla-flags",
            reduce_argv(),
            env={"XLA_FLAGS": f"--xla_dump_hlo_pass_re=https://bob:{SECRET}@h.test"},
        ),
        case("triage-env-secret", triage_argv("tri", *env, program=("{ok}", f"--token={SECRET}"))),
        case("triage-json", triage_argv("tri", "--json", *env)),
        case("triage-dry-run-json", triage_argv("tri", "--dry-run", "--json", *env)),
        case("triage-caller-env", triage_argv(), env={"API_TOKEN": SECRET, "DATABASE_URL": URL}),
    ]


RECORD_SHAPES = (
    "truncated",
    "list",
    "null",
    "wrong-types",
    "nested-wrong",
    "nulls",
    "deep-list",
    "deep-object",
    "not-utf8",
    "nan",
    "foreign",
    "dir",
    "fifo",
    "symlink-loop",
)


def _record_cases() -> list[Case]:
    out = []

    def add(name, argv, setup, expect=(2,), **kw):
        kw.setdefault("timeout", 60)
        out.append(Case("records", name, argv, frozenset(expect), setup, **kw))

    for shape in RECORD_SHAPES:
        add(
            f"reduce-state-{shape}",
            reduce_argv("out"),
            _spoiled("reduce_root", "out", "{reduce_state}", shape),
            mention=("state.json",),
            max_seconds=30,
        )
        add(
            f"reduce-source-bundle-{shape}",
            ["reduce", "b", "--script", "{still_sine}", "--dry-run"],
            _spoiled("reduce_bundle", "b", "manifest.json", shape),
            expect=(0, 2),
            mention=("{dir}/b",),
        )
        add(
            f"triage-state-{shape}",
            triage_argv("tri"),
            _spoiled("triage_root", "tri", "{triage_folder}/triage.json", shape),
            mention=("triage.json",),
        )
        add(
            f"triage-state-dry-run-{shape}",
            triage_argv("tri", "--dry-run"),
            _spoiled("triage_root", "tri", "{triage_folder}/triage.json", shape),
            mention=("triage.json",),
        )
    for kind in (
        "fifo",
        "dir",
        "not-utf8",
        "binary",
        "empty",
        "huge",
        "deep-shape",
        "deep-operands",
        "cyclic",
        "calls-itself",
    ):
        add(
            f"reduce-hlo-{kind}",
            ["reduce", "m.txt", "--script", "{still_sine}", "--out", "out"],
            _hlo(kind),
            mention=("m.txt",),
            max_seconds=40,
            timeout=90,
            max_rss_mib=2500,
        )
    add(
        "reduce-from-bisect-damaged",
        [*reduce_argv("out"), "--from-bisect", "{bisect_folder}-x", "--dry-run"],
        lambda r: None,
        mention=("--from-bisect",),
    )
    return out


def _value_cases() -> list[Case]:
    out = []

    def add(name, argv, mention, setup=None, expect=(2,)):
        out.append(
            Case("values", name, argv, frozenset(expect), setup, mention=(mention,), absent=("out", "tri"), timeout=60)
        )

    for value in ("0", "-1", "99999999999", "abc"):
        add(f"reduce-jobs-{value}", reduce_argv("out", "--jobs", value), "--jobs")
        add(f"triage-jobs-{value}", triage_argv("tri", "--jobs", value), "--jobs")
    for value in ("nan", "inf", "-inf", "0", "-1", "1e400", "abc"):
        add(f"reduce-timeout-{value}", reduce_argv("out", "--timeout", value), "--timeout")
        add(f"reduce-max-time-{value}", reduce_argv("out", "--max-time", value), "--max-time")
        add(f"triage-timeout-{value}", triage_argv("tri", "--timeout", value), "--timeout")
    for value in ("nan", "inf", "-1"):
        add(
            f"reduce-atol-{value}", ["reduce", "{hlo}", "--reference", "cpu", "--out", "out", "--atol", value], "--atol"
        )
        add(f"triage-rtol-{value}", triage_argv("tri", "--rtol", value), "--rtol")
    add("reduce-rechecks-0", reduce_argv("out", "--rechecks", "0"), "--rechecks")
    for name, regex in {"broken": "(", "empty": "", "repeat-too-large": "a{{99999999999}}"}.items():
        add(f"reduce-error-{name}", ["reduce", "{hlo}", "--error", regex, "--out", "out"], "--error")
    add(
        "reduce-script-missing",
        ["reduce", "{hlo}", "--script", "/no/such/script.sh", "--out", "out"],
        "/no/such/script.sh",
    )
    add(
        "reduce-script-not-executable",
        ["reduce", "{hlo}", "--script", "s.sh", "--out", "out"],
        "s.sh",
        lambda r: r.write("s.sh", "#!/bin/sh\nexit 1\n", mode=0o644),
    )
    add("reduce-script-empty", ["reduce", "{hlo}", "--script", "", "--out", "out"], "--script")
    add("reduce-script-unbalanced-quote", ["reduce", "{hlo}", "--script", "sh -c 'exit 1", "--out", "out"], "--script")
    add(
        "reduce-module-unknown",
        ["reduce", "{run}", "--script", "{still_sine}", "--out", "out", "--module", "no_such_module_zz"],
        "no_such_module_zz",
    )
    add("reduce-inputs-missing", reduce_argv("out", "--inputs", "nothere.npz"), "nothere.npz")
    add("reduce-two-oracles", [*reduce_argv("out"), "--error", "x"], "oracle")
    for name, (good, bad) in {
        "garbage": ("abc", "0.4.31"),
        "climbs-out": ("../../../x", "0.4.31"),
        "empty": ("", "0.4.31"),
        "slash": ("0.4/30", "0.4.31"),
        "same": ("0.4.30", "0.4.30"),
        "reversed": ("0.4.31", "0.4.30"),
        "bad-garbage": ("0.4.30", "zz"),
        "newline": ("0.4.30\n", "0.4.31"),
        "huge": ("9" * 5000, "0.4.31"),
    }.items():
        argv = ["triage", "--good", good, "--bad", bad, *SKIP_ALL, "--out", "tri", "--", "{ok}"]
        add(f"triage-ends-{name}", argv, "--good" if name != "bad-garbage" else "--bad")
    add("triage-skip-unknown", triage_argv("tri", "--skip", "nonsense"), "--skip")
    add("triage-skip-empty", triage_argv("tri", "--skip", ""), "--skip")
    add("triage-python-version-2.7", triage_argv("tri", "--python-version", "2.7"), "--python-version")
    add("triage-match-broken", triage_argv("tri", "--match", "("), "--match")
    add("triage-no-program", ["triage", *ENDS, "--out", "tri"], "program")
    return out


def _write_cases() -> list[Case]:
    from .cases_writes import _dir, _full, _ro

    def case(name, argv, expect=(2,), setup=None, root=True, **kw) -> Case:
        kw.setdefault("timeout", 120)
        return Case("writes", name, argv, frozenset(expect), setup, needs_root=root, **kw)

    return [
        case("reduce-out-read-only", reduce_argv("ro"), setup=_ro(), mention=("ro",)),
        case("reduce-out-full", reduce_argv("full"), (3,), setup=_full()),
        case(
            "reduce-out-is-file",
            reduce_argv("afile"),
            setup=lambda r: r.write("afile", "x"),
            root=False,
            mention=("afile",),
            unchanged=("afile",),
        ),
        case("reduce-out-missing-folder", reduce_argv("no/such/dir"), (0,), root=False),
        case("reduce-state-read-only", reduce_argv("out"), (0, 2), setup=_ro_state, mention=("state.json",)),
        case("triage-out-read-only", triage_argv("ro"), setup=_ro(), mention=("ro",)),
        case("triage-out-full", triage_argv("full"), (3,), setup=_full()),
        case(
            "triage-out-is-file",
            triage_argv("afile"),
            setup=lambda r: r.write("afile", "x"),
            root=False,
            mention=("afile",),
            unchanged=("afile",),
        ),
        case(
            "triage-folder-is-file", triage_argv("tri"), setup=_triage_folder_is_file, root=False, mention=("triage-",)
        ),
        case("triage-out-folder-in-the-way", triage_argv("adir/x"), setup=_dir("adir"), root=False, expect=(0,)),
        case(
            "stdout-closed-reduce-dry-run",
            [*reduce_argv(), "--dry-run"],
            (0, 2, 3),
            root=False,
            wrapper="closed-stdout",
        ),
        case("stdout-full-reduce", [*reduce_argv(), "--json"], (0, 2, 3), root=False, wrapper="full-stdout"),
        case("stdout-full-triage", triage_argv(), (0, 2, 3), root=False, wrapper="full-stdout"),
        case(
            "stdout-closed-triage-dry-run",
            triage_argv("tri", "--dry-run"),
            (0, 2, 3),
            root=False,
            wrapper="closed-stdout",
        ),
    ]


def _ro_state(run: Run) -> None:
    """The saved state of this very reduction on a read-only file system: it cannot be saved again."""
    mount = run.mount("out", size="8m")
    fixtures.copy(run.ctx.paths["reduce_root"], run.path("src"))
    import subprocess

    subprocess.run(["cp", "-a", f"{run.path('src')}/.", str(mount)], check=True)
    subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)


def _triage_folder_is_file(run: Run) -> None:
    run.write(f"tri/{run.ctx.paths['triage_folder']}", "a file where the triage folder goes")


def _calls_seen(run: Run) -> None:
    run.write("slow.sh", SLOW_SINE.replace("{calls}", str(run.path("calls"))), mode=0o755)


def _process_cases() -> list[Case]:
    out = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        for jobs in ("1", "2"):
            out.append(
                Case(
                    "processes",
                    f"{sig.name.lower()}-in-reduce-jobs-{jobs}",
                    ["reduce", "{hlo}", "--script", "./slow.sh", "--out", "out", "--jobs", jobs],
                    frozenset({130}),
                    _calls_seen,
                    action=_signal_when(sig, "sleep 300", settle=1.0),
                    timeout=120,
                    check=_reduce_interrupted,
                )
            )
        # while the workers start and check the input (before the bundle): 130, no worker left
        out.append(
            Case(
                "processes",
                f"{sig.name.lower()}-in-reduce-workers-starting",
                ["reduce", "{hlo}", "--reference", "cpu", "--out", "out", "--jobs", "2"],
                frozenset({130}),
                action=_signal_when(sig, "oracle_worker", settle=0.3),
                timeout=120,
            )
        )
    out.append(
        Case(
            "processes",
            "reduce-timeout-script-hangs",
            ["reduce", "{hlo}", "--script", "./slow.sh", "--out", "out", "--timeout", "3"],
            frozenset({0, 1, 3}),
            _calls_seen,
            timeout=180,
            max_seconds=150,
        )
    )
    return out


def _reduce_interrupted(run: Run, result) -> list[str]:
    """The reduction's bundle says interrupted (when it got that far) and its state is kept for a re-run."""
    problems = []
    for manifest in run.path("out").glob("*/manifest.json"):
        status = json.loads(manifest.read_text()).get("status")
        if status != "interrupted":
            problems.append(f"reduce bundle ended {status!r}")
    if not list(run.path("out").glob(".reduce-state/*/state.json")) and os.path.exists(run.path("out")):
        problems.append("no reduce state kept")
    return problems


def cases() -> list[Case]:
    return [*_secret_cases(), *_record_cases(), *_value_cases(), *_write_cases(), *_process_cases()]
