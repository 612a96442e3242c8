"""Download speed of `xlatools pin resolve` against `curl -s URL | sha256sum`.

Serves a generated ~200 MB `xla-<commit>/...` tar.gz on 127.0.0.1, then times, alternating,
(a) `curl -s URL | sha256sum` and (b) `xlatools pin resolve` with an empty cache each run
(download + sha256 + archive safety check + cache store + lock write, CLI start-up included).
Also times the download pipeline alone, in process. Prints medians and ratios.
Goal: resolve / curl <= 1.2 (one pass over the bytes).
Usage: python benchmarks/pin_download.py [--runs N] [--mb SIZE]
"""

from __future__ import annotations

import argparse
import gzip
import io
import os
import shutil
import statistics
import sys
import tarfile
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from _bench import installed_env, timed

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def make_archive(megabytes: int) -> bytes:
    """Mostly incompressible content (random blobs) with some text, like a source archive's mix."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT, pax_headers={"comment": COMMIT}) as tar:
        for index in range(megabytes * 10 // 9):  # each blob is ~0.9 MB compressed
            data = os.urandom(900_000) + b"// source line\n" * 6_000
            info = tarfile.TarInfo(f"xla-{COMMIT}/blob/{index:04d}.cc")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), compresslevel=1, mtime=0)


def serve(body: bytes) -> tuple[ThreadingHTTPServer, str]:
    view = memoryview(body)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            for start in range(0, len(body), 1 << 20):
                self.wfile.write(view[start : start + (1 << 20)])

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/xla/{COMMIT}.tar.gz"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mb", type=int, default=200, help="approximate archive size in MB")
    args = parser.parse_args()
    if shutil.which("curl") is None or shutil.which("sha256sum") is None:
        print("curl and sha256sum are needed for the baseline: apt-get install -y curl coreutils", file=sys.stderr)
        return 3
    body = make_archive(args.mb)
    httpd, url = serve(body)
    work = Path(tempfile.mkdtemp(prefix="xlatools-bench-"))
    try:
        profile = work / "bench.yaml"
        profile.write_text(
            f'description: bench\nsource:\n  xla:\n    commit: "{COMMIT}"\n'
            f'    urls: ["{url.replace(COMMIT, "{commit}")}"]\n'
        )
        curl = ["bash", "-c", f"set -o pipefail; curl -sf {url} | sha256sum"]
        resolve = [sys.executable, "-m", "xlatools", "pin", "resolve", "--profile", str(profile)]

        def run_resolve() -> float:
            cache = work / "cache"
            shutil.rmtree(cache, ignore_errors=True)  # each run downloads
            env = dict(installed_env(), XLATOOLS_CACHE_DIR=str(cache), NO_COLOR="1")
            return timed(resolve, env=env)

        def run_pipeline() -> float:
            from xlatools.pin.download import fetch

            start = time.perf_counter()
            fetched = fetch([url], tmp_dir=work / "tmp", prefix=f"xla-{COMMIT}", commit=COMMIT, label="bench")
            elapsed = time.perf_counter() - start
            fetched.path.unlink()
            return elapsed

        def run_startup() -> float:
            # The fixed cost: interpreter, imports, profile validation; `--offline` with an empty
            # cache stops (exit 3) right where the download would begin.
            env = dict(installed_env(), XLATOOLS_CACHE_DIR=str(work / "empty-cache"), NO_COLOR="1")
            return timed(resolve + ["--offline"], check=False, env=env)

        timed(curl), run_resolve()  # warm up
        curls, resolves, pipelines, startups = [], [], [], []
        for _ in range(args.runs):  # alternate so machine drift hits all equally
            curls.append(timed(curl))
            resolves.append(run_resolve())
            pipelines.append(run_pipeline())
            startups.append(run_startup())
    finally:
        httpd.shutdown()
        shutil.rmtree(work, ignore_errors=True)
    base, full, pipe = statistics.median(curls), statistics.median(resolves), statistics.median(pipelines)
    fixed = statistics.median(startups)
    print(f"archive            {len(body) / 1e6:.0f} MB on loopback, {args.runs} runs each, medians")
    print(f"curl | sha256sum   {base:6.2f} s")
    print(f"pin resolve (CLI)  {full:6.2f} s   ratio {full / base:.2f}  (goal <= 1.2)")
    print(f"  of which fixed   {fixed:6.2f} s   (start-up, imports, profile validation; independent of size)")
    print(f"  minus fixed      {full - fixed:6.2f} s   ratio {(full - fixed) / base:.2f}")
    print(f"download pipeline  {pipe:6.2f} s   ratio {pipe / base:.2f}  (in process: no start-up, no cache store)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
