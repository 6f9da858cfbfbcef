"""Plan a resume: what a resumed run keeps, runs again and refuses, for every way in.

`resume_plan` says what a resume of a recorded run would do with each
step; `prepare_resume` checks that it may (no finished step changed unless
the caller allows it, no input given on the command line that a finished
step wrote, no kept worktree that changed since the run left it) and
returns where the run starts again and with what: the context its kept
steps left, the `rerun_on_resume` steps that run again first, the branch
outputs a parallel step keeps, what the run spent in earlier sessions, the
base commit of each of its worktrees and the decisions people made at its
approval steps. Claiming the run is the caller's next step
(`Journal.claim`, with `RunRecord.seen` and, for `--keep-changed`, the
`baseline` that makes today's fingerprints the recorded ones).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, final

import attrs

from adws.engine.context import WorkflowContext
from adws.engine.errors import ErrorType
from adws.engine.scope import AgentSession, Decision
from adws.engine.usage import Usage
from adws.flows import flow_of
from adws.journal.identity.fingerprint import step_fingerprints
from adws.journal.records.plan import StepPlan, plan_resume, resume_point, stored_branches
from adws.journal.records.sessions import interrupted_sessions
from adws.journal.records.workspaces import (  # attrs reads the annotation
    WorktreeRecord,
    decisions_for,
)
from adws.journal.store import claims
from adws.journal.store.snapshots import ResumeRows, resume_rows

if TYPE_CHECKING:
    from collections.abc import Sequence

    from adws.engine.step import Workflow
    from adws.journal.records.runs import AttemptRecord, RunRecord
    from adws.journal.records.sessions import SessionRecord
    from adws.journal.records.snapshots import Snapshot
    from adws.journal.records.workspaces import ApprovalRecord
    from adws.journal.store.journal import Journal
    from adws.journal.store.schema import Guarded

__all__ = [
    "ResumeStart",
    "baseline",
    "cancelled",
    "prepare_resume",
    "read_rows",
    "resume_plan",
]


@final
@attrs.frozen
class ResumeStart:
    """Where a resumed run starts, and everything `run_workflow` needs to continue it.

    `resume_from` is None when every step already succeeded: nothing to run.
    """

    resume_from: str | None
    context: WorkflowContext
    rerun: tuple[str, ...]
    reuse: Mapping[str, Mapping[str, object]]
    steps: Mapping[str, str]
    """Today's step fingerprints, for the journal to record as the steps run."""
    plan: tuple[StepPlan, ...]
    spent: Usage | None
    bases: Mapping[str, str] = attrs.field(factory=dict)
    """Each worktree's recorded base commit, by label: a removed one starts again there."""
    decisions: Mapping[str, Decision] = attrs.field(factory=dict)
    """What people decided at the approval steps the run waits at, by step name."""
    resets: tuple[WorktreeRecord, ...] = ()
    """Worktrees the attempt in flight when the run stopped had changed: not drift, since that
    attempt runs again. The caller resets them once the run is claimed
    (`adws.workspaces.drift.reset_in_flight`), never before: a resume refused by
    its claim must not touch a worktree another resume is working in."""
    sessions: Mapping[tuple[str, str], AgentSession] = attrs.field(factory=dict)
    """The agent calls the stopped run cut off, by `(path, agent step)`: their steps continue
    those sessions, saying the work was interrupted (none when a worktree changed)."""


def _first_open(plan: Sequence[StepPlan]) -> str | None:
    return next((item.step for item in plan if item.action == "to run"), None)


def resume_plan(  # noqa: PLR0913 - the run, and every way a resume can start
    workflow: Workflow,
    attempts: Sequence[AttemptRecord],
    *,
    from_step: str | None = None,
    rerun_changed: bool = False,
    steps: Mapping[str, str] | None = None,
    snapshot: Snapshot | None = None,
) -> tuple[StepPlan, ...] | str:
    """Say what a resume would do with each step (see `plan_resume`), or why it cannot start.

    `from_step` (`--from`) runs again from that step, which must be at or
    before the first step that did not finish; `rerun_changed` runs again
    from the first finished step that changed, if that comes earlier.
    With a `snapshot`, `attempts` are the rows recorded after it (see
    `adws.journal.store.snapshots.resume_rows`).
    """
    names = [step.name for step in workflow.steps]
    rerun = frozenset(step.name for step in workflow.steps if step.rerun_on_resume)
    current = step_fingerprints(workflow) if steps is None else steps
    plan = plan_resume(names, attempts, current, rerun=rerun, snapshot=snapshot)
    if from_step is not None:
        if from_step not in names:
            steps_list = ", ".join(names)
            return f"--from {from_step}: workflow {workflow.name!r} has no such step ({steps_list})"
        first = _first_open(plan)
        if first is not None and names.index(from_step) > names.index(first):
            return (
                f"--from {from_step}: the run has not finished {first!r}, which comes before it; "
                f"a resume starts at {first!r} without --from"
            )
    changed = [item.step for item in plan if item.action == "changed"]
    first_changed = changed[0] if changed and rerun_changed else None
    starts = [name for name in (from_step, first_changed) if name is not None]
    if not starts:
        return plan
    first = min(starts, key=names.index)
    return plan_resume(names, attempts, current, rerun=rerun, start=first, snapshot=snapshot)


