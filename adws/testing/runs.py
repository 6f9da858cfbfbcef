"""`run` and `resume`: a workflow run in a test, reported step by step.

`run(workflow, inputs, agent=...)` runs through `adws.runs.Runs`, the path
`adws run` takes (with a sleep that does not wait, and the test's process
left alone: no signal handlers, no subreaper), and returns a `RunReport`:
the status, the final inputs, the error, and per step its status, its
attempts, the requests its agent saw and what they cost. With
`journal=PATH` the run is recorded as `adws run` records it, and
`stop_after="step"` stops it right after that step as a Ctrl-C would (the
`always_run` steps run; the run ends `interrupted`), so
`resume(workflow, report.run_id, journal=PATH)` can prove that no finished
step runs twice. A run that ends `waiting` at an `approval_step` is
decided by `approve(journal, run_id)` or `reject(journal, run_id,
reason=...)`, which continue it as `adws approve` and `adws reject` do.
What the command line would refuse raises the refusal (`Refused.error`):
a `LookupError` for a run (or a workflow) that is not there or has
nothing left to do, a `ValueError` for anything else, with its message.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, final

import attrs

from adws._exceptions import DefinitionError
from adws.agents.base import AgentRequest
from adws.agents.sessions import continues_sessions
from adws.engine.errors import PipelineError
from adws.engine.events import AttemptFailed, RunEvent, StepStarted, StepSucceeded
from adws.engine.usage import Usage
from adws.journal import Journal
from adws.runs import HandedOver, Refused, RunOutcome, RunRequest, Runs

if TYPE_CHECKING:
    from returns.io import IOResult

    from adws.agents.base import AgentBackend, AgentResponse
    from adws.engine.events import RunObserver
    from adws.engine.step import Workflow

__all__ = ["RunReport", "StepReport", "approve", "reject", "resume", "run"]


@final
@attrs.frozen
class StepReport:
    """One step in a test run: how it ended, how often it ran, what its agent was asked."""

    name: str
    status: str
    attempts: int
    error: PipelineError | None
    requests: tuple[AgentRequest, ...]
    usage: Usage | None


@final
@attrs.frozen
class RunReport:
    """A test run: its id, status, final inputs, first error and per-step reports."""

    run_id: str
    status: str
    inputs: Mapping[str, Any]
    error: PipelineError | None
    steps: Mapping[str, StepReport]
    usage: Usage | None

    def __getitem__(self, step: str) -> StepReport:
        """Return one step's report: `report["research"].attempts`."""
        return self.steps[step]


class _Asked:
    """Wrap the agent: keep each request under the top-level step in flight."""

    def __init__(self, agent: AgentBackend) -> None:
        self.agent = agent
        self.step = ""
        self.seen: dict[str, list[AgentRequest]] = {}
        self.lock = threading.Lock()

    @property
    def continues_sessions(self) -> bool:
        """Continue sessions when the agent it wraps does (see `adws.agents.sessions`)."""
        return continues_sessions(self.agent)

    def observe(self, event: RunEvent) -> None:
        if isinstance(event, StepStarted | AttemptFailed | StepSucceeded):
            self.step = event.step

    def __call__(self, request: AgentRequest, /) -> IOResult[AgentResponse, PipelineError]:
        with self.lock:
            self.seen.setdefault(self.step, []).append(request)
        return self.agent(request)


def _asking(agent: AgentBackend | None) -> tuple[_Asked | None, list[RunObserver]]:
    """Wrap `agent` (when given) and return it with the observer that tells it the step."""
    if agent is None:
        return None, []
    asked = _Asked(agent)
    return asked, [asked.observe]


def _stopper(workflow: Workflow, stop_after: str) -> RunObserver:
    """Stop the run as a Ctrl-C would, as the step after `stop_after` starts."""
    names = [step.name for step in workflow.steps]
    if stop_after not in names[:-1]:
        msg = (
            f"stop_after={stop_after!r} must name a step of {workflow.name!r} that has one after it"
        )
        raise DefinitionError(msg)
    index = names.index(stop_after) + 1

    def stop(event: RunEvent, /) -> None:
        if isinstance(event, StepStarted) and event.index == index:
            msg = f"stopped after {stop_after} by adws.testing.run"
            raise KeyboardInterrupt(msg)

    return stop


def _runs(journal: str | Path | Journal | None) -> Runs:
    """The kit's `Runs`: retries do not wait, and the test's process is left alone."""
    opened = Journal(journal) if isinstance(journal, str | Path) else journal
    return Runs(
        opened, record=opened is not None, whole_process=False, sleep=_no_wait, worktrees=""
    )


