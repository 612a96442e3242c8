"""The profile's remote cache and executor: credentials present, the cache answers AND keeps
what it is given, the executor executes.

bazel hides a cache that refuses writes: every upload fails quietly and it builds locally (an
nginx WebDAV folder its workers cannot write answers each PUT with a 500). So the check
writes a small object that cannot already be there (a random nonce) and reads it back:
HTTP PUT/GET of `/cas/<sha256>` for http(s):// caches (bazel's layout); for grpc(s)://,
REAPI GetCapabilities, then BatchUpdateBlobs/BatchReadBlobs (CAS) and
UpdateActionResult/GetActionResult (action cache) through the REAPI protos of BuildGrid's
client library (`buildgrid-common`, the `remote` extra; doctor/reapi.py). The objects are tiny
and keyed by a digest no build can produce, so they never answer a real action.
"""

from __future__ import annotations

import hashlib
import secrets
import socket
import time
from typing import Mapping
from urllib.parse import urlsplit

from xlatools.doctor.model import Check, fail, ok, warn
from xlatools.records.build import BuildPlan
from xlatools.remote.credentials import Credentials

TIMEOUT_S = 10.0
NGINX_HINT = (
    "for nginx (WebDAV): the cache folder must be writable by nginx's worker user (`user` in nginx.conf; "
    "`chown -R www-data <folder>`), and the error log says which path failed"
)


def remote_checks(profile, plan: BuildPlan, env: Mapping[str, str]) -> list[Check]:
    if not plan.remote_cache and not plan.remote_executor:
        return []
    from xlatools.builder.plan import C_CA_BUNDLE
    from xlatools.errors import XlaToolsError
    from xlatools.remote.credentials import resolve_credentials

    try:
        credentials = resolve_credentials(plan.credentials, plan.remote_cache, env)
    except XlaToolsError as exc:
        return [fail("remote credentials", exc.message, exc.hint or "fix bazel.remote_credentials")]
    ca = next((m.source for m in plan.mounts if m.target == C_CA_BUNDLE), None) or plan.env.get("SSL_CERT_FILE")
    instance = profile.bazel.remote_instance_name
    checks = [warn("remote credentials", note, "chmod 600 the file") for note in credentials.warnings]
    for name, url, executor in (
        ("remote cache", plan.remote_cache, False),
        ("remote executor", plan.remote_executor, True),
    ):
        if url:
            checks.append(check_cache(name, url, credentials, instance, ca, executor=executor))
    return checks


def fresh_object() -> tuple[bytes, str]:
    blob = b"xlatools cache check " + secrets.token_hex(16).encode()
    return blob, hashlib.sha256(blob).hexdigest()


def shown(url: str) -> str:
    """The URL as printed: never with userinfo."""
    parts = urlsplit(url)
    return parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]).geturl()


def check_cache(
    name: str,
    url: str,
    credentials: Credentials,
    instance: str | None = None,
    ca_file: str | None = None,
    executor: bool = False,
) -> Check:
    """Write-and-read-back check of `url` (http(s) or grpc(s)); `executor`: ask whether it executes instead."""
    if url.startswith(("http://", "https://")):
        return _check_http(name, url, credentials, ca_file)
    return _check_grpc(name, url, credentials, instance, ca_file, executor)


def _http_failure(name: str, url: str, method: str, status: int, body: str) -> Check:
    where = f"{method} {shown(url)}/cas/... answered {status}"
    if status in (401, 403):
        return fail(
            name,
            f"{where}: the cache wants credentials (or refuses these)",
            "set bazel.remote_credentials (basic_auth or headers, from the environment or a file)",
        )
    if status in (405, 501):
        return fail(
            name,
            f"{where}: the server does not take {method} there",
            "enable uploads (nginx: `dav_methods PUT; create_full_put_path on;` in the location)",
        )
    if status == 413:
        return fail(name, f"{where}: body too large", "raise the limit (nginx: client_max_body_size 0;)")
    if method == "PUT" and status >= 500:
        return fail(
            name,
            f"{where}: the server could not store the object, so bazel's uploads fail "
            "silently and every build runs locally",
            NGINX_HINT,
        )
    return fail(name, f"{where}: {body[:120].strip()}", "check the cache server's log")


def _check_http(name: str, url: str, credentials: Credentials, ca_file: str | None) -> Check:
    import httpx

    blob, digest = fresh_object()
    target = f"{url.rstrip('/')}/cas/{digest}"
    auth = httpx.BasicAuth(*credentials.basic_auth) if credentials.basic_auth else None
    t0 = time.monotonic()
    try:
        with httpx.Client(timeout=TIMEOUT_S, verify=ca_file or True, auth=auth, headers=credentials.headers) as client:
            put = client.put(target, content=blob)
            if put.status_code >= 300:
                return _http_failure(name, url, "PUT", put.status_code, put.text)
            got = client.get(target)
    except httpx.HTTPError as exc:
        return fail(
            name,
            f"{shown(url)} does not answer: {type(exc).__name__}: {exc}",
            "start the cache server, or fix bazel.remote_cache (host, port, scheme)",
        )
    if got.status_code != 200:
        return fail(
            name,
            f"PUT was accepted ({put.status_code}) but GET of the same object answered "
            f"{got.status_code}: bazel would upload and never hit",
            "serve reads from the folder uploads go to (nginx: one `root` for the location)",
        )
    if got.content != blob:
        return fail(name, "GET returned different bytes than were PUT", "check the cache server")
    ms = (time.monotonic() - t0) * 1000
    return ok(name, f"{shown(url)}: wrote and read back a test object (PUT {put.status_code}, GET 200, {ms:.0f} ms)")


def _tcp_only(name: str, url: str) -> Check:
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "grpcs" else 80)
    try:
        with socket.create_connection((host, port), timeout=TIMEOUT_S):
            pass
    except OSError as exc:
        return fail(
            name, f"nothing answers at {host}:{port} ({exc.strerror or exc})", "start the cache server, or fix the URL"
        )
    return warn(
        name,
        f"{host}:{port} accepts connections; writes not checked: the REAPI client "
        "library is not installed in xlatools' environment",
        "pip install 'xlatools[remote]' (buildgrid-common, grpcio) for the write-and-read-back check",
    )


def _check_grpc(
    name: str, url: str, credentials: Credentials, instance: str | None, ca_file: str | None, executor: bool
) -> Check:
    try:
        import grpc

        from xlatools.doctor import reapi
    except ImportError:
        return _tcp_only(name, url)
    try:
        return reapi.write_read_check(name, url, credentials, instance or "", ca_file, executor, TIMEOUT_S)
    except grpc.RpcError as exc:
        code = exc.code().name if hasattr(exc, "code") else "?"
        detail = exc.details() if hasattr(exc, "details") else str(exc)
        fix = (
            "set bazel.remote_credentials.headers (e.g. Authorization)"
            if code in ("UNAUTHENTICATED", "PERMISSION_DENIED")
            else "start the server, or fix bazel.remote_cache / remote_instance_name"
        )
        return fail(name, f"{shown(url)}: {code}: {detail}", fix)
