"""`xlatools inspect` on real bundles: the run first, then modules with the line that created each."""

from __future__ import annotations

import json

# `layer`, not `stage`: a module jit_stage reads as jax's lax.stage helper, which inspect and replay leave out
PROGRAM = """import jax
import jax.numpy as jnp


def make(k):
    def layer(x):
        return jnp.sin(x) * k
    return jax.jit(layer)


def main():
    x = jnp.ones((4,))
    a = make(2.0)(x)
    b = make(3.0)(x)
    c = make(4.0)(x)
    print(float((a + b + c).sum()))


if __name__ == "__main__":
    main()
"""


def _stages(rows: list[str]) -> list[list[str]]:
    """The dump table's rows of jit_layer (they start with the module id; the metrics table's with #N)."""
    return [row.split() for row in rows if " jit_layer " in f" {row} " and row.split()[0].isdigit()]


def test_inspect_shows_the_run_and_where_each_module_came_from(xl, tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM)
    ran = xl("run", "prog.py", "--dump")
    assert ran.returncode == 0, ran.stderr
    result = xl("inspect", "artifacts/latest")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("run:       ok (exit 0)")
    assert "command:   xlatools run prog.py --dump" in lines and any(ln.startswith("jax:       jax 0.") for ln in lines)
    assert "presets:   dump:hlo" in lines and any(ln.startswith("XLA_FLAGS: --xla_dump_hlo_as_text") for ln in lines)
    assert "source" in next(ln for ln in lines if ln.startswith("id "))
    stages = _stages(lines)
    assert [row[2] for row in stages] == ["prog.py:13", "prog.py:14", "prog.py:15"], result.stdout

    ambiguous = xl("inspect", "artifacts/latest", "--module", "jit_layer")
    assert ambiguous.returncode == 2 and "Traceback" not in ambiguous.stderr
    first = stages[0][0]
    assert f"3 modules are named 'jit_layer': {first} (created at prog.py:13)" in ambiguous.stderr
    assert f"--module {first}" in ambiguous.stderr
    picked = xl("inspect", "artifacts/latest", "--module", stages[1][0])
    assert picked.returncode == 0 and "prog.py:14" in picked.stderr

    data = json.loads(xl("inspect", "artifacts/latest", "--json").stdout)
    assert data["run"]["status"] == "ok" and data["run"]["presets"] == ["dump:hlo"]
    sources = [m["source"] for m in data["modules"] if m["name"] == "jit_layer"]
    assert [(s["file"], s["line"], s["function"]) for s in sources] == [
        (str(tmp_path / "prog.py"), n, "main") for n in (13, 14, 15)
    ]
    # jax's helper modules (jnp.ones, .sum) are left out as replay leaves them out, and named; --all lists them
    assert data["helpers_left_out"] and all(name.split()[1] not in result.stdout for name in data["helpers_left_out"])
    assert "left out as jax helper modules" in result.stderr and "--all" in result.stderr
    every = json.loads(xl("inspect", "artifacts/latest", "--all", "--json").stdout)
    assert len(every["modules"]) == len(data["modules"]) + len(data["helpers_left_out"])
    assert every["helpers_left_out"] == []

    plain = xl("inspect", "artifacts/latest/xla_dump/")
    assert plain.returncode == 0 and "run:" in plain.stdout  # the bundle's dump folder still knows its run
    (tmp_path / "copy").mkdir()
    for path in (tmp_path / "artifacts" / "latest" / "xla_dump").glob("*.txt"):
        (tmp_path / "copy" / path.name).write_text(path.read_text())
    copied = xl("inspect", "copy")
    assert copied.returncode == 0 and "plain XLA dump folder" in copied.stderr and "run:" not in copied.stdout
    assert [row[2] for row in _stages(copied.stdout.splitlines())] == ["prog.py:13", "prog.py:14", "prog.py:15"]


def test_inspect_a_bundle_without_a_dump_shows_the_run(xl, tmp_path):
    (tmp_path / "prog.py").write_text("print('hi')\n")
    assert xl("run", "prog.py").returncode == 0
    result = xl("inspect", "artifacts/latest")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("run:       ok (exit 0)") and "no xla_dump/" in result.stderr


def test_source_lines_on_old_jax(xl, tmp_path, old_jax_python):
    (tmp_path / "prog.py").write_text(PROGRAM)
    assert xl("run", "prog.py", "--dump", "--python", old_jax_python).returncode == 0
    result = xl("inspect", "artifacts/latest")
    assert "jaxlib 0.4.30" in result.stdout
    # 0.4.30 records only the op's own line (inside `layer`), the same for all three.
    assert [row[2] for row in _stages(result.stdout.splitlines())] == ["prog.py:7"] * 3, result.stdout


COMPILE_ONLY = """import jax
import jax.numpy as jnp
import numpy as np

jax.jit(lambda x: jnp.sin(x) * 2).lower(np.ones((4,), np.float32)).compile()  # compiled, never run: no snapshot
"""


def test_snapshots_asked_and_none_written_is_a_warning_everywhere(xl, tmp_path):
    """A requested dump kind that produced nothing: the run's output, summary, manifest and inspect say so."""
    (tmp_path / "prog.py").write_text(COMPILE_ONLY)
    ran = xl("run", "prog.py", "--preset", "dump:hlo", "--preset", "dump:snapshots")
    assert ran.returncode == 0, ran.stderr
    assert "--xla_dump_hlo_snapshots was asked for and the dump holds no execution snapshots" in ran.stderr
    bundle = tmp_path / "artifacts" / "latest"
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert len(manifest["warnings"]) == 1 and "--record-inputs" in manifest["warnings"][0]
    assert "warning: --xla_dump_hlo_snapshots" in (bundle / "summary.txt").read_text()
    shown = xl("inspect", "artifacts/latest")
    assert shown.returncode == 0 and "warning:   --xla_dump_hlo_snapshots" in shown.stdout
