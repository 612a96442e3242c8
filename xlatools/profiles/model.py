"""The profile schema: one typed, frozen model from which validation, the JSON
Schema and every renderer are derived. Unknown keys are errors (extra="forbid").
"""

from __future__ import annotations

import difflib
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from xlatools.redact import SECRET_BAZEL_OPTIONS, has_url_credentials

_HEX40 = r"^[0-9a-f]{40}$"
_HEX64 = r"^[0-9a-f]{64}$"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _int_to_str(value: object) -> object:
    # YAML reads `FOO: 0` as an int; environment values are strings anyway.
    # Floats and bools are not converted: 1.10 would silently become "1.1".
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


EnvValue = Annotated[str, BeforeValidator(_int_to_str)]
Version = Annotated[str, Field(pattern=r"^\d+(\.\d+)*$", description='Dotted version, quoted in YAML: "12.8.0".')]
BazelFlag = Annotated[str, Field(pattern=r"^-\S", description="A single command-line option, e.g. -O0.")]
ComputeCapability = Annotated[
    str,
    Field(pattern=r"^((sm|compute)_\d+[a-z]?|\d+\.\d+[a-z]?)$", description='e.g. "sm_90", "compute_90" or "9.0".'),
]
ConfigName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]

KNOWN_WHEELS = ("jaxlib", "jax-cuda-plugin", "jax-cuda-pjrt", "jax-rocm-plugin", "jax-rocm-pjrt", "jax")


class Target(_Section):
    """What the build targets: backend, toolkit versions, GPUs, Python."""

    backend: Literal["cpu", "cuda", "rocm"] = "cpu"
    python: Version | None = Field(None, description='Python version of the wheels, e.g. "3.11".')
    cuda: Version | None = Field(None, description="Hermetic CUDA version (HERMETIC_CUDA_VERSION).")
    cudnn: Version | None = Field(None, description="Hermetic cuDNN version (HERMETIC_CUDNN_VERSION).")
    nccl: Version | Literal[False] | None = Field(
        None, description="Hermetic NCCL version, or false to build without NCCL (--disable_nccl)."
    )
    compute_capabilities: list[ComputeCapability] = Field(default_factory=list)
    rocm: Version | None = None
    amdgpu_targets: list[str] = Field(default_factory=list, description='e.g. "gfx90a".')


class PerFileCopt(_Section):
    """Options for the source files matching `include` but not `exclude`
    (regular expressions searched in the file's exec path, as bazel does)."""

    include: list[str] = Field(min_length=1)
    exclude: list[str] = Field(default_factory=list)
    options: list[BazelFlag] = Field(min_length=1)


class SecretSource(_Section):
    """Where one secret comes from: an environment variable or a file (its first line), never the value."""

    env: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None = Field(
        None, description="Name of the environment variable holding it."
    )
    file: str | None = Field(None, description="A file holding it (first line), relative to the profile.")

    @model_validator(mode="after")
    def _one_source(self) -> "SecretSource":
        if (self.env is None) == (self.file is None):
            raise ValueError("give exactly one of env (a variable name) or file (a path)")
        return self


class RemoteCredentials(_Section):
    """Credentials for the remote cache/executor. Read when a build starts, handed to bazel through a
    private bazelrc outside the tree; never written into .bazelrc.user, manifests, logs or plans."""

    basic_auth: SecretSource | None = Field(None, description='"user:password" for an http(s) remote cache.')
    headers: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9-]+$")], SecretSource] = Field(
        default_factory=dict, description="Header name -> its value's source (--remote_header), e.g. Authorization."
    )
    google_credentials: str | None = Field(
        None, description="A credentials file bazel reads (--google_credentials), relative to the profile."
    )


def _refuse_userinfo(url: str | None) -> None:
    if url and has_url_credentials(url):
        raise ValueError(
            "credentials do not belong in a profile (it is copied into .bazelrc.user and manifests); "
            "give the URL without them and set remote_credentials.basic_auth (env: NAME or file: PATH)"
        )


def _refuse_secret_options(options: list[str]) -> list[str]:
    """bazel options in a profile (extra_options, a build.command) that would carry credentials are refused."""
    for option in options:
        name = option.split("=", 1)[0]
        if name in SECRET_BAZEL_OPTIONS:
            raise ValueError(
                f"{name} carries a secret, which does not belong in a profile; set "
                "remote_credentials.headers (NAME: {env: VARIABLE} or {file: PATH})"
            )
        if name in ("--remote_cache", "--remote_executor"):
            _refuse_userinfo(option.partition("=")[2])
    return options


