"""Values that slip through: inf, nan, 0 and negative numbers for every numeric option, empty or broken
regexes, bad VLOG levels, bad XLA flag values (also in the caller's XLA_FLAGS), bad versions, profile
presets that validate but do not run, and pin files `pin apply` cannot edit exactly."""

from __future__ import annotations

from . import fixtures
from .core import Case, Run

CLS = "values"
BAD_POSITIVE = ("inf", "-inf", "nan", "0", "-1", "1e400", "abc")
BAD_TOLERANCE = ("inf", "nan", "-1", "abc")
LOWER = ["lower", "lowerme.py:f", "--input-shapes", '[("x", "f32[2]")]']


def _lowerme(run: Run) -> None:
    run.write("lowerme.py", "def f(x):\n    return x * 2\n")


def _profile(text: str):
    return lambda run: run.write("p.yaml", f"description: values\n{text}")


def _revision(edit):
    def setup(run: Run) -> None:
        tree = fixtures.copy(run.ctx.paths["tree"], run.path("jax"))
        path = tree / "third_party/xla/revision.bzl"
        path.write_text(edit(path.read_text()))
        import subprocess

        subprocess.run(
            ["git", "-C", str(tree), "-c", "user.name=h", "-c", "user.email=h@localhost", "commit", "-qam", "edit"],
            check=True,
            capture_output=True,
        )

    return setup


def _numeric() -> list[Case]:
    out = []
    options = {
        "run-timeout": (["run", "{ok}", "--out", "out", "--timeout"], None),
        "replay-timeout": (["replay", "{hlo}", "--out", "out", "--timeout"], None),
        "lower-timeout": ([*LOWER, "--timeout"], _lowerme),
        "bisect-passes-timeout": (["bisect", "passes", "--out", "bis", "--timeout", "{value}", "--", "{ok}"], None),
        "repro-pack-atol": (["repro", "pack", "{run}", "-o", "p.tar.gz", "--out", "out", "--atol"], None),
        "repro-pack-rtol": (["repro", "pack", "{run}", "-o", "p.tar.gz", "--out", "out", "--rtol"], None),
        "replay-atol": (["replay", "{hlo}", "--out", "out", "--atol"], None),
        "replay-rtol": (["replay", "{hlo}", "--out", "out", "--rtol"], None),
        "bisect-threshold": (
            ["bisect", "passes", "--out", "bis", "--metric", "m", "--threshold", "{value}", "--", "{ok}"],
            None,
        ),
    }
    for name, (argv, setup) in options.items():
        values = BAD_TOLERANCE if ("tol" in name or "threshold" in name) else BAD_POSITIVE
        if "threshold" in name:
            values = ("inf", "-inf", "nan", "abc")
        for value in values:
            full = [a.replace("{value}", value) for a in argv] if "{value}" in " ".join(argv) else [*argv, value]
            option = next(a for a in argv if a in ("--timeout", "--atol", "--rtol", "--threshold"))
            out.append(
                Case(
                    CLS,
                    f"{name}-{value}",
                    full,
                    frozenset({2}),
                    setup,
                    mention=(option,),
                    timeout=90,
                    absent=("p.tar.gz",),
                )
            )
    for value in ("0", "-1"):
        out.append(
            Case(
                CLS,
                f"replay-iterations-{value}",
                ["replay", "{hlo}", "--out", "out", "-n", value],
                frozenset({2}),
                mention=("--iterations",),
            )
        )
    for value in ("-1", "256", "99999999999"):
        out.append(
            Case(
                CLS,
                f"bisect-bad-exit-{value}",
                ["bisect", "passes", "--out", "bis", "--bad-exit", value, "--", "{ok}"],
                frozenset({2}),
                mention=("--bad-exit",),
            )
        )
    out.append(Case(CLS, "bisect-confirm--1", ["bisect", "passes", "--confirm", "-1", "--", "{ok}"], frozenset({2})))
    out.append(Case(CLS, "build-jobs-0", ["build", "-p", "base", "--jobs", "0", "--dry-run"], frozenset({2})))
    out.append(
        Case(
            CLS,
            "replay-seed--1",
            ["replay", "{hlo}", "--out", "out", "--seed", "-1", "--inputs", "random"],
            frozenset({0, 2}),
        )
    )
    return out


