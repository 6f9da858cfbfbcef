"""Run a workflow: one `for` loop with `always_run`, promotion and events.

See "Executor semantics" in DESIGN.md; each numbered rule there is marked
below where it is implemented. One step's retries live in `adws.engine.retry`
(`retry_step`); what a running step may ask of its run lives in
`adws.engine.scope` (`RunScope`, `current_scope`, the branch in flight). Both are
re-exported here, where they were first documented.
"""

from __future__ import annotations

import operator
import threading
import uuid
from typing import TYPE_CHECKING, Final

import attrs
from returns.io import IOFailure, IOResult, IOSuccess

from adws import io_ops
from adws._checks import require_count, require_seconds
from adws.engine._emitter import Emitter
from adws.engine._start import Start, starting_point
from adws.engine.context import WorkflowContext, promote
from adws.engine.errors import Cancellation, ErrorType, PipelineError
from adws.engine.events import (
    AttemptFailed,
    RunFinished,
    RunObserver,
    RunStarted,
    StepSkipped,
    StepStarted,
    StepSucceeded,
    status_of,
)
from adws.engine.metering import Meter, charging
from adws.engine.parking import DEFAULT_MAX_WAIT
from adws.engine.retry import (
    OnAttemptFailed,
    attempt_number,
    exception_error,
    feedback_line,
    reraise_interrupt,
    retry_step,
)
from adws.engine.scope import (
    AgentSession,
    Decision,
    RunScope,
    Sleep,
    current_branch,
    current_scope,
    current_sleep,
    enter_branch,
    enter_scope,
    leave_scope,
)
from adws.engine.usage import Budget

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from adws.engine.caps import CapGate, QuotaBook
    from adws.engine.step import Step, Workflow
    from adws.engine.usage import Usage

__all__ = [
    "RunScope",
    "attempt_number",
    "current_branch",
    "current_scope",
    "current_sleep",
    "enter_branch",
    "feedback_line",
    "new_run_id",
    "retry_step",
    "run_workflow",
]

_INTERRUPTED_MESSAGE: Final = "interrupted by Ctrl-C"
_NAME: Final = operator.attrgetter("name")
_PAUSES: Final = frozenset({ErrorType.AWAITING_APPROVAL, ErrorType.PARKED})


def new_run_id() -> str:
    """Return a fresh, short, unique run id."""
    return uuid.uuid4().hex[:12]


def _run_one(  # noqa: PLR0913, PLR0917 - private; the loop's state, passed explicitly
    step: Step,
    ctx: WorkflowContext,
    index: int,
    total: int,
    emit: Emitter,
    sleep: Sleep,
    meters: list[Meter],
) -> WorkflowContext | PipelineError | None:
    """Run one step with its condition, retries and promotion; None means skipped.

    Events are built only when someone observes them: this is the per-step path.
    """
    run_id = emit.run_id
    try:
        if step.when is not None and not step.when(ctx):  # rule 3
            emit(StepSkipped(run_id, step.name, index, total, "condition"))
            return None
    except BaseException as exc:  # noqa: BLE001 - rule 6 covers a condition that raises
        reraise_interrupt(exc)
        error = exception_error(step.name, exc, f"the condition of step {step.name!r}")
        emit(AttemptFailed(run_id, step.name, index, total, 1, 1, error, False, 0.0, 0.0))
        return error.with_context(attempts=0, feedback=[])
    max_attempts = step.retry.max_attempts
    report: OnAttemptFailed | None = None
    if emit.observers:
        emit(StepStarted(run_id, step.name, index, total, max_attempts, step.always_run))

        def report(n: int, error: PipelineError, again: bool, delay: float, secs: float) -> None:  # noqa: FBT001 - the OnAttemptFailed signature
            usage = meters[-1].report()
            event = AttemptFailed(
                run_id, step.name, index, total, n, max_attempts, error, again, delay, secs, usage
            )
            emit(event)

    started = io_ops.monotonic() if emit.observers else 0.0
    outcome, attempts = retry_step(
        step, ctx, sleep=sleep, on_attempt_failed=report, meters=meters, record_as=step.name
    )
    if isinstance(outcome, PipelineError):
        return outcome
    promoted = promote(ctx.inputs, outcome.outputs)  # rule 2
    if isinstance(promoted, PipelineError):
        error = promoted.with_step_name(step.name)  # rule 8
        emit(
            AttemptFailed(
                run_id,
                step.name,
                index,
                total,
                attempts,
                max_attempts,
                error,
                False,
                0.0,
                0.0,
                meters[-1].report(),
            )
        )
        return error.with_context(attempts=attempts, feedback=[])
    if emit.observers:
        seconds = io_ops.monotonic() - started
        emit(
            StepSucceeded(
                run_id,
                step.name,
                index,
                total,
                attempts,
                seconds,
                promoted,
                outcome.outputs,
                meters[-1].report(),
            )
        )
    return promoted


