"""Docker engine access through the docker SDK: connect, build an image with
streamed output, run one build container, clean up leftovers by label.

Imported only inside commands (never at CLI start-up). Every container we
create is removed in `finally` (success, failure, Ctrl-C) unless asked to keep it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from xlatools.errors import ContainerError, EnvironmentMissing

if TYPE_CHECKING:
    from xlatools.console import Reporter

START_HINT = (
    "start the Docker engine (`sudo systemctl start docker`, or `sudo dockerd > /tmp/dockerd.log 2>&1 &`), "
    "or set DOCKER_HOST if it listens elsewhere; use --local to build on this host without Docker"
)

LineSink = Callable[[str], None]


def connect():
    """A client for a running engine, or EnvironmentMissing (exit 3) saying how to start one."""
    try:
        import docker
        from docker.errors import DockerException
    except ImportError:
        raise EnvironmentMissing("the docker Python package is not installed", hint="pip install docker") from None
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except DockerException as exc:
        where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        raise EnvironmentMissing(f"no Docker engine answers at {where} ({_short(exc)})", hint=START_HINT) from None
    return client


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[-1][:300] if text else type(exc).__name__


@dataclass(frozen=True)
class ImageResult:
    id: str
    ref: str
    built: bool  # False: an existing image with the same content tag was reused


def ensure_image(client, spec, rebuild: bool, sink: LineSink) -> ImageResult:
    """The plan's image: reused when its content tag exists, else built (streaming)."""
    from docker.errors import ImageNotFound

    try:
        existing = client.images.get(spec.ref)
    except ImageNotFound:
        existing = None
    if spec.prebuilt:
        if existing is None:
            raise EnvironmentMissing(
                f"image {spec.ref} (build.container.image) is not present on this engine",
                hint=f"docker pull {spec.ref}, or drop build.container.image to let xlatools build one",
            )
        return ImageResult(existing.id, spec.ref, built=False)
    if existing is not None and not rebuild:
        return ImageResult(existing.id, spec.ref, built=False)
    # --rebuild-image also skips the layer cache: a fresh apt-get, not the old layers again.
    return ImageResult(_build(client, spec, sink, no_cache=rebuild), spec.ref, built=True)


def check_base_image(client, spec, rebuild: bool) -> None:
    """Refuse, before the tree or a bundle is touched, a build whose image must be built from a base image
    this engine does not have (images are built with pull=False: a missing base would fail later, in the bundle)."""
    import re

    from docker.errors import DockerException, ImageNotFound

    if spec.prebuilt:
        return  # ensure_image says so when the ready image is missing
    try:
        if not rebuild:
            try:
                client.images.get(spec.ref)
                return  # reused as it is: no base needed
            except ImageNotFound:
                pass
        declared = re.search(r"^ARG BASE_IMAGE=(\S+)", Path(spec.dockerfile).read_text(), re.M)
        base = spec.build_args.get("BASE_IMAGE") or (declared.group(1) if declared else None)
        if base is None:
            return
        try:
            client.images.get(base)
        except ImageNotFound:
            raise EnvironmentMissing(
                f"image {spec.ref} must be built from the base image {base}, which this Docker engine does not have",
                hint="load or pull it (docker load / docker pull), or set build.container.base_image to one you have",
            ) from None
    except (DockerException, OSError):
        return  # the engine's own answer comes when the image is built


def _build(client, spec, sink: LineSink, no_cache: bool) -> str:
    from docker.errors import APIError, DockerException
    from requests import RequestException

    from xlatools.builder.image import CA_CONTEXT_NAME, CONTEXT_SCRIPT
    from xlatools.builder.plan import LABEL_MANAGED

    context = Path(tempfile.mkdtemp(prefix="xlatools-image-"))
    try:
        # A minimal context: the Dockerfile, the install script, the CA bundle (empty when none).
        shutil.copyfile(spec.dockerfile, context / "Dockerfile")
        shutil.copyfile(CONTEXT_SCRIPT, context / CONTEXT_SCRIPT.name)
        ca = Path(spec.ca_bundle).read_bytes() if spec.ca_bundle else b""
        (context / CA_CONTEXT_NAME).write_bytes(ca)
        image_id = None
        try:
            stream = client.api.build(
                path=str(context),
                tag=spec.ref,
                buildargs=dict(spec.build_args),
                rm=True,
                forcerm=True,
                pull=False,
                nocache=no_cache,
                decode=True,
                labels={LABEL_MANAGED: "1", "org.xlatools.content-hash": spec.content_hash},
            )
            for chunk in stream:
                if "error" in chunk:
                    raise _image_error(chunk.get("errorDetail", {}).get("message") or chunk["error"], spec)
                if chunk.get("aux", {}).get("ID"):
                    image_id = chunk["aux"]["ID"]
                for line in (chunk.get("stream") or "").splitlines():
                    sink(line)
        except APIError as exc:
            raise _image_error(_short(exc), spec) from None
        except (DockerException, RequestException) as exc:
            raise ContainerError(
                f"lost the Docker engine while building {spec.ref}: {_short(exc)}", hint=START_HINT
            ) from None
        return image_id or client.images.get(spec.ref).id
    finally:
        shutil.rmtree(context, ignore_errors=True)


