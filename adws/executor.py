"""Run a workflow: one `for` loop with retry, `always_run` and promotion.

See "Executor semantics" in DESIGN.md; each numbered rule there is marked
below where it is implemented.
"""

from __future__ import annotations

import random
import threading
import traceback
import uuid
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Final, final

import attrs
from returns.io import IOFailure, IOResult, IOSuccess
from returns.unsafe import unsafe_perform_io

from adws import io_ops
from adws._checks import require_count
from adws.context import WorkflowContext, promote
from adws.errors import INFRASTRUCTURE, ErrorType, PipelineError
from adws.events import (
    AttemptFailed,
    ObserverFailed,
    RunEvent,
    RunFinished,
    RunObserver,
    RunStarted,
    StepSkipped,
    StepStarted,
    StepSucceeded,
    status_of,
)
from adws.step import retry_after
from adws.usage import METER as _ATTEMPT
from adws.usage import Budget, Meter, Usage, charging

if TYPE_CHECKING:
    from adws.step import Step, Workflow

__all__ = [
    "RunScope",
    "attempt_number",
    "current_branch",
    "current_scope",
    "current_sleep",
    "enter_branch",
    "new_run_id",
    "retry_step",
    "run_workflow",
]

Sleep = Callable[[float], None]
OnAttemptFailed = Callable[[int, PipelineError, bool, float, float], None]


@final
@attrs.frozen
class RunScope:
    """What a step running inside `run_workflow` may need from its run.

    `sleep` is the run's injected sleep (combinators and branches wait
    through it); `emit` reports branch events to the run's observers;
    `reuse` holds branch outputs an earlier attempt of this run stored (a
    resume re-runs only the branches that did not succeed); `agents` caps
    agent calls in flight across the run (`max_agents`); `index` and `total`
    place the step in flight; `meter` adds up what the run's agent calls
    cost and `budget` caps it (the workflow's and the caller's, the tighter
    of each).
    """

    run_id: str = ""
    sleep: Sleep = io_ops.sleep
    emit: Callable[[RunEvent], None] = attrs.field(default=lambda _event: None)
    reuse: Mapping[str, Mapping[str, object]] = attrs.field(factory=dict)
    agents: threading.BoundedSemaphore | None = None
    index: int = 0
    total: int = 0
    meter: Meter = attrs.field(factory=Meter)
    budget: Budget | None = None


_SCOPE: Final[ContextVar[RunScope | None]] = ContextVar("adws_run_scope", default=None)
_NO_RUN: Final = RunScope()
_BRANCH: Final[ContextVar[str]] = ContextVar("adws_branch", default="")


def current_branch() -> str:
    """Return the path of the parallel branch in flight (`verify_claims[0]`), or ""."""
    return _BRANCH.get()


def enter_branch(path: str) -> None:
    """Say, in a branch's own thread context, which branch runs there."""
    _BRANCH.set(path)


def current_scope() -> RunScope:
    """Return the scope of the run in progress (an empty one outside a run)."""
    return _SCOPE.get() or _NO_RUN


def current_sleep() -> Sleep:
    """Return the `sleep` the run in progress was given (`time.sleep` outside a run)."""
    return current_scope().sleep


_current_meter: Final = _ATTEMPT.get
_SILENT: Final[ContextVar[int]] = ContextVar("adws_silent_failures", default=0)
"""How many earlier attempts of the step in flight failed without a feedback line."""


def attempt_number(ctx: WorkflowContext) -> int:
    """Return which call of the step in flight this is (1 for the first).

    Each failed attempt adds one, whether it left a feedback line (an answer
    the model must fix) or not (a timeout, an API error: not the model's
    doing, so not in its prompt).
    """
    return len(ctx.feedback) + 1 + _SILENT.get()


_INTERRUPTED_MESSAGE: Final = "interrupted by Ctrl-C"
_FINAL: Final = frozenset({ErrorType.INTERRUPTED, ErrorType.BUDGET_EXCEEDED})
"""Errors no `retry_on` can retry: a Ctrl-C, and a budget already spent."""


def new_run_id() -> str:
    """Return a fresh, short, unique run id."""
    return uuid.uuid4().hex[:12]