def _stopped(  # noqa: PLR0913, PLR0917 - private; the step's place in the loop
    step: Step,
    exc: KeyboardInterrupt,
    index: int,
    total: int,
    emit: Emitter,
    meters: list[Meter],
) -> PipelineError:
    """Record a step a Ctrl-C (or a cancel) stopped; the loop goes on with cleanup only (rule 6).

    The CLI says which signal it was (`interrupted by SIGTERM`); a cancel
    (`Cancellation`) fails the step `Cancelled`, saying who cancelled and why.
    """
    if isinstance(exc, Cancellation):
        error = PipelineError(step.name, ErrorType.CANCELLED, str(exc), exc.context())
    else:
        error = PipelineError(step.name, ErrorType.INTERRUPTED, str(exc) or _INTERRUPTED_MESSAGE)
    usage = meters[-1].report() if meters else None  # what the stopped attempt spent
    emit(AttemptFailed(emit.run_id, step.name, index, total, 1, 1, error, False, 0.0, 0.0, usage))
    return error


def run_workflow(  # noqa: PLR0913 - DESIGN's signature plus resume's and parallel's keywords
    workflow: Workflow,
    ctx: WorkflowContext | None = None,
    *,
    observers: Iterable[RunObserver] = (),
    sleep: Sleep = io_ops.sleep,
    run_id: str | None = None,
    resume_from: str | None = None,
    max_agents: int | None = None,
    reuse: Mapping[str, Mapping[str, object]] | None = None,
    budget: Budget | None = None,
    spent: Usage | None = None,
    rerun: Iterable[str] = (),
    worktrees: str = "",
    bases: Mapping[str, str] | None = None,
    decisions: Mapping[str, Decision] | None = None,
    estimate: Callable[[str], Usage | None] | None = None,
    raised: Budget | None = None,
    sessions: Mapping[tuple[str, str], AgentSession] | None = None,
    max_wait: float = DEFAULT_MAX_WAIT,
    caps: CapGate | None = None,
    quotas: QuotaBook | None = None,
) -> IOResult[WorkflowContext, PipelineError]:
    """Run `workflow`'s steps in order and return the final context or the first error.

    `run_id` names the run in its events (a fresh one by default).
    `resume_from` starts at that step, skipping the earlier ones without a
    trace, for `adws resume`: `ctx` must then be the context they left.
    `rerun` names earlier steps that run again all the same, in order,
    before it (`Step(rerun_on_resume=True)`: a scratch folder, a worktree);
    `ctx` must then lack their outputs.
    The workflow's declared `inputs` are checked before any step runs. A
    workflow with no steps is the identity: it returns `ctx` as it was given.
    `sleep` reaches every wait of the run, the retries inside combinators
    and parallel branches included. `max_agents` caps the agent calls in
    flight across the whole run (for rate limits); `reuse` maps branch paths
    to the outputs an earlier attempt of this run stored, so a resumed
    parallel step re-runs only the branches that did not succeed.
    `budget` caps what the run's agent calls may spend, together with the
    workflow's own (the tighter of each limit applies); `spent` is what
    earlier sessions of a resumed run already spent, so the budget counts it.
    The usage of every attempt is on its event, and the run's total on
    `RunFinished`. `worktrees` is the folder `worktree` steps make their
    folders in (default: the shared folder outside any project, see `worktree`);
    a resume passes `bases`, each worktree's recorded base commit, and
    `decisions`, what a person decided at an approval step (see
    `adws.workspaces`). A run that reaches an approval step with no
    decision ends `waiting`: no later step runs, `always_run` ones neither.
    `estimate` says, by agent step name, what a call of that step costs by
    the journal's history (see `adws.engine.reservations`); `raised` is a
    budget a person raised (`adws approve --max-cost`): each limit it sets
    replaces the workflow's, the caller's and every step's.
    A resume passes `sessions`, the agent calls it found interrupted (by
    their `(path, agent step)`), whose sessions those steps continue.
    `max_wait` (seconds, default 900) is the longest a step waits for an
    agent's limit to reset; one that resets later ends the run `parked`
    (`Parked`, with `wake_at`), its `always_run` steps not run yet either.
    `caps` checks each agent call against the caps that hold across runs
    (see `adws.engine.caps`; `adws.runs` passes one when the run has a journal);
    `quotas` where agents' reports of their accounts' quota are kept and
    asked before each call (see `adws.engine.caps.QuotaBook`).
    """
    if max_agents is not None:
        require_count("run_workflow", "max_agents", max_agents)
    require_seconds("run_workflow", "max_wait", max_wait)
    emit = Emitter(observers, run_id or new_run_id())
    limit = budget.tighter(workflow.budget) if budget is not None else workflow.budget
    if raised is not None:
        limit = (limit or Budget()).raised_to(raised)
    scope = RunScope(
        emit.run_id,
        sleep,
        emit,
        reuse or {},
        None if max_agents is None else threading.BoundedSemaphore(max_agents),
        meter=Meter(spent=spent),
        budget=limit,
        worktrees=worktrees,
        bases=bases or {},
        decisions=decisions or {},
        estimate=estimate,
        raised=raised,
        sessions=dict(sessions or {}),
        max_wait=max_wait,
        caps=caps,
        quotas=quotas,
    )
    token = enter_scope(scope)
    try:
        with charging(scope.meter):
            ctx = ctx if ctx is not None else WorkflowContext()
            start = starting_point(workflow, ctx, resume_from, rerun)
            return _run_steps(workflow, ctx, emit, scope, start)
    finally:
        leave_scope(token)


