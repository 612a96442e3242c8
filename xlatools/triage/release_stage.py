"""What the crash/miscompile triage and the metric triage share: the ends of the search, a release's cached
environment, and the `bisect releases` stage up to its answer (each triage words its own summary)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from xlatools.errors import EXIT_MISSING
from xlatools.records.triage import ReleasesFound
from xlatools.triage.stages import StageProblem
from xlatools.vocab import BisectStatus, StageStatus

if TYPE_CHECKING:
    from xlatools.records.bisect import BisectAnswer
    from xlatools.console import Reporter
    from xlatools.triage.plan import TriageRequest


class ReleaseSides:
    """The part of a triage's context that names releases; `state` is the triage's record (its folder and its
    `releases` finding)."""

    request: TriageRequest
    state: Any
    reporter: Reporter

    @property
    def folder(self) -> Path:
        return Path(self.state.folder or ".")

    def ends(self) -> tuple[str, str]:
        """(last good, first bad): the release bisection's, or the given ends when it has none."""
        found = self.state.releases
        return (found.last_good, found.first_bad) if found else (self.request.good, self.request.bad)

    def python_of(self, version: str) -> str:
        """The cached environment of jax `version` (made now when missing, as bisect releases makes them)."""
        from xlatools.bisect.envs import InstallFailed, ensure, release_env

        r = self.request
        try:
            python, _, _ = ensure(
                release_env(version, r.python_version, r.platform, r.requirements), self.reporter.info
            )
        except InstallFailed as exc:
            raise StageProblem(
                StageStatus.CANNOT_RUN, f"cannot install jax {version}: {exc.reason}", EXIT_MISSING
            ) from None
        return str(python)


def bisect_the_releases(ctx: ReleaseSides) -> tuple[BisectAnswer, str]:
    """Run (or continue) `bisect releases` under the triage folder; record its ends in `ctx.state.releases`.
    Returns its answer and the summary both triages start from; a bisection that did not end is cannot-run."""
    from xlatools.bisect.api import ReleaseRequest, bisect_releases

    r = ctx.request
    request = ReleaseRequest(
        good=r.good, bad=r.bad, test=r.test, python_version=r.python_version, out=ctx.folder / "bisect",
        requirements=r.requirements,
    )  # fmt: skip
    state = bisect_releases(request, ctx.reporter)
    answer = state.result
    if state.status != BisectStatus.DONE or answer is None:
        raise StageProblem(StageStatus.CANNOT_RUN, state.message or f"the bisection ended {state.status}", EXIT_MISSING)
    ctx.state.releases = ReleasesFound(
        last_good=answer.last_good.key, first_bad=answer.first_bad.key, folder=str(state.folder),
        last_good_bundle=answer.last_good.bundle, first_bad_bundle=answer.first_bad.bundle, steps=len(state.steps),
    )  # fmt: skip
    summary = f"last good jax {answer.last_good.key}, first bad jax {answer.first_bad.key} ({len(state.steps)} steps)"
    return answer, summary
