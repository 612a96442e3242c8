"""Typed records: one per bundle kind (and the state files), one JSON conversion, one reader.

Kept light: importing this package imports no bundle kind; `read_bundle` imports only
the kind it reads."""

from xlatools.records.base import (
    MANIFEST,
    SCHEMA_VERSION,
    BundleRecord,
    FileEntry,
    HostInfo,
    host_info,
    read_bundle,
    read_record,
    to_json,
)

__all__ = [
    "MANIFEST",
    "SCHEMA_VERSION",
    "BundleRecord",
    "FileEntry",
    "HostInfo",
    "host_info",
    "read_bundle",
    "read_record",
    "to_json",
]