def _exception_error(step_name: str, exc: BaseException, what: str) -> PipelineError:
    details: dict[str, object] = {
        "exception_type": type(exc).__name__,
        "exception_message": str(exc),
        "traceback": "".join(traceback.format_exception(exc)),
    }
    if isinstance(exc, SystemExit):
        # argparse and sys.exit end up here: the code says what the step meant.
        details["exit_code"] = exc.code
    return PipelineError(
        step_name, ErrorType.STEP_EXCEPTION, f"{what} raised {type(exc).__name__}: {exc}", details
    )


def _reraise_interrupt(exc: BaseException) -> None:
    """Let Ctrl-C through (the loop handles it); every other exception is a value."""
    if isinstance(exc, KeyboardInterrupt):
        raise exc


def _call(step: Step, ctx: WorkflowContext) -> WorkflowContext | PipelineError:
    """Run one attempt, turning exceptions and wrong return values into errors (rule 6)."""
    try:
        result = step.run(ctx)
    except BaseException as exc:  # noqa: BLE001 - rule 6: no exception escapes a step
        _reraise_interrupt(exc)
        return _exception_error(step.name, exc, f"step {step.name!r}")
    if isinstance(result, IOSuccess):
        value = unsafe_perform_io(result.unwrap())
        if isinstance(value, WorkflowContext):
            return value
        got = f"IOSuccess holding {type(value).__name__}"
    elif isinstance(result, IOFailure):
        error = unsafe_perform_io(result.failure())
        if isinstance(error, PipelineError):
            return error.with_step_name(step.name)  # rule 8
        got = f"IOFailure holding {type(error).__name__}"
    else:
        got = type(result).__name__
    return PipelineError(
        step.name,
        ErrorType.STEP_EXCEPTION,
        f"step {step.name!r} returned {got}; a step must return "
        "IOSuccess(WorkflowContext) or IOFailure(PipelineError)",
        {"returned": repr(result)},
    )


def _should_retry(step: Step, error: PipelineError, attempt: int) -> bool | PipelineError:
    """Tell whether to try again, or return the error a raising `retry_on` becomes."""
    policy = step.retry
    if attempt >= policy.max_attempts or error.error_type in _FINAL:
        return False
    try:
        return bool(policy.retry_on(error))
    except BaseException as exc:  # noqa: BLE001 - a broken retry_on ends the retries as a value
        _reraise_interrupt(exc)
        name = getattr(policy.retry_on, "__qualname__", type(policy.retry_on).__qualname__)
        broken = _exception_error(step.name, exc, f"the retry_on {name} of step {step.name!r}")
        return broken.with_context(error=error.to_dict())


def _delay(step: Step, attempt: int, error: PipelineError) -> float:
    """Wait per the policy, or as long as the error says the service needs, if longer."""
    policy = step.retry
    delay = policy.delay_before(attempt)
    if policy.jitter:
        delay += random.uniform(0, policy.jitter)  # noqa: S311 - jitter, not cryptography
    asked = retry_after(error)
    return delay if asked is None else max(delay, asked)


def feedback_line(attempt: int, max_attempts: int, error: PipelineError) -> str:
    """Describe a failed attempt for the next one.

    >>> feedback_line(1, 3, PipelineError("s", "Timeout", "took 5s"))
    'attempt 1/3 failed: Timeout: took 5s'
    """
    return f"attempt {attempt}/{max_attempts} failed: {error.error_type}: {error.message}"