class Bazel(_Section):
    """Bazel settings rendered into one named config of a .bazelrc file."""

    compilation_mode: Literal["dbg", "fastbuild", "opt"] | None = None
    strip: Literal["never", "sometimes", "always"] | None = None
    configs: list[ConfigName] = Field(
        default_factory=list, description="Upstream bazel configs to enable, e.g. debug_symbols."
    )
    copts: list[BazelFlag] = Field(default_factory=list)
    cxxopts: list[BazelFlag] = Field(default_factory=list)
    linkopts: list[BazelFlag] = Field(default_factory=list)
    per_file_copts: list[PerFileCopt] = Field(default_factory=list)
    defines: list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*(=.*)?$")]] = Field(
        default_factory=list, description="C preprocessor defines, NAME or NAME=VALUE, passed as --copt=-D..."
    )
    bazel_defines: dict[str, EnvValue] = Field(default_factory=dict, description="bazel --define=KEY=VALUE.")
    repo_env: dict[str, EnvValue] = Field(default_factory=dict)
    action_env: dict[str, EnvValue] = Field(default_factory=dict)
    disk_cache: str | None = None
    remote_cache: Annotated[str, Field(pattern=r"^(https?|grpcs?)://\S+$")] | None = Field(
        None, description="A bazel remote cache (http(s):// or grpc(s)://), without credentials in the URL."
    )
    remote_executor: Annotated[str, Field(pattern=r"^grpcs?://\S+$")] | None = Field(
        None, description="A remote execution service (REAPI, grpc(s)://)."
    )
    remote_instance_name: str | None = None
    remote_platform_properties: dict[str, EnvValue] = Field(
        default_factory=dict, description="Platform properties of remote actions (--remote_default_exec_properties)."
    )
    remote_credentials: RemoteCredentials | None = None
    jobs: int | None = Field(None, ge=1, le=100_000)
    extra_options: list[Annotated[str, Field(pattern=r"^--\S")]] = Field(
        default_factory=list, description="Further bazel options, passed verbatim."
    )

    @field_validator("remote_cache", "remote_executor")
    @classmethod
    def _no_userinfo(cls, url: str | None) -> str | None:
        _refuse_userinfo(url)
        return url

    @model_validator(mode="after")
    def _basic_auth_needs_http(self) -> "Bazel":
        credentials = self.remote_credentials
        if credentials and credentials.basic_auth and not (self.remote_cache or "").startswith("http"):
            raise ValueError(
                "remote_credentials.basic_auth is for an http(s):// remote_cache; "
                "a grpc:// service takes remote_credentials.headers (e.g. Authorization)"
            )
        return self

    @field_validator("extra_options")
    @classmethod
    def _no_secret_options(cls, options: list[str]) -> list[str]:
        return _refuse_secret_options(options)


class SourceDep(_Section):
    """Where one source dependency comes from (used by `xlatools pin`)."""

    repo: str | None = Field(None, description="Git URL or local path, to resolve `ref`.")
    commit: Annotated[str, Field(pattern=_HEX40)] | None = None
    ref: str | None = Field(None, description="Branch or tag, resolved to a commit.")
    sha256: Annotated[str, Field(pattern=_HEX64)] | None = None
    urls: list[Annotated[str, Field(pattern=r"\{commit\}")]] = Field(
        default_factory=list, description="Archive URL templates containing {commit}, tried in order."
    )
    strip_prefix: str | None = Field(
        None, description="Top folder of the archive, may contain {commit}; default <name>-{commit}."
    )
    local_path: str | None = Field(None, description="A local checkout used instead of an archive.")
    patches: list[str] = Field(
        default_factory=list, description="Patch files (-p1, relative to the profile) applied to the archive."
    )


class Source(_Section):
    jax: SourceDep | None = None
    xla: SourceDep | None = None
    tensorflow: SourceDep | None = Field(None, description="For JAX trees before 2023, which pinned TensorFlow.")


class Container(_Section):
    image: str | None = Field(None, description="A ready image to use instead of building one.")
    dockerfile: str | None = Field(None, description="cpu, cuda, or a path to a Dockerfile.")
    base_image: str | None = None
    build_args: dict[str, EnvValue] = Field(default_factory=dict)
    ca_bundle: str | None = Field(None, description="CA bundle mounted for pip and bazel (TLS-intercepting proxies).")
    env: dict[str, EnvValue] = Field(default_factory=dict)
    network: Literal["bridge", "host", "none"] = Field(
        "bridge", description="Container network; host lets the build reach a cache on the host's 127.0.0.1."
    )


