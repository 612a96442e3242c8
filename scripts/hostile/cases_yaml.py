"""YAML that attacks its loader (alias bombs, Python tags, absurd depth, bytes that are not text,
a folder or a FIFO where the file belongs), through every command that reads YAML: profiles,
user presets and user build-log signatures."""

from __future__ import annotations

from . import shapes
from .core import Case, Run

CLS = "yaml"
LOADERS = {
    # name -> (argv, where the YAML goes, what the message must name)
    "profiles-show": (["profiles", "show", "p.yaml"], "p.yaml"),
    "profiles-validate": (["profiles", "validate", "p.yaml"], "p.yaml"),
    "profiles-list": (["profiles", "list"], "configs/p.yaml"),
    "run-profile": (["run", "{ok}", "--dry-run", "-p", "p.yaml"], "p.yaml"),
    "bazelrc": (["bazelrc", "-p", "p.yaml"], "p.yaml"),
    "presets-list": (["presets", "list"], "config/xlatools/presets/p.yaml"),
    "explain": (["explain", "build.log"], "config/xlatools/signatures/p.yaml"),
}


def _setup(where: str, shape: str):
    def setup(run: Run) -> None:
        shapes.put_yaml(run, where, shape)
        run.write("build.log", "ERROR: something failed\n")

    return setup


def cases() -> list[Case]:
    out = []
    for loader, (argv, where) in LOADERS.items():
        for shape in shapes.YAML_SHAPES:
            expect = {2}
            if shape == "duplicate-keys" or (shape in ("dir",) and loader in ("profiles-list", "presets-list")):
                expect = {0, 2}  # a folder named *.yaml in a search folder may be passed over
            if loader == "profiles-list" or (loader == "presets-list" and shape == "fifo"):
                expect |= {0}  # `list` may show a broken file as broken (and pass over what is no file)
            out.append(
                Case(
                    CLS,
                    f"{loader}-{shape}",
                    argv,
                    frozenset(expect),
                    _setup(where, shape),
                    env={"XDG_CONFIG_HOME": "{dir}/config"},
                    timeout=30,
                    max_seconds=10,
                    max_rss_mib=400,
                    absent=("pwned",),
                    mention=("p.yaml",) if expect == {2} else (),
                )
            )
    return out
