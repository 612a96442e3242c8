"""`repro pack` of a replay bundle (`artifacts/latest-replay`): the pack is the replay made portable.

It carries what the replay did: the modules it replayed (not every module of its run), its XLA flags,
disabled passes, tolerances, precision rule, inputs, references and interpreter, each unless the
command line sets it again (then a note says what replaced what). What cannot travel is refused,
naming it: an interpreter or inputs file the replay used that is gone, a source that is gone, a replay
of a pack (that pack is the reproducer). Pure but for reading the manifest and checking paths.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from xlatools.errors import UsageError
from xlatools.records.replay import PackModule, ReplayManifest, ReplayRequest
from xlatools.vocab import PrecisionMode, ReplayOutcome

# The replay's settings a pack carries: request field -> the `repro pack` option that sets it instead.
CARRIED = {
    "python": "--python",
    "modules": "--module",
    "include_all": "--all",
    "source_from": "--from",
    "inputs": "--inputs",
    "seed": "--seed",
    "references": "--reference",
    "reference_pythons": "--reference-python",
    "atol": "--atol",
    "rtol": "--rtol",
    "xla_flags": "--xla-flag",
    "disable_passes": "--disable-pass",
    "no_opt": "--no-opt",
    "platform": "--platform",
    "deterministic": "--nondeterministic",
    "precision": "--precision",
}


def replay_of(path: Path) -> ReplayManifest | None:
    """The replay a bundle records, None for any other bundle, folder or file (a damaged manifest: exit 2)."""
    from xlatools.records import read_bundle

    path = Path(path).expanduser()
    if not path.is_dir() or not os.path.lexists(path / "manifest.json"):
        return None
    record = read_bundle(path)
    return record if isinstance(record, ReplayManifest) else None


def _done(replay: ReplayManifest, bundle: Path) -> ReplayRequest:
    """What the replay was asked, with the modules it replayed (skipped ones aside) as its module choice."""
    from xlatools.replay.plan import INPUT_MODES

    plan = replay.plan
    if plan is None:
        raise UsageError(f"{bundle}: the replay recorded no plan", hint="pack its run bundle instead")
    done = plan.request
    replayed = [m for m in replay.modules if m.outcome != ReplayOutcome.SKIPPED]
    modules = [] if plan.source_kind == "file" else [m.name if m.id is None else str(m.id) for m in replayed]
    return replace(
        done,
        modules=modules or list(done.modules),
        include_all=False if modules else done.include_all,
        precision=done.precision or PrecisionMode.AS_COMPILED,  # a replay older than --precision compared so
        inputs=done.inputs if done.inputs in (None, *INPUT_MODES) else str(Path(str(done.inputs)).absolute()),
    )


def _lost(done: ReplayRequest, replay: ReplayManifest, bundle: Path, explicit: set[str]) -> list[str]:
    """What the pack would lose: the replay's source, interpreters and inputs file that are not here any more."""
    from xlatools.replay.plan import INPUT_MODES

    problems = []
    if replay.plan is not None and replay.plan.source_kind == "pack":
        problems.append(f"it replayed the repro pack {done.source}, which is the reproducer already (copy it)")
    elif not Path(replay.source or done.source).exists():
        problems.append(f"its source {replay.source or done.source} is gone")
    if "python" not in explicit and not os.path.exists(done.python):
        problems.append(
            f"its interpreter {done.python} is gone (--python PY: one with jaxlib {_jaxlib(replay, done.python)})"
        )
    if "reference_pythons" not in explicit:
        problems += [
            f"its reference interpreter {p} is gone (--reference-python PY: one with jaxlib {_jaxlib(replay, p)})"
            for p in done.reference_pythons
            if not os.path.exists(p)
        ]
    if "inputs" not in explicit and done.inputs not in (None, *INPUT_MODES) and not Path(str(done.inputs)).is_file():
        problems.append(f"its inputs file {done.inputs} is gone (--inputs FILE)")
    return problems


def _jaxlib(replay: ReplayManifest, python: str) -> str:
    facts = replay.targets.get(python)
    return str(facts.jaxlib) if facts and facts.jaxlib else "?"


def carry_replay(
    replay: ReplayManifest, bundle: Path, given: ReplayRequest, explicit: set[str]
) -> tuple[ReplayRequest, list[str]]:
    """The pack's request for a replay bundle: the replay's settings (`CARRIED`), those the command line sets in
    `explicit` (request field names) taken from `given`; and notes saying what was carried and what replaced what.
    Refused (exit 2), naming each, when something the replay used cannot be carried."""
    done = _done(replay, bundle)
    lost = _lost(done, replay, bundle, explicit)
    if lost:
        raise UsageError(
            f"repro pack {bundle}: a pack of this replay would lose what it replayed: " + "; ".join(lost),
            hint="give what is gone on the command line, or pack the run bundle itself",
        )
    carried = {name: getattr(given if name in explicit else done, name) for name in CARRIED}
    source = Path(replay.source or done.source)  # resolved when it ran: `artifacts/latest` may name another run now
    request = replace(given, source=source, env=dict(done.env), process=done.process, **carried)
    notes = [f"{bundle} is a replay bundle: the pack carries its replay of {source}"]
    shown = [
        f"{CARRIED[name]} {_shown(getattr(done, name))}"
        for name in ("modules", "xla_flags", "disable_passes", "atol", "rtol", "references", "reference_pythons")
        if name not in explicit and getattr(done, name) not in ([], None)
    ]
    if shown:
        notes.append("carried from the replay: " + "; ".join(shown))
    notes += [
        f"{CARRIED[name]} {_shown(getattr(given, name))} replaces the replay's {_shown(getattr(done, name))}"
        for name in CARRIED
        if name in explicit and getattr(given, name) != getattr(done, name)
    ]
    if replay.isolation is not None:
        notes.append("the replay's isolation (isolate.json) stays in its bundle: a pack replays modules")
    return request, notes


def _shown(value: object) -> str:
    if isinstance(value, list):
        return " ".join(str(v) for v in value) or "(none)"
    return str(value)


def outcome_changes(replay: ReplayManifest, expected: list[PackModule]) -> list[str]:
    """The modules whose outcome in the pack is not the one the replay gave (e.g. the replay compiled with the
    run's debug options, which a pack does not carry): said, so that a pack never differs from its replay silently."""
    from xlatools.replay.repro_verdict import describe, expected_of

    was = {(m.id, m.name): describe(expected_of(m)) for m in replay.modules}
    return [
        f"{e.label}: the pack records {describe(e)}; the replay gave {was[(e.id, e.name)]}"
        for e in expected
        if (e.id, e.name) in was and describe(e) != was[(e.id, e.name)]
    ]
