"""`xlatools triage` of a real crash regression, on CPU: jaxlib 0.10.2 dies by SIGSEGV in a YNN library fusion
(made by dot-library-rewriter) running an f32 multiply-and-reduce of rank-7 operands with a size-1 dimension
(jax-ml/jax#40412); jaxlib 0.10.1 runs it.

Cost with the release environments cached (jax 0.10.1 and 0.10.2 in XLATOOLS_TEST_BISECT_CACHE, about 600 MB
each; made once with uv): the releases stage is skipped (the two are neighbours); two dumping runs, the replay of
the modules (one crash captured with gdb), 5 pass bisection steps, a reduction of 8 instructions and its pack's
replay (gdb again). Measured: 899 s on 2 cores at load average 14-18 from other work (dumps 169 s, diff 184 s,
passes 278 s, reduce 261 s); an idle machine was not available to measure, expect a third of that."""

from __future__ import annotations

import json
import re
from pathlib import Path

YNN_CRASH = """\
import jax, jax.numpy as jnp

shape = (3, 1, 2, 2, 8, 8, 8)  # rank 7, a size-1 dimension that is not the reduced one
u = jax.random.normal(jax.random.PRNGKey(0), shape, dtype=jnp.float32)
v = jax.random.normal(jax.random.PRNGKey(1), shape, dtype=jnp.float32)
print(jax.jit(lambda a, b: jnp.sum(a * b, axis=3))(u, v).shape)
"""


def test_a_crash_regression_is_triaged_to_an_issue_with_signal_frames_pass_and_module(bx, tmp_path):
    (tmp_path / "ynn_crash.py").write_text(YNN_CRASH)
    command = ["triage", "--good", "0.10.1", "--bad", "0.10.2", "--skip", "releases", "--json", "--", "ynn_crash.py"]
    done = bx(*command, timeout=2400)
    assert done.returncode == 0, done.stderr[-4000:]
    state = json.loads(done.stdout)
    stages = {s["stage"]: s for s in state["stages"]}
    assert [s["status"] for s in state["stages"]] == ["skipped"] + ["done"] * 6, stages
    crash = state["diff"]["crash"]
    assert (crash["signal"], crash["phase"], crash["reference"]) == ("SIGSEGV", "run", "ok")
    assert state["diff"]["module_name"] == "jit__lambda" and "slinky" in crash["frames"][0]
    assert "crashes on jax 0.10.2 (SIGSEGV while running) and runs on jax 0.10.1" in stages["diff"]["reason"]
    assert state["passes"]["culprits"] == ["dot-library-rewriter"]
    reduced = state["reduce"]
    assert reduced["instructions_after"] <= 8 and not reduced["flaky"]
    assert "nothing to isolate in a crash" in stages["isolate"]["reason"]

    folder = Path(state["folder"])
    issue = (folder / "ISSUE.md").read_text()
    assert issue.startswith("# jaxlib 0.10.2 (CPU, pass dot-library-rewriter): a crash (SIGSEGV while running)")
    for part in (
        "jaxlib 0.10.1 runs it",
        "module `jit__lambda` dies by SIGSEGV while running",
        "slinky::",
        "native-backtrace.txt",
        "`dot-library-rewriter`",
        "### Minimal HLO",
        "the same top frames",
        "xlatools triage --good 0.10.1 --bad 0.10.2",
        "dies by SIGSEGV while running):",
    ):
        assert part in issue, part
    hlo = (Path(reduced["reduced"])).read_text()
    assert "multiply" in hlo or "reduce" in hlo
    links = re.findall(r"\]\(([^)]+)\)", issue)
    assert all((folder / link).exists() for link in links), links
