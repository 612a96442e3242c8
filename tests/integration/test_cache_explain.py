"""Why did it compile again (issue 42), on real jaxlibs (0.4.30, this interpreter's 0.10.2, 0.12): one program
that compiles again on purpose (tests/fixtures/cache/recompiles.py) run twice per jaxlib into one shared
persistent-cache folder, then once each with changed XLA flags, another cache folder, two processes, a read-only
and a full cache folder, and once compiling every function once. Every deliberate recompile and miss must be
named by its cause: a static argument, a weak type, a shape, a new function object, a constant captured at trace
time, the minimum compile time, another jaxlib, XLA flags, the cache folder, the process index, a read-only and
a full cache.

Cost: 12 runs (one of two processes), about 60 s on 2 cores."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.helpers import interpreter_from_env, manifest, require, run_cli

PROGRAM = Path(__file__).resolve().parents[1] / "fixtures" / "cache" / "recompiles.py"
VERSIONS = {
    "0.4.30": ("XLATOOLS_OLD_JAX_PYTHON", "old_jax", "a Python with jax/jaxlib 0.4.30"),
    "0.12": ("XLATOOLS_NEW_JAX_PYTHON", "new_jax", "a Python 3.12 with jax/jaxlib 0.12.x"),
}


class Lab:
    """One folder, one shared persistent cache, the runs made so far (in order) and the CLI."""

    def __init__(self, work: Path, probe_cache: Path):
        self.work, self.cache, self.made = work, work / "jax-cache", {}
        self.env = {
            "XLATOOLS_CACHE_DIR": str(probe_cache),
            "XDG_CONFIG_HOME": str(work / "cfg"),
            "JAX_PLATFORMS": "cpu",
        }
        shutil.copy(PROGRAM, work)

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        return run_cli(*args, cwd=self.work, env=self.env, timeout=300)

    def run(self, name: str, python: str, *extra: str, cache: Path | str | None = None, args: tuple = ()) -> Path:
        """The bundle of `xlatools run recompiles.py` (made once per name; `cache` "": no cache folder)."""
        if name not in self.made:
            folder = self.cache if cache is None else cache
            where = ["--env", f"JAX_COMPILATION_CACHE_DIR={folder}"] if folder else []
            done = self.cli(
                "run", "recompiles.py", "--python", python, "--name", name, "--out", "runs", "--quiet",
                *where, "--explain-recompiles", *extra, "--", *args,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr[-3000:]
            self.made[name] = (
                Path(json.loads((self.work / "runs" / "latest" / "manifest.json").read_text())["bundle"]),
                done,
            )
        return self.made[name][0]

    def stderr(self, name: str) -> str:
        return self.made[name][1].stderr

    def explain(self, *bundles: Path, code: int = 1) -> dict:
        done = self.cli("explain-cache", *map(str, bundles), "--json")
        assert done.returncode == code, done.stderr[-3000:] + done.stdout[-3000:]
        return json.loads(done.stdout)


@pytest.fixture(scope="module")
def lab(tmp_path_factory, probe_cache) -> Lab:
    import importlib.util

    require("jax", importlib.util.find_spec("jax") is not None, "pip install -e '.[jax]'")
    return Lab(tmp_path_factory.mktemp("cache-explain"), probe_cache)


def _python(version: str) -> str:
    if version == "0.10.2":
        return sys.executable
    return interpreter_from_env(*VERSIONS[version], "scripts/make-jax-venv.sh PATH VERSION")


def _causes(report: dict, kind: str, function: str) -> list[set[str]]:
    """The parts named for each explanation of `function` (in report order)."""
    found = [
        {c["part"] for c in e["causes"]}
        for e in report["explanations"]
        if (e["kind"], e["function"]) == (kind, function)
    ]
    assert found, f"no {kind} of {function}: {json.dumps(report, indent=1)[:3000]}"
    return found


@pytest.mark.parametrize("version", ["0.4.30", "0.10.2", "0.12"])
def test_recompiles_and_misses_name_their_causes(lab, version):
    first, second = lab.run(f"a-{version}", _python(version)), lab.run(f"b-{version}", _python(version))
    log = (first / "stderr.log").read_text()  # --quiet: the program's output is in the bundle's logs
    printed = [line for line in log.splitlines() if line.startswith("xlatools: recompile #")]
    assert len(printed) == 4 and "recompiles: 4 (why, part by part: xlatools explain-cache" in lab.stderr(
        f"a-{version}"
    )
    line = PROGRAM.read_text().splitlines().index("    power(x, n=3)") + 1
    assert "static argument n: 2 -> 3" in printed[0] and f"called at {lab.work}/recompiles.py:{line}:" in printed[0]
    assert "weak type True -> False" in printed[1] and "shape [8] -> [4]" in printed[2]
    assert "a new function object" in printed[3]
    metrics = manifest(first)["metrics"]
    assert metrics["recompiles"] == 4 and not metrics["notes"]
    rows = {r["name"]: r for r in metrics["functions"] if not r["internal"]}
    assert (rows["power"]["traces"], rows["power"]["compiles"], rows["power"]["signatures"]) == (2, 2, 2)
    assert rows["quick"]["not_cached"] == 1 and "minimum compile time" in rows["quick"]["not_cached_why"][0]
    assert metrics["functions"][0]["lost_s"] >= metrics["functions"][-1]["lost_s"]  # worst first
    alone = lab.explain(first)
    assert alone["recompiles"] == 4 and alone["misses"] == 0
    assert _causes(alone, "recompile", "power") == [{"static argument"}]
    assert _causes(alone, "recompile", "scale") == [{"weak type"}]
    assert _causes(alone, "recompile", "step") == [{"shape"}]
    assert _causes(alone, "recompile", "<lambda>") == [{"function object"}]
    pair = lab.explain(first, second)
    assert _causes(pair, "miss", "stamp") == [{"constant"}]  # time.time() baked in when it was traced
    [quick] = [e for e in pair["explanations"] if e["function"] == "quick"]
    assert quick["causes"][0]["part"] == "minimum compile time" and "did not write it" in quick["causes"][0]["detail"]
    assert {e["function"] for e in pair["explanations"] if e["kind"] == "miss"} == {"stamp", "quick"}  # the rest hit
    text = lab.cli("explain-cache", str(first), str(second))
    assert text.returncode == 1 and "a constant baked into the program differs" in text.stdout
    assert "4 recompile(s), 2 persistent-cache miss(es): each explained above" in text.stdout


def test_another_jaxlib_is_named_first(lab):
    runs = [(name, lab.run(f"a-{name}", _python(name))) for name in ("0.10.2", "0.4.30")]
    order = sorted(runs, key=lambda r: list(lab.made).index(f"a-{r[0]}"))
    report = lab.explain(order[0][1], order[1][1])
    step = [e for e in report["explanations"] if (e["kind"], e["function"]) == ("miss", "step")][0]
    first = step["causes"][0]
    assert first["part"] == "jaxlib version" and first["source"] == "jax"
    assert {first["before"], first["after"]} == {"0.10.2", "0.4.30"}


@pytest.mark.parametrize("case", ["xla_flags", "folder", "process"])
def test_flags_folder_and_process_index(lab, case):
    python = sys.executable
    base = lab.run("a-0.10.2", python)
    if case == "xla_flags":
        other = lab.run("flags", python, "--xla-flag", "--xla_cpu_enable_fast_math=false")
    elif case == "folder":
        other = lab.run("folder", python, cache=lab.work / "another-cache", args=("--log-key",))
    else:
        other = lab.run("two", python, "--processes", "2")
    report = lab.explain(base, other)
    step = [e for e in report["explanations"] if (e["kind"], e["function"]) == ("miss", "step")]
    if case == "xla_flags":
        [cause] = step[0]["causes"]
        assert cause["part"] == "XLA flags" and "added --xla_cpu_enable_fast_math=false" in cause["detail"]
    elif case == "folder":
        assert "cache directory" in {c["part"] for c in step[0]["causes"]}
        _parts_are_what_jax_logs(other)
    else:
        [miss] = step[:1]  # process 0 hits: run A wrote it; process 1 has other devices and never writes
        assert miss["process"] == 1
        parts = {c["part"]: c for c in miss["causes"]}
        assert {"process index", "devices", "compile options"} <= set(parts)
        assert "device_assignment" in parts["compile options"]["detail"]
        second = manifest(other)["metrics"]
        whys = {w for f in second["functions"] if f.get("process") == 1 for w in f["not_cached_why"]}
        assert any("jax writes cache entries from process 0 only" in w for w in whys)


def _parts_are_what_jax_logs(bundle: Path) -> None:
    """Each key part xlatools recorded of the first compile of `step` has the hash jax's DEBUG log printed."""
    import re

    from xlatools.run.compile_events import read_compile_logs

    [log] = read_compile_logs(bundle)
    [step] = [f for f in log.functions if f.name == "step"]
    recorded = {p.name: p.sha256 for p in step.compiles[0].cache.parts}
    logged = re.findall(r"get_cache_key hash of serialized (.+?): ([0-9a-f]{64})", (bundle / "stderr.log").read_text())
    parts = [dict(logged[i : i + len(recorded)]) for i in range(0, len(logged), len(recorded))]
    assert len(recorded) == 8 and recorded in parts  # one compile's parts, as jax logged them