def retry_step(
    step: Step,
    ctx: WorkflowContext,
    *,
    sleep: Sleep | None = None,
    on_attempt_failed: OnAttemptFailed | None = None,
    meters: list[Meter] | None = None,
) -> tuple[WorkflowContext | PipelineError, int]:
    """Run `step` under its retry policy (rule 7); return the outcome and attempts made.

    Each retry starts from `ctx` plus one feedback line per failed attempt
    whose error is about the model's answer; a failure of the infrastructure
    (`INFRASTRUCTURE`: an API error, a hang, a timeout, a process that died)
    is retried without one, since the model never answered. An error that
    names a wait (`retry_after`) is retried no sooner than that.
    On success the outcome is the context the step returned; only its
    outputs matter (a step cannot rewrite its inputs). On exhaustion the
    error carries `attempts` and the `feedback` history in its context,
    unless an inner step (inside a combinator) already recorded its own.
    `on_attempt_failed(attempt, error, will_retry, delay, seconds)` hears
    about every failed attempt. `sleep` defaults to the one the run in
    progress was given (see `current_sleep`), so a combinator's retries wait
    through the run's fake clock in tests. Each attempt's agent calls are
    charged to a fresh meter; `meters`, when given, collects them in order,
    so the caller can report each attempt's usage (the last one is the
    success, or the attempt a Ctrl-C stopped).
    """
    sleep = sleep if sleep is not None else current_sleep()
    attempt = 1
    silent = 0
    attempt_ctx = ctx
    timed = on_attempt_failed is not None  # durations only feed events
    while True:
        started = io_ops.monotonic() if timed else 0.0
        # Inline rather than a context manager: this runs for every attempt of every step.
        meter = Meter(_current_meter())
        token = _ATTEMPT.set(meter)
        silent_token = _SILENT.set(silent)
        if meters is not None:
            meters.append(meter)
        try:
            outcome = _call(step, attempt_ctx)
        finally:
            _SILENT.reset(silent_token)
            _ATTEMPT.reset(token)
        if isinstance(outcome, WorkflowContext):
            return outcome, attempt
        will_retry = _should_retry(step, outcome, attempt)
        if isinstance(will_retry, PipelineError):
            outcome, will_retry = will_retry, False
        delay = _delay(step, attempt + 1, outcome) if will_retry else 0.0
        if on_attempt_failed is not None:
            on_attempt_failed(attempt, outcome, will_retry, delay, io_ops.monotonic() - started)
        if not will_retry:
            record = {"attempts": attempt, "feedback": list(attempt_ctx.feedback)}
            # A combinator's inner step may have recorded its own, richer history: keep it.
            fresh = {key: value for key, value in record.items() if key not in outcome.context}
            return outcome.with_context(**fresh), attempt
        if outcome.error_type in INFRASTRUCTURE:
            silent += 1
        else:
            attempt_ctx = attempt_ctx.add_feedback(
                feedback_line(attempt, step.retry.max_attempts, outcome)
            )
        if delay > 0:
            sleep(delay)
        attempt += 1


class _Emitter:
    """Deliver events to observers; one that raises is detached and reported."""

    def __init__(self, observers: Iterable[RunObserver], run_id: str) -> None:
        self.observers = list(observers)
        self.run_id = run_id
        # Branches report from their threads; observers hear one event at a time.
        self.lock = threading.RLock()

    def __call__(self, event: RunEvent) -> None:
        with self.lock:
            self._deliver(event)

    def _deliver(self, event: RunEvent) -> None:
        for observer in tuple(self.observers):
            try:
                observer(event)
            except BaseException as exc:  # noqa: BLE001 - rule 9: an observer cannot break the run
                _reraise_interrupt(exc)
                self.observers.remove(observer)
                name = getattr(observer, "__qualname__", type(observer).__qualname__)
                self._deliver(ObserverFailed(self.run_id, name, f"{type(exc).__name__}: {exc}"))


