"""How bazel ran a build's actions, from its summary line in the build log:

    INFO: 3 processes: 2 remote cache hit, 1 internal.                (bazel 4)
    INFO: 9 processes: 1 disk cache hit, 4 remote cache hit, 2 internal, 2 linux-sandbox.

bazel 4 counts disk-cache hits as "remote cache hit" too; newer bazel names them apart.
"internal" processes are bazel's own bookkeeping, not actions a cache could serve."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_SUMMARY = re.compile(r"^INFO: (\d+) process(?:es)?(?:: (.*?))?\.?\s*$")
_PART = re.compile(r"^(\d+) (.+)$")
CACHE_KINDS = ("remote cache hit", "disk cache hit")


@dataclass(frozen=True)
class ProcessCounts:
    """Processes by kind ("remote cache hit", "internal", "local", "linux-sandbox", ...), summed over
    every bazel invocation the log shows."""

    total: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)

    @property
    def cache_hits(self) -> int:
        return sum(self.by_kind.get(kind, 0) for kind in CACHE_KINDS)

    @property
    def actions(self) -> int:
        """Processes a cache could have served: all but bazel's internal ones."""
        return self.total - self.by_kind.get("internal", 0)

    @property
    def hit_share(self) -> float | None:
        return self.cache_hits / self.actions if self.actions else None

    def to_json(self) -> dict:
        return {"total": self.total, "by_kind": dict(self.by_kind), "cache_hits": self.cache_hits,
                "actions": self.actions, "hit_share": None if self.hit_share is None else round(self.hit_share, 4)}


def parse_process_counts(lines) -> ProcessCounts | None:
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
    return ProcessCounts(total, kinds) if seen else None


def process_counts_of_log(log: Path) -> ProcessCounts | None:
    try:
        with open(log, encoding="utf-8", errors="replace") as handle:
            return parse_process_counts(handle)
    except OSError:
        return None
