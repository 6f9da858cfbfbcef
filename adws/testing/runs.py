"""`run` and `resume`: a workflow run in a test, reported step by step.

`run(workflow, inputs, agent=...)` runs through the real executor (with a
sleep that does not wait) and returns a `RunReport`: the status, the final
inputs, the error, and per step its status, its attempts, the requests its
agent saw and what they cost. With `journal=PATH` the run is recorded as
`adws run` records it, and `stop_after="step"` stops it right after that
step as a Ctrl-C would (the `always_run` steps run; the run ends
`interrupted`), so `resume(workflow, report.run_id, journal=PATH)` can
prove that no finished step runs twice. A run that ends `waiting` at an
`approval_step` is decided by `approve(journal, run_id)` or
`reject(journal, run_id, reason=...)`, which continue it as `adws approve`
and `adws reject` do.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, final

import attrs

from adws._exceptions import DefinitionError, NotFoundError, RefusedError
from adws.agents.base import AgentRequest
from adws.agents.sessions import continues_sessions
from adws.agents.swap import use_agent
from adws.engine.context import WorkflowContext
from adws.engine.errors import PipelineError
from adws.engine.events import AttemptFailed, RunEvent, StepStarted, StepSucceeded
from adws.engine.executor import run_workflow
from adws.engine.scope import Decision
from adws.engine.usage import Usage
from adws.journal import Journal, JournalObserver
from adws.journal.fingerprint import fingerprint, step_fingerprints
from adws.journal.resume import prepare_resume
from adws.journal.sessions import sessions_of
from adws.journal.workspaces import (
    approvals_of,
    decided_statement,
    decisions_for,
    worktrees_of,
)
from adws.runs.summary import RunSummary

if TYPE_CHECKING:
    from returns.io import IOResult

    from adws.agents.base import AgentBackend, AgentResponse
    from adws.engine.scope import AgentSession
    from adws.engine.step import Step, Workflow
    from adws.journal.resume import ResumeStart
    from adws.journal.store import Guarded

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


def _stopped_after(workflow: Workflow, stop_after: str) -> Workflow:
    """Make the step after `stop_after` stop the run as a Ctrl-C there would."""
    names = [step.name for step in workflow.steps]
    if stop_after not in names[:-1]:
        msg = (
            f"stop_after={stop_after!r} must name a step of {workflow.name!r} that has one after it"
        )
        raise DefinitionError(msg)
    index = names.index(stop_after) + 1

    def stop(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        msg = f"stopped after {stop_after} by adws.testing.run"
        raise KeyboardInterrupt(msg)

    steps: list[Step] = list(workflow.steps)
    steps[index] = attrs.evolve(steps[index], run=stop)
    return attrs.evolve(workflow, steps=tuple(steps))


def _execute(  # noqa: PLR0913 - run's and resume's options, all keyword-only
    workflow: Workflow,
    ctx: WorkflowContext,
    *,
    agent: AgentBackend | None,
    journal: Journal | None,
    run_id: str | None = None,
    resume_from: str | None = None,
    reuse: Mapping[str, Mapping[str, object]] | None = None,
    stop_after: str | None = None,
    spent: Usage | None = None,
    rerun: tuple[str, ...] = (),
    bases: Mapping[str, str] | None = None,
    decisions: Mapping[str, Decision] | None = None,
    sessions: Mapping[tuple[str, str], AgentSession] | None = None,
) -> RunReport:
    asked = _Asked(agent) if agent is not None else None
    steps = step_fingerprints(workflow)  # the workflow as written, whatever stop_after does
    runnable = use_agent(workflow, asked) if asked is not None else workflow
    if stop_after is not None:
        runnable = _stopped_after(runnable, stop_after)
    summary = RunSummary()
    observers: list[Any] = [summary]
    if asked is not None:
        observers.insert(0, asked.observe)
    if journal is not None:
        observers.insert(0, JournalObserver(journal, fingerprint(workflow, steps), steps))
    run_workflow(
        runnable,
        ctx,
        observers=observers,
        sleep=lambda _seconds: None,
        run_id=run_id,
        resume_from=resume_from,
        reuse=reuse,
        spent=spent,
        rerun=rerun,
        bases=bases,
        decisions=decisions,
        sessions=sessions,
    )
    seen = asked.seen if asked is not None else {}
    finished = summary.finished
    return RunReport(
        summary.run_id,
        summary.status,
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


def _journal(journal: str | Path | Journal | None) -> Journal | None:
    return Journal(journal) if isinstance(journal, str | Path) else journal


def run(
    workflow: Workflow,
    inputs: Mapping[str, object] | None = None,
    *,
    agent: AgentBackend | None = None,
    journal: str | Path | Journal | None = None,
    stop_after: str | None = None,
) -> RunReport:
    """Run `workflow` from `inputs`; every agent step asks `agent` when one is given.

    Retries do not wait. `journal` (a path, a `postgresql://` URL or a `Journal`) records the run
    as `adws run` would; `stop_after` stops it after that step, as a Ctrl-C
    would, to be resumed.
    """
    ctx = WorkflowContext(inputs=dict(inputs or {}))
    return _execute(workflow, ctx, agent=agent, journal=_journal(journal), stop_after=stop_after)


def resume(
    workflow: Workflow,
    run_id: str,
    *,
    journal: str | Path | Journal,
    agent: AgentBackend | None = None,
    **how: Any,  # noqa: ANN401 - prepare_resume's keywords, passed on
) -> RunReport:
    """Resume a recorded run from its first step that did not succeed, as `adws resume` does.

    Finished steps do not run again (their reports say `carried_over`) but
    those marked `rerun_on_resume`; a parallel step re-runs only its
    branches that did not succeed. `how` takes what `adws resume` takes
    (`from_step`, `rerun_changed`, `force`, `extra` inputs); a resume the
    CLI would refuse (a finished step changed, an input a finished step
    wrote) raises `ValueError` with the CLI's message.
    """
    store = journal if isinstance(journal, Journal) else Journal(journal)
    found = store.find(run_id)
    if isinstance(found, str):
        raise NotFoundError(found)
    start = prepare_resume(
        workflow,
        found,
        store.attempts(found.run_id),
        worktrees=worktrees_of(store, found.run_id),
        approvals=approvals_of(store, found.run_id),
        sessions=sessions_of(store, found.run_id),
        **how,
    )
    if isinstance(start, str):
        raise RefusedError(start)
    if start.resume_from is None:
        msg = f"every step of run {found.run_id} already succeeded; nothing to resume"
        raise NotFoundError(msg)
    return _continue(workflow, start, agent=agent, journal=store, run_id=found.run_id)


def _continue(
    workflow: Workflow,
    start: ResumeStart,
    *,
    agent: AgentBackend | None,
    journal: Journal,
    run_id: str,
) -> RunReport:
    """Continue a run from where `start` says, as `adws resume` does."""
    return _execute(
        workflow,
        start.context,
        agent=agent,
        journal=journal,
        run_id=run_id,
        resume_from=start.resume_from,
        reuse=start.reuse,
        spent=start.spent,
        rerun=start.rerun,
        bases=start.bases,
        decisions=start.decisions,
        sessions=start.sessions,
    )


def _workflow_named(name: str) -> Workflow:
    from adws.discovery import discover_workflows, workflows_dir  # noqa: PLC0415 - only without one

    catalog = discover_workflows(workflows_dir(None))
    if name not in catalog.workflows:
        msg = f"workflow {name!r} is not in {catalog.directory}: pass workflow= to decide its run"
        raise NotFoundError(msg)
    return catalog.workflows[name]


def _decide(
    journal: str | Path | Journal,
    run_id: str,
    decision: Decision,
    *,
    workflow: Workflow | None,
    agent: AgentBackend | None,
) -> RunReport:
    """Record `decision` in the run's compare-and-set claim, then continue the run."""
    store = journal if isinstance(journal, Journal) else Journal(journal)
    found = store.find(run_id)
    if isinstance(found, str):
        raise NotFoundError(found)
    step = found.failed_step
    if found.status != "waiting" or not step:
        msg = f"run {found.run_id} is not waiting for approval (it is {found.status})"
        raise RefusedError(msg)
    chosen = workflow if workflow is not None else _workflow_named(found.workflow)
    rejecting = decision.verdict == "rejected"  # a rejection only runs cleanup, as the CLI's
    start = prepare_resume(
        chosen,
        found,
        store.attempts(found.run_id),
        keep_changed=rejecting,
        accept_drift=rejecting,
        worktrees=worktrees_of(store, found.run_id),
        approvals=approvals_of(store, found.run_id),
        sessions=sessions_of(store, found.run_id),
    )
    if isinstance(start, str):
        raise RefusedError(start)
    answered = f"the question at step {step!r} of run {found.run_id} was answered meanwhile"

    def then(now: str) -> list[Guarded]:
        stamped = Decision(decision.verdict, decision.by, now, decision.note)
        return [(decided_statement(found.run_id, step, stamped), answered)]

    refused = store.claim(found.run_id, seen=found.seen, then=then)
    if refused is not None:
        raise RefusedError(refused)
    # No worktree reset, unlike `adws resume`: a run that ended waiting had no attempt in flight.
    decided = decisions_for(approvals_of(store, found.run_id), store.attempts(found.run_id))
    start = attrs.evolve(start, decisions=decided)  # as the journal now holds them
    return _continue(chosen, start, agent=agent, journal=store, run_id=found.run_id)


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
    default its name is looked up in `./workflows`, as `adws approve` does);
    `agent` answers its agent steps from here on. Returns the continued
    run's report.
    """
    decision = Decision("approved", by, "", note or "")
    return _decide(journal, run_id, decision, workflow=workflow, agent=agent)


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
    decision = Decision("rejected", by, "", reason)
    return _decide(journal, run_id, decision, workflow=workflow, agent=agent)
