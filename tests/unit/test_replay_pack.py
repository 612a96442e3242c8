"""Repro pack archives without jax: determinism, hashes, and refusal of unsafe members."""

from __future__ import annotations

import io
import tarfile

import pytest

from xlatools.replay.pack import PackError, extract, verify, write_pack


def test_same_contents_same_bytes(tmp_path):
    files = {"b/x.txt": b"1", "a.json": b"{}", "pack.json": b"{}"}
    write_pack(files, tmp_path / "one.tar.gz")
    write_pack(dict(reversed(list(files.items()))), tmp_path / "two.tar.gz")
    assert (tmp_path / "one.tar.gz").read_bytes() == (tmp_path / "two.tar.gz").read_bytes()
    extract(tmp_path / "one.tar.gz", tmp_path / "out")
    assert (tmp_path / "out" / "b" / "x.txt").read_bytes() == b"1"


def _rewrite(src, dst, change):
    with tarfile.open(src) as tar:
        members = [(m, tar.extractfile(m).read() if m.isfile() else None) for m in tar]
    with tarfile.open(dst, "w:gz") as out:
        for member, data in members:
            data = change(member.name, data)
            if data is None and member.isfile():
                continue
            if data is not None:
                member.size = len(data)
            out.addfile(member, io.BytesIO(data) if data is not None else None)


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda name, data: b"tampered" if name == "repro/a.json" else data, "does not match its sha256"),
        (lambda name, data: None if name == "repro/SHA256SUMS" else data, "no SHA256SUMS"),
        (lambda name, data: None if name == "repro/a.json" else data, "lists files the pack lacks"),
    ],
)
def test_hash_list_is_enforced(tmp_path, change, message):
    write_pack({"a.json": b"{}", "pack.json": b"{}"}, tmp_path / "ok.tar.gz")
    _rewrite(tmp_path / "ok.tar.gz", tmp_path / "bad.tar.gz", change)
    with pytest.raises(PackError, match=message):
        extract(tmp_path / "bad.tar.gz", tmp_path / "dest")
    assert not (tmp_path / "dest").exists()


def test_extra_unlisted_file_is_refused(tmp_path):
    write_pack({"pack.json": b"{}"}, tmp_path / "ok.tar.gz")
    with tarfile.open(tmp_path / "ok.tar.gz") as tar:
        members = [(m, tar.extractfile(m).read() if m.isfile() else None) for m in tar]
    with tarfile.open(tmp_path / "bad.tar.gz", "w:gz") as out:
        for member, data in members:
            out.addfile(member, io.BytesIO(data) if data is not None else None)
        extra = tarfile.TarInfo("repro/extra.sh")
        extra.size = 2
        out.addfile(extra, io.BytesIO(b"hi"))
    with pytest.raises(PackError, match="not in SHA256SUMS"):
        verify(tmp_path / "bad.tar.gz")


@pytest.mark.parametrize("kind", [tarfile.LNKTYPE, tarfile.FIFOTYPE, tarfile.CHRTYPE])
def test_links_and_special_files_are_refused(tmp_path, kind):
    with tarfile.open(tmp_path / "bad.tar.gz", "w:gz") as tar:
        info = tarfile.TarInfo("repro/thing")
        info.type, info.linkname = kind, "repro/pack.json"
        tar.addfile(info)
    with pytest.raises(PackError, match="refuses"):
        verify(tmp_path / "bad.tar.gz")


def test_not_a_tar_file(tmp_path):
    (tmp_path / "x.tar.gz").write_bytes(b"nope")
    with pytest.raises(PackError, match="not a readable pack"):
        verify(tmp_path / "x.tar.gz")