def _vlog() -> list[Case]:
    out = [
        Case(CLS, f"run-vlog-{v}", ["run", "{ok}", "--dry-run", "--vlog", v], frozenset({2}), mention=("--vlog",))
        for v in ("-1", "abc")
    ]
    for name, value in {
        "negative": "a=-1",
        "word": "a=x",
        "no-file": "=1",
        "no-level": "a",
        "two-levels": "a=1=2",
        "empty": "",
        "huge": "a=99999999999",
    }.items():
        out.append(
            Case(
                CLS,
                f"run-vmodule-{name}",
                ["run", "{ok}", "--dry-run", "--vmodule", value],
                frozenset({2}),
                mention=("--vmodule",),
            )
        )
    return out


def _flags() -> list[Case]:
    out = []
    flags = {
        "device-count-negative": "--xla_force_host_platform_device_count=-1",
        "device-count-word": "--xla_force_host_platform_device_count=many",
        "bool-maybe": "--xla_cpu_enable_fast_math=maybe",
        "regex-broken": "--xla_dump_hlo_pass_re=(",
        "no-dashes": "xla_dump_to=x",
        "empty": "",
        "unknown": "--xla_no_such_flag_zz=1",
        "int-overflow": "--xla_dump_max_hlo_modules=99999999999999999999",
    }
    for name, flag in flags.items():
        out.append(
            Case(
                CLS,
                f"run-xla-flag-{name}",
                ["run", "{ok}", "--out", "out", f"--xla-flag={flag}"],
                frozenset({2}),
                mention=(flag or "--xla-flag",),
            )
        )
        if name not in ("no-dashes", "empty"):
            out.append(
                Case(
                    CLS,
                    f"run-caller-xla-flags-{name}",
                    ["run", "{ok}", "--out", "out"],
                    frozenset({2}),
                    env={"XLA_FLAGS": flag},
                    mention=("XLA_FLAGS",),
                )
            )
    for name in ("device-count-negative", "bool-maybe", "unknown"):
        # replay sets XLA_FLAGS itself (the module's own flags): the caller's may be refused or left out
        out.append(
            Case(
                CLS,
                f"replay-caller-xla-flags-{name}",
                ["replay", "{hlo}", "--out", "out"],
                frozenset({0, 2}),
                env={"XLA_FLAGS": flags[name]},
                mention=("XLA_FLAGS",),
                timeout=90,
            )
        )
        out.append(
            Case(
                CLS,
                f"replay-xla-flag-{name}",
                ["replay", "{hlo}", "--out", "out", f"--xla-flag={flags[name]}"],
                frozenset({2}),
                mention=(flags[name],),
                timeout=90,
            )
        )
    out.append(
        Case(
            CLS,
            "doctor-caller-xla-flags-negative",
            ["doctor"],
            frozenset({1}),
            env={"XLA_FLAGS": flags["device-count-negative"]},
            check=_names("xla_force_host_platform_device_count"),
        )
    )
    return out


def _names(text: str):
    def check(run, result) -> list[str]:
        return [] if text in result.stdout + result.stderr else [f"output does not name {text}"]

    return check


