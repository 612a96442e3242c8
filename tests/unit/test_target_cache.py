"""The one target cache (run, lower, replay and doctor share it): answers come back as they were
stored, and go stale when the interpreter, the frontend's package or jax's version file changes."""

from __future__ import annotations

import os
import sys

from xlatools.run.target import ProbedInterpreter
from xlatools.run.target_cache import CACHE_VERSION, TargetCache


def _site(tmp_path):
    """A jaxlib package and a jax version file, as the probe reports their paths."""
    (tmp_path / "jaxlib").mkdir()
    (tmp_path / "jax").mkdir()
    (tmp_path / "jaxlib" / "__init__.py").write_text("")
    (tmp_path / "jax" / "version.py").write_text("_version = '0.10.2'\n")
    return ProbedInterpreter(
        python=sys.executable,
        jax="0.10.2",
        jaxlib="0.10.2",
        jaxlib_origin=str(tmp_path / "jaxlib" / "__init__.py"),
        jax_version_file=str(tmp_path / "jax" / "version.py"),
        plugins=["jax-cuda12-plugin"],
        plugin_versions={"jax-cuda12-plugin": "0.10.2"},
        shared_objects=["/x/libjax_common.so"],
        devices=[{"id": 0, "platform": "cpu", "kind": "cpu"}],
    )


def _later(path) -> None:
    info = os.stat(path)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000))


def test_answers_round_trip_and_go_stale_with_jax_or_jaxlib(tmp_path, monkeypatch):
    monkeypatch.setenv("XLATOOLS_CACHE_DIR", str(tmp_path / "cache"))
    target = _site(tmp_path)
    cache = TargetCache.load(sys.executable)
    cache.remember_target({"devices:jax:auto"}, target)
    cache.remember_flags("flags", {"xla_dump_to": True, "xla_bogus": False}, target.stamp_files)
    again = TargetCache.load(sys.executable)
    assert again.targets["devices:jax:auto"] == target and again.flags["flags"] == {
        "xla_dump_to": True,
        "xla_bogus": False,
    }
    assert again.targets["devices:jax:auto"].devices[0].platform == "cpu"
    _later(target.jax_version_file)  # jax reinstalled alone: the pair may not import any more
    assert TargetCache.load(sys.executable).targets == {}
    cache = TargetCache.load(sys.executable)
    cache.remember_target({"devices:jax:auto"}, target)
    _later(target.jaxlib_origin)
    assert TargetCache.load(sys.executable).flags == {} and TargetCache.load(sys.executable).targets == {}


def test_a_damaged_or_older_cache_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("XLATOOLS_CACHE_DIR", str(tmp_path / "cache"))
    cache = TargetCache.load(sys.executable)
    cache.remember_target({"devices:jax:auto"}, _site(tmp_path))
    text = cache.path.read_text()
    for damaged in (
        "{not json",
        "[]",
        text.replace(f'"cache_version": {CACHE_VERSION}', '"cache_version": 3'),
        text.replace('"targets": {', '"targets": {"x": 1, '),
    ):
        cache.path.write_text(damaged)
        assert TargetCache.load(sys.executable).targets == {}


def test_one_interpreter_is_one_target_whatever_its_spelling(tmp_path, monkeypatch):
    """`.venv/bin/python`, its `python3` (found on PATH) and the venv folder are one target: probed and cached once.
    A link outside a venv is the file it leads to; a venv's link is kept (the base interpreter lacks its packages)."""

    from xlatools.run.target import resolve_python

    base = os.path.realpath(sys.executable)
    bin_ = tmp_path / "venv" / "bin"
    bin_.mkdir(parents=True)
    (tmp_path / "venv" / "pyvenv.cfg").write_text(f"home = {os.path.dirname(base)}\n")
    (bin_ / "python").symlink_to(base)
    (bin_ / "python3").symlink_to("python")
    (bin_ / "python3.11").symlink_to("python")
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{os.environ['PATH']}")
    spellings = [str(bin_ / "python3.11"), str(bin_ / "python3"), str(tmp_path / "venv"), "python3", "python3.11"]
    assert {resolve_python(s) for s in spellings} == {str(bin_ / "python")}
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "py").symlink_to(base)
    assert resolve_python(str(tmp_path / "elsewhere" / "py")) == base
