"""Helpers shared by every test folder, imported normally (`from tests.helpers import ...`).

Conftests hold fixtures only. Tests that need a component this machine may lack
(bazel, a Docker engine, a second jaxlib) call `require`, which skips with the
reason, or fails when CI sets XLATOOLS_REQUIRE_<NAME>=1, so CI cannot pass by skipping.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def require(component: str, available: bool, reason: str) -> None:
    """Skip (or, when CI demands the component, fail) if it is missing."""
    if available:
        return
    if os.environ.get(f"XLATOOLS_REQUIRE_{component.upper()}", "") not in ("", "0"):
        pytest.fail(f"{component} is required here (XLATOOLS_REQUIRE_{component.upper()}=1) but missing: {reason}")
    pytest.skip(f"{component} not available: {reason}")


def interpreter_from_env(variable: str, component: str, what: str, made_by: str) -> str:
    """A second interpreter the tests drive through --python, named by `variable` (skip/fail via `require`)."""
    path = os.environ.get(variable, "")
    require(component, bool(path) and os.path.exists(path), f"set {variable} to {what} ({made_by} makes one)")
    return path


def run_cli(
    *args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 120, input: str | None = None
):
    """Run the real `xlatools` CLI as a subprocess of this interpreter."""
    full_env = dict(os.environ)
    full_env.pop("XLATOOLS_PROFILE_PATH", None)
    full_env.update({"NO_COLOR": "1", "COLUMNS": "200"})
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "xlatools", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input,
    )


def release_python(version: str, cache: Path) -> str:
    """The interpreter of jax/jaxlib `version`'s release environment under `cache`, made as `bisect releases` makes
    it (one uv install the first time, reused afterwards; CI keeps the cache in XLATOOLS_TEST_BISECT_CACHE)."""
    from xlatools.bisect.envs import ensure, find_uv, release_env

    require("uv", find_uv() is not None, "pip install uv (release environments are made with it)")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XLATOOLS_CACHE_DIR", str(cache))
        python, _, _ = ensure(release_env(version, f"{sys.version_info.major}.{sys.version_info.minor}"))
    return str(python)


def sigint_default() -> None:
    """preexec_fn for a child that a test interrupts with SIGINT.

    A job started in the background (as a CI harness may do) inherits SIGINT
    ignored, and the child Python then never sees Ctrl-C: restore the default."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def bundles(root: Path) -> list[Path]:
    """The bundle directories under an --out root (not the `latest` link)."""
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()) if root.is_dir() else []


def manifest(bundle: Path) -> dict:
    return json.loads((bundle / "manifest.json").read_text())


def build_versioned_lib(
    directory: Path,
    soname: str,
    versions: list[str],
    consumer_needs: str | None = None,
    consumer_flags: tuple[str, ...] = (),
) -> Path:
    """A real shared object `directory/soname` defining one symbol per version node (gcc and a
    version script), like an old or new libstdc++ for the loader checks. With `consumer_needs`,
    also `directory/libconsumer.so`, linked against it (with `consumer_flags`, e.g. an rpath) and
    needing that version."""
    import shutil

    gcc = shutil.which("gcc")
    require("gcc", gcc is not None, "apt-get install gcc (builds the fake libraries of the native-library tests)")
    directory.mkdir(parents=True, exist_ok=True)
    symbol = lambda v: "sym_" + v.replace(".", "_")  # noqa: E731
    (directory / "lib.c").write_text(
        "".join(f"int {symbol(v)}(void) {{ return {i}; }}\n" for i, v in enumerate(versions))
    )
    nodes, parent = [], None
    for version in versions:
        nodes.append(
            f"{version} {{ global: {symbol(version)};{' local: *;' if parent is None else ''} }}"
            + (f" {parent};" if parent else ";")
        )
        parent = version
    (directory / "lib.map").write_text("\n".join(nodes) + "\n")
    lib = directory / soname
    subprocess.run(
        [
            gcc,
            "-shared",
            "-fPIC",
            "-o",
            str(lib),
            str(directory / "lib.c"),
            f"-Wl,--version-script={directory / 'lib.map'}",
            f"-Wl,-soname,{soname}",
        ],
        check=True,
    )
    if consumer_needs:
        (directory / "consumer.c").write_text(
            f"int {symbol(consumer_needs)}(void);\nint use(void) {{ return {symbol(consumer_needs)}(); }}\n"
        )
        subprocess.run(
            [
                gcc,
                "-shared",
                "-fPIC",
                "-o",
                str(directory / "libconsumer.so"),
                str(directory / "consumer.c"),
                f"-L{directory}",
                f"-l:{soname}",
                *consumer_flags,
            ],
            check=True,
        )
    return lib


BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def browse(browser: str, page: Path, profile: Path, *mode: str) -> subprocess.CompletedProcess:
    argv = [
        browser,
        "--headless",
        "--disable-gpu",
        "--no-sandbox",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        "--window-size=1280,2400",
        "--virtual-time-budget=3000",
        *mode,
        page.as_uri(),
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


class _RootAttributes(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.attributes: dict[str, str] = {}

    def handle_starttag(self, tag, attrs):
        if tag == "html" and not self.attributes:
            self.attributes = {k: v or "" for k, v in attrs}


def root_attributes(html: str) -> dict[str, str]:
    """The attributes of a page's <html> element (where the report's script leaves what it checked)."""
    parser = _RootAttributes()
    parser.feed(html)
    return parser.attributes


def rendered(browser: str, page: Path, profile: Path) -> dict[str, str]:
    done = browse(browser, page, profile, "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    return root_attributes(done.stdout)


def check_dump_grammar(root: Path) -> dict[str, int]:
    """Read a whole XLA dump folder with xlatools/hlo: every name parses to a known kind (kernel files once
    the module's name is known, as the index reads them), every instruction line of its HLO texts parses,
    and the index counts what the grammar counts. Returns how many files of each kind."""
    from collections import Counter

    from xlatools.hlo.dump_names import DumpKind, parse_dump_name
    from xlatools.hlo.grammar import LineKind, parse_instruction, scan_lines
    from xlatools.run.dumps import index_dump

    index = index_dump(root)
    kinds: Counter[str] = Counter()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        first = parse_dump_name(rel, folder=path.is_dir())
        assert first is not None, rel
        module = index.modules[first.module_id]
        name = parse_dump_name(rel, module_name=module.name, folder=path.is_dir())
        assert name is not None and name.kind is not DumpKind.OTHER and name.module_name == module.name, rel
        kinds[name.kind.value] += 1
        if name.is_text_hlo:
            count = 0
            for kind, line in scan_lines(path.read_text().splitlines()):
                assert kind is not LineKind.OTHER, (rel, line)
                if kind is LineKind.INSTRUCTION:
                    count += 1
                    assert parse_instruction(line) is not None, (rel, line)
            assert count > 0, rel
            if rel == module.before_file:
                assert module.instructions_before == count, rel
    return dict(kinds)


def as_one_interpreter_record(data):
    """An old record's JSON as xlatools writes it back now: every interpreter's `versions` (a replayed module's run,
    a reduction's re-check, a pack) is the one interpreter record, whose Python version key is `python_version`."""
    if isinstance(data, list):
        return [as_one_interpreter_record(item) for item in data]
    if not isinstance(data, dict):
        return data
    data = {key: as_one_interpreter_record(value) for key, value in data.items()}
    versions = data.get("versions")
    if isinstance(versions, dict) and "python" in versions:
        data["versions"] = {
            "python_version": versions["python"],
            "backend": None,
            "devices": [],
            "plugins": [],
            **{key: value for key, value in versions.items() if key != "python"},
        }
    return data
