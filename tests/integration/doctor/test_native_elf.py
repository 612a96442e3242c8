"""The native-library check against the real dynamic loader: libraries built with gcc and
version scripts, loaded for real with ctypes in a child process; doctor's verdict must agree."""

from __future__ import annotations

import subprocess
import sys

import pytest
from tests.helpers import build_versioned_lib

from xlatools.doctor.checks_native import check_native
from xlatools.doctor.native import read_elf
from xlatools.doctor.runner import system_dirs

NEW = ["GLIBCXX_3.4", "GLIBCXX_3.4.20", "GLIBCXX_3.4.29"]
OLD = ["GLIBCXX_3.4", "GLIBCXX_3.4.20"]


def loads(library, env: dict) -> subprocess.CompletedProcess:
    """Load `library` in a fresh process, as an extension module would be loaded."""
    return subprocess.run(
        [sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(library)!r})"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    root = tmp_path_factory.mktemp("elf")
    build_versioned_lib(root / "old", "libfakecxx.so.6", OLD)
    # DT_RUNPATH (gcc's default today): LD_LIBRARY_PATH is searched first.
    build_versioned_lib(
        root / "runpath",
        "libfakecxx.so.6",
        NEW,
        consumer_needs="GLIBCXX_3.4.29",
        consumer_flags=("-Wl,-rpath,$ORIGIN", "-Wl,--enable-new-dtags"),
    )
    # DT_RPATH (old style): searched before LD_LIBRARY_PATH.
    build_versioned_lib(
        root / "rpath",
        "libfakecxx.so.6",
        NEW,
        consumer_needs="GLIBCXX_3.4.29",
        consumer_flags=("-Wl,-rpath,$ORIGIN", "-Wl,--disable-new-dtags"),
    )
    return root


def test_elf_facts_read_with_pyelftools(libs):
    consumer = read_elf(str(libs / "runpath" / "libconsumer.so"))
    assert consumer.version_needs == {"libfakecxx.so.6": ("GLIBCXX_3.4.29",)}
    assert consumer.runpath == (str(libs / "runpath"),) and consumer.rpath == ()  # $ORIGIN expanded
    assert read_elf(str(libs / "rpath" / "libconsumer.so")).rpath == (str(libs / "rpath"),)
    assert read_elf(str(libs / "old" / "libfakecxx.so.6")).version_defs == tuple(OLD)
    assert read_elf(str(libs / "old" / "lib.c")) is None


@pytest.mark.parametrize(
    "kind, old_first, verdict",
    [
        ("runpath", True, "fail"),  # LD_LIBRARY_PATH beats DT_RUNPATH: the old library is loaded
        ("runpath", False, "ok"),
        ("rpath", True, "ok"),  # DT_RPATH beats LD_LIBRARY_PATH
    ],
)
def test_verdict_agrees_with_the_real_loader(libs, kind, old_first, verdict):
    env = {"LD_LIBRARY_PATH": str(libs / "old") if old_first else ""}
    consumer = libs / kind / "libconsumer.so"
    [check] = check_native([str(consumer)], env, system_dirs())
    assert check.status == verdict, check
    real = loads(consumer, env)
    assert (real.returncode == 0) == (verdict == "ok"), real.stderr
    if verdict == "fail":
        assert "GLIBCXX_3.4.29' not found" in real.stderr
        assert f"{libs / 'old'}/libfakecxx.so.6 (via LD_LIBRARY_PATH) provides up to GLIBCXX_3.4.20" in check.evidence
