"""`xlatools bisect passes` on CPU with real jax: the predicate "the optimised module holds a fusion made
by the fusion pass" (`calls=%fused_computation`, the fusion pass's naming) depends on a real pass of
the CPU pipeline, so ddmin over the passes of the per-pass dump must name `fusion`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import manifest

PROGRAM = """import jax, jax.numpy as jnp
f = jax.jit(lambda x: jnp.sin(x) * 2.0 + jnp.cos(x))
print(f(jnp.arange(8.0)).sum())
"""


def test_ddmin_names_the_fusion_pass_and_shows_its_hlo(xl, tmp_path):
    (tmp_path / "fuse.py").write_text(PROGRAM)
    args = (
        "bisect",
        "passes",
        "--match",
        "calls=%fused_computation",
        "--match-in",
        "dump:after_optimizations",
        "--confirm",
        "1",
        "--json",
        "--",
        "fuse.py",
    )
    done = xl(*args)
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    result = data["result"]
    assert [p["name"] for p in result["passes"]] == ["fusion"]
    assert result["passes"][0]["pipelines"] == ["HLO_passes_after_layout_assignment"]
    assert result["confirm"] == {"first_bad": ["bad", "bad"], "last_good": ["good", "good"]} and not result["flaky"]
    names = {c["key"] for c in data["candidates"]}
    assert {"fusion", "layout-assignment", "copy-insertion"} <= names  # taken from the real per-pass dump
    [hlo] = [h for h in result["hlo"] if h["module"] == "jit__lambda"]
    diff = Path(hlo["diff"]).read_text()
    assert "+" in diff and " fusion(" in diff and "after_fusion" in hlo["after"]
    folder = Path(data["folder"])
    bad = manifest((folder / "first-bad").resolve())
    good = manifest((folder / "last-good").resolve())
    assert "--xla_disable_hlo_passes=fusion" in good["xla_flags"]
    assert not any("disable_hlo_passes" in f for f in bad["xla_flags"])
    assert sum(1 for s in data["steps"] if s["role"] == "ddmin") <= 8

    again = xl(*args[:-3], "--", "fuse.py")  # finished: the answer again, nothing re-run
    assert again.returncode == 0 and "culprit pass (ddmin):\n  fusion" in again.stdout and "step 1:" not in again.stderr


def test_passes_refuses_a_test_that_is_already_good(xl, tmp_path):
    (tmp_path / "fuse.py").write_text(PROGRAM)
    done = xl(
        "bisect",
        "passes",
        "--match",
        "no-such-text-anywhere",
        "--match-in",
        "dump:after_optimizations",
        "--",
        "fuse.py",
    )
    assert done.returncode == 2 and "nothing to bisect" in done.stderr and "Traceback" not in done.stderr


TWO_MODULES = """import jax, jax.numpy as jnp


@jax.jit
def fused(x):
    return jnp.sin(x) * 2.0 + jnp.cos(x)


@jax.jit
def plain(x):
    return x


x = jnp.arange(8.0)
print(fused(x).sum(), plain(x).sum())
"""


def test_passes_with_module_looks_for_the_match_in_that_modules_files_only(xl, tmp_path):
    # jit_fused's optimised module holds the fusion, jit_plain's does not: with --module jit_plain the baseline
    # is not bad (the match in jit_fused's files used to count). Cost: one dumping run (about 5 s).
    (tmp_path / "two.py").write_text(TWO_MODULES)
    done = xl(
        "bisect",
        "passes",
        "--module",
        "jit_plain",
        "--match",
        "calls=%fused_computation",
        "--match-in",
        "dump:after_optimizations",
        "--",
        "two.py",
    )
    assert done.returncode == 2 and "nothing to bisect" in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
