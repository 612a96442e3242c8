"""`xlatools bisect passes` on CPU with real jax: the predicate "the optimised module holds a fusion made
by the fusion pass" (`calls=%fused_computation`, the fusion pass's naming) depends on a real pass of
the CPU pipeline, so the search over the passes of the per-pass dump must name `fusion`. A step whose
disabled passes abort XLA (a real failed CHECK without copy-insertion) is a skip, and an answer that is
a set of three passes is found."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import manifest

PROGRAM = """import jax, jax.numpy as jnp
f = jax.jit(lambda x: jnp.sin(x) * 2.0 + jnp.cos(x))
print(f(jnp.arange(8.0)).sum())
"""


def test_the_search_names_the_fusion_pass_and_shows_its_hlo(xl, tmp_path):
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
    done = xl(*args, timeout=900)
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
    assert sum(1 for s in data["steps"] if s["role"] == "search") <= 6
    assert [n["name"] for n in result["left_enabled"]] == ["copy-insertion"]  # the CPU table: no step disables it
    assert not any("copy-insertion" in s["key"] for s in data["steps"])

    again = xl(*args[:-3], "--", "fuse.py")  # finished: the answer again, nothing re-run
    assert again.returncode == 0 and "culprit pass (prefix search):\n  fusion" in again.stdout
    assert "step 1:" not in again.stderr


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


# The optimised jit_step holds a fusion (the dot library's __ynn_fusion and a loop fusion of the tanh chain):
# bad. Without copy-insertion jaxlib 0.10.2 aborts (an output repeats a parameter: `Check failed ... Unexpected
# duplicate`, SIGABRT). No fusion is left only when dot-library-rewriter, fusion and fusion-wrapper are all
# disabled; fusion-wrapper changes nothing in the baseline (fusion fused everything) and takes over when fusion
# is off. The flax + optax step has the same answer and crash, at about 30 s a step instead of 3.
STEP = """import sys

import jax
import jax.numpy as jnp


@jax.jit
def step(w, x):
    return jnp.tanh(x @ w) * 2.0 + 1.0, x, x


w = jnp.ones((8, 8)) / 8
x = jnp.arange(32.0).reshape(4, 8)
text = step.lower(w, x).compile().as_text()
print(step(w, x)[0].sum())
if " fusion(" in text:
    sys.exit("the optimised step holds a fusion")
"""


def test_a_crash_with_passes_disabled_is_a_skip_and_the_answer_is_a_set(xl, tmp_path):
    (tmp_path / "step.py").write_text(STEP)
    args = (
        "bisect",
        "passes",
        "--module",
        "jit_step",
        "--include-pass",  # the CPU table would leave it enabled: the search must find it breaking the program
        "copy-insertion",
        "--exclude-pass",  # two passes that play no part, left out to keep the test short
        "layout-assignment",
        "--exclude-pass",
        "shape-canonicalizer",
        "--json",
        "--",
        "step.py",
    )
    done = xl(*args, timeout=1200)  # about 10 steps of 3-4 s of CPU each; a loaded machine takes far longer
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    result = data["result"]
    assert [p["name"] for p in result["passes"]] == ["dot-library-rewriter", "fusion", "fusion-wrapper"]
    left = {n["name"]: n["why"] for n in result["left_enabled"]}
    assert left["layout-assignment"] == left["shape-canonicalizer"] == "--exclude-pass"
    assert left["copy-insertion"] == "disabling it breaks the program"
    assert [n["name"] for n in result["added"]] == ["fusion-wrapper"]
    broken = [s for s in data["steps"] if "copy-insertion" in s["key"].split(",")]
    assert broken and all(s["outcome"] == "skip" and s["detail"]["exit_code"] == 134 for s in broken)
    assert all("break the program: crashed (SIGABRT, exit 134): Check failed" in s["reason"] for s in broken)
    assert "BAD (exit 134" not in done.stderr and "disable 3: dot-library-rewriter,fusion,fusion-wrapper" in done.stderr
    good = manifest((Path(data["folder"]) / "last-good").resolve())
    assert "--xla_disable_hlo_passes=dot-library-rewriter,fusion,fusion-wrapper" in good["xla_flags"]
    assert len(data["steps"]) <= 11
    assert any(h["pass"] == "fusion-wrapper" and "after_fusion-wrapper" in h["after"] for h in result["hlo"])

    plan = xl(*args[:-3], "--dry-run", "--", "step.py")  # the recorded baseline's candidates; nothing runs
    assert plan.returncode == 0, plan.stderr[-2000:]
    assert "candidates (5, from the recorded baseline): layout-assignment, shape-canonicalizer, " in plan.stdout
    assert "left enabled: layout-assignment (--exclude-pass)" in plan.stdout
    assert "disabled in the search (3): dot-library-rewriter, fusion, copy-insertion" in plan.stdout
    assert "[bisect] step" not in plan.stderr

    # Without --include-pass the table leaves copy-insertion enabled: the same folder searches again, and every
    # set it asks about is recorded already.
    again = xl(*[a for a in args if a not in ("--include-pass", "copy-insertion", "--json")])
    assert again.returncode == 0, again.stderr[-2000:]
    assert "searching again, reusing the" in again.stderr and "running the test" not in again.stderr
    assert "culprit passes (prefix search):\n  dot-library-rewriter" in again.stdout
    assert "  copy-insertion: needed on cpu: buffer assignment needs its copies" in again.stdout

    (tmp_path / "step.py").write_text(STEP + "# edited\n")  # the dry run says a fresh bisection would start
    plan = xl(*args[:-3], "--dry-run", "--", "step.py")
    assert plan.returncode == 0 and "(nothing recorded)" in plan.stdout, plan.stderr[-2000:]
    assert f"the test changed since it was recorded ({tmp_path / 'step.py'} (program): content differs)" in plan.stdout
