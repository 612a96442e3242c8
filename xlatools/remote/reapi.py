"""The gRPC half of the cache check, on the REAPI protos that BuildGrid's client library
(`buildgrid-common`) ships: capabilities, a CAS blob and an action-cache entry written and
read back. Imported only when that library and grpcio are installed (`xlatools[remote]`)."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from urllib.parse import urlsplit

import grpc
from buildgrid.common.protos.build.bazel.remote.execution.v2 import remote_execution_pb2 as re_pb2
from buildgrid.common.protos.build.bazel.remote.execution.v2 import remote_execution_pb2_grpc as re_grpc

from xlatools.remote.cachecheck import CacheCheck, fresh_object, shown
from xlatools.remote.credentials import Credentials


def _channel(url: str, ca_file: str | None) -> grpc.Channel:
    parts = urlsplit(url)
    target = f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'grpcs' else 80)}"
    if parts.scheme == "grpcs":
        roots = Path(ca_file).read_bytes() if ca_file else None
        return grpc.secure_channel(target, grpc.ssl_channel_credentials(root_certificates=roots))
    return grpc.insecure_channel(target)


def write_read_check(url: str, credentials: Credentials, instance: str, ca_file: str | None, executor: bool,
                     timeout: float) -> CacheCheck:
    """Raises grpc.RpcError when a call fails (the caller words it)."""
    metadata = tuple((name.lower(), value) for name, value in credentials.headers.items())
    call = {"timeout": timeout, "metadata": metadata}
    t0 = time.monotonic()
    where = shown(url) + (f" (instance '{instance}')" if instance else "")
    with _channel(url, ca_file) as channel:
        capabilities = re_grpc.CapabilitiesStub(channel).GetCapabilities(
            re_pb2.GetCapabilitiesRequest(instance_name=instance), **call)
        if executor:
            if not capabilities.execution_capabilities.exec_enabled:
                return CacheCheck(url, "fail", f"{where} does not execute actions "
                                  "(bazel: 'Remote execution is not supported by the remote server')",
                                  "point bazel.remote_executor at a server with an execution service and workers, "
                                  "or fix remote_instance_name")
            return CacheCheck(url, "ok", f"{where} executes actions")
        if not capabilities.HasField("cache_capabilities"):
            return CacheCheck(url, "fail", f"{where} has no cache service",
                              "fix bazel.remote_instance_name, or enable the CAS and action cache on the server")
        blob, digest_hex = fresh_object()
        digest = re_pb2.Digest(hash=digest_hex, size_bytes=len(blob))
        cas = re_grpc.ContentAddressableStorageStub(channel)
        update = cas.BatchUpdateBlobs(re_pb2.BatchUpdateBlobsRequest(
            instance_name=instance, requests=[re_pb2.BatchUpdateBlobsRequest.Request(digest=digest, data=blob)]), **call)
        if update.responses[0].status.code != 0:
            return CacheCheck(url, "fail", f"the CAS refused a write: {update.responses[0].status.message}",
                              "check the server's storage (space, permissions) and its log")
        read = cas.BatchReadBlobs(re_pb2.BatchReadBlobsRequest(instance_name=instance, digests=[digest]), **call)
        if read.responses[0].status.code != 0 or read.responses[0].data != blob:
            return CacheCheck(url, "fail", "the CAS accepted a blob but does not serve it back",
                              "check the server's storage configuration")
        return _action_cache(url, where, channel, instance, blob, call, t0)


def _action_cache(url: str, where: str, channel, instance: str, blob: bytes, call: dict, t0: float) -> CacheCheck:
    cache = re_grpc.ActionCacheStub(channel)
    action = re_pb2.Digest(hash=hashlib.sha256(b"action " + blob).hexdigest(), size_bytes=len(blob) + 7)
    result = re_pb2.ActionResult(exit_code=0, stdout_raw=blob)
    try:
        cache.UpdateActionResult(re_pb2.UpdateActionResultRequest(
            instance_name=instance, action_digest=action, action_result=result), **call)
    except grpc.RpcError as exc:
        if exc.code() in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNIMPLEMENTED,
                          grpc.StatusCode.FAILED_PRECONDITION):
            return CacheCheck(url, "fail", f"the action cache refuses writes ({exc.code().name}: {exc.details()}): "
                              "bazel's uploads from this machine are dropped and nothing it builds is shared",
                              "allow updates on the server (BuildGrid: allow-updates: true), or, for a read-only cache "
                              "by design, add --noremote_upload_local_results to bazel.extra_options")
        raise
    got = cache.GetActionResult(re_pb2.GetActionResultRequest(instance_name=instance, action_digest=action), **call)
    if got.exit_code != 0 or got.stdout_raw != blob:
        return CacheCheck(url, "fail", "the action cache accepted an entry but returns a different one",
                          "check the server's action cache configuration")
    ms = (time.monotonic() - t0) * 1000
    return CacheCheck(url, "ok", f"{where}: wrote and read back a CAS blob and an "
                      f"action-cache entry ({ms:.0f} ms)")
