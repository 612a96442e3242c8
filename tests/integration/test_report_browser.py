"""The HTML report in a real browser: headless Chromium opens the file (no server, no network),
the page records console errors and the boxes of its key elements in attributes of <html>,
and a screenshot is kept in the test's temp dir."""

from __future__ import annotations

import json
import shutil

import pytest
from tests.helpers import BROWSERS, browse, rendered, require, run_cli


@pytest.fixture(scope="module")
def chromium() -> str:
    path = next((found for name in BROWSERS if (found := shutil.which(name))), None)
    require("chromium", path is not None, "install Debian's chromium (apt-get install -y chromium)")
    return path


def test_report_renders_without_errors(chromium, compare_runs, tmp_path):
    page = tmp_path / "report.html"
    done = run_cli("report", str(compare_runs["base"]), str(compare_runs["nofusion"]), "-o", str(page))
    assert done.returncode == 0, done.stderr
    root = rendered(chromium, page, tmp_path / "profile")
    assert root.get("data-ready") == "1", "the page's script did not run to the end"
    assert json.loads(root["data-console-errors"]) == []
    assert json.loads(root["data-broken-words"]) == [], "a word of a table cell wraps inside itself"
    layout = json.loads(root["data-layout"])
    for name in ("module-table", "diff-module-table", "chart", "first-divergence", "where", "run-diff"):
        assert layout.get(name), f"no {name} on the page"
        assert all(width > 0 and height > 0 for width, height in layout[name]), (
            f"{name} has an empty box: {layout[name]}"
        )
    assert len(layout["module-table"]) == 2  # one per bundle
    assert layout.get("pair-chart")  # A/B timelines (in <details>, closed where the module is the same)
    assert int(root["data-page-width"]) <= 1280, "the page scrolls sideways in a 1280 px window"
    shot = tmp_path / "report.png"
    done = browse(chromium, page, tmp_path / "profile", f"--screenshot={shot}")
    assert done.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_the_error_check_is_not_vacuous(chromium, compare_runs, tmp_path):
    """A script error on the page shows up in data-console-errors."""
    page = tmp_path / "report.html"
    done = run_cli("report", str(compare_runs["base"]), "-o", str(page))
    assert done.returncode == 0, done.stderr
    broken = tmp_path / "broken.html"
    broken.write_text(page.read_text().replace("</body>", "<script>undefinedFunction();</script></body>"))
    root = rendered(chromium, broken, tmp_path / "profile")
    errors = json.loads(root["data-console-errors"])
    assert errors and "undefinedFunction" in errors[0]


def test_words_never_break_inside_and_the_check_is_not_vacuous(chromium, tmp_path):
    """The report of a real GPU replay bundle (../shared/fixtures/gpu-h200): its tables' words stay whole in a
    narrow window; the same page with the old CSS (any word may break) shows split words."""
    from pathlib import Path

    replay = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "gpu-h200" / "replays" / "default"
    require("gpu_fixtures", (replay / "manifest.json").is_file(), f"{replay} (../shared/fixtures) is missing")
    page = tmp_path / "replay.html"
    done = run_cli("report", str(replay), "-o", str(page))
    assert done.returncode == 0, done.stderr
    narrow = tmp_path / "narrow.html"
    squeeze = "<style>body { max-width: 760px; }</style></head>"
    narrow.write_text(page.read_text().replace("</head>", squeeze))
    root = rendered(chromium, narrow, tmp_path / "profile")
    assert json.loads(root["data-console-errors"]) == [] and json.loads(root["data-layout"]).get("replay-table")
    assert json.loads(root["data-broken-words"]) == []
    old_css = "<style>table.data th, table.data td { overflow-wrap: anywhere; white-space: normal; }</style></head>"
    broken = tmp_path / "broken.html"
    broken.write_text(page.read_text().replace("</head>", squeeze.replace("</head>", "") + old_css))
    root = rendered(chromium, broken, tmp_path / "profile")
    assert json.loads(root["data-broken-words"]), "the check must see words split by `overflow-wrap: anywhere`"