def _choices() -> list[Case]:
    bisect = ["bisect", "passes", "--out", "bis"]
    releases = ["bisect", "releases", "--dry-run"]
    table = {
        "bisect-match-empty": ([*bisect, "--match", "", "--", "{ok}"], "--match"),
        "bisect-match-broken": ([*bisect, "--match", "(", "--", "{ok}"], "--match"),
        "bisect-match-in-bogus": ([*bisect, "--match", "x", "--match-in", "nowhere", "--", "{ok}"], "--match-in"),
        "bisect-metric-no-threshold": ([*bisect, "--metric", "m", "--", "{ok}"], "--threshold"),
        "releases-python-2.7": (
            [*releases, "--good", "0.4.28", "--bad", "0.4.31", "--python-version", "2.7", "--", "{ok}"],
            "--python-version",
        ),
        "releases-python-word": (
            [*releases, "--good", "0.4.28", "--bad", "0.4.31", "--python-version", "abc", "--", "{ok}"],
            "--python-version",
        ),
        "releases-python-4": (
            [*releases, "--good", "0.4.28", "--bad", "0.4.31", "--python-version", "4.0", "--", "{ok}"],
            "--python-version",
        ),
        "releases-reversed": ([*releases, "--good", "0.4.31", "--bad", "0.4.28", "--", "{ok}"], "--good"),
        "releases-not-a-version": ([*releases, "--good", "abc", "--bad", "0.4.31", "--", "{ok}"], "abc"),
        "releases-timeout-nan": (
            [*releases, "--good", "0.4.28", "--bad", "0.4.31", "--timeout", "nan", "--", "{ok}"],
            "--timeout",
        ),
        "run-platform-tpu": (["run", "{ok}", "--platform", "tpu"], "--platform"),
        "run-frontend-bogus": (["run", "{ok}", "--frontend", "bogus"], "--frontend"),
        "run-exit-code-bogus": (["run", "{ok}", "--exit-code", "bogus"], "--exit-code"),
        "run-env-no-equals": (["run", "{ok}", "--dry-run", "--env", "NOEQ"], "NOEQ"),
        "run-env-empty-name": (["run", "{ok}", "--dry-run", "--env", "=x"], "--env"),
        "run-env-space-name": (["run", "{ok}", "--dry-run", "--env", "A B=1"], "A B"),
        "run-preset-unknown": (["run", "{ok}", "--dry-run", "--preset", "nope-zz"], "nope-zz"),
        "run-preset-kind-unknown": (["run", "{ok}", "--dry-run", "--preset", "dump:nope-zz"], "nope-zz"),
        "replay-from-bogus": (["replay", "{hlo}", "--from", "bogus", "--dry-run"], "--from"),
        "replay-inputs-bogus": (["replay", "{hlo}", "--inputs", "bogus", "--dry-run"], "bogus"),
        "replay-reference-bogus": (["replay", "{hlo}", "--reference", "tpu", "--dry-run"], "--reference"),
        "replay-platform-tpu": (["replay", "{hlo}", "--platform", "tpu", "--dry-run"], "--platform"),
        "repro-run-match-bogus": (["repro", "run", "{pack}", "--match", "bogus", "--out", "out"], "--match"),
        "lower-platform-tpu": ([*LOWER, "--platform", "tpu"], "--platform"),
        "lower-ir-format-bogus": ([*LOWER, "--ir-format", "bogus"], "--ir-format"),
        "lower-shapes-code": (
            ["lower", "lowerme.py:f", "--input-shapes", "__import__('os').system('touch pwned')"],
            "--input-shapes",
        ),
        "lower-shapes-deep": (["lower", "lowerme.py:f", "--input-shapes", "[" * 5000 + "]" * 5000], "--input-shapes"),
        "lower-shapes-negative": (["lower", "lowerme.py:f", "--input-shapes", '[("x", "f32[-1]")]'], "f32[-1]"),
        "lower-shapes-dtype": (["lower", "lowerme.py:f", "--input-shapes", '[("x", "q99[2]")]'], "q99"),
        "lower-constants-code": (
            [*LOWER, "--constants", "{{'a': __import__('os').system('touch pwned')}}"],
            "--constants",
        ),
        "lower-target-missing-fn": (["lower", "lowerme.py:nope", "--input-shapes", '[("x", "f32[2]")]'], "nope"),
        "run-name-climbs": (["run", "{ok}", "--out", "out", "--name", "../../escape"], None),
    }
    out = []
    for name, (argv, mention) in table.items():
        expect = {0, 2} if name == "run-name-climbs" else {2}
        out.append(
            Case(
                CLS,
                name,
                argv,
                frozenset(expect),
                _lowerme if argv[0] == "lower" else None,
                mention=(mention,) if mention else (),
                absent=("pwned", "../escape", "../../escape"),
                timeout=90,
            )
        )
    return out


