"""Helpers for the `xlatools pin` tests: generated archives, a real HTTP server's
state and handler (served on 127.0.0.1 by the conftest fixture), and JAX trees in
each upstream pin layout, written from the layouts' known field names and URL forms."""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
import threading
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path

COMMIT = "0123456789abcdef0123456789abcdef01234567"
COMMIT2 = "89abcdef0123456789abcdef0123456789abcdef"
OLD_COMMIT = "fedcba9876543210fedcba9876543210fedcba98"
OLD_SHA = "1" * 64


def make_tarball(
    prefix: str,
    files: dict[str, bytes] | None = None,
    commit: str | None = None,
    extra: list[tarfile.TarInfo] | None = None,
) -> bytes:
    """A gzipped tar like GitHub's archives: one top folder, the commit in a pax global header."""
    files = files if files is not None else {"BUILD": b"# xla\n", "xla/service/hlo.cc": b"int main() {}\n"}
    raw = io.BytesIO()
    headers = {"comment": commit} if commit else {}
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT, pax_headers=headers) as tar:
        top = tarfile.TarInfo(prefix)
        top.type = tarfile.DIRTYPE
        top.mode = 0o755
        tar.addfile(top)
        for name, data in files.items():
            info = tarfile.TarInfo(f"{prefix}/{name}")
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
        for info in extra or []:
            tar.addfile(info, io.BytesIO(b"x" * info.size) if info.isfile() else None)
    return gzip.compress(raw.getvalue(), mtime=0)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class Route:
    bodies: list[bytes]  # served in turn; the last one repeats
    mode: str = "ok"  # ok | cut (close midway every time) | stall (send half, wait for release) | status
    status: int = 200
    location: str | None = None


@dataclass
class ArchiveServer:
    """Threaded HTTP server on 127.0.0.1 with per-path behaviour and request counts."""

    routes: dict[str, Route] = field(default_factory=dict)
    requests: Counter = field(default_factory=Counter)
    half_sent: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    base: str = ""

    def url(self, path: str) -> str:
        return f"{self.base}{path}"

    def serve(self, path: str, *bodies: bytes, mode: str = "ok", status: int = 200, location: str | None = None):
        self.routes[path] = Route(list(bodies), mode, status, location)
        return self.url(path)

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())