@pytest.fixture
def small_folder(tmp_path):
    """A 256 kB tmpfs (needs root and mount); removed after the test."""
    mount = tmp_path / f"disk-{uuid.uuid4().hex[:6]}"
    mount.mkdir()
    can = os.geteuid() == 0 and shutil.which("mount")
    done = (
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True)
        if can
        else None
    )
    require("tmpfs", bool(done) and done.returncode == 0, "mounting a small tmpfs needs root and mount(8)")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


@pytest.mark.parametrize("case", ["read_only", "full"])
def test_a_read_only_or_full_cache_is_named(lab, small_folder, case):
    (small_folder / "c").mkdir()
    if case == "full":
        subprocess.run(["dd", "if=/dev/zero", f"of={small_folder}/fill", "bs=4k", "count=100"], capture_output=True)
    else:
        assert subprocess.run(["mount", "-o", "remount,ro", str(small_folder)]).returncode == 0
    bundle = lab.run(case, sys.executable, cache=small_folder / "c", args=("--clean", "--again"))
    report = lab.explain(bundle)
    [again] = [e for e in report["explanations"] if e["function"] == "step"]
    word, errno_text = (
        ("read-only cache", "Read-only file system") if case == "read_only" else ("full cache", "No space left")
    )
    named = {c["part"]: c["detail"] for c in again["causes"]}
    assert word in named and errno_text in named[word] and "the earlier compile #" in named[word]
    shown = lab.cli("inspect", str(bundle))
    assert shown.returncode == 0 and "not cached: could not write the entry: OSError: [Errno" in shown.stdout


