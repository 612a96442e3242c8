"""Which image a build runs in, and how to build it (pure).

The tag is derived from the Dockerfile's bytes, its build args and the CA bundle
baked into it, so an unchanged image is found by name and not rebuilt, and any
change produces a new tag instead of silently reusing a stale image.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from xlatools.errors import UsageError
from xlatools.records.build import ImageSpec

SHIPPED_DIR = Path(__file__).resolve().parent / "containers"
SHIPPED = ("cpu", "cuda")
CA_CONTEXT_NAME = "xlatools-ca.crt"
# Put into every build context beside the Dockerfile (the shipped ones run it).
CONTEXT_SCRIPT = SHIPPED_DIR / "install-build-deps.sh"
IMAGE_REPOSITORY = "xlatools-build"


def dockerfile_path(choice: str | None, backend: str, origin_file: str | None) -> Path:
    """`cpu`/`cuda` name a shipped Dockerfile; anything else is a path (a file or
    a directory holding a Dockerfile), relative to the profile that set it."""
    name = choice or ("cuda" if backend == "cuda" else "cpu" if backend == "cpu" else None)
    if name is None:
        raise UsageError(
            f"no shipped Dockerfile for backend '{backend}'",
            hint="set build.container.dockerfile to a Dockerfile path, or build.container.image to a ready image",
        )
    if name in SHIPPED:
        return SHIPPED_DIR / name / "Dockerfile"
    path = Path(name).expanduser()
    if not path.is_absolute() and origin_file:
        path = Path(origin_file).resolve().parent / path
    if path.is_dir():
        path = path / "Dockerfile"
    if not path.is_file():
        raise UsageError(
            f"build.container.dockerfile: {path} does not exist",
            hint=f"use one of {', '.join(SHIPPED)} or a path to a Dockerfile (relative to the profile)",
        )
    return path.resolve()


def content_hash(dockerfile: bytes, build_args: dict[str, str], ca_bundle: bytes, script: bytes = b"") -> str:
    digest = hashlib.sha256()
    for part in (dockerfile, json.dumps(build_args, sort_keys=True).encode(), ca_bundle, script):
        # Length-prefixed, so moving bytes between parts changes the hash.
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def image_spec(resolved, ca_bundle: Path | None) -> ImageSpec:
    profile = resolved.profile
    container = profile.build.container
    if container.image:
        return ImageSpec(ref=container.image, prebuilt=True)
    origin = resolved.origin_of(("build", "container", "dockerfile"))
    dockerfile = dockerfile_path(container.dockerfile, profile.target.backend, origin.file if origin else None)
    args = dict(container.build_args)
    if container.base_image:
        args["BASE_IMAGE"] = container.base_image
    ca_bytes = b""
    if ca_bundle is not None:
        try:
            ca_bytes = ca_bundle.read_bytes()
        except OSError as exc:
            raise UsageError(
                f"build.container.ca_bundle: cannot read {ca_bundle}: {exc.strerror}",
                hint="point it at a PEM bundle, e.g. /etc/ssl/certs/ca-certificates.crt",
            ) from None
    digest = content_hash(dockerfile.read_bytes(), args, ca_bytes, CONTEXT_SCRIPT.read_bytes())
    flavour = dockerfile.parent.name if dockerfile.parent.parent == SHIPPED_DIR else "custom"
    return ImageSpec(
        ref=f"{IMAGE_REPOSITORY}-{flavour}:{digest[:16]}",
        prebuilt=False,
        dockerfile=str(dockerfile),
        build_args=args,
        ca_bundle=str(ca_bundle) if ca_bundle else None,
        content_hash=digest,
    )
