"""Where each source dependency lives upstream, and how its archives are named (facts, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Upstream:
    repo: str
    url: str  # archive URL template with {commit}
    strip_prefix: str  # top folder of that archive, template with {commit}


UPSTREAMS = {
    "xla": Upstream("https://github.com/openxla/xla", "https://github.com/openxla/xla/archive/{commit}.tar.gz",
                    "xla-{commit}"),
    "tensorflow": Upstream("https://github.com/tensorflow/tensorflow",
                           "https://github.com/tensorflow/tensorflow/archive/{commit}.tar.gz", "tensorflow-{commit}"),
    "jax": Upstream("https://github.com/jax-ml/jax", "https://github.com/jax-ml/jax/archive/{commit}.tar.gz",
                    "jax-{commit}"),
}


def expand(template: str, commit: str) -> str:
    # Not str.format: a URL may hold other braces; only {commit} is ours.
    return template.replace("{commit}", commit)


def default_url(name: str, commit: str) -> str:
    return expand(UPSTREAMS[name].url, commit)
