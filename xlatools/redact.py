"""Secrets never reach a record or an output: what counts as one, and how text and records are cleaned.

Two kinds of rule, applied together:
- by name: the value of a variable named like a secret (TOKEN, SECRET, PASSWORD, PASSPHRASE, KEY,
  CREDENTIAL, AUTH, COOKIE), wherever it sits: environment mappings, `{"name": ..., "value": ...}`
  rows, `--env NAME=VALUE` and `--token VALUE` items of argv lists;
- by shape, inside any string: the user-info of a URL (`https://user:password@host`), a
  `token=` / `password=` / `api_key=` ... pair, an HTTP header that carries credentials
  (`Authorization: ...`, `Cookie: ...`, `X-...-Token: ...`) and a `Bearer`/`Basic` credential.

Every manifest goes through `redact` in the one manifest writer (bundle.Bundle.write_manifest); the
bisect state, a pack's pack.json, summary.txt and the HTML report do too, and the CLI passes
everything it prints through `redact_text` (`RedactingStream`). The program's own output (its
logs, echoed as bytes) is the program's and is kept as it wrote it.
"""

from __future__ import annotations

import io
import re
from typing import Any

REDACTED = "***redacted***"
_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASS(?:WORD|WD|PHRASE)?(?![A-Z])|KEY|CREDENTIAL|AUTH(?:ORIZATION)?(?![A-Z])"
    r"|COOKIE",
    re.I,
)
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_ENV_KEYS = frozenset({"env", "environment", "repo_env", "action_env"})
_SECRET_WORD = (
    r"token|passw(?:or)?d|passphrase|pwd|secret|api[_-]?key|[_-]key|credentials?|auth|authorization"
    r"|signature|sig|cookie"
)
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@]+@")
# user:password@host without a scheme, wherever it stands (a flag value, inside a path such as
# /opt/u:PASSWORD@cuda, an scp-like address): the password part. Not an image pinned by digest (tag@sha256:).
_BARE_USERINFO = re.compile(r"(?<![\w.%+-])([A-Za-z0-9._%+-]+):(?!\d+@)[^\s:@/'\"]+@(?=[A-Za-z0-9])(?!sha\d+:)")
_SECRET_PAIR = re.compile(rf"(?i)((?<![\w.-])[\w.-]*?(?:{_SECRET_WORD}))=(?!{re.escape(REDACTED)})[^\s&;,\"'<>]+")
_SECRET_HEADER = re.compile(
    r"(?i)\b(authorization|proxy-authorization|cookie|set-cookie|x-[\w-]*(?:token|key|auth)[\w-]*)"
    rf"\s*:\s*(?!{re.escape(REDACTED)})[^\r\n\"'<>]+"
)
_SCHEME_CREDENTIAL = re.compile(rf"(?i)\b(bearer|basic)\s+(?!{re.escape(REDACTED)})[A-Za-z0-9._~+/=-]{{6,}}")
_SECRET_OPTION = re.compile(rf"(?i)^--?[\w.-]*?(?:{_SECRET_WORD})$")
# Printed records (JSON and YAML text): the value of a field named like a secret.
_FIELD_WORD = r"token|passw(?:or)?d|passphrase|pwd|secret|api[_-]?key|[_-]key|credentials?|auth|authorization|cookie"
_SECRET_JSON_FIELD = re.compile(rf'(?i)("[\w.-]*?(?:{_FIELD_WORD})"\s*:\s*)"(?!{re.escape(REDACTED)})(?:[^"\\]|\\.)*"')
_SECRET_YAML_FIELD = re.compile(
    rf"(?im)^(\s*(?:-\s+)?[\w.-]*?(?:{_FIELD_WORD}):[ \t]+)(?!{re.escape(REDACTED)})(?![{{\[|>])\S.*$"
)
# In a row that names a secret ({"name"|"key": "API_TOKEN", ...}): the fields that hold its values
# (an environment change, profile provenance, both sides of a diff).
_ROW_VALUES = frozenset({"value", "previous", "a", "b", "old", "new", "before", "after", "default"})


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


# bazel options whose values are credentials: a profile may not hold them (its remote_credentials
# produce them, into a private rc), and any argv shows them hidden.
SECRET_BAZEL_OPTIONS = frozenset(
    {"--remote_header", "--remote_cache_header", "--remote_exec_header", "--remote_downloader_header"}
)


def has_url_credentials(url: str) -> bool:
    """A URL with user-info (`https://user:password@host/...`)."""
    _, sep, rest = url.partition("://")
    return bool(sep) and "@" in rest.split("/", 1)[0]


