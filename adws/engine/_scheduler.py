"""The scheduler of `parallel` and `fan_out`: run branches in threads, watch, cancel.

Each branch runs in a thread of its own under its retry policy, from the
context its step started with, and fills an `Outcome`. `run_branches`
starts at most `max_concurrency` at once, reuses what a resumed run stored,
reports each branch's end to the run's observers, and, unless told to let
every branch finish (`fail_fast=False`), cancels the branches still running
once the step can no longer succeed: their process groups are stopped and
no new process starts. A branch that parks (its agent's limit resets past
the run's `max_wait`) has not failed: its siblings run to their end.
Ctrl-C (or SIGTERM) cancels them all, waits for their threads and
re-raises. What the outcomes mean for the step (the
verdict) is `adws.engine.concurrency`'s business.
"""

from __future__ import annotations

import contextvars
import functools
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Final, final

import attrs

from adws import io_ops
from adws.engine.context import WorkflowContext
from adws.engine.errors import PipelineError
from adws.engine.events import BranchAttemptFailed, BranchFinished, BranchStarted, BranchStatus
from adws.engine.parking import is_parked
from adws.engine.retry import retry_step
from adws.engine.scope import RunScope, current_scope, enter_branch
from adws.engine.step import Step
from adws.engine.usage import Usage

if TYPE_CHECKING:
    from adws.engine.metering import Meter

__all__ = ["Branch", "Outcome", "run_branches"]

_TICK: Final = 0.05


@final
@attrs.frozen
class Branch:
    parent: str
    path: str
    step: Step
    ctx: WorkflowContext


@final
@attrs.define
class Outcome:
    status: BranchStatus | None = None
    outputs: Mapping[str, object] = attrs.field(factory=dict)
    error: PipelineError | None = None
    usage: Usage | None = None
    """What a succeeded branch's last attempt spent (failed ones are on their own events)."""
    attempts: int = 0


def _wait(scope: RunScope, cancel: threading.Event) -> Callable[[float], None]:
    """Sleep through the run's `sleep`, but never past a cancellation."""
    if scope.sleep is not time.sleep:
        return scope.sleep  # a test's fake clock: it does not wait anyway

    def wait_unless_cancelled(seconds: float) -> None:
        cancel.wait(seconds)

    return wait_unless_cancelled


def _run_branch(branch: Branch, scope: RunScope, cancel: threading.Event, outcome: Outcome) -> None:
    """Run one branch in its thread, under its retry policy; fill `outcome`."""
    step, path = branch.step, branch.path
    io_ops.CANCEL.set(cancel)
    enter_branch(path)
    attempts = step.retry.max_attempts
    parent = branch.parent
    scope.emit(BranchStarted(scope.run_id, parent, scope.index, scope.total, path, attempts))

    meters: list[Meter] = []

    def report(n: int, error: PipelineError, again: bool, delay: float, secs: float) -> None:  # noqa: FBT001 - retry_step's hook signature
        event = BranchAttemptFailed(
            scope.run_id,
            parent,
            scope.index,
            scope.total,
            path,
            n,
            attempts,
            error,
            again,
            delay,
            secs,
            meters[-1].report(),
        )
        scope.emit(event)

    made, outcome.attempts = retry_step(
        step,
        branch.ctx,
        sleep=_wait(scope, cancel),
        on_attempt_failed=report,
        meters=meters,
        record_as=path,
        cancelled=cancel.is_set,  # a branch stopped by its step is cancelled, not failed
    )
    if isinstance(made, WorkflowContext):  # it finished before the cancellation reached it
        outcome.status, outcome.outputs = "succeeded", made.outputs
        outcome.usage = meters[-1].report()
    elif cancel.is_set():
        outcome.status = "cancelled"
    else:
        outcome.status, outcome.error = "failed", attrs.evolve(made, step_name=path)


