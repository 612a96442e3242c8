"""GPU machines often ship CUDA's cuda-gdb and no gdb: xlatools finds it where CUDA installs it.

Debian's gdb stands in for cuda-gdb under its layout and name ($CUDA_HOME/bin/cuda-gdb, a copy:
the real wrapper picks its binary by its own name), with a PATH that has no gdb.
Cost: doctor about 5 s, a crash about 5 s."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.integration.debug.test_native_crashes import SEGFAULT


@pytest.fixture
def cuda_env(gdb, tmp_path) -> dict[str, str]:
    cuda = tmp_path / "cuda"
    (cuda / "bin").mkdir(parents=True)
    shutil.copy2(gdb, cuda / "bin" / "cuda-gdb")
    empty = tmp_path / "no-gdb-bin"
    empty.mkdir()
    (empty / "sh").symlink_to("/bin/sh")  # what a shell-less PATH still needs; no gdb in it
    return {"CUDA_HOME": str(cuda), "PATH": str(empty), "XLATOOLS_GDB": ""}


def test_doctor_names_cuda_gdb_when_there_is_no_gdb(xl, cuda_env):
    checks = {c["name"]: c for c in json.loads(xl("doctor", "--json", env=cuda_env).stdout)["checks"]}
    assert checks["gdb"]["status"] == "ok", checks["gdb"]
    assert (
        f"{cuda_env['CUDA_HOME']}/bin/cuda-gdb (cuda-gdb of $CUDA_HOME (no gdb on PATH))" in checks["gdb"]["evidence"]
    )
    gone = json.loads(xl("doctor", "--json", env={**cuda_env, "CUDA_HOME": "/nonexistent"}).stdout)["checks"]
    found = next(c for c in gone if c["name"] == "gdb")
    if not Path("/usr/local/cuda/bin/cuda-gdb").exists():
        assert found["status"] == "warn" and "no cuda-gdb in $CUDA_HOME/bin" in found["evidence"]


def test_crash_capture_uses_cuda_gdb(xl, cuda_env, tmp_path):
    """A native crash's backtrace comes from cuda-gdb (`debug run --break-pass` under cuda-gdb is checked on a
    real GPU machine by scripts/gpu_check/operations.py: about a minute under gdb here)."""
    (tmp_path / "segv.py").write_text(SEGFAULT)
    done = xl("run", "segv.py", "--json", timeout=600, env=cuda_env)
    assert done.returncode == 1, done.stderr
    bundle = Path(json.loads(done.stdout)["bundle"])
    text = (bundle / "native-backtrace.txt").read_text()
    assert "#0 " in text and "string_at" in text
