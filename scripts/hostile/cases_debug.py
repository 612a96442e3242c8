"""`debug run|passes|setup` (issue 21) through every class: secrets in the debug bundle and in the
configs `debug setup` writes, a hostile existing .vscode/launch.json or gdb init file, values,
writes that fail, and signals or --timeout while gdb holds the program."""

from __future__ import annotations

import signal

from . import fixtures, shapes
from .cases_processes import _signal_when
from .cases_secrets import FLAG, SECRET, URL
from .core import Case, Run

# A symbol no library has: gdb keeps the breakpoint pending and the program runs to its end.
NOWHERE = "xlatools_hostile_nowhere_zz"
SLEEPER = "import subprocess, time\nsubprocess.Popen(['setsid', 'sleep', '300'])\ntime.sleep(300)\n"


def debug_argv(program: str = "{ok}", *extra: str, out: str = "out") -> list[str]:
    return ["debug", "run", program, "--break", NOWHERE, "--out", out, *extra]


def setup_argv(*extra: str, workspace: str = "ws") -> list[str]:
    return [
        "debug",
        "setup",
        "--source",
        "jax",
        "--workspace",
        workspace,
        "--python",
        "{python}",
        "--output-base",
        "{dir}/ob",
        *extra,
    ]


def _tree(run: Run) -> None:
    fixtures.copy(run.ctx.paths["tree"], run.path("jax"))
    run.path("ob/external/xla").mkdir(parents=True)
    run.path("ws").mkdir(exist_ok=True)


LAUNCH = {
    "not-json": b"{ this is not json",
    "list": b"[1, 2, 3]\n",
    "null": b"null\n",
    "configurations-object": b'{"version": "0.2.0", "configurations": {"a": 1}}\n',
    "configurations-of-numbers": b'{"version": "0.2.0", "configurations": [1, "x", null]}\n',
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "not-utf8": b'{"version": "\xff\xfe"}',
    "huge": b'{"version": "0.2.0", "configurations": [], "x": "' + b"a" * (64 << 20) + b'"}',
    "comment-unclosed": b'{"version": "0.2.0" /* never closed\n',
}


def _launch(shape: str):
    def setup(run: Run) -> None:
        _tree(run)
        path = "ws/.vscode/launch.json"
        if shape in LAUNCH:
            run.write(path, LAUNCH[shape])
        else:
            run.write(path, '{"version": "0.2.0", "configurations": []}\n')
            if shape == "read-only":
                run.path("ws/.vscode").chmod(0o555)
            else:
                shapes.spoil(run, path, shape)

    return setup


def _gdbinit(shape: str):
    def setup(run: Run) -> None:
        _tree(run)
        path = "ws/.xlatools/gdbinit"
        if shape == "not-utf8":
            run.write(path, b"set pagination off\n\xff\xfe\n")
        elif shape == "huge":
            run.write(path, b"# x\n" * (20 << 20))
        elif shape == "two-blocks":
            from xlatools.bazelrc import _markers

            run.write(path, "".join(f"{line}\n" for line in _markers("debug setup", "xlatools debug setup")) * 2)
        else:
            run.write(path, "set pagination off\n")
            shapes.spoil(run, path, shape)

    return setup


def _sleeper(run: Run) -> None:
    run.write("sleeper.py", SLEEPER)