def _run_one(  # noqa: PLR0913, PLR0917 - private; the loop's state, passed explicitly
    step: Step,
    ctx: WorkflowContext,
    index: int,
    total: int,
    emit: _Emitter,
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
        _reraise_interrupt(exc)
        error = _exception_error(step.name, exc, f"the condition of step {step.name!r}")
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
    outcome, attempts = retry_step(step, ctx, sleep=sleep, on_attempt_failed=report, meters=meters)
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


def _interrupted(step: Step, exc: KeyboardInterrupt) -> PipelineError:
    """Describe the interruption; the CLI says which signal it was (`interrupted by SIGTERM`)."""
    return PipelineError(step.name, ErrorType.INTERRUPTED, str(exc) or _INTERRUPTED_MESSAGE)


@final
@attrs.frozen
class _Start:
    """Where a run starts: the step indices to run in order, and an error that halts it."""

    first: int
    order: tuple[int, ...]
    rerun: tuple[str, ...]
    error: PipelineError | None
    resumed: bool


def _starting_point(
    workflow: Workflow, ctx: WorkflowContext, resume_from: str | None, rerun: Iterable[str]
) -> _Start:
    """Find the steps to run (a resume's reruns first), or the error that halts the run."""
    names = [step.name for step in workflow.steps]
    resumed = resume_from is not None
    if resume_from is not None and resume_from not in names:
        message = f"workflow {workflow.name!r} has no step {resume_from!r} to resume from"
        error = PipelineError("", ErrorType.INVALID_WORKFLOW, message)
        return _Start(len(names), (), (), error, resumed)
    first = 0 if resume_from is None else names.index(resume_from)
    later = tuple(range(first, len(names)))
    missing = workflow.missing_inputs(ctx.inputs)
    if missing:
        message = f"workflow {workflow.name!r} needs input {', '.join(map(repr, missing))}"
        error = PipelineError("", ErrorType.MISSING_INPUT, message, {"missing": list(missing)})
        return _Start(first, later, (), error, resumed)
    wanted = frozenset(rerun)
    again = tuple(index for index, name in enumerate(names[:first]) if name in wanted)
    return _Start(first, again + later, tuple(names[i] for i in again), None, resumed)


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
    `RunFinished`.
    """
    if max_agents is not None:
        require_count("run_workflow", "max_agents", max_agents)
    emit = _Emitter(observers, run_id or new_run_id())
    limit = budget.tighter(workflow.budget) if budget is not None else workflow.budget
    scope = RunScope(
        emit.run_id,
        sleep,
        emit,
        reuse or {},
        None if max_agents is None else threading.BoundedSemaphore(max_agents),
        meter=Meter(spent=spent),
        budget=limit,
    )
    token = _SCOPE.set(scope)
    try:
        with charging(scope.meter):
            ctx = ctx if ctx is not None else WorkflowContext()
            start = _starting_point(workflow, ctx, resume_from, rerun)
            return _run_steps(workflow, ctx, emit, scope, start)
    finally:
        _SCOPE.reset(token)


def _run_steps(
    workflow: Workflow,
    ctx: WorkflowContext,
    emit: _Emitter,
    scope: RunScope,
    start: _Start,
) -> IOResult[WorkflowContext, PipelineError]:
    """Run the loop of `run_workflow` (rules 1 to 9)."""
    run_id = emit.run_id
    sleep = scope.sleep
    steps = workflow.steps
    total = len(steps)
    names = tuple(step.name for step in steps)
    first_error = start.error
    emit(RunStarted(run_id, workflow.name, names, ctx, start.first, start.resumed, start.rerun))
    started = io_ops.monotonic()
    late_failures: list[PipelineError] = []
    for index in start.order:  # rule 1
        step = steps[index]
        if first_error is not None and not step.always_run:  # rule 4
            emit(StepSkipped(run_id, step.name, index, total, "halted"))
            continue
        step_ctx = ctx.with_failure(first_error)  # rule 5
        if step.children:  # a combinator or a parallel step may need to know where it runs
            _SCOPE.set(attrs.evolve(scope, index=index, total=total))
        meters: list[Meter] = []
        try:
            outcome = _run_one(step, step_ctx, index, total, emit, sleep, meters)
        except KeyboardInterrupt as exc:  # rule 6: Ctrl-C stops this step only
            error = _interrupted(step, exc)
            usage = meters[-1].report() if meters else None  # what the stopped attempt spent
            emit(
                AttemptFailed(run_id, step.name, index, total, 1, 1, error, False, 0.0, 0.0, usage)
            )
            outcome = error
        if outcome is None:
            continue
        if isinstance(outcome, WorkflowContext):
            ctx = outcome
        elif first_error is None:
            first_error = outcome
        else:
            late_failures.append(outcome)
    final_error = first_error
    if final_error is not None and late_failures:
        final_error = final_error.with_context(always_run_failures=late_failures)
    emit(
        RunFinished(
            run_id,
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
