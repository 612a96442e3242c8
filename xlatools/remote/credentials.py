"""Credentials for a remote cache or executor: the ONE place that reads them.

A profile names where each secret comes from (`bazel.remote_credentials`: an environment
variable or a file); `credential_refs` turns that into references (pure, no secret read).
`resolve_credentials` reads the values when a build starts or doctor checks the cache, and
returns them with the bazel options that carry them. Those options go only into a private
bazelrc outside the source tree (`private_rc_text`), read by bazel through `--bazelrc`;
`Credentials.secrets` are the values the build log hides (`redact.redact_values`: bazel's
`--announce_rc` prints rc options).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping
from urllib.parse import quote, urlsplit, urlunsplit

from xlatools.bazelrc import quote as rc_quote
from xlatools.errors import EnvironmentMissing, UsageError
from xlatools.records.build import CredentialRefs, SecretRef


@dataclass(frozen=True)
class Credentials:
    """Resolved secrets. `options` are the bazel options carrying them (for the private rc only),
    `secrets` every value to hide in logs; `basic_auth` and `headers` serve HTTP/gRPC clients."""

    options: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()
    basic_auth: tuple[str, str] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()  # e.g. a secret file others may read (never the secret itself)


def _absolute(value: str, origin_file: str | None) -> str:
    path = Path(value).expanduser()
    if not path.is_absolute() and origin_file:
        path = Path(origin_file).resolve().parent / path
    return str(path)


def credential_refs(resolved) -> CredentialRefs | None:
    """The resolved profile's `bazel.remote_credentials` as references, file paths made absolute
    (relative to the profile file that set them). Pure."""
    section = resolved.profile.bazel.remote_credentials
    if section is None:
        return None

    def origin(*key: str) -> str | None:
        found = resolved.origin_of(("bazel", "remote_credentials", *key))
        return found.file if found else None

    def ref(source, *key: str) -> SecretRef:
        return SecretRef(env=source.env, file=_absolute(source.file, origin(*key)) if source.file else None)

    google = section.google_credentials
    return CredentialRefs(
        basic_auth=ref(section.basic_auth, "basic_auth", "file") if section.basic_auth else None,
        headers=tuple((name, ref(source, "headers", name, "file")) for name, source in section.headers.items()),
        google_credentials=_absolute(google, origin("google_credentials")) if google else None,
    )


def _read(ref: SecretRef, what: str, env: Mapping[str, str], warnings: list[str]) -> str:
    """The secret `ref` names. Messages name the variable or file and what is wrong with it, and `what` (the key
    path) never before a colon: `...headers.Authorization: ...` reads as an HTTP header and is redacted whole."""
    import stat

    if ref.env:
        value = env.get(ref.env, "")
        if not value:
            raise EnvironmentMissing(
                f"the environment variable {ref.env} is not set (or empty); {what} names it",
                hint=f"export {ref.env}=... before running xlatools (CI: from a secret)",
            )
        return value.strip()
    fix = "create the file (mode 600) or fix bazel.remote_credentials"
    named = f"{what} names it"
    try:
        info = os.stat(str(ref.file))
        if not stat.S_ISREG(info.st_mode):  # a FIFO would block the read
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode) else "a device"
            raise UsageError(f"{ref.file} is not a regular file ({kind}); {named}", hint=fix)
        with open(str(ref.file), "rb") as handle:
            lines = handle.read(64 << 10).decode("utf-8").splitlines()
    except FileNotFoundError:
        raise EnvironmentMissing(f"{ref.file} does not exist; {named}", hint=fix) from None
    except OSError as exc:
        raise EnvironmentMissing(f"cannot read {ref.file}: {exc.strerror}; {named}", hint=fix) from None
    except UnicodeDecodeError:
        raise UsageError(f"{ref.file} is not UTF-8 text; {named}", hint="its first line must hold the secret") from None
    if info.st_mode & 0o077:
        warnings.append(
            f"{ref.file} can be read by others (mode {stat.S_IMODE(info.st_mode):o}; {named}): chmod 600 {ref.file}"
        )
    value = lines[0].strip() if lines else ""
    if not value:
        raise UsageError(f"{ref.file} is empty; {named}", hint="its first line must hold the secret")
    return value


def with_basic_auth(url: str, user_password: str) -> str:
    """`url` with `user:password` as its userinfo (each part percent-encoded)."""
    user, _, password = user_password.partition(":")
    parts = urlsplit(url)
    userinfo = quote(user, safe="") + (":" + quote(password, safe="") if password else "")
    return urlunsplit(parts._replace(netloc=f"{userinfo}@{parts.netloc}"))


def resolve_credentials(
    refs: CredentialRefs | None, remote_cache: str | None, env: Mapping[str, str] | None = None
) -> Credentials:
    """Read every secret the references name; missing ones are exit 3 with what to set."""
    if refs is None:
        return Credentials()
    env = os.environ if env is None else env
    options: list[str] = []
    secrets: list[str] = []
    warnings: list[str] = []
    basic = None
    if refs.basic_auth:
        value = _read(refs.basic_auth, "bazel.remote_credentials.basic_auth", env, warnings)
        if ":" not in value:
            raise UsageError(
                f"bazel.remote_credentials.basic_auth from {refs.basic_auth.describe()} is not user:password",
                hint="give it as user:password",
            )
        user, password = value.split(":", 1)
        basic = (user, password)
        authed = with_basic_auth(remote_cache or "", value)
        options.append(f"--remote_cache={authed}")
        secrets += [password, quote(password, safe=""), authed]
    headers = {}
    for name, ref in refs.headers:
        headers[name] = _read(ref, f"bazel.remote_credentials.headers.{name}", env, warnings)
        options.append(f"--remote_header={name}={headers[name]}")
        # The whole value, and its long words alone ("Bearer <token>": the token may be printed by itself).
        secrets += [headers[name]] + [word for word in headers[name].split() if len(word) >= 8]
    if refs.google_credentials:
        if not Path(refs.google_credentials).is_file():
            raise EnvironmentMissing(
                f"bazel.remote_credentials.google_credentials: {refs.google_credentials} does not exist",
                hint="create it, or fix the path (relative to the profile file)",
            )
        options.append(f"--google_credentials={refs.google_credentials}")
    hidden = tuple(sorted({s for s in secrets if len(s) >= 3}, key=len, reverse=True))  # shorter would hide words
    return Credentials(tuple(options), hidden, basic, headers, tuple(warnings))


def private_rc_text(credentials: Credentials, config_name: str, google_path: str | None = None) -> str:
    """The private bazelrc: the secret options under the same config as the tree's block, so that,
    read after the tree's rc files, they add to it (and a URL with credentials replaces the bare one).
    `google_path`: where the build sees the google credentials file (a container path), if elsewhere."""
    lines = ["# written by xlatools for one build; removed when it ends. Do not copy into a tree."]
    for option in credentials.options:
        if google_path and option.startswith("--google_credentials="):
            option = f"--google_credentials={google_path}"
        lines.append(f"build:{config_name} {rc_quote(option)}")
    return "\n".join(lines) + "\n"


def _write_private_rc(path: Path, text: str) -> None:
    """The rc in a folder only this user may enter (0700), the file 0600."""
    from xlatools.fsutil import atomic_write_text

    path.parent.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    os.chmod(path.parent, 0o700)
    atomic_write_text(path, text, mode=0o600)


@contextlib.contextmanager
def private_rc(
    path: str | None, credentials: Credentials, config_name: str, google_path: str | None = None
) -> Iterator[None]:
    """The private rc at `path` for as long as the build runs: written on entry (when there are
    credentials), its folder removed on the way out, whatever ends the build."""
    if path is None or not credentials.options:
        yield
        return
    try:
        _write_private_rc(Path(path), private_rc_text(credentials, config_name, google_path))
        yield
    finally:
        import shutil

        shutil.rmtree(Path(path).parent, ignore_errors=True)