def archive_handler(server: ArchiveServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # keep pytest output clean
            pass

        def do_GET(self):  # noqa: N802
            path = self.path.split("?")[0]
            server.requests[path] += 1
            route = server.routes.get(path)
            if route is None:
                return self._status(404)
            if route.mode == "status":
                headers = {"Location": route.location} if route.location else {}
                return self._status(route.status, headers)
            body = route.bodies[min(server.requests[path], len(route.bodies)) - 1]
            self.send_response(200)
            self.send_header("Content-Type", "application/x-gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if route.mode == "ok":
                self.wfile.write(body)
                return
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            if route.mode == "stall":
                server.half_sent.set()
                server.release.wait(30)
            self.close_connection = True  # "cut": the peer sees a short body

        def _status(self, code: int, headers: dict | None = None):
            self.send_response(code)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Handler


def write_profile(directory: Path, source: str, name: str = "bug") -> Path:
    path = directory / f"{name}.yaml"
    path.write_text(f"description: pin test\nsource:\n{source}", encoding="utf-8")
    return path


def cache_files(tmp_path: Path) -> list[str]:
    root = tmp_path / "cache"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) if root.exists() else []


# ------------------------------------------------------------------ git


REVISION_BZL = f'''# Fixture: the pin file of a JAX tree (today's layout).
#
# Comments like these must survive every edit.

# XLA_COMMIT: the XLA commit; XLA_SHA256: sha256 of the archive workspace.bzl downloads
# for it (https://github.com/openxla/xla/archive/<commit>.tar.gz here).

XLA_COMMIT = "{OLD_COMMIT}"
XLA_SHA256 = "{OLD_SHA}"
'''

WORKSPACE_BZL_LOADING = """# Fixture: loads the pin from revision.bzl.

load("//third_party:repo.bzl", "tf_http_archive", "tf_mirror_urls")
load("//third_party/xla:revision.bzl", "XLA_COMMIT", "XLA_SHA256")

def repo():
    tf_http_archive(
        name = "xla",
        sha256 = XLA_SHA256,
        strip_prefix = "xla-{commit}".format(commit = XLA_COMMIT),
        urls = tf_mirror_urls("https://github.com/openxla/xla/archive/{commit}.tar.gz".format(commit = XLA_COMMIT)),
    )

    # Fixture comment after the rule: left alone by every edit.
"""

MODULE_BAZEL = f"""module(name = "jax")

bazel_dep(name = "rules_python", version = "1.6.0")
bazel_dep(name = "xla")

# XLA is pinned here and in third_party/xla/revision.bzl; keep them in sync.
archive_override(
    module_name = "xla",
    integrity = "sha256-ERERERERERERERERERERERERERERERERERERERERERE=",  # keep
    strip_prefix = "xla-{OLD_COMMIT}",
    urls = ["https://github.com/openxla/xla/archive/{OLD_COMMIT}.tar.gz"],
)

bazel_dep(name = "tsl")
archive_override(
    module_name = "tsl",
    integrity = "sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
    strip_prefix = "tsl-{OLD_COMMIT}",
    urls = ["https://github.com/openxla/tsl/archive/{OLD_COMMIT}.tar.gz"],
)
"""

WORKSPACE_BZL_2024 = f'''# Fixture: a 2024 tree, the pin in workspace.bzl itself.

load("//third_party:repo.bzl", "tf_http_archive", "tf_mirror_urls")

# Fixture comment: the commit and the digest of its /archive/ tarball.

XLA_COMMIT = "{OLD_COMMIT}"
XLA_SHA256 = "{OLD_SHA}"

def repo():
    tf_http_archive(
        name = "xla",
        sha256 = XLA_SHA256,
        strip_prefix = "xla-{{commit}}".format(commit = XLA_COMMIT),
        urls = tf_mirror_urls("https://github.com/openxla/xla/archive/{{commit}}.tar.gz".format(commit = XLA_COMMIT)),
    )

    # Fixture comment: a commented-out local checkout, as a tree may carry one.
    # local_repository(
    #    name = "xla",
    #    path = "/path/to/xla",
    # )
'''

WORKSPACE_2022 = f'''load("@bazel_tools//tools/build_defs/repo:http.bzl", "http_archive")

# Fixture comment: TensorFlow pinned by commit (URL, top folder) and digest.
http_archive(
    name = "org_tensorflow",
    sha256 = "{OLD_SHA}",
    strip_prefix = "tensorflow-{OLD_COMMIT}",
    urls = [
        "https://github.com/tensorflow/tensorflow/archive/{OLD_COMMIT}.tar.gz",
    ],
)

# Fixture comment: a commented-out alternative that must stay commented out.
# local_repository(
#    name = "org_tensorflow",
#    path = "tensorflow",
# )

load("//third_party/pocketfft:workspace.bzl", pocketfft = "repo")
pocketfft()
'''

# The API-tarball era (2025-07-21 to 2026-01-27): workspace.bzl fetches GitHub's API tarball, whose
# top folder is <owner>-<repo>-<first 7 hex of the commit>; XLA_SHA256 is that tarball's digest.
API_HOST = "https://api.github.com"


def workspace_bzl_api(host: str = API_HOST) -> str:
    """workspace.bzl of that era: the URL and the top folder come from the commit."""
    return WORKSPACE_BZL_LOADING.replace(
        """        strip_prefix = "xla-{commit}".format(commit = XLA_COMMIT),
        urls = tf_mirror_urls("https://github.com/openxla/xla/archive/{commit}.tar.gz".format(commit = XLA_COMMIT)),""",
        f'''        type = "tar.gz",
        strip_prefix = "openxla-xla-{{commit}}".format(commit = XLA_COMMIT[:7]),
        # fixture: the URL comes from the commit, so the digest must be this URL's
        urls = tf_mirror_urls("{host}/repos/openxla/xla/tarball/{{commit}}".format(commit = XLA_COMMIT)),''',
    )


# Since about 2026-03: an empty patch_file list whose only content is a comment.
WORKSPACE_BZL_PLACEHOLDER = WORKSPACE_BZL_LOADING.replace(
    """        urls = tf_mirror_urls("https://github.com/openxla/xla/archive/{commit}.tar.gz".format(commit = XLA_COMMIT)),
    )""",
    """        urls = tf_mirror_urls("https://github.com/openxla/xla/archive/{commit}.tar.gz".format(commit = XLA_COMMIT)),
        patch_file = [
            # fixture: patches for XLA go in this list
        ],
    )""",
)

# 2023-03-13 to 2023-08-14: WORKSPACE pins XLA itself with literal values.
WORKSPACE_XLA_2023 = (
    WORKSPACE_2022.replace("org_tensorflow", "xla")
    .replace("tensorflow/tensorflow", "openxla/xla")
    .replace("tensorflow-", "xla-")
    .replace("TensorFlow", "XLA")
)

TREES = {
    "revision_bzl": {
        "third_party/xla/revision.bzl": REVISION_BZL,
        "third_party/xla/workspace.bzl": WORKSPACE_BZL_LOADING,
        "third_party/xla/BUILD.bazel": "",
        "MODULE.bazel": MODULE_BAZEL,
        "WORKSPACE": 'workspace(name = "jax")\n',
    },
    "workspace_bzl": {
        "third_party/xla/workspace.bzl": WORKSPACE_BZL_2024,
        "third_party/xla/BUILD": "",
        "WORKSPACE": 'workspace(name = "jax")\n',
    },
    "tensorflow_workspace": {"WORKSPACE": WORKSPACE_2022},
    "xla_workspace": {"WORKSPACE": WORKSPACE_XLA_2023},
    "revision_bzl_api": {
        "third_party/xla/revision.bzl": REVISION_BZL,
        "third_party/xla/workspace.bzl": workspace_bzl_api(),
        "WORKSPACE": 'workspace(name = "jax")\n',
    },
    "placeholder": {
        "third_party/xla/revision.bzl": REVISION_BZL,
        "third_party/xla/workspace.bzl": WORKSPACE_BZL_PLACEHOLDER,
        "MODULE.bazel": MODULE_BAZEL,
    },
}


def make_tree(root: Path, layout: str) -> Path:
    for name, text in TREES[layout].items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
