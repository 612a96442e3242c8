"""Run a round of bisection steps at once (`bisect releases --jobs K`): one worker thread per step.

A step installs its environment (uv, in a process of its own) and runs the test (a run bundle, its
program in a session of its own), so threads only wait; the main thread keeps the state (it records
each verdict as it comes). Ctrl-C and SIGTERM reach only the main thread: it then stops every step
still running (run.process.interrupt_running, again until the workers are done, so a program that
starts meanwhile is stopped too), waits for the workers, and the bisection is interrupted as with
one job: finished steps are recorded, interrupted ones are not, and the same command continues.
A step that fails (not a skip: the test cannot go on at all) stops the others the same way.
"""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Callable, Iterator

from xlatools.bisect.engine import StepVerdict
from xlatools.bisect.kary import StepCall

NumberedStep = Callable[[int, str, str], StepVerdict]  # (n, key, label) -> StepVerdict
POLL_SECONDS = 0.2


class ParallelSteps:
    """A kary.BatchRunner that runs up to `jobs` steps at once in threads."""

    def __init__(self, jobs: int, step: NumberedStep | None = None):
        self.step = step  # set once made: the step function checks this runner's `cancel`
        self.jobs = jobs
        self.cancel = threading.Event()  # set: steps not yet testing give up (make_step checks it)

    def __call__(self, calls: list[StepCall]) -> Iterator[tuple[StepCall, StepVerdict]]:
        from xlatools.proctree import sigterm_as_interrupt

        pool = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="bisect-step")
        futures: dict[Future, StepCall] = {pool.submit(self.step, c.n, c.key, c.label): c for c in calls}
        try:
            with sigterm_as_interrupt():  # the workers' own runs cannot install it: they are not the main thread
                yield from self._collect(futures, set(futures))
        except BaseException:  # Ctrl-C, SIGTERM, a failed step, or the consumer gave up (GeneratorExit)
            self._stop({f for f in futures if not f.done()})
            raise
        finally:
            pool.shutdown(wait=True)

    def _collect(self, futures: dict[Future, StepCall], pending: set[Future]) -> Iterator[tuple[StepCall, StepVerdict]]:
        """Each verdict as its step ends; a step that raised ends the round (after what finished with it)."""
        failure: BaseException | None = None
        while pending and failure is None:
            done, pending = wait(pending, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=lambda f: futures[f].n):
                if future.exception() is not None:
                    failure = failure or future.exception()
                else:
                    yield futures[future], future.result()
        if failure is not None:
            raise failure

    def _stop(self, pending: set[Future]) -> None:
        """Stop the steps still running and wait for their workers."""
        from xlatools.cluster.slurm import cancel_all
        from xlatools.run.process import interrupt_running

        self.cancel.set()
        while pending:
            interrupt_running()
            cancel_all()  # steps running as Slurm jobs (--executor slurm): scancel
            _, pending = wait(pending, timeout=POLL_SECONDS)
