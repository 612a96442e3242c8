"""Secrets never reach a record: what counts as one, and how records are cleaned before writing.

Every manifest goes through `redact` in the one manifest writer (bundle.Bundle.write_manifest);
plans printed by `--dry-run` and argv copies go through it too."""

from __future__ import annotations

import re
from typing import Any

_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|KEY|CREDENTIAL", re.I)
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_ENV_KEYS = frozenset({"env", "environment", "repo_env", "action_env"})
REDACTED = "***redacted***"


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


# bazel options whose values are credentials: a profile may not hold them (its remote_credentials
# produce them, into a private rc), and any argv shows them hidden.
SECRET_BAZEL_OPTIONS = frozenset({"--remote_header", "--remote_cache_header", "--remote_exec_header",
                                  "--remote_downloader_header"})


def has_url_credentials(url: str) -> bool:
    """A URL with user-info (`https://user:password@host/...`)."""
    _, sep, rest = url.partition("://")
    return bool(sep) and "@" in rest.split("/", 1)[0]


def _redact_url_credentials(text: str) -> str:
    scheme, _, rest = text.partition("://")
    netloc, slash, path = rest.partition("/")
    return f"{scheme}://{REDACTED}@{netloc.rsplit('@', 1)[1]}{slash}{path}"


def _redact_option(item: str) -> str:
    """A bazel secret option's value (`--remote_header=NAME=VALUE`), a URL's user-info (`--remote_cache=URL`)."""
    name, sep, value = item.partition("=")
    if sep and name in SECRET_BAZEL_OPTIONS:
        header, has_value, _ = value.partition("=")
        return f"{name}={header}={REDACTED}" if has_value else f"{name}={REDACTED}"
    if sep and has_url_credentials(value):
        return f"{name}={_redact_url_credentials(value)}"
    return _redact_url_credentials(item) if has_url_credentials(item) else item


def redact_values(text: str, values: tuple[str, ...]) -> str:
    """`text` with each of the known secret `values` hidden (longest first, so a URL that holds a
    password goes whole); for text no record rule can see into, e.g. a build log echoing its rc files."""
    for value in sorted(values, key=len, reverse=True):
        if value and value in text:
            text = text.replace(value, REDACTED)
    return text


def redact_env(env: dict[str, str]) -> dict[str, str]:
    """Copy of `env` with the values of secret-looking names hidden."""
    return {name: (REDACTED if is_secret_name(name) else value) for name, value in env.items()}


def redact_argv(argv: list[str]) -> list[str]:
    """argv with the values of secret-looking `--env NAME=VALUE` / `--env=NAME=VALUE` items hidden, and
    those of bazel's credential options and URLs' user-info."""
    out, after_env = [], False
    for item in argv:
        prefix = ""
        if item.startswith("--env="):
            prefix, item = "--env=", item[len("--env="):]
        if (after_env or prefix) and "=" in item:
            name, value = item.split("=", 1)
            item = f"{name}={REDACTED if is_secret_name(name) else value}"
        out.append(prefix + _redact_option(item))
        after_env = item == "--env"
    return out


def redact(record: Any, in_env: bool = False) -> Any:
    """A copy of a JSON-like record with every secret hidden, wherever it sits: values of
    secret-looking variables in environment mappings (an `env` key, or UPPER_CASE names),
    `{"name"|"key": SECRET, "value": ...}` rows (environment changes, profile provenance),
    and `--env NAME=VALUE` items of argv lists."""
    if isinstance(record, dict):
        label = record.get("name", record.get("key"))
        hide_values = isinstance(label, str) and is_secret_name(label.rsplit(".", 1)[-1])
        out = {}
        for key, value in record.items():
            env_name = isinstance(key, str) and (in_env or _ENV_NAME.match(key))
            if env_name and isinstance(value, str) and is_secret_name(key):
                out[key] = REDACTED
            elif hide_values and key in ("value", "previous") and value is not None:
                out[key] = REDACTED
            elif key == "argv" and isinstance(value, list) and all(isinstance(v, str) for v in value):
                out[key] = redact_argv(value)
            else:
                out[key] = redact(value, in_env=key in _ENV_KEYS)
        return out
    if isinstance(record, (list, tuple)):
        return [redact(item) for item in record]
    return record
