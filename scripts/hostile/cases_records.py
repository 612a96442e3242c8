"""Records of the wrong shape: valid JSON or YAML with the wrong types, absurd nesting, a list or null
where an object belongs, a folder or FIFO where a file belongs, for every reader: inspect, diff,
report, replay, repro pack/run, the bisect state, pin locks, .bazelrc.user, caches, dumps, profiles."""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import fixtures, shapes
from .core import Case, Run

CLS = "records"
ALL = tuple(shapes.JSON_SHAPES)
SOME = ("truncated", "list", "null", "wrong-types", "nested-wrong", "deep-list", "dir", "fifo", "not-utf8")


def _bundle(shape: str):
    def setup(run: Run) -> None:
        fixtures.copy(run.ctx.paths["run"], run.path("b"))
        shapes.spoil(run, "b/manifest.json", shape)

    return setup


def _pack_meta(shape: str):
    def setup(run: Run) -> None:
        files = shapes.pack_members(run.ctx.paths["pack"])
        run.write("meta.json", files["pack.json"])
        shapes.spoil(run, "meta.json", shape)
        path = run.path("meta.json")
        if path.is_file() and not path.is_symlink():
            files["pack.json"] = path.read_bytes()
            shapes.write_pack(run.path("p.tar.gz"), files)
        else:  # a folder, FIFO or link where pack.json belongs: as a tar member
            import tarfile

            kind = {"dir": tarfile.DIRTYPE, "fifo": tarfile.FIFOTYPE, "symlink-loop": tarfile.SYMTYPE}[shape]
            del files["pack.json"]
            shapes.write_pack(
                run.path("p.tar.gz"), files, extra=[(shapes.member("repro/pack.json", kind, link="pack.json"), None)]
            )

    return setup


def _bisect(shape: str):
    def setup(run: Run) -> None:
        folder = Path(run.ctx.paths["bisect_folder"])
        fixtures.copy(str(folder), run.path(f"bis/{folder.name}"))
        shapes.spoil(run, f"bis/{folder.name}/bisect.json", shape)

    return setup


def _lock(shape: str, tree: bool = False):
    def setup(run: Run) -> None:
        fixtures.copy(run.ctx.paths["lock"], run.path("l.lock"))
        shapes.spoil(run, "l.lock", shape)
        if tree:
            fixtures.copy(run.ctx.paths["tree"], run.path("jax"))

    return setup


def _cache(shape: str):
    def setup(run: Run) -> None:
        fixtures.copy(str(run.ctx.work / "cache" / "targets"), run.path("cache/targets"))
        for path in sorted(run.path("cache/targets").glob("*.json")):
            shapes.spoil(run, str(path.relative_to(run.dir)), shape)

    return setup


def _dump_file(kind: str):
    def setup(run: Run) -> None:
        bundle = fixtures.copy(run.ctx.paths["run"], run.path("b"))
        name = "b/xla_dump/module_0099.jit_evil.before_optimizations.txt"
        if kind == "fifo":
            run.fifo(name)
        elif kind == "dir":
            run.path(name).mkdir()
        elif kind == "binary":
            run.write(name, bytes(range(256)) * 64)
        elif kind == "symlink-loop":
            os.symlink(os.path.basename(name), run.path(name))
        elif kind == "symlink-outside":
            os.symlink("/etc/passwd", run.path(name))
        elif kind == "empty-proto":
            run.write("b/xla_dump/module_0099.jit_evil.hlo.pb", b"")
        elif kind == "garbage-snapshot":
            run.write("b/xla_dump/module_0099.jit_evil.snapshot.0.pb", b"\xff" * 100)
        elif kind == "long-name":
            run.write(f"b/xla_dump/module_0099.jit_{'x' * 200}.before_optimizations.txt", "HloModule x\n")
        assert bundle.exists()

    return setup


def _bazelrc_user(shape: str):
    def setup(run: Run) -> None:
        fixtures.copy(run.ctx.paths["tree"], run.path("jax"))
        if shape == "binary":
            run.write("jax/.bazelrc.user", b"build --config=x\n\x00\x01\x02" * 100)
        elif shape == "huge-line":
            run.write("jax/.bazelrc.user", b"x" * (20 << 20))
        else:
            run.write("jax/.bazelrc.user", "build --copt=-O2\n")
            shapes.spoil(run, "jax/.bazelrc.user", shape)

    return setup


