"""Streamed archive download: hash, safety check and write in one pass over the bytes.

Mirrors are tried in order (like bazel's url list). Per URL: bounded retries with
exponential back-off for transient failures (connection errors, timeouts, 5xx, 429), none for
4xx, by tenacity (imported only when a download starts). Redirects are httpx's own, capped;
one to anything but http(s) is refused. A size cap stops runaway downloads. Whatever
goes wrong (including Ctrl-C), the partial file is removed before the error leaves.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from xlatools.errors import FetchError, PinError, Problem
from xlatools.pin.archive import ArchiveChecker

if TYPE_CHECKING:
    from xlatools.console import Reporter

DEFAULT_MAX_BYTES = 4 << 30  # XLA archives are tens of MB; TensorFlow's ~100 MB
ATTEMPTS_PER_URL = 3
MAX_REDIRECTS = 10


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


@dataclass(frozen=True)
class Fetched:
    path: Path  # temporary file in the cache's tmp dir; the caller moves it into place
    sha256: str
    size: int
    url: str


class _Transient(Exception):
    """A failure worth retrying on the same URL."""


class _SkipUrl(Exception):
    """A failure that another mirror may not have (404, 403, ...)."""


def check_url(url: str) -> None:
    if urlsplit(url).scheme not in ("http", "https"):
        raise PinError(
            f"unsupported URL '{url}': only http:// and https:// archive URLs are allowed",
            hint="fix `urls:` in the profile",
        )


def fetch(
    urls: list[str],
    *,
    tmp_dir: Path,
    prefix: str,
    commit: str | None,
    label: str,
    expected_sha256: str | None = None,
    max_bytes: int | None = None,
    reporter: Reporter | None = None,
) -> Fetched:
    """The first of `urls` that downloads, hashed and checked on the way; `reporter` shows the
    transfer (None: no progress display)."""
    import httpx

    for url in urls:
        check_url(url)
    remove_stale_partials(tmp_dir)
    max_bytes = max_bytes or int(_env_float("XLATOOLS_PIN_MAX_BYTES", DEFAULT_MAX_BYTES))
    delay = _env_float("XLATOOLS_PIN_RETRY_DELAY", 1.0)
    timeout = httpx.Timeout(_env_float("XLATOOLS_PIN_TIMEOUT", 60.0), connect=30.0)
    failures: list[str] = []
    from xlatools import __version__

    headers = {"Accept-Encoding": "identity", "User-Agent": f"xlatools/{__version__}"}
    with httpx.Client(
        timeout=timeout,
        headers=headers,
        follow_redirects=True,
        max_redirects=MAX_REDIRECTS,
        event_hooks={"response": [_refuse_odd_redirect]},
    ) as client:
        for url in urls:
            try:
                fetched = _with_retries(
                    delay,
                    failures,
                    url,
                    functools.partial(_fetch_once, client, url, tmp_dir, prefix, commit, label, max_bytes, reporter),
                )
            except (_Transient, _SkipUrl):
                continue  # recorded in `failures`; the next mirror
            if expected_sha256 and fetched.sha256 != expected_sha256:
                fetched.path.unlink(missing_ok=True)
                raise PinError(
                    f"sha256 mismatch for {label} from {fetched.url}",
                    hint="the profile's `sha256` and the archive disagree; nothing was written. If the new "
                    "archive is right, update `sha256` (or drop it to trust what is downloaded)",
                    problems=[Problem(f"expected {expected_sha256}"), Problem(f"actual   {fetched.sha256}")],
                )
            return fetched
    raise FetchError(
        f"could not download {label} from any of {len(urls)} URL(s)",
        hint="check the network or add a mirror to `urls:`; `--offline` uses the cache only",
        problems=[Problem(failure) for failure in failures],
    )


def _with_retries(delay: float, failures: list[str], url: str, attempt_once):
    """attempt_once() up to ATTEMPTS_PER_URL times while it fails transiently, waiting delay, 2*delay, ...
    between tries; every failure is noted in `failures`. Raises the last _Transient, or a _SkipUrl at once."""
    from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

    retrying = Retrying(
        stop=stop_after_attempt(ATTEMPTS_PER_URL),
        wait=wait_exponential(multiplier=delay, max=60),
        retry=retry_if_exception_type(_Transient),
        reraise=True,
    )
    for attempt in retrying:
        with attempt:
            try:
                return attempt_once()
            except _Transient as exc:
                failures.append(f"{url} (attempt {attempt.retry_state.attempt_number}): {exc}")
                raise
            except _SkipUrl as exc:
                failures.append(f"{url}: {exc}")
                raise
    raise AssertionError("unreachable: tenacity returns or re-raises")  # pragma: no cover


def remove_stale_partials(tmp_dir: Path, max_age_s: float = 24 * 3600) -> None:
    """Partial files of processes killed hard (SIGKILL, power loss); ours clean up after themselves."""
    if not tmp_dir.is_dir():
        return
    cutoff = time.time() - max_age_s
    for path in tmp_dir.glob("*.part"):
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
        except OSError:
            pass


def _open(client, url: str):
    """Send GET; httpx follows redirects (at most MAX_REDIRECTS), refusing any to a non-http(s) URL.
    Returns a streaming response and the URL it came from."""
    import httpx

    try:
        response = client.send(client.build_request("GET", url), stream=True)
    except httpx.UnsupportedProtocol as exc:  # a redirect to file://, ftp://, ...
        target = exc.request.url if _has_request(exc) else "?"
        raise _SkipUrl(f"refused redirect to non-http(s) URL '{target}'") from None
    except httpx.TooManyRedirects:
        raise _SkipUrl(f"more than {MAX_REDIRECTS} redirects") from None
    except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
        raise _Transient(f"{type(exc).__name__}: {exc}") from None
    if response.status_code == 429 or response.status_code >= 500:
        response.close()
        raise _Transient(f"HTTP {response.status_code}")
    if response.status_code != 200:
        response.close()
        raise _SkipUrl(f"HTTP {response.status_code}")
    return response, str(response.url)


def _refuse_odd_redirect(response) -> None:
    """httpx calls this for every response, each redirect included: one to a non-http(s) URL stops here,
    named as the server sent it (httpx would fill in a missing host before refusing it itself)."""
    if response.is_redirect:
        target = urljoin(str(response.url), response.headers.get("location", ""))
        if urlsplit(target).scheme not in ("http", "https"):
            raise _SkipUrl(f"refused redirect to non-http(s) URL '{target}'")


def _has_request(exc) -> bool:
    try:
        _ = exc.request  # httpx raises RuntimeError when the exception carries no request
    except RuntimeError:
        return False
    return True


def _fetch_once(client, url, tmp_dir, prefix, commit, label, max_bytes, reporter: Reporter | None) -> Fetched:
    import httpx

    tmp_dir.mkdir(parents=True, exist_ok=True)
    response, final_url = _open(client, url)
    declared = int(response.headers.get("content-length") or 0) or None
    if declared and declared > max_bytes:
        response.close()
        raise PinError(
            f"{label} at {final_url} is {declared} bytes, over the {max_bytes}-byte cap",
            hint="raise the cap with XLATOOLS_PIN_MAX_BYTES if this archive is really that large",
        )
    digest = hashlib.sha256()
    size = 0
    checker = temp = None
    try:
        fd, name = tempfile.mkstemp(prefix=f"{label}.", suffix=".part", dir=tmp_dir)
        temp = Path(name)
        checker = ArchiveChecker(prefix, commit, f"{label} from {final_url}")
        shown = reporter.transfer(label, declared) if reporter is not None else contextlib.nullcontext(lambda n: None)
        with os.fdopen(fd, "wb") as sink, contextlib.closing(response), shown as advance:
            try:
                for chunk in response.iter_raw():
                    size += len(chunk)
                    if size > max_bytes:
                        raise PinError(
                            f"{label} at {final_url} exceeds the {max_bytes}-byte cap",
                            hint="raise the cap with XLATOOLS_PIN_MAX_BYTES if this is expected",
                        )
                    digest.update(chunk)
                    checker.feed(chunk)
                    sink.write(chunk)
                    advance(len(chunk))
                    if checker.problem:
                        break
            except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                raise _Transient(f"transfer broke after {size} bytes: {type(exc).__name__}: {exc}") from None
            if declared is not None and size != declared and not checker.problem:
                raise _Transient(f"transfer ended after {size} of {declared} bytes")
        checker.finish()
    except BaseException:  # including Ctrl-C: no partial file survives
        if checker is not None:
            checker.abort()
        if temp is not None:
            temp.unlink(missing_ok=True)
        response.close()
        raise
    return Fetched(temp, digest.hexdigest(), size, final_url)
