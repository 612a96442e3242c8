"""How bazel ran a build's actions, from its summary line in the build log:

    INFO: 3 processes: 2 remote cache hit, 1 internal.                (bazel 4)
    INFO: 9 processes: 1 disk cache hit, 4 remote cache hit, 2 internal, 2 linux-sandbox.

bazel 4 counts disk-cache hits as "remote cache hit" too; newer bazel names them apart.
"internal" processes are bazel's own bookkeeping, not actions a cache could serve."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

from xlatools.records.build import BazelProcesses

_SUMMARY = re.compile(r"^INFO: (\d+) process(?:es)?(?:: (.*?))?\.?\s*$")
_PART = re.compile(r"^(\d+) (.+)$")
CACHE_KINDS = ("remote cache hit", "disk cache hit")


def process_counts(total: int, by_kind: dict[str, int]) -> BazelProcesses:
    hits = sum(by_kind.get(kind, 0) for kind in CACHE_KINDS)
    actions = total - by_kind.get("internal", 0)
    return BazelProcesses(
        total=total,
        by_kind=dict(by_kind),
        cache_hits=hits,
        actions=actions,
        hit_share=round(hits / actions, 4) if actions else None,
    )


def parse_process_counts(lines: Iterable[str]) -> BazelProcesses | None:
    """The summed summaries in `lines`; None when bazel printed none (it did not get that far)."""
    total, kinds, seen = 0, {}, False
    for line in lines:
        match = _SUMMARY.match(line.strip())
        if not match:
            continue
        seen = True
        total += int(match.group(1))
        for part in (match.group(2) or "").split(","):
            counted = _PART.match(part.strip())
            if counted:
                kinds[counted.group(2)] = kinds.get(counted.group(2), 0) + int(counted.group(1))
    return process_counts(total, kinds) if seen else None


def process_counts_of_log(log: Path) -> BazelProcesses | None:
    try:
        with open(log, encoding="utf-8", errors="replace") as handle:
            return parse_process_counts(handle)
    except OSError:
        return None