def run_branches(  # noqa: C901, PLR0913, PLR0915 - the scheduler: start, watch, cancel, report
    name: str,
    branches: Sequence[Branch],
    max_concurrency: int | None,
    min_successes: int | None,
    *,
    fail_fast: bool = True,
    settled: Callable[[Sequence[Outcome]], bool] | None = None,
) -> list[Outcome]:
    """Run the branches, at most `max_concurrency` at once; return their outcomes in order.

    With `fail_fast`, the branches still running are cancelled (and those
    not started never start) as soon as `min_successes` (all, when None) is
    out of reach; without it every branch runs to its end. `settled`, told
    the outcomes (None status: still running or waiting) after each branch
    ends, cancels the rest the same way once it says the step's result is
    known (`best_of(..., early_stop=True)`).
    """
    scope = current_scope()
    needed = len(branches) if min_successes is None else min_successes
    outcomes = [Outcome() for _ in branches]
    cancels = [threading.Event() for _ in branches]
    stop = threading.Event()
    counts = {"done": 0, "failed": 0}

    def finish(index: int, seconds: float) -> None:
        outcome = outcomes[index]
        if outcome.status in {"succeeded", "reused"}:
            counts["done"] += 1
        elif outcome.status == "failed" and not is_parked(outcome.error):
            counts["failed"] += 1  # a parked branch has not failed: its siblings go on
        branch = branches[index]
        scope.emit(
            BranchFinished(
                scope.run_id,
                name,
                scope.index,
                scope.total,
                branch.path,
                outcome.status or "cancelled",
                outcome.attempts,
                seconds,
                outcome.error,
                outcome.outputs,
                counts["done"],
                counts["failed"],
                len(branches),
                outcome.usage,
            )
        )
        if fail_fast and len(branches) - counts["failed"] < needed:
            stop.set()  # k is out of reach: stop everything still running
        if settled is not None and settled(outcomes):
            stop.set()  # the winner is known: the others can no longer win

    pending: dict[Future[None], tuple[int, float]] = {}
    waiting = deque(range(len(branches)))
    workers = max_concurrency or max(len(branches), 1)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"adws-{name}") as pool:
        try:
            while waiting or pending:
                # Start branches only while there is room and no reason to stop: a branch
                # that never started is cancelled without ever running.
                while waiting and len(pending) < workers and not stop.is_set():
                    index = waiting.popleft()
                    stored = scope.reuse.get(branches[index].path)
                    if stored is not None:
                        outcomes[index].status, outcomes[index].outputs = "reused", stored
                        finish(index, 0.0)
                        continue
                    job = functools.partial(
                        _run_branch, branches[index], scope, cancels[index], outcomes[index]
                    )
                    future = pool.submit(contextvars.copy_context().run, job)
                    pending[future] = (index, io_ops.monotonic())
                if stop.is_set():
                    _cancel(pending, cancels)
                    while waiting:
                        index = waiting.popleft()
                        outcomes[index].status = "cancelled"
                        finish(index, 0.0)
                if not pending:
                    continue
                done, _ = wait(tuple(pending), timeout=_TICK, return_when=FIRST_COMPLETED)
                for future in done:
                    index, started = pending.pop(future)
                    future.result()
                    finish(index, io_ops.monotonic() - started)
        except BaseException:
            # Ctrl-C or SIGTERM while branches run: stop them all, let their threads
            # end, record how each ended, then let the run clean up as interrupted.
            _cancel(pending, cancels)
            wait(tuple(pending))
            for index, started in pending.values():
                finish(index, io_ops.monotonic() - started)
            for index in waiting:
                outcomes[index].status = "cancelled"
                finish(index, 0.0)
            raise
    return outcomes


def _cancel(
    pending: Mapping[Future[None], tuple[int, float]], cancels: Sequence[threading.Event]
) -> None:
    """Cancel every running branch: it starts no new process, and its groups are killed."""
    for index, _ in pending.values():
        cancels[index].set()
        io_ops.kill_groups_of(cancels[index])  # again on a later tick: harmless, groups are gone