def _secret_cases() -> list[Case]:
    def case(name, argv, expect=(0, 1), **kw) -> Case:
        return Case("secrets", name, argv, frozenset(expect), secret=SECRET, timeout=180, **kw)

    env = ["--env", f"API_TOKEN={SECRET}", "--env", f"DB_URL={URL}", FLAG]
    return [
        case("debug-run-env-and-args", [*debug_argv("{ok}", *env), "--", f"--token={SECRET}", URL]),
        # env and arguments only: XLA writes its flags into its own dump (debug_options), the program's output
        case(
            "debug-run-stops-in-pass",
            [
                "debug",
                "run",
                "{prog}",
                "--break-pass",
                "algsimp",
                "--out",
                "out",
                *env[:4],
                "--",
                f"--token={SECRET}",
                URL,
            ],
            expect=(0,),
        ),
        case(
            "debug-run-dry-run-json",
            [*debug_argv("{ok}", *env, "--dry-run", "--json"), "--", f"--token={SECRET}"],
            expect=(0,),
        ),
        case(
            "debug-run-caller-env",
            debug_argv("{ok}"),
            env={
                "API_TOKEN": SECRET,
                "DATABASE_URL": URL,
                "XLA_FLAGS": f"--xla_dump_hlo_pass_re=https://bob:{SECRET}@h.test",
            },
        ),
        case(
            "debug-setup-caller-env",
            setup_argv(),
            expect=(0,),
            setup=_tree,
            env={"API_TOKEN": SECRET, "DATABASE_URL": URL, "GDB_PASSWORD": SECRET},
        ),
        case(
            "debug-setup-program-args", setup_argv("--program", f"prog.py --token={SECRET}"), expect=(0,), setup=_tree
        ),
    ]


def _record_cases() -> list[Case]:
    out = []
    for shape in (*LAUNCH, "dir", "fifo", "symlink-loop", "read-only"):
        out.append(
            Case(
                "records",
                f"debug-setup-launch-{shape}",
                setup_argv(),
                frozenset({2}),
                _launch(shape),
                mention=("launch.json",),
                unchanged=("ws/.vscode/launch.json", "ws/.xlatools/gdbinit"),
                absent=("ws/.xlatools/gdbinit",),
                timeout=60,
                max_seconds=30,
                max_rss_mib=400,
                wrapper="no-dac" if shape == "read-only" else None,
            )
        )
    for shape in ("not-utf8", "huge", "dir", "fifo", "symlink-loop", "two-blocks"):
        out.append(
            Case(
                "records",
                f"debug-setup-gdbinit-{shape}",
                setup_argv(),
                frozenset({2}),
                _gdbinit(shape),
                mention=("gdbinit",),
                unchanged=("ws/.xlatools/gdbinit",),
                absent=("ws/.vscode/launch.json",),
                timeout=60,
                max_seconds=30,
                max_rss_mib=400,
            )
        )
    out.append(
        Case(
            "records",
            "debug-passes-library-garbage",
            ["debug", "passes", "--library", "lib.so"],
            frozenset({2, 3}),
            lambda r: r.write("lib.so", b"\x7fELF" + b"\xff" * 4000),
            mention=("lib.so",),
        )
    )
    out.append(
        Case(
            "records",
            "debug-passes-library-fifo",
            ["debug", "passes", "--library", "lib.so"],
            frozenset({2, 3}),
            lambda r: r.fifo("lib.so"),
            mention=("lib.so",),
            max_seconds=20,
            timeout=40,
        )
    )
    out.append(
        Case(
            "records",
            "debug-passes-library-dir",
            ["debug", "passes", "--library", "lib.so"],
            frozenset({2, 3}),
            lambda r: r.path("lib.so").mkdir(),
            mention=("lib.so",),
        )
    )
    return out


def _value_cases() -> list[Case]:
    out = []

    def add(name, argv, mention, expect=(2,), setup=None):
        out.append(
            Case("values", name, argv, frozenset(expect), setup, mention=(mention,), absent=("out",), timeout=90)
        )

    add(
        "debug-break-pass-unknown",
        ["debug", "run", "{ok}", "--break-pass", "no_such_pass_zz", "--out", "out"],
        "no_such_pass_zz",
    )
    add("debug-break-pass-empty", ["debug", "run", "{ok}", "--break-pass", "", "--out", "out"], "--break-pass")
    add("debug-break-empty", ["debug", "run", "{ok}", "--break", "", "--out", "out"], "--break")
    add("debug-break-blank", ["debug", "run", "{ok}", "--break", "   ", "--out", "out"], "--break")
    add(
        "debug-break-newline", ["debug", "run", "{ok}", "--break", "main\nshell touch pwned", "--out", "out"], "--break"
    )
    add("debug-nothing-to-stop", ["debug", "run", "{ok}", "--out", "out"], "--break")
    for value in ("0", "-1", "abc"):
        add(f"debug-max-stops-{value}", debug_argv("{ok}", "--max-stops", value), "--max-stops")
    for value in ("nan", "inf", "0", "-1"):
        add(f"debug-timeout-{value}", debug_argv("{ok}", "--timeout", value), "--timeout")
    add(
        "debug-hlo-module-broken",
        ["debug", "run", "{ok}", "--break-pass", "algsimp", "--hlo-module", "(", "--out", "out"],
        "--hlo-module",
    )
    add("debug-program-missing", debug_argv("nothere.py"), "nothere.py")
    add("debug-library-missing", ["debug", "passes", "--library", "/no/such/lib.so"], "/no/such/lib.so")
    add("debug-setup-source-missing", ["debug", "setup", "--source", "nothere", "--workspace", "ws"], "nothere")
    add(
        "debug-setup-profile-unknown",
        [*setup_argv(), "--profile", "no-such-profile-zz"],
        "no-such-profile-zz",
        setup=_tree,
    )
    add(
        "debug-setup-python-missing",
        [
            "debug",
            "setup",
            "--source",
            "jax",
            "--workspace",
            "ws",
            "--python",
            "/no/python",
            "--output-base",
            "{dir}/ob",
        ],
        "/no/python",
        setup=_tree,
    )
    return out


