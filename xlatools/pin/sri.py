"""Subresource-integrity strings (`sha256-<base64>`), as bazel's `integrity` attribute takes them.

The hex digest in revision.bzl and the SRI string in MODULE.bazel are two spellings of
the same 32 bytes; both are always derived from the one hex digest we computed.
"""

from __future__ import annotations

import base64
import binascii
import re

_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def is_sha256_hex(value: str) -> bool:
    return bool(_HEX64.match(value))


def hex_to_sri(hex_digest: str) -> str:
    if not is_sha256_hex(hex_digest):
        raise ValueError(f"not a sha256 hex digest: {hex_digest!r}")
    return "sha256-" + base64.b64encode(bytes.fromhex(hex_digest)).decode("ascii")


def sri_to_hex(sri: str) -> str:
    algorithm, _, encoded = sri.partition("-")
    if algorithm != "sha256" or not encoded:
        raise ValueError(f"not a sha256 SRI string: {sri!r}")
    try:
        raw = base64.b64decode(encoded, validate=True)
    except binascii.Error:
        raise ValueError(f"bad base64 in SRI string: {sri!r}") from None
    if len(raw) != 32:
        raise ValueError(f"SRI string does not hold 32 bytes: {sri!r}")
    return raw.hex()