def test_a_program_compiling_each_function_once_has_nothing_recompiled(lab):
    bundle = lab.run("clean", _python("0.12"), cache="", args=("--clean",))
    assert (
        "nothing recompiled" in lab.stderr("clean") and "xlatools: recompile" not in (bundle / "stderr.log").read_text()
    )
    report = lab.explain(bundle, code=0)
    assert report["summary"] == "nothing recompiled" and not report["explanations"]
    shown = lab.cli("inspect", str(bundle))
    assert "nothing recompiled" in shown.stdout and "not cached: the cache is off: no cache folder" in shown.stdout
    assert shown.stdout.index("stamp ") < shown.stdout.index("nothing recompiled")


def test_explain_cache_refuses_what_it_cannot_read(lab, tmp_path):
    source = lab.run("a-0.10.2", sys.executable)
    nothing = lab.cli("explain-cache", str(tmp_path), "--json")
    assert nothing.returncode == 2 and json.loads(nothing.stdout)["error"]["exit_code"] == 2
    unobserved = tmp_path / "unobserved"
    shutil.copytree(source, unobserved, ignore=shutil.ignore_patterns("observer"))
    data = json.loads((unobserved / "manifest.json").read_text())
    data.pop("metrics")
    (unobserved / "manifest.json").write_text(json.dumps(data))
    refused = lab.cli("explain-cache", str(unobserved))
    assert refused.returncode == 2 and "was not observed" in refused.stderr and "Traceback" not in refused.stderr
    empty = tmp_path / "empty"
    shutil.copytree(source, empty, ignore=shutil.ignore_patterns("*.events.jsonl"))
    cannot = lab.cli("explain-cache", str(empty))
    assert cannot.returncode == 3 and "its traces were not recorded" in cannot.stderr
    both = lab.cli("run", "recompiles.py", "--explain-recompiles", "--no-metrics")
    assert both.returncode == 2 and "--explain-recompiles needs the observer" in both.stderr
