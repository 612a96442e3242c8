"""Reporter.transfer, the download progress of `pin resolve` / `pin verify --refetch`: off a terminal a
line before and after (CI logs), nothing when quiet, no "downloaded" line when the transfer failed."""

from __future__ import annotations

import io

import pytest

from xlatools.console import Reporter


def test_a_transfer_off_a_terminal_is_a_line_before_and_after():
    stream = io.StringIO()
    with Reporter(stream=stream).transfer("xla-0123", 3_000_000) as advance:
        advance(1_000_000)
        advance(2_000_000)
    before, after = stream.getvalue().splitlines()
    assert before == "downloading xla-0123 (3.0 MB) ..."
    assert after.startswith("downloaded xla-0123: 3.0 MB in ")


def test_quiet_and_failed_transfers():
    quiet = io.StringIO()
    with Reporter(quiet=True, stream=quiet).transfer("a", None) as advance:
        advance(5)
    assert quiet.getvalue() == ""
    failed = io.StringIO()
    with pytest.raises(OSError), Reporter(stream=failed).transfer("b", None) as advance:
        advance(5)
        raise OSError("connection reset")
    assert failed.getvalue() == "downloading b ...\n"
