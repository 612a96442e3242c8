"""Cases written after the fixes, run once and reported as they came out: a check that the fixes hold for
the class and not only for the cases that drove them. Their ids start with `h-`; `--heldout` runs only these."""

from __future__ import annotations

import gzip
import json
import os
import signal
import stat

from . import cases_processes, fixtures, shapes
from .cases_secrets import SECRET, _planted
from .core import Case, Run


def _pack(meta_edit=None, extra=(), files_edit=None):
    def setup(run: Run) -> None:
        files = shapes.pack_members(run.ctx.paths["pack"])
        meta = json.loads(files["pack.json"])
        if meta_edit:
            meta_edit(meta, files, run)
        files["pack.json"] = json.dumps(meta).encode()
        if files_edit:
            files_edit(files)
        shapes.write_pack(run.path("p.tar.gz"), files, extra=[(shapes.member(n, **kw), d) for n, kw, d in extra])

    return setup


def _packs() -> list[Case]:
    def case(name, setup, expect=(2,), **kw):
        return Case(
            "packs",
            f"h-{name}",
            ["repro", "run", "p.tar.gz", "--out", "out"],
            frozenset(expect),
            setup,
            mention=("p.tar.gz",),
            **kw,
        )

    def two(m, f, r):
        m["modules"].append({**m["modules"][0], "id": 99, "files": {"text": "modules/nope.txt"}})

    return [
        case("snapshot-is-pack-json", _pack(lambda m, f, r: m["modules"][0]["files"].update(snapshot="pack.json"))),
        case("member-dot-segment", _pack(extra=[("repro/./modules/x.txt", {"size": 1}, b"x")])),
        case("member-double-slash", _pack(extra=[("repro//modules/y.txt", {"size": 1}, b"y")])),
        case("member-long-name", _pack(extra=[("repro/" + "a" * 5000, {"size": 1}, b"a")])),
        case("second-module-missing", _pack(two)),
        case(
            "pack-json-20mb",
            _pack(lambda m, f, r: m.update(padding="x" * (20 << 20))),
            expect=(0, 1, 2),
            max_rss_mib=500,
        ),
        case("pack-is-dev-zero", lambda r: r.path("p.tar.gz").symlink_to("/dev/zero"), timeout=30),
        case("sums-names-climb", _pack(files_edit=lambda f: f.update({"../x": b"x"})), expect=(2,)),
        case("files-not-a-mapping", _pack(lambda m, f, r: m["modules"][0].update(files=["modules/x"]))),
        case("replay-options-list", _pack(lambda m, f, r: m.update(replay=["--xla_dump_to=/tmp"]))),
        case(
            "flag-gpu-cuda-dir",
            _pack(lambda m, f, r: m["replay"].update(xla_flags=["--xla_gpu_cuda_data_dir=/usr/local/cuda"])),
        ),
        case("tolerance-nan", _pack(lambda m, f, r: m["replay"].update(atol=float("nan")))),
    ]


def _secrets() -> list[Case]:
    def case(name, argv, expect=(0,), **kw):
        return Case("secrets", f"h-{name}", argv, frozenset(expect), secret=SECRET, **kw)

    run = ["run", "{ok}", "--out", "out", "--archive"]

    def planted_note(run_: Run) -> None:
        _planted(run_)
        path = run_.path("b/manifest.json")
        data = json.loads(path.read_text())
        data["notes"] = [*data.get("notes", []), f"fetched with Authorization: Bearer {SECRET}"]
        data["program"]["args"] = ["--token", SECRET]
        path.write_text(json.dumps(data))

    def profile(r):
        return r.write("p.yaml", f"description: x\nrun:\n  env:\n    DB_DSN: postgres://u:{SECRET}@db/x\n")

    return [
        case("run-env-proxy-url", [*run, "--env", f"HTTP_PROXY=http://u:{SECRET}@proxy.test:3128"]),
        case("run-env-npm-token", [*run, "--env", f"NPM_TOKEN={SECRET}"]),
        case("run-args-passwd", [*run, "--", "--passwd", SECRET]),
        case("run-flag-token-pair", [*run, f"--xla-flag=--xla_dump_hlo_pass_re=token={SECRET}"]),
        case(
            "releases-dry-run-json",
            [
                "bisect",
                "releases",
                "--dry-run",
                "--json",
                "--good",
                "0.4.28",
                "--bad",
                "0.4.31",
                "--env",
                f"API_KEY={SECRET}",
                "--",
                "{ok}",
            ],
            expect=(0, 2, 3),
        ),
        case(
            "replay-reference-flag",
            [
                "replay",
                "{hlo}",
                "--out",
                "out",
                "--reference",
                "cpu",
                f"--reference-xla-flag=--xla_dump_hlo_pass_re=https://u:{SECRET}@h",
            ],
        ),
        case(
            "doctor-proxy-env",
            ["doctor", "--json"],
            expect=(0, 1),
            env={"HTTPS_PROXY": f"http://u:{SECRET}@proxy.test:3128"},
        ),
        case("profiles-show-dsn", ["profiles", "show", "p.yaml", "--json"], setup=profile),
        case("run-profile-dsn", [*run, "-p", "p.yaml"], setup=profile),
        case("report-planted-notes", ["report", "b", "-o", "r.html"], setup=planted_note),
        case("inspect-planted-args", ["inspect", "b", "--json"], setup=planted_note),
    ]


