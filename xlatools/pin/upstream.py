"""Where each source dependency lives upstream, and how its archives are named (facts, no I/O)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Upstream:
    repo: str
    url: str  # archive URL template with {commit}
    strip_prefix: str  # top folder of that archive, template with {commit}


UPSTREAMS = {
    "xla": Upstream(
        "https://github.com/openxla/xla", "https://github.com/openxla/xla/archive/{commit}.tar.gz", "xla-{commit}"
    ),
    "tensorflow": Upstream(
        "https://github.com/tensorflow/tensorflow",
        "https://github.com/tensorflow/tensorflow/archive/{commit}.tar.gz",
        "tensorflow-{commit}",
    ),
    "jax": Upstream(
        "https://github.com/jax-ml/jax", "https://github.com/jax-ml/jax/archive/{commit}.tar.gz", "jax-{commit}"
    ),
}


_PLACEHOLDER = re.compile(r"\{commit(?:\[:(\d+)\])?\}")


def expand(template: str, commit: str) -> str:
    """{commit} -> the commit, {commit[:7]} -> its first 7 characters (GitHub's API tarballs name
    their top folder <owner>-<repo>-<commit[:7]>). Not str.format: a URL may hold other braces."""
    return _PLACEHOLDER.sub(lambda m: commit[: int(m.group(1))] if m.group(1) else commit, template)
