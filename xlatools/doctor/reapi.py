"""The gRPC half of doctor's remote cache check (checks_remote), on the REAPI protos that
BuildGrid's client library (`buildgrid-common`) ships: capabilities, a CAS blob and an
action-cache entry written and read back. Imported only when that library and grpcio are
installed (`xlatools[remote]`)."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

import grpc
from buildgrid.common.protos.build.bazel.remote.execution.v2 import remote_execution_pb2 as re_pb2
from buildgrid.common.protos.build.bazel.remote.execution.v2 import remote_execution_pb2_grpc as re_grpc

from xlatools.doctor.checks_remote import fresh_object, shown
from xlatools.doctor.model import Check, fail, ok
from xlatools.remote.credentials import Credentials


def _channel(url: str, ca_file: str | None) -> grpc.Channel:
    parts = urlsplit(url)
    target = f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'grpcs' else 80)}"
    if parts.scheme == "grpcs":
        roots = Path(ca_file).read_bytes() if ca_file else None
        return grpc.secure_channel(target, grpc.ssl_channel_credentials(root_certificates=roots))
    return grpc.insecure_channel(target)


class _Call(NamedTuple):
    """What every call of the check passes: its deadline and the credential headers."""

    timeout: float
    metadata: tuple[tuple[str, str], ...]


def write_read_check(
    name: str, url: str, credentials: Credentials, instance: str, ca_file: str | None, executor: bool, timeout: float
) -> Check:
    """Raises grpc.RpcError when a call fails (the caller words it)."""
    metadata = tuple((header.lower(), value) for header, value in credentials.headers.items())
    call = _Call(timeout, metadata)
    t0 = time.monotonic()
    where = shown(url) + (f" (instance '{instance}')" if instance else "")
    with _channel(url, ca_file) as channel:
        capabilities = re_grpc.CapabilitiesStub(channel).GetCapabilities(
            re_pb2.GetCapabilitiesRequest(instance_name=instance), **call._asdict()
        )
        if executor:
            if not capabilities.execution_capabilities.exec_enabled:
                return fail(
                    name,
                    f"{where} does not execute actions "
                    "(bazel: 'Remote execution is not supported by the remote server')",
                    "point bazel.remote_executor at a server with an execution service and workers, "
                    "or fix remote_instance_name",
                )
            return ok(name, f"{where} executes actions")
        if not capabilities.HasField("cache_capabilities"):
            return fail(
                name,
                f"{where} has no cache service",
                "fix bazel.remote_instance_name, or enable the CAS and action cache on the server",
            )
        blob, digest_hex = fresh_object()
        digest = re_pb2.Digest(hash=digest_hex, size_bytes=len(blob))
        cas = re_grpc.ContentAddressableStorageStub(channel)
        update = cas.BatchUpdateBlobs(
            re_pb2.BatchUpdateBlobsRequest(
                instance_name=instance, requests=[re_pb2.BatchUpdateBlobsRequest.Request(digest=digest, data=blob)]
            ),
            **call._asdict(),
        )
        if update.responses[0].status.code != 0:
            return fail(
                name,
                f"the CAS refused a write: {update.responses[0].status.message}",
                "check the server's storage (space, permissions) and its log",
            )
        read = cas.BatchReadBlobs(
            re_pb2.BatchReadBlobsRequest(instance_name=instance, digests=[digest]), **call._asdict()
        )
        if read.responses[0].status.code != 0 or read.responses[0].data != blob:
            return fail(
                name, "the CAS accepted a blob but does not serve it back", "check the server's storage configuration"
            )
        return _action_cache(name, url, where, channel, instance, blob, call, t0)


def _action_cache(
    name: str, url: str, where: str, channel, instance: str, blob: bytes, call: _Call, t0: float
) -> Check:
    cache = re_grpc.ActionCacheStub(channel)
    action = re_pb2.Digest(hash=hashlib.sha256(b"action " + blob).hexdigest(), size_bytes=len(blob) + 7)
    result = re_pb2.ActionResult(exit_code=0, stdout_raw=blob)
    try:
        cache.UpdateActionResult(
            re_pb2.UpdateActionResultRequest(instance_name=instance, action_digest=action, action_result=result),
            **call._asdict(),
        )
    except grpc.RpcError as exc:
        if exc.code() in (
            grpc.StatusCode.PERMISSION_DENIED,
            grpc.StatusCode.UNIMPLEMENTED,
            grpc.StatusCode.FAILED_PRECONDITION,
        ):
            return fail(
                name,
                f"the action cache refuses writes ({exc.code().name}: {exc.details()}): "
                "bazel's uploads from this machine are dropped and nothing it builds is shared",
                "allow updates on the server (BuildGrid: allow-updates: true), or, for a read-only cache "
                "by design, add --noremote_upload_local_results to bazel.extra_options",
            )
        raise
    got = cache.GetActionResult(
        re_pb2.GetActionResultRequest(instance_name=instance, action_digest=action), **call._asdict()
    )
    if got.exit_code != 0 or got.stdout_raw != blob:
        return fail(
            name,
            "the action cache accepted an entry but returns a different one",
            "check the server's action cache configuration",
        )
    ms = (time.monotonic() - t0) * 1000
    return ok(name, f"{where}: wrote and read back a CAS blob and an action-cache entry ({ms:.0f} ms)")