YAML_MORE = {
    "binary-tag": b"description: !!binary aGVsbG8=\n",
    "set-tag": b"description: !!set {a, b}\n",
    "nine-mb": b"description: " + b"x" * (9 << 20) + b"\n",
    "documents": b"description: a\n---\ndescription: b\n",
    "bom-crlf": b"\xef\xbb\xbfdescription: fine\r\n",
    "long-key": b"k" * 100_000 + b": 1\n",
}
YAML_LOADERS = {
    "build-dry-run": ["build", "-p", "p.yaml", "--source", "{tree}", "--dry-run"],
    "presets-show": ["presets", "show", "hlo", "-p", "p.yaml"],
    "doctor": ["doctor", "-p", "p.yaml"],
}


def _yaml() -> list[Case]:
    out = []
    for loader, argv in YAML_LOADERS.items():
        for shape in ("alias-bomb", "python-apply", "deep-map", "fifo", "not-utf8"):
            out.append(
                Case(
                    "yaml",
                    f"h-{loader}-{shape}",
                    argv,
                    frozenset({2}),
                    (lambda s: lambda r: shapes.put_yaml(r, "p.yaml", s))(shape),
                    timeout=30,
                    max_seconds=10,
                    mention=("p.yaml",),
                    absent=("pwned",),
                )
            )
    for shape, data in YAML_MORE.items():
        expect = {0} if shape == "bom-crlf" else {2}
        out.append(
            Case(
                "yaml",
                f"h-profiles-show-{shape}",
                ["profiles", "show", "p.yaml"],
                frozenset(expect),
                (lambda d: lambda r: r.write("p.yaml", d))(data),
                timeout=30,
                max_seconds=10,
            )
        )
    return out