_NO_BASE = ("pull access denied", "not found", "manifest unknown", "no such host", "repository does not exist")


def _image_error(message: str, spec):
    """A missing base image is the environment's (exit 3); a failing step is the image's (exit 1)."""
    message = message.strip()
    if any(marker in message for marker in _NO_BASE):
        base = spec.build_args.get("BASE_IMAGE", "the Dockerfile's default BASE_IMAGE")
        return EnvironmentMissing(
            f"building image {spec.ref}: the base image {base} is neither present nor pullable ({message})",
            hint="load or pull it (docker load / docker pull), or set build.container.base_image to one you have",
        )
    return ContainerError(
        f"building image {spec.ref} from {spec.dockerfile} failed: {message}",
        hint="the image build output is above and in build.log; --rebuild-image rebuilds without the layer cache",
    )


def run_container(client, plan, sink: LineSink, keep: bool, reporter: Reporter) -> int:
    """Run the plan's command in a fresh container, stream its output, return its exit code.

    The container is removed in `finally` (also on Ctrl-C) unless `keep`."""
    from docker.errors import APIError, DockerException
    from docker.types import Mount as DockerMount
    from requests import RequestException

    container = None
    try:
        try:
            container = client.containers.create(
                image=plan.image.ref,
                command=list(plan.argv),
                name=plan.container_name,
                labels=dict(plan.labels),
                user=plan.user,
                working_dir=plan.workdir,
                environment=dict(plan.env),
                mounts=[DockerMount(m.target, m.source, type="bind", read_only=m.read_only) for m in plan.mounts],
                network_mode=plan.network,
                init=True,  # tini as PID 1: signals reach build.py/bazel, zombies are reaped
                privileged=False,
                security_opt=["no-new-privileges"],
                detach=True,
            )
            container.start()
        except APIError as exc:
            raise ContainerError(
                f"could not start build container {plan.container_name}: {_short(exc)}",
                hint="check the mounts' host paths and the image",
            ) from None
        try:
            return _follow(container, sink)
        except (DockerException, RequestException) as exc:
            raise ContainerError(f"lost the Docker engine during the build: {_short(exc)}", hint=START_HINT) from None
    finally:
        if container is not None and not keep:
            remove_container(container, reporter)  # SIGKILL if still running, then delete


def _follow(container, sink: LineSink) -> int:
    """Stream the container's output line by line until it exits; its exit status."""
    buffered = ""
    for chunk in container.logs(stream=True, follow=True):
        buffered += chunk.decode("utf-8", errors="replace")
        *lines, buffered = buffered.split("\n")
        for line in lines:
            sink(line)
    if buffered:
        sink(buffered)
    return int(container.wait().get("StatusCode", 1))


def leftover_containers(client) -> list:
    from xlatools.builder.plan import LABEL_MANAGED

    return client.containers.list(all=True, filters={"label": f"{LABEL_MANAGED}=1"})


def remove_container(container, reporter: Reporter) -> None:
    """Force-remove; one already gone is fine, one that cannot be removed is reported, not raised."""
    from docker.errors import DockerException, NotFound
    from requests import RequestException

    try:
        container.remove(force=True)
    except NotFound:
        pass
    except (DockerException, RequestException) as exc:
        reporter.warn(f"could not remove container {container.name} ({_short(exc)}); `xlatools clean` removes it later")


def managed_images(client) -> list:
    from xlatools.builder.plan import LABEL_MANAGED

    return client.images.list(filters={"label": f"{LABEL_MANAGED}=1"})


def remove_image(client, image) -> None:
    from docker.errors import NotFound

    try:
        client.images.remove(image.id, force=True)
    except NotFound:
        pass