def _profiles() -> list[Case]:
    presets = {
        "flag-not-xla": "{kind: dump, xla_flags: ['--not_xla']}",
        "kind-bogus": "{kind: bogus}",
        "vmodule-negative": "{kind: log, vmodule: {a: -1}}",
        "scalar": "5",
        "flag-value-maybe": "{kind: dump, xla_flags: ['--xla_cpu_enable_fast_math=maybe']}",
        "flag-no-value": "{kind: dump, xla_flags: ['--xla_dump_hlo_pass_re']}",
        "env-list": "{kind: jax, env: [1]}",
    }
    out = []
    for name, spec in presets.items():
        setup = _profile(f"run:\n  define_presets:\n    mine: {spec}\n")
        out.append(
            Case(
                CLS,
                f"profile-preset-validate-{name}",
                ["profiles", "validate", "p.yaml"],
                frozenset({2}),
                setup,
                mention=("mine",),
            )
        )
    for name, text in {
        "timeout-inf": "run: {timeout: .inf}\n",
        "timeout-nan": "run: {timeout: .nan}\n",
        "timeout-zero": "run: {timeout: 0}\n",
        "jobs-inf": "bazel: {jobs: .inf}\n",
        "jobs-huge": "bazel: {jobs: 99999999999999999999999}\n",
    }.items():
        out.append(
            Case(
                CLS,
                f"profile-{name}",
                ["run", "{ok}", "--dry-run", "-p", "p.yaml"],
                frozenset({2}),
                _profile(text),
                mention=("p.yaml",),
            )
        )
    return out


def _pin_apply() -> list[Case]:
    edits = {
        "commit-concatenated": lambda t: t.replace('XLA_COMMIT = "', 'XLA_COMMIT = "abc" + "', 1),
        "sha-call": lambda t: t.replace('XLA_SHA256 = "', 'XLA_SHA256 = some_call() or "', 1),
        "commit-name": lambda t: t.replace('XLA_COMMIT = "', 'XLA_COMMIT = OTHER_COMMIT\n_UNUSED = "', 1),
        "commit-twice": lambda t: t + 'XLA_COMMIT = "0000000000000000000000000000000000000000"\n',
        "commit-format": lambda t: t.replace('XLA_COMMIT = "', 'XLA_COMMIT = "%s" % "', 1),
        "commit-method": lambda t: t.replace('XLA_COMMIT = "', 'XLA_COMMIT = "{}".format("', 1).replace(
            '"\nXLA_SHA256', '")\nXLA_SHA256', 1
        ),
        "sha-missing": lambda t: "\n".join(ln for ln in t.splitlines() if not ln.startswith("XLA_SHA256")) + "\n",
    }
    files = ("jax/third_party/xla/revision.bzl", "jax/MODULE.bazel")
    return [
        Case(
            CLS,
            f"pin-apply-{name}",
            ["pin", "apply", "--lock", "{lock}", "--source", "jax"],
            frozenset({2}),
            _revision(edit),
            unchanged=files,
            mention=("revision.bzl",),
        )
        for name, edit in edits.items()
    ]


def cases() -> list[Case]:
    return [*_numeric(), *_vlog(), *_flags(), *_choices(), *_profiles(), *_pin_apply()]