def _records() -> list[Case]:
    def bundle_with(edit):
        def setup(run: Run) -> None:
            fixtures.copy(run.ctx.paths["run"], run.path("b"))
            edit(run)

        return setup

    def manifest_edit(change):
        def edit(run: Run) -> None:
            path = run.path("b/manifest.json")
            data = json.loads(path.read_text())
            change(data)
            path.write_text(json.dumps(data))

        return edit

    def program_fifo(run: Run) -> None:
        run.fifo("b/program/evil.py")
        run.path("b/program/passwd.py").symlink_to("/etc/passwd")

    out = [
        Case(
            "records",
            "h-diff-kind-build",
            ["diff", "b", "{run_b}"],
            frozenset({0, 2}),
            bundle_with(manifest_edit(lambda d: d.update(kind="build"))),
        ),
        Case(
            "records",
            "h-report-kind-unknown",
            ["report", "b", "-o", "r.html"],
            frozenset({2}),
            bundle_with(manifest_edit(lambda d: d.update(kind="teleport"))),
            mention=("manifest.json",),
        ),
        Case(
            "records",
            "h-inspect-schema-future",
            ["inspect", "b"],
            frozenset({2}),
            bundle_with(manifest_edit(lambda d: d.update(schema_version=99))),
            mention=("manifest.json",),
        ),
        Case(
            "records",
            "h-inspect-files-wrong",
            ["inspect", "b", "--json"],
            frozenset({2}),
            bundle_with(manifest_edit(lambda d: d.update(files=[{"path": 5, "size": "x"}]))),
            mention=("manifest.json",),
        ),
        Case(
            "records",
            "h-inspect-module-fifo",
            ["inspect", "b", "--module", "99"],
            frozenset({2}),
            bundle_with(lambda r: r.fifo("b/xla_dump/module_0099.jit_evil.before_optimizations.txt")),
            timeout=30,
        ),
        Case(
            "records",
            "h-pack-program-fifo-link",
            ["repro", "pack", "b", "-o", "p.tar.gz", "--out", "out"],
            frozenset({0}),
            bundle_with(program_fifo),
            timeout=90,
            forbid=("root:x:0:0",),
            check=lambda r, res: (
                ["/etc/passwd packed"]
                if r.path("p.tar.gz").exists() and b"root:x:0:0" in gzip.decompress(r.path("p.tar.gz").read_bytes())
                else []
            ),
        ),
        Case(
            "records",
            "h-explain-bundle-log-fifo",
            ["explain", "bdir"],
            frozenset({2}),
            lambda r: (r.path("bdir").mkdir(), r.fifo("bdir/build.log")),
            timeout=30,
        ),
        Case(
            "records",
            "h-cache-prune-fifo-marker",
            ["cache", "prune", "--all", "--dry-run"],
            frozenset({0}),
            lambda r: (r.write("cache/envs/e1/bin/python", ""), r.fifo("cache/envs/e1/xlatools-env.json")),
            env={"XLATOOLS_CACHE_DIR": "{dir}/cache"},
            timeout=30,
        ),
        Case(
            "records",
            "h-diff-two-dumps-fifo",
            ["diff", "d1", "d2"],
            frozenset({0, 2}),
            lambda r: (
                fixtures.copy(r.ctx.paths["run"] + "/xla_dump", r.path("d1")),
                fixtures.copy(r.ctx.paths["run"] + "/xla_dump", r.path("d2")),
                r.fifo("d2/module_0098.jit_x.before_optimizations.txt"),
            ),
            timeout=30,
        ),
        Case(
            "records",
            "h-pin-local-corrupt-lock",
            ["pin", "local", "--xla", "{tree}", "--lock", "l.lock"],
            frozenset({2}),
            lambda r: r.write("l.lock", "[1, 2"),
            mention=("l.lock",),
        ),
    ]
    return out


