"""A small bazel HTTP remote cache for tests: GET/HEAD/PUT on /ac/<hash> and
/cas/<hash> (optionally below an instance-name prefix), blobs kept in memory."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class CacheServer:
    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        self.hits = 0
        self.misses = 0
        self.puts = 0
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> "CacheServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    @staticmethod
    def key(path: str) -> str | None:
        parts = path.strip("/").split("/")
        # bazel asks for [<instance>/]ac/<sha256> or [<instance>/]cas/<sha256>
        if len(parts) >= 2 and parts[-2] in ("ac", "cas"):
            return "/".join(parts[-2:])
        return None

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # bazel refuses HTTP/1.0 replies
            def log_message(self, *args) -> None:  # quiet test output
                pass

            def _lookup(self, send_body: bool) -> None:
                key = server.key(self.path)
                with server.lock:
                    blob = server.blobs.get(key) if key else None
                    if blob is None:
                        server.misses += 1
                    else:
                        server.hits += 1
                if blob is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(blob)))
                self.end_headers()
                if send_body:
                    self.wfile.write(blob)

            def do_GET(self) -> None:
                self._lookup(send_body=True)

            def do_HEAD(self) -> None:
                self._lookup(send_body=False)

            def do_PUT(self) -> None:
                key = server.key(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                if key is None:
                    self.send_response(400)
                else:
                    with server.lock:
                        server.blobs[key] = body
                        server.puts += 1
                    self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        return Handler