def _log(shape: str):
    def setup(run: Run) -> None:
        if shape == "missing":
            return
        run.write("build.log", "ERROR: x\n")
        if shape == "binary":
            run.write("build.log", b"\xff\xfe" + bytes(range(256)) * 100)
        else:
            shapes.spoil(run, "build.log", shape)

    return setup


def _env_marker(shape: str):
    def setup(run: Run) -> None:
        run.write("cache/envs/jax-0.4.30-py3.11-cpu/xlatools-env.json", json.dumps({"jax": "0.4.30"}))
        run.write("cache/envs/jax-0.4.30-py3.11-cpu/bin/python", "")
        shapes.spoil(run, "cache/envs/jax-0.4.30-py3.11-cpu/xlatools-env.json", shape)

    return setup


PROFILES = {
    "bazel-list": "bazel: [1, 2]\n",
    "target-null": "target: null\n",
    "extends-number": "extends: 5\n",
    "extends-nested-list": "extends: [[]]\n",
    "extends-self": "extends: p\n",
    "extends-missing": "extends: no-such-profile-zz\n",
    "run-scalar": "run: x\n",
    "run-env-list": "run: {env: [1]}\n",
    "run-env-nested": "run: {env: {A: {b: 1}}}\n",
    "run-define-presets-scalar": "run: {define_presets: {x: 5}}\n",
    "run-presets-map": "run: {presets: {a: 1}}\n",
    "source-list": "source: [x]\n",
    "description-map": "description: {a: 1}\n",
    "copts-map": "bazel: {copts: {a: 1}}\n",
    "key-not-string": "? [a, b]\n: 1\n",
}


def _inputs(kind: str):
    def setup(run: Run) -> None:
        if kind == "garbage":
            run.write("in.npz", b"PK\x03\x04 not really a zip")
        elif kind == "dir":
            run.path("in.npz").mkdir()
        elif kind == "objects":
            # loading this with pickles allowed runs `touch pwned`
            code = (
                "import numpy as np, os, sys\n"
                "class E:\n    def __reduce__(self):\n        return (os.system, ('touch ' + sys.argv[2],))\n"
                "np.savez(sys.argv[1], a=np.array([E()], dtype=object))\n"
            )
            import subprocess

            subprocess.run([run.ctx.python, "-c", code, str(run.path("in.npz")), str(run.path("pwned"))], check=True)

    return setup