def _full_device(run: Run) -> None:
    os.mknod(run.path("full"), 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # what /dev/full is


def _still_a_device(run: Run, result) -> list[str]:
    return [] if stat.S_ISCHR(os.lstat(run.path("full")).st_mode) else ["the device was replaced by a file"]


def _writes() -> list[Case]:
    def case(name, argv, expect, setup=None, root=False, **kw):
        return Case("writes", f"h-{name}", argv, frozenset(expect), setup, needs_root=root, timeout=90, **kw)

    def ro(r):
        return r.mount("ro", readonly=True)

    def lowerme(r):
        return r.write("lowerme.py", "def f(x):\n    return x * 2\n")

    return [
        case("schema-o-read-only", ["profiles", "schema", "-o", "ro/s.json"], (2,), ro, root=True),
        # a private full device (never /dev/full itself: a writer that replaced it would break the machine)
        case(
            "bazelrc-o-full-device",
            ["bazelrc", "-p", "base", "-o", "full"],
            (3,),
            _full_device,
            root=True,
            check=_still_a_device,
        ),
        case(
            "report-o-full-device",
            ["report", "{run}", "-o", "full"],
            (3,),
            _full_device,
            root=True,
            check=_still_a_device,
        ),
        case("diff-html-missing-dir", ["diff", "{run}", "{run_b}", "--html", "no/such/d.html"], (0, 2)),
        case("pack-o-proc", ["repro", "pack", "{run}", "-o", "/proc/x.tar.gz", "--out", "out"], (2,)),
        case(
            "lower-ir-dest-read-only",
            ["lower", "lowerme.py:f", "--input-shapes", '[("x", "f32[2]")]', "--ir-dest", "ro/x.pb"],
            (2,),
            lambda r: (ro(r), lowerme(r)),
            root=True,
        ),
        case("replay-dump-read-only", ["replay", "{hlo}", "--dump", "hlo", "--out", "ro"], (2,), ro, root=True),
        case(
            "stdout-closed-bisect-json",
            ["bisect", "passes", "--out", "bis", "--json", "--", "{ok}"],
            (2,),
            wrapper="closed-stdout",
        ),
        case(
            "stdout-full-explain",
            ["explain", "log.txt"],
            (0, 3),
            lambda r: r.write("log.txt", "ERROR\n"),
            wrapper="full-stdout",
        ),
    ]


def _values() -> list[Case]:
    def case(name, argv, expect=(2,), **kw):
        return Case("values", f"h-{name}", argv, frozenset(expect), timeout=90, **kw)

    return [
        case("build-jobs-huge", ["build", "-p", "base", "--jobs", "1000000000", "--dry-run"]),
        case("bisect-confirm-huge", ["bisect", "passes", "--confirm", "1000000", "--", "{ok}"], (2,)),
        case("run-timeout-tiny", ["run", "{ok}", "--out", "out", "--timeout", "1e-300"], (0, 2, 124)),
        case("run-preset-empty", ["run", "{ok}", "--dry-run", "--preset", ""]),
        case("replay-module-empty", ["replay", "{hlo}", "--module", "", "--dry-run"], (0, 2)),
        case("inspect-module-empty", ["inspect", "{run}", "--module", ""], (2,)),
        case("run-vmodule-double-comma", ["run", "{ok}", "--dry-run", "--vmodule", "a=1,,b=2"], (0, 2)),
        case("run-env-only-equals", ["run", "{ok}", "--dry-run", "--env", "=="]),
        case("run-name-empty", ["run", "{ok}", "--out", "out", "--name", ""], (0, 2)),
        case("run-python-empty", ["run", "{ok}", "--out", "out", "--python", ""], (0, 2)),
        case(
            "bisect-commits-garbage-range",
            ["bisect", "commits", "--xla", "abc..", "--xla-repo", "{tree}", "-p", "base", "--dry-run", "--", "{ok}"],
        ),
        case("replay-iterations-word", ["replay", "{hlo}", "-n", "many", "--dry-run"]),
        case(
            "lower-shapes-huge-dim",
            ["lower", "lowerme.py:f", "--input-shapes", '[("x", "f32[99999999999999]")]'],
            (0, 1, 2),
            setup=lambda r: r.write("lowerme.py", "def f(x):\n    return x * 2\n"),
        ),  # abstract: no memory
    ]


LEAVES_DAEMON = "#!/bin/sh\nsetsid sleep 300 >/dev/null 2>&1 < /dev/null &\nexit 1\n"


def _processes() -> list[Case]:
    sig = cases_processes._signal_when
    lowerme = cases_processes._lowerme

    def daemon_python(run: Run) -> None:
        run.write("daemon_python", LEAVES_DAEMON, mode=0o755)

    return [
        Case(
            "processes",
            "h-sigterm-in-repro-pack",
            ["repro", "pack", "{run}", "-o", "p.tar.gz", "--out", "out", "--python", "{slow_python}"],
            frozenset({130}),
            action=sig(signal.SIGTERM, "sleep 30"),
            cold_cache=True,
            timeout=60,
            absent=("p.tar.gz",),
        ),
        Case(
            "processes",
            "h-sigint-in-replay-probe",
            ["replay", "{hlo}", "--out", "out", "--python", "{slow_python}"],
            frozenset({130}),
            action=sig(signal.SIGINT, "sleep 30"),
            cold_cache=True,
            timeout=60,
        ),
        Case(
            "processes",
            "h-sigterm-in-lower",
            ["lower", "lowerme.py:f", "--input-shapes", '[("x", "f32[2]")]', "--python", "{slow_python}"],
            frozenset({130}),
            lowerme,
            action=sig(signal.SIGTERM, "sleep 30"),
            cold_cache=True,
            timeout=60,
        ),
        Case(
            "processes",
            "h-probe-leaves-daemon",
            ["run", "{ok}", "--out", "out", "--python", "{dir}/daemon_python"],
            frozenset({2, 3}),
            daemon_python,
            cold_cache=True,
            env=cases_processes.PROBE_TIMEOUT,
            timeout=60,
        ),
        Case(
            "processes",
            "h-sigterm-in-program-with-children",
            ["run", "{setsid_child}", "--out", "out", "--quiet"],
            frozenset({130}),
            action=sig(signal.SIGTERM, "sleep 300"),
            timeout=60,
        ),
    ]


def cases() -> list[Case]:
    return [*_packs(), *_secrets(), *_yaml(), *_records(), *_writes(), *_values(), *_processes()]