def _redact_option(item: str) -> str:
    """A bazel credential option's value (`--remote_header=NAME=VALUE`); URL user-info is redact_text's."""
    name, sep, value = item.partition("=")
    if sep and name in SECRET_BAZEL_OPTIONS:
        header, has_value, _ = value.partition("=")
        return f"{name}={header}={REDACTED}" if has_value else f"{name}={REDACTED}"
    return item


def redact_values(text: str, values: tuple[str, ...]) -> str:
    """`text` with each of the known secret `values` hidden (longest first, so a URL that holds a
    password goes whole); for text no record rule can see into, e.g. a build log echoing its rc files."""
    for value in sorted(values, key=len, reverse=True):
        if value and value in text:
            text = text.replace(value, REDACTED)
    return text


def redact_text(text: str) -> str:
    """`text` with every credential its shape gives away hidden (URL user-info, secret pairs, headers)."""
    if not isinstance(text, str) or ("@" not in text and "=" not in text and ":" not in text and " " not in text):
        return text  # no credential without one of these: paths and digests (most of a manifest) skip the rules
    text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    text = _BARE_USERINFO.sub(lambda m: f"{m.group(1)}:{REDACTED}@", text)
    text = _SECRET_JSON_FIELD.sub(lambda m: f'{m.group(1)}"{REDACTED}"', text)
    text = _SECRET_YAML_FIELD.sub(lambda m: f"{m.group(1)}{REDACTED}", text)
    text = _SECRET_PAIR.sub(lambda m: f"{m.group(1)}={REDACTED}", text)
    text = _SECRET_HEADER.sub(lambda m: f"{m.group(1)}: {REDACTED}", text)
    return _SCHEME_CREDENTIAL.sub(lambda m: f"{m.group(1)} {REDACTED}", text)


def redact_env(env: dict[str, str]) -> dict[str, str]:
    """Copy of `env` with the values of secret-looking names hidden, and credentials in any value."""
    return {name: (REDACTED if is_secret_name(name) else redact_text(value)) for name, value in env.items()}


def redact_argv(argv: list[str]) -> list[str]:
    """argv with secrets hidden: `--env NAME=VALUE` / `--env=NAME=VALUE` items of secret names, the
    item after an option named like a secret (`--api-key VALUE`), and credentials inside any item."""
    out, after_env, after_secret = [], False, False
    for item in argv:
        prefix = ""
        if item.startswith("--env="):
            prefix, item = "--env=", item[len("--env=") :]
        if (after_env or prefix) and "=" in item:
            name, value = item.split("=", 1)
            item = f"{name}={REDACTED if is_secret_name(name) else value}"
        elif after_secret and not item.startswith("-"):
            item = REDACTED
        out.append(redact_text(prefix + _redact_option(item)))
        after_env = item == "--env"
        after_secret = bool(_SECRET_OPTION.match(item))
    return out


def redact(record: Any, in_env: bool = False) -> Any:
    """A copy of a JSON-like record with every secret hidden, wherever it sits: values of
    secret-looking variables in environment mappings (an `env` key, or UPPER_CASE names),
    `{"name"|"key": SECRET, "value": ...}` rows (environment changes, profile provenance),
    lists of strings as command lines (`redact_argv`), and credentials inside any string (`redact_text`)."""
    if isinstance(record, dict):
        label = record.get("name", record.get("key"))
        hide_values = isinstance(label, str) and is_secret_name(label.rsplit(".", 1)[-1])
        out = {}
        for key, value in record.items():
            env_name = isinstance(key, str) and (in_env or _ENV_NAME.match(key))
            key = redact_text(key) if isinstance(key, str) else key  # a flag can be a key (xla_flag_sources)
            if env_name and isinstance(value, str) and is_secret_name(key):
                out[key] = REDACTED
            elif hide_values and key in _ROW_VALUES and isinstance(value, str):
                out[key] = REDACTED
            else:
                out[key] = redact(value, in_env=key in _ENV_KEYS)
        return out
    if isinstance(record, (list, tuple)):
        if record and all(isinstance(item, str) for item in record):
            return redact_argv(list(record))  # any list of words may be a command line (argv, program args)
        return [redact(item) for item in record]
    return redact_text(record) if isinstance(record, str) else record


class RedactingStream(io.TextIOBase):
    """A text stream that writes everything through `redact_text`: what the CLI prints (tables, --json,
    messages) never shows a credential. Bytes written to `.buffer` (a program's own output) pass as they are."""

    def __init__(self, stream):
        super().__init__()
        self._stream = stream

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._stream.write(redact_text(text))
        return len(text)

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str):  # buffer, fileno, isatty, encoding, ...
        return getattr(self._stream, name)

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:
        return self._stream.encoding
