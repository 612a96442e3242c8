"""`xlatools triage` where reduction cannot proceed (issue 40), for real on CPU: jaxlib 0.4.26's oneDNN softmax
rewrite (all ones; 0.4.21 is right). The module's HLO text, which reduction edits, compiles 24 instructions without
the rewrite, not the run's 2: reduce cannot reduce it. The triage says so and hands over the smallest form that
still reproduces, the module itself as its StableHLO (jax_ir/, kept by the dumping run), which the diff stage
replayed against 0.4.21 as a mismatch; isolation (HLO text too) is skipped; ISSUE.md gives the replay command.

Cost with the release environments cached (jax 0.4.21 and 0.4.26 in XLATOOLS_TEST_BISECT_CACHE): two dumping runs,
the diff and one replay, one reduce check (41 s on 2 shared cores at load average 5; releases and passes skipped).
Made afresh, each environment is one uv install (about 100 MB of jaxlib wheel the first time)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_triage_hands_over_the_stablehlo_when_the_text_no_longer_reproduces(bx, tmp_path):
    shutil.copy(HERE / "check_onednn_softmax.py", tmp_path / "check.py")
    command = ["triage", "--good", "0.4.21", "--bad", "0.4.26", "--skip", "releases", "--skip", "passes"]
    done = bx(*command, "--json", "--", "check.py")
    assert done.returncode == 0, done.stderr[-4000:]
    state = json.loads(done.stdout)
    stages = {s["stage"]: s for s in state["stages"]}
    assert stages["diff"]["status"] == "done" and state["diff"]["module_name"] == "jit__lambda_"
    assert stages["reduce"]["status"] == "done", stages["reduce"]
    handed = state["reduce"]
    stablehlo = Path(handed["handed_over"])  # jax 0.4.26: jax_ir<N>_<module>_compile.mlir
    assert stablehlo.parent == Path(state["dumps"]["first_bad"]["bundle"]) / "jax_ir" and stablehlo.is_file()
    assert stablehlo.name.endswith("_jit__lambda__compile.mlir"), handed
    note = handed["note"]
    assert "no longer reproduces (it compiled a different module than the run" in note
    assert "the module itself, as its StableHLO" in note and "elements differ" in note
    assert stages["isolate"]["status"] == "skipped" and "StableHLO was handed over" in stages["isolate"]["reason"]
    issue = (Path(state["folder"]) / "ISSUE.md").read_text()
    assert f"- Minimal module: {note}" in issue
    assert f"{stablehlo.name} --python" in issue and "--reference-python" in issue
