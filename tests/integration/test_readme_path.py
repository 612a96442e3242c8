"""The README's path, as a new user follows it: every `console` block of README.md, run in order in one fresh
folder (the quick start, then inspect, replay, repro pack/run, diff and report of its bundle), each command's
exit code (`# exit N` on its line, else 0) and the output lines the README shows checked against what it prints.

README lines are compared after masking what changes between runs: any word with a `/` (paths, timings like
`0.1/0.1`), hex digests, numbers; `...` skips lines, and a line ending in `...` is a prefix. The reduce of the
NaN example is checked where it runs (tests/integration/reduce/test_reduce_cli.py, against the README's numbers).
Cost: about 40 s on 2 cores (one run, a replay of its six modules, a pack of one and its replay)."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

from tests.helpers import require, run_cli

README = Path(__file__).resolve().parents[2] / "README.md"


def console_steps(text: str) -> list[tuple[list[str], int, list[str]]]:
    """(argv after `xlatools`, expected exit code, the output lines shown) of every `$ xlatools` command in the
    README's console blocks, in order."""
    steps: list[tuple[list[str], int, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        for line in block.splitlines():
            if line.startswith("$ xlatools "):
                command, _, comment = line[2:].partition("#")
                code = re.search(r"exit (\d+)", comment)
                steps.append((shlex.split(command)[1:], int(code.group(1)) if code else 0, []))
            elif steps:
                steps[-1][2].append(line)
    return steps


def mask(line: str) -> str:
    words = []
    for word in line.split():
        if "/" in word:
            words.append("P")
            continue
        word = re.sub(r"\b[0-9a-f]*\d[0-9a-f]*[a-f][0-9a-f]*\b|\b[0-9a-f]*[a-f][0-9a-f]*\d[0-9a-f]*\b", "H", word)
        words.append(re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", word))
    return " ".join(words)


def shown_lines_missing(shown: list[str], printed: str) -> list[str]:
    lines = [mask(line) for line in printed.splitlines()]
    missing = []
    for line in shown:
        if line.strip() in ("", "..."):
            continue
        want = mask(line.removesuffix("..."))
        if not any(got == want or (line.endswith("...") and got.startswith(want)) for got in lines):
            missing.append(line)
    return missing


def test_mask_keeps_words_and_drops_what_changes():
    assert (
        mask("ok (exit 0, 0.891 s)  bundle: ./artifacts/20261123T035336Z-smoke-0a85bf") == "ok (exit N, N s) bundle: P"
    )
    assert mask("0000 jit_f  ok  3c4100c95c2d  0.0383  9.8e-05/9.8e-05  -") == "N jit_f ok H N P -"
    assert shown_lines_missing(["a 1", "...", "b ..."], "a 22\nb c d\n") == []
    assert shown_lines_missing(["a 1", "c"], "a 22\n") == ["c"]


def test_the_readme_commands_work_as_written(tmp_path, probe_cache):
    require(
        "jax", importlib.util.find_spec("jax") is not None, "pip install -e '.[jax]' (jax + jaxlib in this interpreter)"
    )
    steps = console_steps(README.read_text())
    shown_commands = [" ".join(argv) for argv, _, _ in steps]
    for wanted in (
        "run --dump",
        "inspect artifacts/latest",
        "replay artifacts/latest",
        "repro pack artifacts/latest",
        "repro run",
        "diff artifacts/latest",
        "report artifacts/latest",
    ):
        assert any(c.startswith(wanted) for c in shown_commands), (
            f"no `xlatools {wanted}` in the README's console blocks"
        )
    env = {"XLATOOLS_CACHE_DIR": str(probe_cache), "JAX_PLATFORMS": "cpu"}
    for argv, code, shown in steps:
        done = run_cli(*argv, cwd=tmp_path, env=env, timeout=300)
        said = f"$ xlatools {shlex.join(argv)}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
        assert done.returncode == code, said
        assert "Traceback" not in done.stderr, said
        missing = shown_lines_missing(shown, done.stdout + "\n" + done.stderr)
        assert not missing, f"README lines not printed: {missing}\n{said}"
    # `latest` is still the run after the replay, the pack and its replay; each replay has its own link
    latest = (tmp_path / "artifacts" / "latest").resolve()
    assert latest.name.split("-")[1] == "smoke" and (tmp_path / "artifacts" / "latest-replay").is_symlink()
    assert (tmp_path / "report.html").is_file() and (tmp_path / "repro.tar.gz").is_file()
    typo = run_cli("report", "artifacts/latest", "-o", "nonexistent/x.html", cwd=tmp_path, env=env)
    assert typo.returncode == 2 and "does not exist" in typo.stderr and not (tmp_path / "nonexistent").exists()


def test_build_dry_run_without_a_tree_points_to_what_shows_the_plan(tmp_path):
    done = run_cli("build", "--profile", "dbg-cuda", "--dry-run", cwd=tmp_path)
    assert done.returncode == 2 and "no build/build.py" in done.stderr, done.stderr
    assert "xlatools bazelrc --profile dbg-cuda --build-command" in done.stderr and "Traceback" not in done.stderr
    line = run_cli("bazelrc", "--profile", "dbg-cuda", "--build-command", cwd=tmp_path)
    assert line.returncode == 0 and "--cuda_compute_capabilities=sm_90" in line.stdout, line.stderr