def read_rows(  # noqa: PLR0913 - the run, and what decides which rows a resume needs
    journal: Journal,
    record: RunRecord,
    workflow: Workflow,
    *,
    from_step: str | None = None,
    whole: bool = False,
    steps: Mapping[str, str] | None = None,
) -> ResumeRows:
    """Read the attempt rows a resume of `record` needs: from its snapshot when one applies.

    A snapshot is not used for a resume that runs a step it covers again
    (`from_step`, a `rerun_on_resume` step), nor when `whole` (every row
    is needed: inputs given to the resume, checked against what each
    finished step wrote; worktrees, whose drift counts the rows). `steps`
    are today's step fingerprints, if the caller has them already.
    """
    if whole:
        return ResumeRows(None, tuple(journal.attempts(record.run_id)))
    names = [step.name for step in workflow.steps]
    again = [index for index, step in enumerate(workflow.steps) if step.rerun_on_resume]
    if from_step in names:
        again.append(names.index(from_step))
    current = step_fingerprints(workflow) if steps is None else steps
    return resume_rows(journal, record, names, current, first_rerun=min(again, default=None))


def _written_by(
    workflow: Workflow, plan: Sequence[StepPlan], attempts: Sequence[AttemptRecord]
) -> dict[str, tuple[str, bool]]:
    """Map each key a step wrote (or will write) to that step and whether it finished."""
    owners: dict[str, tuple[str, bool]] = {}
    kept = {item.step for item in plan if item.action in {"kept", "changed"}}
    for record in attempts:
        if record.step in kept and record.status == "succeeded":
            owners.update((key, (record.step, True)) for key in record.outputs() or {})
    for step in workflow.steps:
        if step.name not in kept:
            flow = flow_of(step)
            owners.update((key, (step.name, False)) for key in (*flow.writes, *flow.may_write))
    return owners


def _refuse_inputs(
    extra: Mapping[str, object], owners: Mapping[str, tuple[str, bool]], run_id: str
) -> str | None:
    for key in extra:
        if key not in owners:
            continue
        step, finished = owners[key]
        if finished:
            return (
                f"input {key!r} was written by step {step!r}, which finished: a resume never "
                f"replaces a validated output (to run {step!r} again: adws resume {run_id} "
                f"--from {step})"
            )
        return f"input {key!r} is written by step {step!r}, which this resume runs; leave it out"
    return None


def cancelled(record: RunRecord) -> str:
    """Say that a run was cancelled, by whom, when and why: it is over, never resumed."""
    cancel = record.cancel
    who = "" if cancel is None else f" by {cancel.by} at {cancel.at}"
    why = "" if cancel is None or not cancel.reason else f": {cancel.reason}"
    return f"run {record.run_id} was cancelled{who}{why}; a cancelled run is not resumed"


def _refuse_changed(plan: Sequence[StepPlan], run_id: str) -> str | None:
    changed = [item.step for item in plan if item.action == "changed"]
    if not changed:
        return None
    names = ", ".join(repr(name) for name in changed)
    noun = "step" if len(changed) == 1 else "steps"
    return (
        f"{noun} {names} of run {run_id} changed since it finished; pass "
        "--keep-changed to keep the outputs it made (today's definition becomes the "
        "recorded one), or --rerun-changed (adws resume, adws batch --resume) to run again "
        f"from the first of them (see `adws resume {run_id} --plan`)"
    )


