"""XLA_FLAGS parsing, merging and the version table (pure)."""

import pytest

from xlatools.errors import UsageError
from xlatools.records import to_json
from xlatools.run.env import ENVIRONMENT, FlagLayers, Layer, Source
from xlatools.run.flags import (
    flag_name,
    join_flags,
    min_version,
    parse_env_flags,
    table_verdict,
    unknown_from_abort,
    validate_flag,
)

ABORT_0_10 = (
    "F1122 08:59:19.229159    6697 parse_flags_from_env.cc:234] Unknown flags in XLA_FLAGS: --xla_bogus2 --xla_bogus"
)
# 0.4.30 appends a double space and a garbled copy of the other flags.
ABORT_0_4_30 = (
    "2026-11-22 09:00:06.904987: F external/xla/xla/parse_flags_from_env.cc:224] Unknown flags in XLA_FLAGS: "
    "--xla_bogus  --xla_dump_hlo_as_text "
)


def test_flag_name():
    assert flag_name("--xla_dump_to=/x=y") == "xla_dump_to"
    assert flag_name("--xla_dump_hlo_as_text") == "xla_dump_hlo_as_text"


@pytest.mark.parametrize(
    "text,expected",
    [
        (ABORT_0_10, ["xla_bogus2", "xla_bogus"]),
        (ABORT_0_4_30, ["xla_bogus"]),
        ("Unknown flag in XLA_FLAGS: --xla_x=1", ["xla_x"]),
        ("all fine", None),
    ],
)
def test_unknown_from_abort(text, expected):
    assert unknown_from_abort("noise\n" + text + "\n") == expected


def test_table_verdicts():
    assert table_verdict("xla_dump_emitter_re", "0.4.30") is False
    assert table_verdict("xla_dump_emitter_re", "0.4.20") is False
    assert table_verdict("xla_dump_emitter_re", "0.10.2") is True
    assert table_verdict("xla_dump_emitter_re", "0.6.0") is None  # between the measured versions: probe
    assert table_verdict("xla_dump_hlo_as_text", "0.10.2") is True
    assert table_verdict("xla_dump_emitter_re", "0.12.0.1") is True  # measured
    assert table_verdict("xla_dump_hlo_as_text", "0.13.0") is None  # newer than anything measured: probe
    assert table_verdict("xla_dump_emitter_re", "0.13.0") is None
    assert table_verdict("xla_dump_hlo_as_text", "0.4.13") is None  # older than anything measured
    assert table_verdict("xla_dump_hlo_as_text", "0.10.3.dev20261101+selfbuilt") is None  # self-built: probe
    assert table_verdict("xla_not_in_table", "0.10.2") is None
    assert min_version(["xla_dump_hlo_as_text", "xla_dump_emitter_re"]) == "0.10.2"
    assert min_version(["xla_dump_hlo_as_text"]) is None


def test_layers_later_wins_and_reports():
    layers = FlagLayers()
    layers.add(["--xla_dump_hlo_as_text", "--xla_dump_hlo_pass_re=foo"], ENVIRONMENT)
    layers.add(["--xla_dump_hlo_pass_re=.*"], Source(Layer.PRESET, "preset passes"))
    assert layers.final() == ["--xla_dump_hlo_as_text", "--xla_dump_hlo_pass_re=.*"]
    assert [to_json(o.record()) for o in layers.overridden] == [
        {
            "flag": "--xla_dump_hlo_pass_re=foo",
            "by": "--xla_dump_hlo_pass_re=.*",
            "from": "environment",
            "source": "preset passes",
        }
    ]


def test_a_lower_layer_never_replaces_a_higher_one_whatever_the_order():
    layers = FlagLayers()
    layers.add(["--xla_dump_hlo_pass_re=cli"], Source(Layer.COMMAND_LINE, "--xla-flag"))
    layers.add(["--xla_dump_hlo_pass_re=preset"], Source(Layer.PRESET, "preset passes"))
    assert layers.final() == ["--xla_dump_hlo_pass_re=cli"]
    assert [to_json(o.record()) for o in layers.overridden] == [
        {
            "flag": "--xla_dump_hlo_pass_re=preset",
            "by": "--xla_dump_hlo_pass_re=cli",
            "from": "preset passes",
            "source": "--xla-flag",
        }
    ]


def test_env_flags_parsing():
    assert parse_env_flags(' --a=1  --b="x y" ') == ["--a=1", "--b=x y"]
    assert join_flags(["--a=1", "--b=x y"]) == '--a=1 --b="x y"'
    # XLA reads a backslash inside double quotes as an escape: a quote or backslash in a value survives the trip
    for value in ('/out "q" dir/xla_dump', '/o"q"d', "it's", "a\\.b c", '"start'):
        joined = join_flags([f"--xla_dump_to={value}"])
        assert joined.startswith('--xla_dump_to="') and parse_env_flags(joined) == [f"--xla_dump_to={value}"]
    with pytest.raises(UsageError, match="flag file"):
        parse_env_flags("/etc/xla_flags.txt")


@pytest.mark.parametrize("bad", ["xla_dump_to=/x", "-xla", "--vmodule=foo=1", "--v=2", "--"])
def test_validate_flag_refuses(bad):
    with pytest.raises(UsageError):
        validate_flag(bad, "--xla-flag")