def _write_cases() -> list[Case]:
    from .cases_writes import _full, _ro

    def case(name, argv, expect=(2,), setup=None, root=True, **kw) -> Case:
        kw.setdefault("timeout", 120)
        return Case("writes", name, argv, frozenset(expect), setup, needs_root=root, **kw)

    def both(*steps):
        return lambda run: [step(run) for step in steps]

    return [
        case("debug-out-read-only", debug_argv(out="ro"), setup=_ro(), mention=("ro",)),
        case("debug-out-full", debug_argv(out="full"), (3,), setup=_full()),
        case(
            "debug-out-is-file",
            debug_argv(out="afile"),
            setup=lambda r: r.write("afile", "x"),
            root=False,
            mention=("afile",),
            unchanged=("afile",),
        ),
        case("debug-setup-workspace-read-only", setup_argv(workspace="ro"), setup=both(_tree, _ro()), mention=("ro",)),
        case("debug-setup-workspace-full", setup_argv(workspace="full"), (3,), setup=both(_tree, _full())),
        case(
            "debug-setup-workspace-is-file",
            setup_argv(workspace="afile"),
            setup=both(_tree, lambda r: r.write("afile", "x")),
            root=False,
            mention=("afile",),
            unchanged=("afile",),
        ),
        case(
            "debug-setup-vscode-is-file",
            setup_argv(),
            setup=both(_tree, lambda r: r.write("ws/.vscode", "x")),
            root=False,
            mention=(".vscode",),
            unchanged=("ws/.vscode",),
            absent=("ws/.xlatools/gdbinit",),
        ),
        case("stdout-closed-debug-passes", ["debug", "passes"], (0, 2, 3), root=False, wrapper="closed-stdout"),
        case(
            "stdout-full-debug-setup-json",
            [*setup_argv(), "--json"],
            (0, 2, 3),
            setup=_tree,
            root=False,
            wrapper="full-stdout",
        ),
    ]


def _process_cases() -> list[Case]:
    out = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        out.append(
            Case(
                "processes",
                f"{sig.name.lower()}-in-debug-session",
                debug_argv("sleeper.py"),
                frozenset({130}),
                _sleeper,
                action=_signal_when(sig, "sleep 300", settle=1.0),
                timeout=120,
            )
        )
    out.append(
        Case(
            "processes",
            "debug-timeout-kills-program",
            debug_argv("sleeper.py", "--timeout", "5"),
            frozenset({124}),
            _sleeper,
            timeout=120,
            max_seconds=90,
        )
    )
    out.append(
        Case(
            "processes",
            "debug-program-unreadable",
            debug_argv("prog.py"),
            frozenset({2}),
            lambda r: r.write("prog.py", "print('ran')\n", mode=0o000),
            wrapper="no-dac",
            mention=("prog.py",),
            absent=("out",),
        )
    )
    return out


def cases() -> list[Case]:
    return [*_secret_cases(), *_record_cases(), *_value_cases(), *_write_cases(), *_process_cases()]
