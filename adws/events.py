"""Typed run events and the `RunObserver` protocol.

The executor reports every transition as one of these frozen events; the
journal, the progress printer and `--json` are observers. Events carry
durations measured by the executor, so observers never need a clock to
describe a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol, TypeAlias, final

import attrs

from adws.context import WorkflowContext
from adws.errors import ErrorType, PipelineError
from adws.usage import Budget, Usage

__all__ = [
    "AgentActivity",
    "AttemptFailed",
    "BranchAttemptFailed",
    "BranchFinished",
    "BranchStarted",
    "BranchStatus",
    "ObserverFailed",
    "RunEvent",
    "RunFinished",
    "RunObserver",
    "RunStarted",
    "RunStatus",
    "StepSkipped",
    "StepStarted",
    "StepSucceeded",
    "status_of",
]

RunStatus: TypeAlias = Literal["succeeded", "failed", "blocked", "interrupted"]


def status_of(error: PipelineError | None) -> RunStatus:
    """Name the run status a final error (or its absence) means.

    >>> status_of(None), status_of(PipelineError("s", "Blocked", "why"))
    ('succeeded', 'blocked')
    """
    if error is None:
        return "succeeded"
    if error.error_type == ErrorType.BLOCKED:
        return "blocked"
    if error.error_type == ErrorType.INTERRUPTED:
        return "interrupted"
    return "failed"


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


BranchStatus: TypeAlias = Literal["succeeded", "failed", "cancelled", "reused"]


@final
@attrs.frozen
class BranchStarted:
    """A branch of parallel step `step` (index `index` of `total`) started.

    `branch` is its path: `verify_claims[3]` for a fan-out, `checks[lint]`
    for a named branch of `parallel`.
    """

    run_id: str
    step: str
    index: int
    total: int
    branch: str
    max_attempts: int


@final
@attrs.frozen
class BranchAttemptFailed:
    """One attempt of a branch failed; `will_retry` says whether another follows."""

    run_id: str
    step: str
    index: int
    total: int
    branch: str
    attempt: int
    max_attempts: int
    error: PipelineError
    will_retry: bool
    delay: float
    seconds: float
    usage: Usage | None = None


@final
@attrs.frozen
class BranchFinished:
    """A branch ended; `done`, `failed` and `of` count the step's branches so far.

    `reused` means a resume took the outputs it stored in an earlier run.
    """

    run_id: str
    step: str
    index: int
    total: int
    branch: str
    status: BranchStatus
    attempts: int
    seconds: float
    error: PipelineError | None
    outputs: Mapping[str, Any]
    done: int
    failed: int
    of: int
    usage: Usage | None = None


@final
@attrs.frozen
class AgentActivity:
    """An agent step's agent is doing something worth showing: its latest tool call.

    `text` is a short description from the agent's own output (`Write
    src/app.py`, `$ make test`); `branch` is the branch path, or "".
    Nothing is journaled: it feeds the progress line.
    """

    run_id: str
    step: str
    branch: str
    text: str


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
    | ObserverFailed
)


class RunObserver(Protocol):
    """Receive every event of a run, in order."""

    def __call__(self, event: RunEvent, /) -> None:
        """Handle one event; raising detaches this observer, not the run."""
