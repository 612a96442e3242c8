"""A real one-node Slurm cluster for the session (scripts/slurm-cluster.sh: munged, slurmctld, slurmd
with their files in a temp folder), stopped at the end. Skipped with the reason when it cannot start;
XLATOOLS_REQUIRE_SLURM=1 (CI) turns that into a failure."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.helpers import require

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "slurm-cluster.sh"


@pytest.fixture(scope="session")
def slurm(tmp_path_factory) -> dict[str, str]:
    """The environment that points the Slurm commands at the test cluster ({"SLURM_CONF": ...})."""
    missing = [tool for tool in ("munged", "slurmctld", "slurmd", "sbatch") if shutil.which(tool) is None]
    require(
        "slurm", not missing, f"{', '.join(missing)} not found (apt-get install slurmctld slurmd slurm-client munge)"
    )
    require("slurm", os.geteuid() == 0, "the test cluster runs as root (SlurmUser=root)")
    folder = tmp_path_factory.mktemp("slurm")
    started = subprocess.run([str(SCRIPT), "start", str(folder)], capture_output=True, text=True, timeout=60)
    try:
        require("slurm", started.returncode == 0, f"the test cluster did not start: {started.stderr.strip()[-500:]}")
        yield {"SLURM_CONF": str(folder / "slurm.conf")}
    finally:
        subprocess.run([str(SCRIPT), "stop", str(folder)], capture_output=True, timeout=60)


from tests.integration.bisect.conftest import bisect_cache  # noqa: E402,F401  (the release environments, shared)