def cases() -> list[Case]:
    out = []

    def add(name, argv, setup, expect=(2,), **kw):
        kw.setdefault("timeout", 45)
        out.append(Case(CLS, name, argv, frozenset(expect), setup, **kw))

    for shape in ALL:
        m = ("manifest.json",)
        add(f"inspect-{shape}", ["inspect", "b"], _bundle(shape), mention=m)
        add(f"inspect-json-{shape}", ["inspect", "b", "--json"], _bundle(shape), mention=m)
        add(f"diff-{shape}", ["diff", "b", "{run_b}"], _bundle(shape), mention=m)
        add(f"report-{shape}", ["report", "b", "-o", "r.html"], _bundle(shape), mention=m, absent=("r.html",))
        # replay reads a bundle's dump, not its manifest: it may replay (0) or refuse the damaged bundle (2)
        add(f"replay-{shape}", ["replay", "b", "--dry-run"], _bundle(shape), expect=(0, 2), mention=m)
        add(
            f"repro-run-{shape}",
            ["repro", "run", "p.tar.gz", "--out", "out"],
            _pack_meta(shape),
            mention=("pack.json",),
        )
        add(
            f"bisect-state-{shape}",
            ["bisect", "passes", "--out", "bis", "--", "{ok}"],
            _bisect(shape),
            mention=("bisect.json",),
        )
        add(
            f"pin-verify-{shape}",
            ["pin", "verify", "--lock", "l.lock", "--source", "{tree}"],
            _lock(shape),
            mention=("l.lock",),
        )
    for shape in SOME:
        add(
            f"repro-pack-{shape}",
            ["repro", "pack", "b", "-o", "p.tar.gz", "--out", "out"],
            _bundle(shape),
            mention=("manifest.json",),
            absent=("p.tar.gz",),
            timeout=90,
        )
        add(
            f"pin-apply-{shape}",
            ["pin", "apply", "--lock", "l.lock", "--source", "jax"],
            _lock(shape, tree=True),
            mention=("l.lock",),
            unchanged=("jax/third_party/xla/revision.bzl", "jax/MODULE.bazel"),
        )
        add(
            f"target-cache-run-{shape}",
            ["run", "{ok}", "--out", "out"],
            _cache(shape),
            expect=(0,),
            env={"XLATOOLS_CACHE_DIR": "{dir}/cache"},
        )
        add(
            f"target-cache-doctor-{shape}",
            ["doctor"],
            _cache(shape),
            expect=(0, 1),
            env={"XLATOOLS_CACHE_DIR": "{dir}/cache"},
        )
    for kind in (
        "fifo",
        "dir",
        "binary",
        "symlink-loop",
        "symlink-outside",
        "empty-proto",
        "garbage-snapshot",
        "long-name",
    ):
        for name, argv in {
            "inspect": ["inspect", "b"],
            "diff": ["diff", "b", "{run_b}"],
            "report": ["report", "b", "-o", "r.html"],
            "replay": ["replay", "b", "--dry-run"],
        }.items():
            add(
                f"dump-{kind}-{name}",
                argv,
                _dump_file(kind),
                expect=(0, 2),
                max_seconds=20,
                timeout=40,
                forbid=("root:x:0:0",),
            )
    for shape in ("dir", "fifo", "not-utf8", "binary", "symlink-loop", "huge-line"):
        # text bazel would choke on is the user's to keep; what cannot be read or written is refused
        expect = (0, 2) if shape in ("binary", "huge-line", "symlink-loop") else (2,)
        add(
            f"bazelrc-user-{shape}",
            ["bazelrc", "-p", "base", "--source", "jax"],
            _bazelrc_user(shape),
            expect=expect,
            mention=(".bazelrc.user",),
            max_seconds=20,
        )
        add(
            f"bazelrc-user-dry-{shape}",
            ["bazelrc", "-p", "base", "--source", "jax", "--dry-run"],
            _bazelrc_user(shape),
            expect=expect,
            mention=(".bazelrc.user",),
            max_seconds=20,
        )
    for shape, expect in (
        ("dir", (2,)),
        ("fifo", (2,)),
        ("binary", (0,)),
        ("missing", (2,)),
        ("symlink-loop", (2,)),
        ("empty", (0,)),
    ):
        add(f"explain-log-{shape}", ["explain", "build.log"], _log(shape), expect=expect, max_seconds=20)
    for shape in ("truncated", "list", "null", "wrong-types", "dir", "fifo"):
        add(
            f"cache-list-env-{shape}",
            ["cache", "list"],
            _env_marker(shape),
            expect=(0, 2),
            env={"XLATOOLS_CACHE_DIR": "{dir}/cache"},
            max_seconds=20,
        )
    for name, text in PROFILES.items():
        setup = (lambda t: lambda run: run.write("p.yaml", t))(text)
        add(f"profile-show-{name}", ["profiles", "show", "p.yaml"], setup, mention=("p.yaml",))
        add(f"profile-run-{name}", ["run", "{ok}", "--dry-run", "-p", "p.yaml"], setup, mention=("p.yaml",))
    replay_files = {
        "garbage-proto": ("module_0001.jit_x.hlo.pb", b"\xff\xfe garbage"),
        "garbage-snapshot": ("module_0001.jit_x.snapshot.0.pb", b"\x0a\xff\xff\xff\xff\x0f"),
        "binary-text": ("module_0001.jit_x.before_optimizations.txt", bytes(range(256)) * 8),
        "empty-text": ("module_0001.jit_x.before_optimizations.txt", b""),
    }
    for name, (file, data) in replay_files.items():
        add(f"replay-file-{name}", ["replay", file, "--out", "out"], (lambda f, d: lambda r: r.write(f, d))(file, data))
    add(
        "replay-file-fifo",
        ["replay", "m.before_optimizations.txt", "--out", "out"],
        lambda r: r.fifo("m.before_optimizations.txt"),
        max_seconds=20,
    )
    add("replay-empty-folder", ["replay", "d", "--out", "out"], lambda r: r.path("d").mkdir())
    for kind in ("garbage", "dir", "objects"):
        add(
            f"replay-inputs-{kind}",
            ["replay", "{hlo}", "--inputs", "in.npz", "--out", "out"],
            _inputs(kind),
            mention=("in.npz",),
            timeout=90,
        )
    return out