def _run_steps(
    workflow: Workflow,
    ctx: WorkflowContext,
    emit: Emitter,
    scope: RunScope,
    start: Start,
) -> IOResult[WorkflowContext, PipelineError]:
    """Run the loop of `run_workflow` (rules 1 to 9)."""
    run_id = emit.run_id
    sleep = scope.sleep
    steps = workflow.steps
    total = len(steps)
    names = tuple(map(_NAME, steps))
    first_error = start.error
    emit(RunStarted(run_id, workflow.name, names, ctx, start.first, start.resumed, start.rerun))
    started = io_ops.monotonic()
    late_failures: list[PipelineError] = []
    for index in start.order:  # rule 1
        step = steps[index]
        if first_error is not None and not step.always_run:  # rule 4
            emit(StepSkipped(run_id, step.name, index, total, "halted"))
            continue
        # rule 5; `with_failure` would return `ctx` itself when nothing changes
        step_ctx = ctx if first_error is ctx.failure else ctx.with_failure(first_error)
        if step.children:  # a combinator or a parallel step may need to know where it runs
            enter_scope(attrs.evolve(scope, index=index, total=total))
        meters: list[Meter] = []
        try:
            outcome = _run_one(step, step_ctx, index, total, emit, sleep, meters)
        except KeyboardInterrupt as exc:  # a Ctrl-C stops this step only (rule 6)
            outcome = _stopped(step, exc, index, total, emit, meters)
        if outcome is None:
            continue
        if isinstance(outcome, WorkflowContext):
            ctx = outcome
        elif first_error is None:
            first_error = outcome
            if outcome.error_type in _PAUSES:
                break  # the run waits for a person or a limit: it has not ended, no cleanup yet
        else:
            late_failures.append(outcome)
    return _finish(workflow, ctx, emit, scope, started, first_error, late_failures)


def _finish(  # noqa: PLR0913, PLR0917 - private; what the loop leaves
    workflow: Workflow,
    ctx: WorkflowContext,
    emit: Emitter,
    scope: RunScope,
    started: float,
    first_error: PipelineError | None,
    late_failures: list[PipelineError],
) -> IOResult[WorkflowContext, PipelineError]:
    """End the run: the first error, with every later cleanup failure under it (rule 5)."""
    final_error = first_error
    if final_error is not None and late_failures:
        final_error = final_error.with_context(always_run_failures=late_failures)
    emit(
        RunFinished(
            emit.run_id,
            workflow.name,
            status_of(final_error),
            final_error,
            ctx,
            io_ops.monotonic() - started,
            scope.meter.report(),
            scope.budget,
        )
    )
    if final_error is None:
        return IOSuccess(ctx)
    return IOFailure(final_error)
