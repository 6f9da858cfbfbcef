"""Typed run events and the `RunObserver` protocol.

The events of the run and its steps are here; those from inside a step
(branches, verification rounds, agent activity, worktrees) are in
`adws.engine.inner_events`, and every one is importable from here.

The executor reports every transition as one of these frozen events; the
journal, the progress printer and `--json` are observers. Events carry
durations measured by the executor, so observers never need a clock to
describe a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, Protocol, TypeAlias, final

import attrs

from adws.engine.context import WorkflowContext
from adws.engine.errors import ErrorType, PipelineError
from adws.engine.inner_events import (
    AgentActivity,
    AgentExchanged,
    AgentSessionStarted,
    BranchAttemptFailed,
    BranchFinished,
    BranchStarted,
    BranchStatus,
    RoundFailed,
    WorktreeRecorded,
)
from adws.engine.usage import Budget, Usage

__all__ = [
    "AgentActivity",
    "AgentExchanged",
    "AgentSessionStarted",
    "AttemptFailed",
    "BranchAttemptFailed",
    "BranchFinished",
    "BranchStarted",
    "BranchStatus",
    "ObserverFailed",
    "RoundFailed",
    "RunEvent",
    "RunFinished",
    "RunObserver",
    "RunStarted",
    "RunStatus",
    "StepSkipped",
    "StepStarted",
    "StepSucceeded",
    "WorktreeRecorded",
    "status_of",
]

RunStatus: TypeAlias = Literal[
    "succeeded", "failed", "blocked", "interrupted", "waiting", "parked", "cancelled"
]

_STATUS_OF: Final[dict[str, RunStatus]] = {
    ErrorType.BLOCKED: "blocked",
    ErrorType.INTERRUPTED: "interrupted",
    ErrorType.AWAITING_APPROVAL: "waiting",
    ErrorType.PARKED: "parked",
    ErrorType.CANCELLED: "cancelled",
}


def status_of(error: PipelineError | None) -> RunStatus:
    """Name the run status a final error (or its absence) means.

    `waiting` is a run paused at an `approval_step`, `parked` one whose
    agent's limit resets later than it may wait: neither has ended.

    >>> status_of(None), status_of(PipelineError("s", "Blocked", "why"))
    ('succeeded', 'blocked')
    >>> status_of(PipelineError("ok", "AwaitingApproval", "merge?"))
    'waiting'
    >>> status_of(PipelineError("ask", "Parked", "claude usage limit", {"wake_at": 1.0}))
    'parked'
    """
    if error is None:
        return "succeeded"
    return _STATUS_OF.get(error.error_type, "failed")


@final
@attrs.frozen
class RunStarted:
    """A run began, or (`resumed`) continued at step index `first_step`, from `context`.

    `rerun` names the earlier steps a resume runs again first
    (`rerun_on_resume`), in order.
    """

    run_id: str
    workflow: str
    steps: tuple[str, ...]
    context: WorkflowContext
    first_step: int = 0
    resumed: bool = False
    rerun: tuple[str, ...] = ()


@final
@attrs.frozen
class StepStarted:
    """Step `index` (0-based, of `total`) is about to run its first attempt."""

    run_id: str
    step: str
    index: int
    total: int
    max_attempts: int
    always_run: bool


@final
@attrs.frozen
class AttemptFailed:
    """One attempt failed; `will_retry` says whether another follows after `delay`.

    `usage` is what the attempt's agent calls cost (None if none reported any).
    """

    run_id: str
    step: str
    index: int
    total: int
    attempt: int
    max_attempts: int
    error: PipelineError
    will_retry: bool
    delay: float
    seconds: float
    usage: Usage | None = None


@final
@attrs.frozen
class StepSucceeded:
    """A step succeeded; `context` is the promoted context the next step sees.

    `outputs` holds only what this step added: the journal stores that, so
    recording step 10,000 costs what recording step 10 does. `usage` is what
    the successful attempt's agent calls cost (failed ones are on their
    `AttemptFailed`).
    """

    run_id: str
    step: str
    index: int
    total: int
    attempts: int
    seconds: float
    context: WorkflowContext
    outputs: Mapping[str, Any] = attrs.field(factory=dict)
    usage: Usage | None = None


@final
@attrs.frozen
class StepSkipped:
    """A step did not run: its `when` was false, or an earlier step failed."""

    run_id: str
    step: str
    index: int
    total: int
    reason: Literal["condition", "halted"]


@final
@attrs.frozen
class RunFinished:
    """The run ended; `context` is the last good context, `error` the first failure.

    `usage` is what the run's agent calls cost in all (earlier sessions of a
    resumed run included), `budget` the limit it ran under.
    """

    run_id: str
    workflow: str
    status: RunStatus
    error: PipelineError | None
    context: WorkflowContext
    seconds: float
    usage: Usage | None = None
    budget: Budget | None = None


@final
@attrs.frozen
class ObserverFailed:
    """An observer raised; it gets no further events, the others get this one."""

    run_id: str
    observer: str
    message: str


RunEvent: TypeAlias = (
    RunStarted
    | StepStarted
    | AttemptFailed
    | StepSucceeded
    | StepSkipped
    | RunFinished
    | BranchStarted
    | BranchAttemptFailed
    | BranchFinished
    | AgentActivity
    | RoundFailed
    | AgentExchanged
    | AgentSessionStarted
    | WorktreeRecorded
    | ObserverFailed
)


class RunObserver(Protocol):
    """Receive every event of a run, in order."""

    def __call__(self, event: RunEvent, /) -> None:
        """Handle one event; raising detaches this observer, not the run."""
