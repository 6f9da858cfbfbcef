"""Run one step under its retry policy: `retry_step` (rule 7 of the executor).

Each attempt's exceptions and wrong return values become `PipelineError`s
(rule 6), each failed attempt becomes a feedback line for the next, and the
waits go through the run's injected `sleep`. The executor's loop, the
combinators and the parallel branches all run their steps through here.
"""

from __future__ import annotations

import random
import traceback
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Final

from returns.io import IOFailure, IOSuccess

from adws import io_ops
from adws.engine.context import WorkflowContext
from adws.engine.errors import INFRASTRUCTURE, ErrorType, PipelineError
from adws.engine.metering import METER as _ATTEMPT
from adws.engine.metering import Meter
from adws.engine.scope import Sleep, current_round, current_sleep, enter_round, leave_round
from adws.engine.step import retry_after

if TYPE_CHECKING:
    from adws.engine.step import Step

__all__ = [
    "OnAttemptFailed",
    "attempt_number",
    "current_attempt",
    "exception_error",
    "feedback_line",
    "reraise_interrupt",
    "retry_step",
]

OnAttemptFailed = Callable[[int, PipelineError, bool, float, float], None]

_current_meter: Final = _ATTEMPT.get
_IN_FLIGHT: Final[ContextVar[tuple[str, int, int]]] = ContextVar("adws_attempt", default=("", 0, 0))
"""The attempt in flight: the path and number the journal records it under, and how
many earlier attempts of the step failed without a feedback line. One variable, set
once per attempt: this is the per-step path."""


def current_attempt() -> tuple[str, int]:
    """Name the attempt in flight as the journal records it: `(path, attempt)`.

    The path is the step's name, or a branch's (`verify_claims[2]`); a
    combinator's inner steps belong to the attempt of the step that holds
    them. Outside a run it is `("", 0)`.
    """
    path, attempt, _silent = _IN_FLIGHT.get()
    return path, attempt


def attempt_number(ctx: WorkflowContext) -> int:
    """Return which call of the step in flight this is (1 for the first).

    Each failed attempt adds one, whether it left a feedback line (an answer
    the model must fix) or not (a timeout, an API error: not the model's
    doing, so not in its prompt).
    """
    return len(ctx.feedback) + 1 + _IN_FLIGHT.get()[2]


_FINAL: Final = frozenset(
    {
        ErrorType.INTERRUPTED,
        ErrorType.BUDGET_EXCEEDED,
        ErrorType.AWAITING_APPROVAL,
        ErrorType.REJECTED,
        ErrorType.PARKED,
        ErrorType.CANCELLED,
    }
)
"""Errors no `retry_on` can retry: a Ctrl-C, a budget already spent, a person's say (a
rejection, a cancel), a limit that resets past the run's `max_wait`."""


def exception_error(step_name: str, exc: BaseException, what: str) -> PipelineError:
    """Describe an exception a step (or its condition, `retry_on`, observer) raised (rule 6)."""
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


def reraise_interrupt(exc: BaseException) -> None:
    """Let Ctrl-C through (the loop handles it); every other exception is a value."""
    if isinstance(exc, KeyboardInterrupt):
        raise exc


def _call(step: Step, ctx: WorkflowContext) -> WorkflowContext | PipelineError:
    """Run one attempt, turning exceptions and wrong return values into errors (rule 6)."""
    try:
        result = step.run(ctx)
    except BaseException as exc:  # noqa: BLE001 - rule 6: no exception escapes a step
        reraise_interrupt(exc)
        return exception_error(step.name, exc, f"step {step.name!r}")
    # An IOResult holds its Result in `_inner_value` (returns' container protocol): reading
    # it builds no IO wrapper on the way, as `unsafe_perform_io(result.unwrap())` would.
    if isinstance(result, IOSuccess):
        value = result._inner_value.unwrap()  # noqa: SLF001 - see above; the per-step path
        if isinstance(value, WorkflowContext):
            return value
        got = f"IOSuccess holding {type(value).__name__}"
    elif isinstance(result, IOFailure):
        error = result._inner_value.failure()  # noqa: SLF001 - as above
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
        reraise_interrupt(exc)
        name = getattr(policy.retry_on, "__qualname__", type(policy.retry_on).__qualname__)
        broken = exception_error(step.name, exc, f"the retry_on {name} of step {step.name!r}")
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


def retry_step(  # noqa: PLR0913 - the step, its context, and keyword-only hooks
    step: Step,
    ctx: WorkflowContext,
    *,
    sleep: Sleep | None = None,
    on_attempt_failed: OnAttemptFailed | None = None,
    meters: list[Meter] | None = None,
    record_as: str | None = None,
    cancelled: Callable[[], bool] | None = None,
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
    success, or the attempt a Ctrl-C stopped). `record_as` names the
    attempts for `current_attempt` (the step or branch path the journal
    records them under); a combinator's inner steps leave it out. Once
    `cancelled()` holds, a failed attempt is neither reported nor retried:
    it failed because it was stopped. The attempts of a step recorded on
    its own (`record_as`) are one round (see `adws.engine.scope.Round`); a
    combinator's inner steps share the round they run in.
    """
    if record_as is None and current_round() is not None:
        return _attempts(step, ctx, sleep, on_attempt_failed, meters, record_as, cancelled)
    token = enter_round()  # not `with in_round()`: this runs for every step of every run
    try:
        return _attempts(step, ctx, sleep, on_attempt_failed, meters, record_as, cancelled)
    finally:
        leave_round(token)


def _attempts(  # noqa: C901, PLR0913, PLR0917 - retry_step's body, in a round; private
    step: Step,
    ctx: WorkflowContext,
    sleep: Sleep | None,
    on_attempt_failed: OnAttemptFailed | None,
    meters: list[Meter] | None,
    record_as: str | None,
    cancelled: Callable[[], bool] | None,
) -> tuple[WorkflowContext | PipelineError, int]:
    sleep = sleep if sleep is not None else current_sleep()
    attempt = 1
    silent = 0
    attempt_ctx = ctx
    timed = on_attempt_failed is not None  # durations only feed events
    # A combinator's inner steps belong to the attempt of the step that holds them.
    outer: int | None = None
    if record_as is None:
        record_as, outer = _IN_FLIGHT.get()[:2]
    while True:
        started = io_ops.monotonic() if timed else 0.0
        # Inline rather than a context manager: this runs for every attempt of every step.
        meter = Meter(_current_meter())
        token = _ATTEMPT.set(meter)
        in_flight = _IN_FLIGHT.set((record_as, attempt if outer is None else outer, silent))
        if meters is not None:
            meters.append(meter)
        try:
            outcome = _call(step, attempt_ctx)
        finally:
            _IN_FLIGHT.reset(in_flight)
            _ATTEMPT.reset(token)
        if isinstance(outcome, WorkflowContext):
            return outcome, attempt
        if cancelled is not None and cancelled():
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
