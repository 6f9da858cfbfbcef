"""`RunSummary`: an observer that keeps what `--json` and the closing line report."""

from __future__ import annotations

from typing import Literal, TypeAlias, final

import attrs

from adws.engine.errors import ErrorType, PipelineError, json_safe
from adws.engine.events import (
    AgentActivity,
    AgentExchanged,
    AgentSessionStarted,
    AttemptFailed,
    BranchAttemptFailed,
    BranchFinished,
    BranchStarted,
    RoundFailed,
    RunEvent,
    RunFinished,
    RunStarted,
    StepSkipped,
    StepStarted,
    StepSucceeded,
    WorktreeRecorded,
)
from adws.engine.parking import wake_at
from adws.engine.usage import Usage

__all__ = ["RunSummary", "StepRecord", "StepStatus"]

StepStatus: TypeAlias = Literal[
    "not_run", "running", "succeeded", "failed", "skipped", "carried_over", "waiting", "parked"
]


def _paused(error: PipelineError) -> StepStatus:
    """Say how a step's last attempt ended: `failed`, or paused (`waiting`, `parked`)."""
    if error.error_type == ErrorType.AWAITING_APPROVAL:
        return "waiting"
    return "parked" if error.error_type == ErrorType.PARKED else "failed"


@final
@attrs.define
class StepRecord:
    """What happened to one step in this run."""

    name: str
    status: StepStatus = "not_run"
    attempts: int = 0
    seconds: float = 0.0
    error: PipelineError | None = None
    branches: dict[str, str] = attrs.field(factory=dict)
    """Each branch of a parallel step, by path, with how it ended."""
    usage: Usage | None = None
    """What this step's attempts in this run cost, its branches' included."""
    failed_rounds: int = 0
    """The rounds of a `with_verification` step whose verify failed."""

    def spend(self, usage: Usage | None) -> None:
        """Add one attempt's usage."""
        if usage is not None:
            self.usage = usage if self.usage is None else self.usage + usage

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-safe dict (`branches` only for a parallel step, `usage` if reported).

        A `with_verification` step that needed more than one round says how
        many it used (`rounds`).
        """
        described: dict[str, object] = {
            "name": self.name,
            "status": self.status,
            "attempts": self.attempts,
            "seconds": round(self.seconds, 3),
            "error": None if self.error is None else self.error.to_dict(),
        }
        if self.branches:
            described["branches"] = dict(self.branches)
        if self.usage is not None:
            described["usage"] = self.usage.to_dict()
        if self.failed_rounds:
            described["rounds"] = self.failed_rounds + (self.status == "succeeded")
        return described


@final
class RunSummary:
    """Collect a run's events into per-step records and a final status.

    Steps before a resume point are `carried_over`; steps never reached stay
    `not_run`.
    """

    def __init__(self) -> None:
        """Start empty; the first `RunStarted` fills it."""
        self.run_id = ""
        self.workflow = ""
        self.status = "running"
        self.steps: list[StepRecord] = []
        self.error: PipelineError | None = None
        self.finished: RunFinished | None = None
        self.warnings: list[str] = []

    def __call__(self, event: RunEvent, /) -> None:  # noqa: C901 - one case per kind of event
        """Fold one event into the summary."""
        match event:
            case RunStarted():
                self.run_id, self.workflow = event.run_id, event.workflow
                self.steps = [
                    StepRecord(name, "carried_over" if i < event.first_step else "not_run")
                    for i, name in enumerate(event.steps)
                ]
            case StepStarted():
                self.steps[event.index].status = "running"
            case AttemptFailed():
                record = self.steps[event.index]
                record.attempts = event.attempt
                record.seconds += event.seconds
                record.spend(event.usage)
                if not event.will_retry:  # a pause for approval or a limit has not failed
                    record.status, record.error = _paused(event.error), event.error
            case StepSucceeded():
                record = self.steps[event.index]
                record.status, record.attempts = "succeeded", event.attempts
                record.seconds = event.seconds
                record.spend(event.usage)
            case StepSkipped():
                self.steps[event.index].status = "skipped"
            case RunFinished():
                self.status, self.error, self.finished = event.status, event.error, event
            case BranchStarted():
                self.steps[event.index].branches[event.branch] = "running"
            case BranchFinished():
                self.steps[event.index].branches[event.branch] = event.status
            case RoundFailed(step=step, path=path) if step == path:
                self.steps[event.index].failed_rounds = event.round
            case (
                BranchAttemptFailed()
                | RoundFailed()
                | AgentExchanged()
                | AgentSessionStarted()
                | AgentActivity()
                | WorktreeRecorded()
            ):
                pass
            case _:
                self.warnings.append(f"observer {event.observer} failed: {event.message}")

    def to_dict(self) -> dict[str, object]:
        """Return the `--json` object: run id, workflow, status, steps, inputs, error, usage.

        `wake_at` is when a parked run may go on (Unix seconds; None unless parked).

        `usage` is the run's whole spend (a resumed run's earlier sessions
        included; None when no agent reported any), `budget` its limits.
        """
        finished = self.finished
        inputs = {} if finished is None else finished.context.inputs
        usage = None if finished is None or finished.usage is None else finished.usage.to_dict()
        budget = None if finished is None or finished.budget is None else finished.budget.to_dict()
        return {
            "run_id": self.run_id,
            "workflow": self.workflow,
            "status": self.status,
            "seconds": 0.0 if self.finished is None else round(self.finished.seconds, 3),
            "steps": [record.to_dict() for record in self.steps],
            "inputs": json_safe(inputs),
            "error": None if self.error is None else self.error.to_dict(),
            "wake_at": wake_at(self.error),
            "usage": usage,
            "budget": budget,
            "warnings": list(self.warnings),
        }
