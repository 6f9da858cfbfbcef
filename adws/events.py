"""Typed run events and the `RunObserver` protocol.

The executor reports every transition as one of these frozen events; the
journal, the progress printer and `--json` are observers. Events carry
durations measured by the executor, so observers never need a clock to
describe a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, Protocol, TypeAlias, final

import attrs

from adws.context import WorkflowContext
from adws.errors import ErrorType, PipelineError
from adws.usage import Budget, Usage

__all__ = [
    "AgentActivity",
    "AgentExchanged",
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

RunStatus: TypeAlias = Literal["succeeded", "failed", "blocked", "interrupted", "waiting"]

_STATUS_OF: Final[dict[str, RunStatus]] = {
    ErrorType.BLOCKED: "blocked",
    ErrorType.INTERRUPTED: "interrupted",
    ErrorType.AWAITING_APPROVAL: "waiting",
}


def status_of(error: PipelineError | None) -> RunStatus:
    """Name the run status a final error (or its absence) means.

    `waiting` is a run paused at an `approval_step`: it has not ended.

    >>> status_of(None), status_of(PipelineError("s", "Blocked", "why"))
    ('succeeded', 'blocked')
    >>> status_of(PipelineError("ok", "AwaitingApproval", "merge?"))
    'waiting'
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

    `attempts` is how many attempts it made (0 when it never started);
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
class RoundFailed:
    """A round of a `with_verification` step failed: its verify step rejected what main made.

    `path` and `attempt` name the attempt the round belongs to, as the
    journal records it (the step, or the branch it runs in); `will_retry`
    says whether main runs again, with this error as feedback.
    """

    run_id: str
    step: str
    index: int
    total: int
    path: str
    attempt: int
    round: int
    max_rounds: int
    error: PipelineError
    will_retry: bool


@final
@attrs.frozen
class AgentExchanged:
    """One call to an agent, whole: what it was asked and what it answered.

    `path` and `attempt` name the attempt the call belongs to, as the
    journal records it (a step, or a branch `verify_claims[2]`); `asked_by`
    is the agent step that asked (inside a `with_verification`, its main or
    verify step). `answer` is None when the agent gave none (it could not
    start, timed out, or its output could not be read); `error` is what the
    call ended with, its answer's validation included. `limit` is the
    step's output cap, which bounds what the journal keeps of each text.
    """

    run_id: str
    path: str
    attempt: int
    asked_by: str
    prompt: str
    answer: str | None
    exit_code: int | None
    stderr: str
    session_id: str | None
    seconds: float
    usage: Usage | None
    error: PipelineError | None
    limit: int


@final
@attrs.frozen
class WorktreeRecorded:
    """A `worktree` step made, hashed or removed its worktree; the journal keeps the latest.

    `step` is the step (or branch path) running in it; `label` names its
    folder and branch within the run; `tree` hashes its content (tracked
    and untracked files git does not ignore) as the last attempt left it,
    "" once removed; `state` is `created` (just made, or found again by a
    resume), `present` (after an attempt) or `removed` (by adws itself, as
    its `keep` said, or on Ctrl-C) or `discarded` (a `best_of` loser:
    removed with its branch). A resume compares a worktree that is still
    there with `tree` and refuses one that changed.
    """

    run_id: str
    step: str
    label: str
    repo: str
    path: str
    branch: str
    base: str
    tree: str
    state: Literal["created", "present", "removed", "discarded"]


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
    | WorktreeRecorded
    | ObserverFailed
)


class RunObserver(Protocol):
    """Receive every event of a run, in order."""

    def __call__(self, event: RunEvent, /) -> None:
        """Handle one event; raising detaches this observer, not the run."""
