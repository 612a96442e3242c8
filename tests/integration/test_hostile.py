"""A subset of the hostile harness (scripts/hostile, docs/hostile.md) as tests: the real CLI against bad
input and faults, a few cases of each class, judged by the harness's own checks (exit code, no
traceback, a message naming what and where, nothing half-written, no orphan, no secret anywhere).
The whole harness (about 1,000 cases) runs by hand: `python -m scripts.hostile`.

Cost: about 30 s of fixtures (two real runs with dumps, a repro pack, a bisect state, a reduction, a
triage folder) and 1-2 s a case; round 4's sixteen take 1-12 s each (a replay worker stopped until its
8 s --timeout, Slurm stand-ins on PATH, a reduction's damaged state), 54-68 s together on 2 shared cores.
"""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from scripts.hostile import cases_reduce, cases_secrets, core, fixtures
from scripts.hostile.__main__ import _unmount_all, all_cases
from tests.helpers import require

SUBSET = [
    # packs: paths only inside the verified members, streamed with caps, what a pack may carry
    "packs/text-climbs-out",
    "packs/text-missing-member",
    "packs/pack-is-fifo",
    "packs/zero-bomb-1gib",
    "packs/dump-flag-outside",
    "packs/inputs-host-file",
    "packs/member-climbs-out",
    # secrets: by name and by shape, in every record and output
    "secrets/run-env-url-userinfo",
    "secrets/run-args-api-key-next",
    "secrets/run-caller-xla-flags",
    "secrets/bisect-env-secret",
    "secrets/pack-fresh-bundle",
    "secrets/report-planted-bundle",
    "secrets/diff-planted-json",
    "secrets/profiles-show-json",
    "secrets/run-dry-run-json",
    # YAML that attacks its loader
    "yaml/profiles-show-alias-bomb",
    "yaml/presets-list-deep-seq",
    "yaml/explain-python-name",
    "yaml/run-profile-fifo",
    "yaml/profiles-validate-not-utf8",
    "yaml/bazelrc-deep-map",
    # records of the wrong shape
    "records/inspect-list",
    "records/diff-wrong-types",
    "records/repro-run-null",
    "records/bisect-state-deep-list",
    "records/pin-verify-fifo",
    "records/bazelrc-user-dir",
    "records/target-cache-run-list",
    "records/dump-fifo-inspect",
    "records/replay-inputs-objects",
    "records/report-nulls",
    # writes that fail
    "writes/pack-o-onto-folder",
    "writes/pack-o-full",
    "writes/run-out-full",
    "writes/replay-out-read-only",
    "writes/pin-apply-read-only-tree",
    "writes/report-o-full",
    "writes/stdout-closed-run",
    "writes/stdout-full-inspect-json",
    "writes/pack-truncated-manifest",
    # values that slipped through
    "values/run-timeout-inf",
    "values/replay-atol-nan",
    "values/run-vmodule-negative",
    "values/run-xla-flag-device-count-negative",
    "values/run-caller-xla-flags-device-count-negative",
    "values/bisect-match-empty",
    "values/releases-python-2.7",
    "values/profile-preset-validate-kind-bogus",
    "values/pin-apply-commit-concatenated",
    "values/lower-timeout-0",
    # processes
    "processes/probe-hangs-run",
    "processes/sigterm-in-first-probe-run",
    "processes/sigint-in-first-probe-doctor",
    "processes/program-unreadable",
    "processes/lower-user-error",
    "processes/timeout-kills-setsid-children",
    # held-out cases that found bugs after the fixes
    "writes/h-report-o-full-device",
    "processes/h-probe-leaves-daemon",
    "packs/h-tolerance-nan",
    # reduce, triage and debug (issues 20 and 21), every class
    "secrets/reduce-xla-flag-url",
    "secrets/triage-env-secret",
    "secrets/debug-run-env-and-args",
    "secrets/debug-setup-program-args",
    "records/reduce-state-deep-list",
    "records/reduce-hlo-cyclic",
    "records/reduce-hlo-fifo",
    "records/triage-state-fifo",
    "records/debug-setup-launch-fifo",
    "records/debug-setup-launch-deep",
    "records/debug-setup-gdbinit-huge",
    "records/debug-passes-library-fifo",
    "values/reduce-max-time-nan",
    "values/reduce-script-missing",
    "values/reduce-error-repeat-too-large",
    "values/reduce-jobs-99999999999",
    "values/triage-ends-climbs-out",
    "values/triage-rtol-nan",
    "values/debug-break-newline",
    "writes/reduce-out-is-file",
    "writes/triage-out-is-file",
    "writes/debug-setup-vscode-is-file",
    "processes/sigterm-in-reduce-jobs-2",
    "processes/sigint-in-debug-session",
    # round 3 (issue 33): links, state, leftovers, growth, tracebacks, waits, messages, leaks
    "links/debug-setup-launch-json-is-a-link",
    "links/debug-setup-vscode-folder-is-a-link",
    "links/debug-setup-twice-is-idempotent",
    "state/reduce-fresh-starts-over",
    "state/triage-json-empty",
    "state/triage-refused-python-leaves-no-folder",
    "leftovers/debug-setup-leaves-no-bazel-server",
    "leftovers/reduce-oracle-leaves-a-daemon",
    "growth/reduce-oracle-prints-megabytes",
    "tracebacks/run-program-name-not-utf8",
    "tracebacks/replay-module-name-not-utf8",
    "tracebacks/pin-verify-lock-urls-string",
    "waits/doctor-python-hangs",
    "messages/reduce-oracle-killed-by-a-signal",
    "messages/debug-gdb-not-a-debugger",
    "leaks/build-refused-writes-nothing",
    "leaks/repro-pack-flag-with-machine-path",
    # round 4 (issue 43): waits with a bound, no exit 70 for what a tool sends, nothing half-written, answers
    "hangs/run-processes-20-digits",
    "hangs/slurm-unknown-state-after-the-tasks",
    "hangs/slurm-squeue-hangs-with-a-child",
    "hangs/replay-worker-stopped",
    "hangs/replay-recorded-snapshot-dev-zero",
    "internal/slurm-sbatch-prints-bytes",
    "internal/replay-timeout-1e12",
    "internal/reduce-state-argument-missing",
    "halfwritten/reduce-on-a-full-disk-leaves-no-state",
    "answers/latest-is-a-folder",
    "answers/slurm-node-fail",
    "answers/run-profile-preset-unknown",
    "answers/doctor-credentials-file-fifo",
    "answers/secret-in-a-path-flag-run-archive",
    "answers/debug-setup-a-name-twice",
    "leftovers/run-processes-leave-a-setsid-daemon",
]
CASES = {case.id: case for case in all_cases()}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    work = tmp_path_factory.mktemp("hostile")
    work.chmod(0o755)  # the no-dac cases run as root without the right to ignore modes
    ctx = core.Context(work, [sys.executable, "-m", "xlatools"], sys.executable)
    fixtures.make(ctx)
    cases_secrets.make_secret_run(ctx)
    cases_reduce.make_fixtures(ctx)
    yield ctx
    _unmount_all(work)


def test_the_subset_names_real_cases():
    assert not set(SUBSET) - set(CASES)
    assert {case.split("/")[0] for case in SUBSET} == {case.cls for case in CASES.values()}


@pytest.mark.parametrize("case_id", SUBSET)
def test_hostile_case(hostile, case_id):
    if "debug-run" in case_id or "debug-session" in case_id:
        require(
            "gdb",
            shutil.which(os.environ.get("XLATOOLS_GDB") or "gdb") is not None,
            "apt-get install gdb (xlatools debug)",
        )
    result = core.execute(CASES[case_id], hostile)
    if result.skipped:
        require("tmpfs", False, result.skipped)
    assert result.clean, f"{case_id}: {'; '.join(result.problems)}\n--- stderr ---\n{result.stderr[-3000:]}"