def prepare_resume(  # noqa: PLR0913 - the run, and every way a resume can be asked for
    workflow: Workflow,
    record: RunRecord,
    attempts: Sequence[AttemptRecord],
    *,
    from_step: str | None = None,
    rerun_changed: bool = False,
    keep_changed: bool = False,
    accept_drift: bool = False,
    extra: Mapping[str, object] | None = None,
    worktrees: Sequence[WorktreeRecord] = (),
    approvals: Sequence[ApprovalRecord] = (),
    sessions: Sequence[SessionRecord] = (),
    snapshot: Snapshot | None = None,
    steps: Mapping[str, str] | None = None,
) -> ResumeStart | str:
    """Check that `record` may be resumed as asked and say where it starts, or why it may not.

    Refused: a finished step whose definition changed (unless
    `rerun_changed`, which runs again from it, or `keep_changed`, which
    keeps its outputs: claim with `baseline` to make today's definition the
    recorded one); an `extra` input that a finished step wrote (a validated
    output is never replaced from the command line) or that a step about
    to run writes; a `from_step` the run has not reached; a run rejected
    at an approval step (final); a worktree the run kept that is missing
    or whose content changed since it was journaled (unless `accept_drift`,
    which goes on with the tree as it is: see `adws.workspaces.drift`).
    `worktrees` and `approvals` are the run's journaled ones
    (`adws.journal.store.workspaces`), `sessions` its agent sessions
    (`adws.journal.store.sessions`): an agent call the stopped run cut off
    continues its session, unless a worktree of the run changed (the
    session would remember work that is no longer there). With a
    `snapshot`, `attempts` are only the rows recorded after it: read them
    with `adws.journal.store.snapshots.resume_rows`, which uses a snapshot
    only where it gives the same start as every row would. `steps` are
    today's step fingerprints, if the caller has them already.
    """
    steps = step_fingerprints(workflow) if steps is None else steps
    plan = resume_plan(
        workflow,
        attempts,
        from_step=from_step,
        rerun_changed=rerun_changed,
        steps=steps,
        snapshot=snapshot,
    )
    if isinstance(plan, str):
        return plan
    if record.error is not None and record.error.error_type == ErrorType.REJECTED:
        return f"run {record.run_id} was rejected at {record.failed_step!r}: {record.error.message}"
    if record.status == "cancelled":
        return cancelled(record)
    refused = None if keep_changed or rerun_changed else _refuse_changed(plan, record.run_id)
    extra = dict(extra or {})
    if refused is None and extra:
        refused = _refuse_inputs(extra, _written_by(workflow, plan, attempts), record.run_id)
    resets = _in_flight(worktrees, record, attempts)
    kept = [tree for tree in worktrees if tree not in resets]
    if refused is None and not accept_drift:
        refused = _refuse_drift(kept, record.run_id)
    if refused is not None:
        return refused
    names = [step.name for step in workflow.steps]
    rerun = tuple(item.step for item in plan if item.action == "rerun")
    resume_from, ctx = resume_point(
        names, attempts, record.inputs(), until=_first_open(plan), drop=rerun, snapshot=snapshot
    )
    # A parallel step that failed keeps the branches that succeeded; one run again on purpose
    # (--from, --rerun-changed) runs all of them.
    unfinished = _first_open(plan_resume(names, attempts, snapshot=snapshot)) == resume_from
    cut_off = interrupted_sessions(record, sessions, resume_from if unfinished else None)
    if cut_off and (resets or (accept_drift and _refuse_drift(kept, record.run_id))):
        cut_off = {}
    return ResumeStart(
        resume_from,
        WorkflowContext(inputs={**ctx.inputs, **extra}),
        rerun if resume_from is not None else (),
        stored_branches(attempts, resume_from) if unfinished else {},
        steps,
        plan,
        record.usage,
        {tree.label: tree.base for tree in worktrees if tree.base},
        decisions_for(approvals, attempts),
        resets,
        cut_off,
    )


def baseline(run_id: str, start: ResumeStart) -> list[Guarded]:
    """Make today's definitions of the changed finished steps the recorded ones (`--keep-changed`).

    Recorded in the resume's claim, so a later approve, reject or resume is
    not refused again for the change the person already accepted.
    """
    return [
        claims.baseline(run_id, item.step, start.steps.get(item.step))
        for item in start.plan
        if item.action == "changed"
    ]


def _in_flight(
    worktrees: Sequence[WorktreeRecord], record: RunRecord, attempts: Sequence[AttemptRecord]
) -> tuple[WorktreeRecord, ...]:
    """Name the worktrees an attempt in flight may have changed when the run stopped.

    Only a run that stopped without recording its end (its process gone, or
    interrupted) had an attempt in flight (see `adws.workspaces.drift.in_flight`).
    """
    if not worktrees or not (record.status == "interrupted" or record.stale):
        return ()
    from adws.workspaces.drift import in_flight  # noqa: PLC0415 - git only for runs with worktrees

    return tuple(tree for tree in worktrees if in_flight(tree, attempts))


def _refuse_drift(worktrees: Sequence[WorktreeRecord], run_id: str) -> str | None:
    """Refuse a run whose kept worktree is gone or changed, naming what changed."""
    from adws.workspaces.drift import drifted  # noqa: PLC0415 - git only for runs with worktrees

    problems = drifted(worktrees, run_id) if worktrees else []
    if not problems:
        return None
    listed = "; ".join(problems)
    return (
        f"run {run_id} cannot be resumed as it was left: {listed}; pass --accept-drift to go on"
        " with the worktree as it is (a missing one starts again from its base)"
    )
