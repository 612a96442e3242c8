"""Security of repro packs: archives that climb out, lie about their members or sizes, and pack.json
files that point outside the pack or at members that are not there."""

from __future__ import annotations

import json
import tarfile

from . import shapes
from .core import Case, Run

CLS = "packs"
OUTSIDE_TEXT = "outside/module_0099.jit_evil.before_optimizations.txt"


def _members(run: Run) -> dict[str, bytes]:
    return shapes.pack_members(run.ctx.paths["pack"])


def _meta(files: dict[str, bytes]) -> dict:
    return json.loads(files["pack.json"])


def _with_meta(edit):
    """setup: the fixture pack with pack.json edited by `edit(meta, files, run)` (sums kept valid)."""

    def setup(run: Run) -> None:
        files = _members(run)
        meta = _meta(files)
        edit(meta, files, run)
        files["pack.json"] = json.dumps(meta).encode()
        shapes.write_pack(run.path("p.tar.gz"), files)

    return setup


def _point_text(target: str):
    def edit(meta, files, run):
        hlo = open(run.ctx.paths["hlo"]).read().replace("HloModule ", "HloModule evil_", 1)
        run.write(OUTSIDE_TEXT, hlo)
        entry = meta["modules"][0]
        entry["files"] = {"text": run.fmt(target)}

    return edit


def _drop_member(meta, files, run):
    name = meta["modules"][0]["files"]["text"]
    del files[name]
    meta["modules"][0]["files"] = {"text": name}


def _spoiled(**kw):
    def setup(run: Run) -> None:
        files = _members(run)
        extra = [(shapes.member(*m[:1], **m[1]), m[2]) for m in kw.get("extra", [])]
        shapes.write_pack(
            run.path("p.tar.gz"),
            {**files, **kw.get("add", {})},
            extra=extra,
            with_sums=kw.get("with_sums", True),
            sums_text=kw.get("sums_text"),
            root=kw.get("root", "repro"),
        )

    return setup


def _raw(data: bytes):
    return lambda run: run.write("p.tar.gz", data)


def _bomb(run: Run) -> None:
    path = shapes.zero_bomb(run.ctx.work / "fx" / "zero-bomb.tar.gz", _members(run))
    run.path("p.tar.gz").symlink_to(path)


def _header_lies(run: Run) -> None:
    """A member whose header declares 5 GiB, followed by nothing but the archive's end."""
    import gzip
    import io

    files = {**_members(run)}
    files["SHA256SUMS"] = shapes.sums(files)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in sorted(files.items()):
            tar.addfile(shapes.member(f"repro/{name}", size=len(data)), io.BytesIO(data))
        header = shapes.member("repro/modules/huge.bin", size=5 << 30).tobuf(
            tarfile.PAX_FORMAT, tar.encoding, tar.errors
        )
        tar.fileobj.write(header)
        tar.offset += len(header)
    run.write("p.tar.gz", gzip.compress(raw.getvalue(), mtime=0))


def _many(run: Run) -> None:
    files = _members(run)
    files.update({f"program/many/{i}.txt": b"" for i in range(30_000)})
    shapes.write_pack(run.path("p.tar.gz"), files)


def _fifo(run: Run) -> None:
    run.fifo("p.tar.gz")