class Build(_Section):
    wheels: list[str] = Field(default_factory=list)
    output_dir: str = "dist"
    command: list[str] | None = Field(
        None,
        description="Command template replacing JAX's build/build.py; placeholders: {source}, {output}, {wheels}, "
        "{python}, {config}, {bazel_cache}, {jobs}, {xla}; a token that is exactly {bazel_options} becomes "
        "one argument per option.",
    )
    container: Container = Field(default_factory=Container)

    @field_validator("command")
    @classmethod
    def _no_secret_options(cls, command: list[str] | None) -> list[str] | None:
        return _refuse_secret_options(command) if command else command

    @field_validator("wheels")
    @classmethod
    def _known_wheels(cls, wheels: list[str]) -> list[str]:
        for wheel in wheels:
            if wheel not in KNOWN_WHEELS:
                close = difflib.get_close_matches(wheel, KNOWN_WHEELS, n=1)
                hint = f"did you mean '{close[0]}'? " if close else ""
                raise ValueError(f"unknown wheel '{wheel}'; {hint}known: {', '.join(KNOWN_WHEELS)}")
        return wheels


class Run(_Section):
    presets: list[str] = Field(default_factory=list, description="Presets applied to every run.")
    dump_preset: str = Field("hlo", description="The dump preset `xlatools run --dump` turns on.")
    env: dict[str, EnvValue] = Field(default_factory=dict)
    xla_flags: list[Annotated[str, Field(pattern=r"^--\S")]] = Field(default_factory=list)
    platform: Literal["auto", "cpu", "gpu"] = "auto"
    python: str | None = Field(None, description="Target interpreter that runs the program.")
    frontend: Literal["jax", "tensorflow", "torch-xla"] | None = Field(
        None, description="The XLA frontend the program uses; absent: a frontend preset's, else detected (jax first)."
    )
    timeout: float | None = Field(None, gt=0, allow_inf_nan=False)
    define_presets: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Presets of this profile, by name: kind (dump, log, jax, frontend), description, xla_flags, env, "
        "vmodule, min_jaxlib, max_jaxlib. Checked by `xlatools presets`.",
    )


class Cluster(_Section):
    """Where `--executor slurm` runs work: the sbatch settings of every job xlatools submits."""

    executor: Literal["local", "slurm"] = Field("local", description="Where runs and bisection steps run by default.")
    partition: str | None = Field(None, pattern=r"^[A-Za-z0-9_.,-]+$", description="sbatch --partition.")
    account: str | None = Field(None, pattern=r"^[A-Za-z0-9_.-]+$", description="sbatch --account.")
    time: str | None = Field(
        None, pattern=r"^[0-9:-]+$", description='sbatch --time, e.g. "30" (minutes) or "1:00:00".'
    )
    nodes: int | None = Field(None, ge=1, description="sbatch --nodes (default: as many as the tasks need).")
    gpus_per_task: int | None = Field(None, ge=0, description="sbatch --gpus-per-task.")
    cpus_per_task: int | None = Field(None, ge=1, description="sbatch --cpus-per-task.")
    sbatch_options: list[Annotated[str, Field(pattern=r"^--[a-z][a-z-]*(=\S.*)?$")]] = Field(
        default_factory=list, description='More sbatch options, e.g. "--qos=debug", "--constraint=h100".'
    )
    setup: list[str] = Field(
        default_factory=list,
        description="Shell lines the job runs on the node first (module load ..., source venv/bin/activate).",
    )


class Profile(_Section):
    """A build-and-debug setup. `name` defaults to the file name."""

    name: ConfigName
    description: str = ""
    extends: str | list[str] = Field(default_factory=list, description="Parent profile(s), merged in order.")
    target: Target = Field(default_factory=Target)
    bazel: Bazel = Field(default_factory=Bazel)
    source: Source = Field(default_factory=Source)
    build: Build = Field(default_factory=Build)
    run: Run = Field(default_factory=Run)
    cluster: Cluster = Field(default_factory=Cluster)

    @property
    def parents(self) -> list[str]:
        return [self.extends] if isinstance(self.extends, str) else list(self.extends)


def json_schema() -> dict[str, Any]:  # a JSON Schema document, for editors
    schema = Profile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "xlatools profile"
    # In files the name is optional: it defaults to the file's name.
    schema["required"] = [key for key in schema.get("required", []) if key != "name"]
    if not schema["required"]:
        del schema["required"]
    return schema
