"""The one defensive YAML reader: hostile files are refused quickly, naming the file and line."""

from __future__ import annotations

import os
import time

import pytest

from xlatools.yamlfile import MAX_DEPTH, YamlRefused, load_file


def _bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "text,words",
    [
        (_bomb(), "expands to more than"),
        ("x: !!python/name:os.system\n", "!!python/name:os.system is not allowed"),
        ("x: !!python/object/apply:os.system ['true']\n", "is not allowed"),
        ("x: !custom 1\n", "!custom is not allowed"),
        ("x: " + "[" * 50_000 + "]" * 50_000 + "\n", f"nested deeper than {MAX_DEPTH}"),
        ("x: " + "{a: " * 50_000 + "1" + "}" * 50_000 + "\n", f"nested deeper than {MAX_DEPTH}"),
        ("a: [unclosed\n", "malformed YAML"),
    ],
)
def test_hostile_yaml_is_refused_quickly(tmp_path, text, words):
    path = tmp_path / "p.yaml"
    path.write_text(text)
    started = time.monotonic()
    with pytest.raises(YamlRefused) as caught:
        load_file(path)
    assert words in caught.value.problem.message and caught.value.problem.file == str(path)
    assert time.monotonic() - started < 5


def test_what_is_not_a_regular_utf8_file_is_refused(tmp_path):
    os.mkfifo(tmp_path / "fifo.yaml")  # never opened: reading it would block
    (tmp_path / "dir.yaml").mkdir()
    (tmp_path / "latin1.yaml").write_bytes(b"x: caf\xe9\n")
    for name, words in (
        ("fifo.yaml", "not a regular file"),
        ("dir.yaml", "not a regular file"),
        ("latin1.yaml", "not UTF-8"),
        ("missing.yaml", "cannot read"),
    ):
        with pytest.raises(YamlRefused) as caught:
            load_file(tmp_path / name)
        assert words in caught.value.problem.message


def test_ordinary_yaml_with_small_reuse_loads(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("base: &b {copts: [-O2]}\nmine: *b\nwhen: 2026-01-01\n")
    assert load_file(path)["mine"] == {"copts": ["-O2"]}