def _truncated(run: Run) -> None:
    data = open(run.ctx.paths["pack"], "rb").read()
    run.write("p.tar.gz", data[: len(data) // 2])


def cases() -> list[Case]:
    def case(name, setup, expect=(2,), **kw) -> Case:
        kw.setdefault("mention", ("p.tar.gz",))
        return Case(CLS, name, ["repro", "run", "p.tar.gz", "--out", "out"], frozenset(expect), setup, **kw)

    reg, lnk, sym = tarfile.REGTYPE, tarfile.LNKTYPE, tarfile.SYMTYPE
    out = [
        # archives (these held in round 1; kept so they keep holding)
        case(
            "member-climbs-out", _spoiled(extra=[("repro/../../evil.txt", {"size": 4}, b"evil")]), absent=("evil.txt",)
        ),
        case("member-absolute", _spoiled(extra=[("/tmp/hostile-evil.txt", {"size": 4}, b"evil")])),
        case("member-outside-root", _spoiled(extra=[("elsewhere/x.txt", {"size": 1}, b"x")])),
        case("member-symlink", _spoiled(extra=[("repro/modules/link", {"kind": sym, "link": "/etc/passwd"}, None)])),
        case("member-hardlink", _spoiled(extra=[("repro/modules/hard", {"kind": lnk, "link": "/etc/passwd"}, None)])),
        case("member-chardev", _spoiled(extra=[("repro/modules/dev", {"kind": tarfile.CHRTYPE}, None)])),
        case("member-fifo", _spoiled(extra=[("repro/modules/fifo", {"kind": tarfile.FIFOTYPE}, None)])),
        case("member-twice", _spoiled(extra=[("repro/pack.json", {"size": 2}, b"{}")])),
        case("member-unlisted", _spoiled(extra=[("repro/modules/extra.txt", {"size": 1, "kind": reg}, b"x")])),
        case("no-sums", _spoiled(with_sums=False)),
        case("bad-sum", _spoiled(sums_text=b"0" * 64 + b"  pack.json\n")),
        case(
            "sums-lists-missing",
            lambda r: shapes.write_pack(
                r.path("p.tar.gz"), _members(r), sums_text=shapes.sums({**_members(r), "ghost.txt": b"boo"})
            ),
        ),
        case("sums-not-utf8", _spoiled(sums_text=b"\xff\xfe\x00garbage\n")),
        case("no-root-folder", _spoiled(root="")),
        case("not-gzip", _raw(b"this is not a pack\n" * 10)),
        case("empty-file", _raw(b"")),
        case("truncated", _truncated),
        case("gzip-of-garbage", _raw(__import__("gzip").compress(b"\x00garbage" * 1000))),
        case("pack-is-folder", lambda r: r.path("p.tar.gz").mkdir()),
        case("pack-is-fifo", _fifo, timeout=30),
        case("pack-missing", None),
        case("zero-bomb-1gib", _bomb, max_rss_mib=400, max_seconds=60, timeout=180),
        case("size-header-lies", _header_lies),
        case("30000-members", _many, expect=(0, 1, 2), max_seconds=60, timeout=120),
        # pack.json naming what is not a member of the pack
        case("text-climbs-out", _with_meta(_point_text("../../../" + OUTSIDE_TEXT)), forbid=("evil_",)),
        case("text-absolute", _with_meta(_point_text("{dir}/" + OUTSIDE_TEXT)), forbid=("evil_",)),
        case("text-missing-member", _with_meta(_drop_member)),
        case("text-is-folder", _with_meta(lambda m, f, r: m["modules"][0].update(files={"text": "modules"}))),
        case("text-is-sums", _with_meta(lambda m, f, r: m["modules"][0].update(files={"text": "SHA256SUMS"}))),
        case("text-empty-path", _with_meta(lambda m, f, r: m["modules"][0].update(files={"text": ""}))),
        case("text-dot", _with_meta(lambda m, f, r: m["modules"][0].update(files={"text": "."}))),
        case("snapshot-outside", _with_meta(lambda m, f, r: m["modules"][0]["files"].update(snapshot="/etc/passwd"))),
        case("inputs-host-file", _with_meta(lambda m, f, r: m["replay"].update(inputs="/etc/passwd"))),
        case(
            "dump-flag-outside",
            _with_meta(
                lambda m, f, r: m["replay"].update(
                    xla_flags=[r.fmt("--xla_dump_to={dir}/escaped"), "--xla_dump_hlo_as_text"]
                )
            ),
            absent=("escaped",),
        ),
        case("reference-python", _with_meta(lambda m, f, r: m["replay"].update(references=["python:/bin/sh"]))),
        case("unknown-option", _with_meta(lambda m, f, r: m["replay"].update(python="/bin/sh")), expect=(0, 1, 2)),
        case("format-other", _with_meta(lambda m, f, r: m.update(format="xlatools.repro/99"))),
        case("no-modules", _with_meta(lambda m, f, r: m.update(modules=[]))),
        case(
            "module-name-climbs",
            _with_meta(lambda m, f, r: m["modules"][0].update(name="../../evil")),
            expect=(0, 1, 2),
            absent=("../evil",),
        ),
        case("module-id-huge", _with_meta(lambda m, f, r: m["modules"][0].update(id=10**30)), expect=(0, 1, 2)),
    ]
    return out