def _no_wait(_seconds: float) -> None:
    """Wait for nothing: a test's retries and waits take no time."""


def _report(outcome: RunOutcome | HandedOver | Refused, asked: _Asked | None) -> RunReport:
    """Report how a run ended, step by step; raise what the command line would refuse."""
    if isinstance(outcome, Refused):
        raise outcome.error()
    if isinstance(outcome, HandedOver):  # the kit decides on this host: --here is not asked
        msg = f"run {outcome.run_id} continues on host {outcome.host}"
        raise Refused(msg).error()
    summary = outcome.summary
    seen = asked.seen if asked is not None else {}
    finished = summary.finished
    return RunReport(
        outcome.run_id,
        outcome.status,
        {} if finished is None else dict(finished.context.inputs),
        summary.error,
        {
            record.name: StepReport(
                record.name,
                record.status,
                record.attempts,
                record.error,
                tuple(seen.get(record.name, ())),
                record.usage,
            )
            for record in summary.steps
        },
        None if finished is None else finished.usage,
    )


def run(
    workflow: Workflow,
    inputs: Mapping[str, object] | None = None,
    *,
    agent: AgentBackend | None = None,
    journal: str | Path | Journal | None = None,
    stop_after: str | None = None,
) -> RunReport:
    """Run `workflow` from `inputs`; every agent step asks `agent` when one is given.

    Retries do not wait. `journal` (a path, a `postgresql://` URL or a
    `Journal`) records the run as `adws run` would; `stop_after` stops it
    after that step, as a Ctrl-C would, to be resumed.
    """
    asked, observers = _asking(agent)
    if stop_after is not None:
        observers.append(_stopper(workflow, stop_after))
    request = RunRequest(workflow, inputs or {}, agent=asked)
    return _report(_runs(journal).run(request, observers), asked)


def resume(
    workflow: Workflow,
    run_id: str,
    *,
    journal: str | Path | Journal,
    agent: AgentBackend | None = None,
    **how: Any,  # noqa: ANN401 - `Runs.resume`'s keywords, passed on
) -> RunReport:
    """Resume a recorded run from its first step that did not succeed, as `adws resume` does.

    Finished steps do not run again (their reports say `carried_over`) but
    those marked `rerun_on_resume`; a parallel step re-runs only its
    branches that did not succeed. `how` takes what `Runs.resume` takes
    (`from_step`, `rerun_changed`, `keep_changed`, `accept_drift`, `force`,
    `inputs`; `extra` is the older name of `inputs`); a resume the command
    line would refuse (a finished step changed, an input a finished step
    wrote) raises `ValueError` with its message.
    """
    asked, observers = _asking(agent)
    if "extra" in how:
        how["inputs"] = how.pop("extra")
    outcome = _runs(journal).resume(
        run_id,
        workflow=workflow,
        agent=asked,
        observers=observers,
        **how,
    )
    return _report(outcome, asked)


def approve(  # noqa: PLR0913 - the run, the decision's parts, and what continues it
    journal: str | Path | Journal,
    run_id: str,
    *,
    note: str | None = None,
    by: str = "test",
    workflow: Workflow | None = None,
    agent: AgentBackend | None = None,
) -> RunReport:
    """Approve a run waiting at an approval step and continue it, as `adws approve` does.

    The decision is recorded in the run's claim, compare-and-set, as the
    CLI records it: a run that changed since it was read, or that another
    live process holds, raises `ValueError` with the CLI's message, and so
    does a run that is not waiting. `workflow` is the run's workflow (by
    default its name is looked up in `./workflows`, as `adws approve` does;
    one not there is a `LookupError`); `agent` answers its agent steps from
    here on. Returns the continued run's report.
    """
    asked, observers = _asking(agent)
    outcome = _runs(journal).approve(
        run_id,
        note,
        by=by,
        workflow=workflow,
        agent=asked,
        observers=observers,
    )
    return _report(outcome, asked)


def reject(  # noqa: PLR0913 - as approve's
    journal: str | Path | Journal,
    run_id: str,
    *,
    reason: str,
    by: str = "test",
    workflow: Workflow | None = None,
    agent: AgentBackend | None = None,
) -> RunReport:
    """Reject a run waiting at an approval step, as `adws reject` does.

    Its `always_run` steps run and it ends `failed` with `Rejected` and the
    reason; the rest is as for `approve`.
    """
    asked, observers = _asking(agent)
    outcome = _runs(journal).reject(
        run_id,
        reason,
        by=by,
        workflow=workflow,
        agent=asked,
        observers=observers,
    )
    return _report(outcome, asked)
