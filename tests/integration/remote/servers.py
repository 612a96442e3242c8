"""Real remote-cache servers on 127.0.0.1 for tests and benchmarks: Debian's nginx as bazel's
HTTP cache (WebDAV PUT) and BuildGrid (`bgd server`, REAPI CAS + action cache over gRPC).

Each server gets a private folder (config, pid, logs, storage) and a free port; the system's
nginx service is never used. When this process runs as root, nginx's workers drop to
`www-data` (as Debian's own nginx.conf does), so the cache folder must be theirs: `writable=False`
keeps it root's (or read-only), the silent-500 trap `doctor` must catch.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

WORKER_USER = "www-data"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, log: Path, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {seconds} s:\n{log.read_text()[-3000:]}")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)


def buildgrid_binary() -> str | None:
    """`bgd` from XLATOOLS_BGD (CI makes a venv for it) or PATH."""
    given = os.environ.get("XLATOOLS_BGD", "")
    return given if given and os.access(given, os.X_OK) else shutil.which("bgd")


class NginxCache:
    """nginx serving a WebDAV folder as bazel's HTTP cache. `basic_auth` ("user", "password") and
    `token` (required value of header X-Cache-Token) make it refuse anonymous requests."""

    def __init__(self, writable: bool = True, basic_auth: tuple[str, str] | None = None, token: str | None = None):
        self.root = Path(tempfile.mkdtemp(prefix="xlatools-nginx-"))
        self.root.chmod(0o755)  # the workers must reach the cache folder
        self.cache = self.root / "cache"
        self.cache.mkdir()
        self.port = free_port()
        self.writable, self.basic_auth, self.token = writable, basic_auth, token
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _config(self) -> str:
        as_root = os.geteuid() == 0
        auth = ""
        if self.basic_auth:
            (self.root / "htpasswd").write_text(f"{self.basic_auth[0]}:{{PLAIN}}{self.basic_auth[1]}\n")
            auth += f'auth_basic "cache"; auth_basic_user_file {self.root}/htpasswd;'
        if self.token:
            auth += f'if ($http_x_cache_token != "{self.token}") {{ return 401; }}'
        return f"""
{f"user {WORKER_USER};" if as_root else ""}
worker_processes 1;
daemon off;
pid {self.root}/nginx.pid;
error_log {self.root}/error.log;
events {{ worker_connections 256; }}
http {{
  log_format cache '$request_method $uri $status';
  access_log {self.root}/access.log cache;
  client_body_temp_path {self.root}/body;
  proxy_temp_path {self.root}/proxy; fastcgi_temp_path {self.root}/fastcgi;
  uwsgi_temp_path {self.root}/uwsgi; scgi_temp_path {self.root}/scgi;
  server {{
    listen 127.0.0.1:{self.port};
    location / {{
      root {self.cache};
      dav_methods PUT;
      create_full_put_path on;
      client_max_body_size 0;
      {auth}
    }}
  }}
}}
"""

    def __enter__(self) -> "NginxCache":
        binary = nginx_binary()
        assert binary, "nginx is not installed"
        if os.geteuid() == 0:
            worker = pwd.getpwnam(WORKER_USER)
            if self.writable:
                os.chown(self.cache, worker.pw_uid, worker.pw_gid)
            (self.root / "body").mkdir()
            os.chown(self.root / "body", worker.pw_uid, worker.pw_gid)
        elif not self.writable:
            self.cache.chmod(0o555)
        (self.root / "nginx.conf").write_text(self._config())
        log = self.root / "error.log"
        self.process = subprocess.Popen(
            [binary, "-p", str(self.root), "-c", str(self.root / "nginx.conf"), "-e", str(log)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        wait_for_port(self.port, self.process, log, 20)
        return self

    def __exit__(self, *exc) -> None:
        if self.process is not None:
            stop(self.process)
        self.cache.chmod(0o755)
        shutil.rmtree(self.root, ignore_errors=True)

    def requests(self) -> list[tuple[str, str, int]]:
        """(method, path, status) of every request so far."""
        log = self.root / "access.log"
        rows = [line.split() for line in log.read_text().splitlines()] if log.exists() else []
        return [(r[0], r[1], int(r[2])) for r in rows if len(r) == 3]

    def count(self, method: str, prefix: str, status: int) -> int:
        return sum(1 for m, path, s in self.requests() if m == method and path.startswith(prefix) and s == status)


class BuildGrid:
    """`bgd server` with two instances: "" (CAS and an action cache clients may write) and
    "readonly" (an action cache that refuses client writes, as teams set up for CI-only uploads).
    No execution service: BuildGrid's scheduler needs PostgreSQL and no REAPI worker installs from
    the package registries, so remote execution is refused by the server (bazel says so)."""

    def __init__(self, binary: str):
        self.binary = binary
        self.root = Path(tempfile.mkdtemp(prefix="xlatools-buildgrid-"))
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"grpc://127.0.0.1:{self.port}"

    def _config(self) -> str:
        return f"""
server:
  - !channel
    address: "127.0.0.1:{self.port}"
    insecure-mode: true
authorization:
  method: none
storages:
  - !disk-storage &cas
    path: {self.root}/cas
caches:
  - !lru-action-cache &ac
    storage: *cas
    max-cached-refs: 100000
    allow-updates: true
    cache-failed-actions: false
  - !lru-action-cache &ac-readonly
    storage: *cas
    max-cached-refs: 1000
    allow-updates: false
instances:
  - name: ""
    services:
      - !action-cache
        cache: *ac
      - !cas
        storage: *cas
      - !bytestream
        storage: *cas
  - name: readonly
    services:
      - !action-cache
        cache: *ac-readonly
      - !cas
        storage: *cas
      - !bytestream
        storage: *cas
"""

    def __enter__(self) -> "BuildGrid":
        (self.root / "cas").mkdir()
        (self.root / "bgd.yml").write_text(self._config())
        log = self.root / "server.log"
        with open(log, "wb") as out:
            self.process = subprocess.Popen(
                [self.binary, "server", "start", str(self.root / "bgd.yml")],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.root,
            )
        wait_for_port(self.port, self.process, log, 90)
        return self

    def __exit__(self, *exc) -> None:
        if self.process is not None:
            stop(self.process)
        shutil.rmtree(self.root, ignore_errors=True)


def remote_cache_hits(bazel_output: str) -> int:
    """`N remote cache hit` summed over bazel's process summaries."""
    return sum(int(n) for n in re.findall(r"(\d+) remote cache hit", bazel_output))
