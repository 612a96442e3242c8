"""Run-level differences between two manifests: outcome, versions, devices, flags, environment, profile.

Any two bundles compare on what every manifest has (status, exit code, host); what only a run
records (program, versions, devices, flags, environment, profile) is compared when it is there,
and reads as nothing on a bundle of another kind (a replay)."""

from __future__ import annotations

from xlatools.compare.model import FieldChange, Leaf, RunDiff
from xlatools.compare.sides import Side
from xlatools.records.base import BundleRecord
from xlatools.records.run import InterpreterFacts, RunManifest
from xlatools.run.flags import flag_name


def _run(manifest: BundleRecord) -> RunManifest | None:
    return manifest if isinstance(manifest, RunManifest) else None


def _devices(jax: InterpreterFacts | None) -> str | None:
    if jax is None:
        return None
    kinds: dict[str, int] = {}
    for device in jax.devices:
        name = f"{'?' if device.platform is None else device.platform}:{'?' if device.kind is None else device.kind}"
        kinds[name] = kinds.get(name, 0) + 1
    return ", ".join(f"{count}x {name}" for name, count in sorted(kinds.items()))


def run_fields(manifest: BundleRecord) -> dict[str, Leaf]:
    """The fields compared one to one (durations are shown side by side, never counted as a change)."""
    run = _run(manifest)
    jax = run.jax if run else None
    return {
        "status": manifest.status,
        "exit code": manifest.exit_code,
        "signal": run.signal if run else None,
        "program": run.program.label if run and run.program else None,
        "python": run.interpreter.python_version if run else None,
        "jax": jax.jax if jax else None,
        "jaxlib": jax.jaxlib if jax else None,
        "backend": jax.backend if jax else None,
        "plugins": list(jax.plugins) if jax else None,
        "host": manifest.host.hostname if manifest.host else None,
        "platform": run.platform if run else None,
        "timeout": run.timeout if run else None,
        "devices": _devices(jax),
        "presets": [preset.name for preset in run.presets] if run else [],
        "first failed process": run.first_failed if run else None,  # multi-process runs
    }


def _unbundled(value: str | None, bundle: str | None) -> str | None:
    """Paths inside each bundle differ by construction (`--xla_dump_to=<bundle>/xla_dump`)."""
    if bundle and isinstance(value, str):
        return value.replace(bundle, "<bundle>")
    return value


def compare_maps(a: dict[str, Leaf], b: dict[str, Leaf]) -> list[FieldChange]:
    changes = []
    for key in sorted(set(a) | set(b)):
        if key not in b:
            changes.append(FieldChange(key, "removed", a=a[key]))
        elif key not in a:
            changes.append(FieldChange(key, "added", b=b[key]))
        elif a[key] != b[key]:
            changes.append(FieldChange(key, "changed", a[key], b[key]))
    return changes


def _flags(run: RunManifest | None, bundle: str | None) -> dict[str, Leaf]:
    out: dict[str, Leaf] = {}
    for flag in run.xla_flags if run else []:
        _, _, value = flag.partition("=")
        out[flag_name(flag)] = _unbundled(value, bundle)
    return out


def _env(run: RunManifest | None, bundle: str | None) -> dict[str, Leaf]:
    return {change.name: _unbundled(change.value, bundle) for change in (run.env_changes if run else [])}


def flatten(data: object, prefix: str = "") -> dict[str, Leaf]:
    """Nested JSON objects -> dotted keys; provenance (file:line of each value) is left out."""
    if not isinstance(data, dict):
        return {prefix: data} if prefix else {}  # type: ignore[dict-item]  # a JSON leaf: scalar or list
    out: dict[str, Leaf] = {}
    for key, value in data.items():
        if "provenance" in str(key):
            continue
        out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def _profile(run: RunManifest | None) -> dict[str, Leaf]:
    from xlatools.records import to_json

    return flatten(to_json(run.profile)) if run and run.profile else {}


def diff_runs(a: Side, b: Side) -> RunDiff:
    if a.manifest is None or b.manifest is None:
        return RunDiff(compared=False)
    run_a, run_b = _run(a.manifest), _run(b.manifest)
    bundle_a, bundle_b = (str(s.bundle) if s.bundle else None for s in (a, b))
    return RunDiff(
        compared=True,
        fields=compare_maps(run_fields(a.manifest), run_fields(b.manifest)),
        flags=compare_maps(_flags(run_a, bundle_a), _flags(run_b, bundle_b)),
        env=compare_maps(_env(run_a, bundle_a), _env(run_b, bundle_b)),
        profile=compare_maps(_profile(run_a), _profile(run_b)),
        durations={"a": run_a.duration_s if run_a else None, "b": run_b.duration_s if run_b else None},
    )
