"""Writes that can fail: a missing folder, a folder where the file goes, a read-only or a full file
system (small tmpfs mounts, root only), a disk that fills during the work, stdout closed or full."""

from __future__ import annotations

from . import fixtures
from .core import Case, Run

CLS = "writes"
SMALL = "700k"  # fits a bundle and a few modules, not a per-pass dump


def _ro(rel: str = "ro"):
    return lambda run: run.mount(rel, readonly=True)


def _full(rel: str = "full"):
    return lambda run: run.mount(rel, size="256k", fill=True)


def _small(rel: str = "small", size: str = SMALL):
    return lambda run: run.mount(rel, size=size)


def _dir(rel: str):
    def setup(run: Run) -> None:
        run.path(rel).mkdir(parents=True, exist_ok=True)
        (run.path(rel) / "keep.txt").write_text("x")

    return setup


def _both(*setups):
    def setup(run: Run) -> None:
        for step in setups:
            step(run)

    return setup


def _truncated_bundle_and_existing(run: Run) -> None:
    bundle = fixtures.copy(run.ctx.paths["run"], run.path("b"))
    text = (bundle / "manifest.json").read_text()
    (bundle / "manifest.json").write_text(text[: len(text) // 3])
    run.write("p.tar.gz", b"previous pack, must survive")


def _ro_tree(run: Run) -> None:
    mount = run.mount("jax", size="4m")
    fixtures.copy(run.ctx.paths["tree"], run.path("jax-src"))
    import subprocess

    subprocess.run(["cp", "-a", f"{run.path('jax-src')}/.", str(mount)], check=True)
    subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)


def _stdout_cases() -> list[Case]:
    commands = {
        "run": (["run", "{ok}", "--out", "out"], (0, 3)),
        "run-json": (["run", "{ok}", "--out", "out", "--json"], (0, 2, 3)),
        "run-dry-run": (["run", "{ok}", "--dry-run"], (0, 2, 3)),
        "inspect": (["inspect", "{run}"], (0, 2, 3)),
        "inspect-json": (["inspect", "{run}", "--json"], (0, 2, 3)),
        "diff": (["diff", "{run}", "{run_b}"], (0, 2, 3)),
        "profiles-list": (["profiles", "list"], (0, 2, 3)),
        "profiles-show-json": (["profiles", "show", "base", "--json"], (0, 2, 3)),
        "presets-list": (["presets", "list"], (0, 2, 3)),
        "bazelrc": (["bazelrc", "-p", "base"], (0, 2, 3)),
        "doctor": (["doctor"], (0, 1, 2, 3)),
        "doctor-json": (["doctor", "--json"], (0, 1, 2, 3)),
        "replay-json": (["replay", "{hlo}", "--out", "out", "--json"], (0, 2, 3)),
        "repro-run": (["repro", "run", "{pack}", "--out", "out"], (1, 2, 3)),
        "bisect": (["bisect", "passes", "--out", "bis", "--json", "--", "{ok}"], (2, 3)),
        "pin-verify-json": (["pin", "verify", "--lock", "{lock}", "--source", "{tree}", "--json"], (0, 1, 2, 3)),
    }
    out = []
    for name, (argv, expect) in commands.items():
        out.append(Case(CLS, f"stdout-closed-{name}", argv, frozenset(expect), wrapper="closed-stdout", timeout=90))
        out.append(Case(CLS, f"stdout-full-{name}", argv, frozenset(expect), wrapper="full-stdout", timeout=90))
    return out


def cases() -> list[Case]:
    def case(name, argv, expect=(2,), setup=None, root=True, **kw) -> Case:
        kw.setdefault("timeout", 90)
        return Case(CLS, name, argv, frozenset(expect), setup, needs_root=root, **kw)

    pack = ["repro", "pack", "{run}", "--out", "out", "-o"]
    report = ["report", "{run}", "-o"]
    html = ["diff", "{run}", "{run_b}", "--html"]
    return [
        case("pack-o-missing-folder", [*pack, "no/such/dir/p.tar.gz"], (0, 2), root=False),
        case("pack-o-onto-folder", [*pack, "adir"], setup=_dir("adir"), root=False, mention=("adir",)),
        case("pack-o-read-only", [*pack, "ro/p.tar.gz"], setup=_ro(), mention=("ro/p.tar.gz",)),
        case("pack-o-full", [*pack, "full/p.tar.gz"], (3,), setup=_full(), absent=("full/p.tar.gz",)),
        case(
            "pack-out-read-only",
            ["repro", "pack", "{run}", "-o", "p.tar.gz", "--out", "ro"],
            setup=_ro(),
            absent=("p.tar.gz",),
        ),
        case(
            "pack-out-full",
            ["repro", "pack", "{run}", "-o", "p.tar.gz", "--out", "full"],
            (3,),
            setup=_full(),
            absent=("p.tar.gz",),
        ),
        case(
            "pack-truncated-manifest",
            ["repro", "pack", "b", "--out", "out", "-o", "p.tar.gz"],
            setup=_truncated_bundle_and_existing,
            root=False,
            unchanged=("p.tar.gz",),
            mention=("manifest.json",),
        ),
        case("run-out-read-only", ["run", "{ok}", "--out", "ro"], setup=_ro()),
        case("run-out-full", ["run", "{ok}", "--out", "full"], (3,), setup=_full()),
        case("run-out-is-file", ["run", "{ok}", "--out", "afile"], setup=lambda r: r.write("afile", "x"), root=False),
        case("run-out-proc", ["run", "{ok}", "--out", "/proc/hostile"], root=False),
        case(
            "run-dump-fills-disk",
            ["run", "{prog}", "--dump", "--preset", "dump:passes", "--out", "small"],
            (3,),
            setup=_small(),
        ),
        case(
            "run-archive-fills-disk",
            ["run", "{prog}", "--dump", "--archive", "--out", "small"],
            (3,),
            setup=_small(size="400k"),
        ),
        case(
            "run-output-fills-disk",
            ["run", "flood.py", "--out", "small", "--quiet"],
            (3,),
            setup=_both(
                _small(size="300k"),
                lambda r: r.write(
                    "flood.py", "import sys\nfor i in range(100000):\n    sys.stdout.write('x' * 99 + '\\n')\n"
                ),
            ),
        ),
        case("replay-out-read-only", ["replay", "{hlo}", "--out", "ro"], setup=_ro()),
        case("replay-out-full", ["replay", "{hlo}", "--out", "full"], (3,), setup=_full()),
        case(
            "replay-dump-fills-disk",
            ["replay", "{hlo}", "--dump", "passes", "--out", "small"],
            (3,),
            setup=_small(size="200k"),
        ),
        case("repro-run-out-read-only", ["repro", "run", "{pack}", "--out", "ro"], setup=_ro()),
        case("repro-run-out-full", ["repro", "run", "{pack}", "--out", "full"], (3,), setup=_full()),
        case("bisect-out-read-only", ["bisect", "passes", "--out", "ro", "--", "{ok}"], setup=_ro()),
        case("bisect-out-full", ["bisect", "passes", "--out", "full", "--", "{ok}"], (3,), setup=_full()),
        case(
            "pin-apply-read-only-tree",
            ["pin", "apply", "--lock", "{lock}", "--source", "jax"],
            setup=_ro_tree,
            mention=("jax",),
        ),
        case("pin-local-lock-read-only", ["pin", "local", "--xla", "{tree}", "--lock", "ro/x.lock"], setup=_ro()),
        case("report-o-folder", [*report, "adir"], setup=_dir("adir"), root=False, mention=("adir",)),
        case("report-o-missing-folder", [*report, "no/such/r.html"], (0, 2), root=False),
        case("report-o-read-only", [*report, "ro/r.html"], setup=_ro()),
        case("report-o-full", [*report, "full/r.html"], (3,), setup=_full(), absent=("full/r.html",)),
        case("diff-html-folder", [*html, "adir"], setup=_dir("adir"), root=False),
        case("diff-html-read-only", [*html, "ro/d.html"], setup=_ro()),
        case("diff-html-full", [*html, "full/d.html"], (3,), setup=_full(), absent=("full/d.html",)),
        case("bazelrc-o-folder", ["bazelrc", "-p", "base", "-o", "adir"], setup=_dir("adir"), root=False),
        case("bazelrc-o-read-only", ["bazelrc", "-p", "base", "-o", "ro/x.bazelrc"], setup=_ro()),
        case("bazelrc-o-full", ["bazelrc", "-p", "base", "-o", "full/x.bazelrc"], (3,), setup=_full()),
        case("bazelrc-source-read-only", ["bazelrc", "-p", "base", "--source", "jax"], setup=_ro_tree),
        case(
            "lower-dest-folder",
            ["lower", "lowerme.py:f", "--input-shapes", '[("x", "f32[2]")]', "--ir-human-dest", "adir"],
            setup=_both(_dir("adir"), _lowerme),
            root=False,
        ),
        case(
            "lower-dest-read-only",
            ["lower", "lowerme.py:f", "--input-shapes", '[("x", "f32[2]")]', "--ir-human-dest", "ro/f.txt"],
            setup=_both(_ro(), _lowerme),
        ),
        case("profiles-schema-o-folder", ["profiles", "schema", "-o", "adir"], setup=_dir("adir"), root=False),
        *_stdout_cases(),
    ]


def _lowerme(run: Run) -> None:
    run.write("lowerme.py", "def f(x):\n    return x * 2\n")
