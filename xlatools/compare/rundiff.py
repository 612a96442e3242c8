"""Run-level differences between two manifests: outcome, versions, devices, flags, environment, profile."""

from __future__ import annotations

from typing import Any

from xlatools.compare.model import FieldChange, RunDiff
from xlatools.compare.sides import Side
from xlatools.run.flags import flag_name

# (label, path in the manifest). Durations are shown side by side, never counted as a change.
FIELDS = (
    ("status", ("status",)),
    ("exit code", ("exit_code",)),
    ("signal", ("signal",)),
    ("program", ("program", "label")),
    ("python", ("interpreter", "python_version")),
    ("jax", ("jax", "jax")),
    ("jaxlib", ("jax", "jaxlib")),
    ("backend", ("jax", "backend")),
    ("plugins", ("jax", "plugins")),
    ("host", ("host", "hostname")),
    ("platform", ("platform",)),
    ("timeout", ("timeout",)),
    ("first failed process", ("first_failed",)),  # multi-process runs
)


def _get(data: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _devices(manifest: dict[str, Any]) -> str | None:
    devices = _get(manifest, ("jax", "devices"))
    if not isinstance(devices, list):
        return None
    kinds: dict[str, int] = {}
    for device in devices:
        if isinstance(device, dict):
            name = f"{device.get('platform', '?')}:{device.get('kind', '?')}"
            kinds[name] = kinds.get(name, 0) + 1
    return ", ".join(f"{count}x {name}" for name, count in sorted(kinds.items()))


def _unbundled(value: Any, bundle: str | None) -> Any:
    """Paths inside each bundle differ by construction (`--xla_dump_to=<bundle>/xla_dump`)."""
    if bundle and isinstance(value, str):
        return value.replace(bundle, "<bundle>")
    return value


def compare_maps(a: dict[str, Any], b: dict[str, Any]) -> list[FieldChange]:
    changes = []
    for key in sorted(set(a) | set(b)):
        if key not in b:
            changes.append(FieldChange(key, "removed", a=a[key]))
        elif key not in a:
            changes.append(FieldChange(key, "added", b=b[key]))
        elif a[key] != b[key]:
            changes.append(FieldChange(key, "changed", a[key], b[key]))
    return changes


def _flags(manifest: dict[str, Any], bundle: str | None) -> dict[str, str]:
    out = {}
    for flag in manifest.get("xla_flags") or []:
        _, _, value = str(flag).partition("=")
        out[flag_name(str(flag))] = _unbundled(value, bundle)
    return out


def _env(manifest: dict[str, Any], bundle: str | None) -> dict[str, Any]:
    return {str(c.get("name")): _unbundled(c.get("value"), bundle)
            for c in manifest.get("env_changes") or [] if isinstance(c, dict)}


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts -> dotted keys; provenance (file:line of each value) is left out."""
    if not isinstance(data, dict):
        return {prefix: data} if prefix else {}
    out: dict[str, Any] = {}
    for key, value in data.items():
        if "provenance" in str(key):
            continue
        out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def diff_runs(a: Side, b: Side) -> RunDiff:
    if a.manifest is None or b.manifest is None:
        return RunDiff(compared=False)
    ma, mb = a.manifest, b.manifest
    bundle_a, bundle_b = (str(s.bundle) if s.bundle else None for s in (a, b))
    fields = {label: _get(ma, path) for label, path in FIELDS}
    fields_b = {label: _get(mb, path) for label, path in FIELDS}
    fields["devices"], fields_b["devices"] = _devices(ma), _devices(mb)
    fields["presets"] = [p.get("name") for p in ma.get("presets") or [] if isinstance(p, dict)]
    fields_b["presets"] = [p.get("name") for p in mb.get("presets") or [] if isinstance(p, dict)]
    return RunDiff(
        compared=True,
        fields=compare_maps(fields, fields_b),
        flags=compare_maps(_flags(ma, bundle_a), _flags(mb, bundle_b)),
        env=compare_maps(_env(ma, bundle_a), _env(mb, bundle_b)),
        profile=compare_maps(flatten(ma.get("profile")), flatten(mb.get("profile"))),
        durations={"a": ma.get("duration_s"), "b": mb.get("duration_s")},
    )
