"""Continue a recorded run: a resume, a decision, a cancel's cleanup, a worker's held run.

One protocol whoever asks: read the run, check its host, choose its
options (the recorded ones, overridden by those given), load its workflow
with its agents, plan where it starts (`adws.runs.resume.prepare_resume`),
stop what a crashed run left running, claim it compare-and-set recording
what the claim carries (a decision, a new baseline, a raised budget, a
cancel), reset the worktrees its attempt in flight changed, and run it
(`adws.runs._execute`). Every refusal is a `Refused`.
"""

from __future__ import annotations

import getpass
import socket
from collections.abc import Mapping
from typing import TYPE_CHECKING, final

import attrs
from returns.io import IOFailure, IOResult

from adws import io_ops
from adws._frozen import freeze_mapping
from adws.agents.base import AgentBackend  # attrs resolves the annotations at run time
from adws.discovery import workflows_dir
from adws.engine.errors import Cancellation, ErrorType, PipelineError
from adws.engine.scope import Decision
from adws.engine.step import (
    Step,
    Workflow,  # as above
)
from adws.engine.usage import Budget
from adws.journal.identity.fingerprint import fingerprint, step_fingerprints
from adws.journal.records.options import RunOptions  # as above
from adws.journal.records.runs import CancelRecord, named_problems
from adws.journal.records.workspaces import decisions_for
from adws.journal.store import cancels, claims
from adws.journal.store.estimates import kept_spend, not_spent
from adws.journal.store.sessions import sessions_of
from adws.journal.store.workspaces import approvals_of, decided_statement, worktrees_of
from adws.runs import _loading
from adws.runs._execute import Plan, Setting, execute
from adws.runs._values import HandedOver, Refused, RunOutcome, Starting
from adws.runs._waits import asks_budget
from adws.runs.resume import ResumeStart, baseline, prepare_resume, read_rows
from adws.workspaces.drift import reset_in_flight

if TYPE_CHECKING:
    from collections.abc import Callable

    from adws.engine.context import WorkflowContext
    from adws.journal import Journal, RunRecord
    from adws.journal.store.schema import Guarded
    from adws.runs._values import Observers

__all__ = [
    "Resuming",
    "continue_run",
    "elsewhere",
    "login",
    "options_for",
    "take_back",
    "workflow_for",
]


@final
@attrs.frozen
class Resuming:
    """How a recorded run is asked to go on (`adws resume`'s flags, as values).

    `options` are given over the recorded ones (and recorded in their
    place); `inputs` are added to the run's (refused when a finished step
    wrote one). `workflow` and `agent` are the kit's: the workflow object
    to continue (default: the recorded name, in the recorded folder) and
    the agent that answers its agent steps from here on.
    """

    options: RunOptions = attrs.field(factory=RunOptions)
    inputs: Mapping[str, object] = attrs.field(factory=dict, converter=freeze_mapping)
    from_step: str | None = None
    rerun_changed: bool = False
    keep_changed: bool = False
    accept_drift: bool = False
    here: bool = False
    force: bool = False
    workflow: Workflow | None = None
    agent: AgentBackend | None = None


def login() -> str:
    """Name who decides when no one is named: the login name, else `unknown`."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name in the environment and no passwd entry
        return "unknown"


def elsewhere(record: RunRecord) -> bool:
    """Tell whether another host ran the run (its worktrees and process groups are there)."""
    return record.host is not None and record.host != socket.gethostname()


def options_for(record: RunRecord, given: RunOptions) -> tuple[RunOptions, str]:
    """Choose the options to go on with: the recorded ones, overridden by those given.

    Returns them and what they are, in words (what was overridden shown
    with what was recorded); the workflows folder is named only when it is
    not the one this process would use anyway.
    """
    options, changed = record.options.merged(_loading.absolute_options(given))
    usual = str(workflows_dir(None).resolve())
    hide = ("workflows",) if options.workflows in {None, usual} else ()
    return options, options.describe(changed, hide=hide)


def workflow_for(
    journal: Journal,
    record: RunRecord,
    options: RunOptions,
    how: Resuming,
    say: Callable[[str], None],
) -> _loading.Loaded | Refused:
    """Load the run's workflow (the kit's object, else by name) with the options' agents."""
    found: Workflow | Refused = how.workflow or _loading.find_workflow(
        record.workflow, _loading.folder_of(None, options), say
    )
    if isinstance(found, Refused):
        return attrs.evolve(found, found=False)
    return _loading.with_agents(found, options, agent=how.agent, journal=lambda: journal)


def _raise(how: Resuming, record: RunRecord, decided: tuple[str, Decision] | None) -> Budget | None:
    """Return the budget an approval raises a budget question to (`--max-cost`, `--max-tokens`)."""
    if decided is None or decided[1].verdict != "approved" or not asks_budget(record):
        return None
    return Budget(how.options.max_cost, how.options.max_tokens)


def _recorded(
    run_id: str,
    decided: tuple[str, Decision] | None,
    now: str,
    raised: tuple[Budget, RunOptions] | None,
) -> list[Guarded]:
    """Return what a claim records with a decision: it, and the budget it raised (if any)."""
    recorded: list[Guarded] = []
    if decided is not None:
        step, decision = decided
        answered = (
            f"the question at step {step!r} of run {run_id} was answered meanwhile; "
            f"look again: adws status {run_id}"
        )
        stamped = attrs.evolve(decision, at=now)
        budget = None if raised is None else raised[0]
        recorded.append((decided_statement(run_id, step, stamped, budget), answered))
    if raised is not None:
        recorded.append(claims.options(run_id, raised[1].to_json()))
    return recorded


def _decide_elsewhere(
    journal: Journal, record: RunRecord, recorded: Callable[[str], list[Guarded]]
) -> HandedOver | Refused:
    """Record a decision (or a cancel) on a run of another host, compare-and-set.

    Its host continues the run (`adws worker` there): its worktrees are there.
    """
    refused = journal.claim(record.run_id, seen=record.seen, then=recorded, take=False)
    if refused is not None:
        return Refused(refused)
    return HandedOver(record.run_id, str(record.host))


def _check_host(journal: Journal, record: RunRecord, *, here: bool) -> Refused | None:
    """Refuse to continue a run of another host here, unless `here` and it left no worktree."""
    if not elsewhere(record):
        return None
    run_id, host = record.run_id, record.host
    if not here:
        return Refused(
            f"run {run_id} belongs to host {host}: resume it there (adws worker, or adws "
            f"resume {run_id} on {host}), or pass --here to continue it on this host"
        )
    present = [tree.label for tree in worktrees_of(journal, run_id) if tree.state == "present"]
    if present:
        return Refused(
            f"run {run_id} has worktrees present on host {host} ({', '.join(present)}): "
            f"--here cannot continue it without them; resume it on {host}"
        )
    return None


def _start(
    journal: Journal, record: RunRecord, workflow: Workflow, how: Resuming, *, ending: bool
) -> ResumeStart | Refused:
    """Check the run may be resumed as asked and say where it starts.

    `ending`: a rejection or a cancel, which only runs the cleanup steps:
    no fingerprint and no worktree is checked for it.
    """
    worktrees = worktrees_of(journal, record.run_id)
    whole = bool(worktrees or how.inputs)
    steps = step_fingerprints(workflow)
    rows = read_rows(journal, record, workflow, from_step=how.from_step, whole=whole, steps=steps)
    attempts = rows.attempts
    problems = [f"run {record.run_id}: {problem}" for problem in record.problems]
    problems += named_problems("attempts", record.run_id, attempts)
    if problems:
        return Refused(
            f"run {record.run_id} cannot be resumed from rows the journal cannot read",
            problems=tuple(problems),
            journal=str(journal.path),
        )
    try:
        start = prepare_resume(
            workflow,
            record,
            attempts,
            from_step=how.from_step,
            rerun_changed=how.rerun_changed,
            keep_changed=ending or how.keep_changed,
            accept_drift=ending or how.accept_drift,
            extra=how.inputs,
            worktrees=worktrees,
            approvals=approvals_of(journal, record.run_id),
            sessions=sessions_of(journal, record.run_id),
            snapshot=rows.snapshot,
            steps=steps,
        )
    except ValueError as exc:  # its inputs or a step's outputs are not readable
        return Refused(f"run {record.run_id} cannot be resumed: {exc} ({journal.path})")
    return Refused(start) if isinstance(start, str) else start


def _stop_children(record: RunRecord, say: Callable[[str], None], *, force: bool) -> Refused | None:
    """Refuse to resume over a child the run left running, or (`force`) stop it first."""
    if record.status == "running" and not record.stale:
        return None
    alive = record.live_children()
    if not alive:
        return None
    groups = ", ".join(str(pgid) for pgid in alive)
    if not force:
        return Refused(
            f"run {record.run_id} left child process group {groups} running; "
            "pass --force to stop it and resume"
        )
    for pgid in alive:
        io_ops.stop_group(pgid)
    say(f"adws: stopped process group {groups} left by run {record.run_id}")
    return None


def take_back(record: RunRecord, say: Callable[[str], None]) -> None:
    """Stop the process groups an orphan's dead holder left running, and wait for them to end.

    A worker or `adws resume --due` calls it as it takes back a run nobody
    runs (interrupted, or its holder dead): the killed runner's step, in its
    own process group, may still be running and would finish its side
    effect while the run taken back runs the step again. Only groups still
    carrying the run's `ADWS_RUN_ID` are signalled (never a reused number).
    """
    alive = record.live_children()
    if not alive:
        return
    for pgid in alive:
        io_ops.stop_group(pgid)
    groups = ", ".join(str(pgid) for pgid in alive)
    say(f"adws: stopped process group {groups} left by run {record.run_id} before taking it back")


def _claim(
    journal: Journal, record: RunRecord, start: ResumeStart, how: Resuming, asked: _Asked
) -> ResumeStart | Refused:
    """Claim the run with what was read of it, recording what it asked for in the claim.

    Compare-and-set (`Journal.claim`): a run that changed since `record` was
    read is refused, so of two people deciding (or cancelling) at once, or
    two resumes, one acts. A decision is recorded only while its question
    is still open, stamped with the time of the claim, and the run
    continues with it as the journal now holds it. `keep_changed` makes
    today's fingerprints the recorded ones in the same transaction, and so
    is a budget an approval raised and who cancels the run.
    """
    run_id = record.run_id

    def then(now: str) -> list[Guarded]:
        recorded = baseline(run_id, start) if how.keep_changed else []
        recorded.extend(_recorded(run_id, asked.decided, now, asked.raised))
        if asked.cancel is not None:
            recorded.append(cancels.kept(run_id, asked.cancel))
        return recorded

    refused = journal.claim(run_id, force=how.force, seen=record.seen, then=then)
    if refused is not None:
        return Refused(refused)
    if asked.decided is None:
        return start
    decisions = decisions_for(approvals_of(journal, run_id), journal.attempts(run_id))
    return attrs.evolve(start, decisions=decisions)


@final
@attrs.frozen
class _Asked:
    """What a continuation records in its claim: a decision, a cancel, a raised budget."""

    decided: tuple[str, Decision] | None = None
    cancel: CancelRecord | None = None
    raised: tuple[Budget, RunOptions] | None = None

    @property
    def ending(self) -> bool:
        """Tell whether the run goes on only to run its cleanup (a rejection, a cancel)."""
        rejected = self.decided is not None and self.decided[1].verdict == "rejected"
        return rejected or self.cancel is not None


def _handed_over(
    journal: Journal, record: RunRecord, how: Resuming, asked: _Asked
) -> HandedOver | Refused | None:
    """Record a decision or a cancel on a run of another host (None: the run goes on here)."""
    if not elsewhere(record) or how.here:
        return None
    run_id, decided, cancel = record.run_id, asked.decided, asked.cancel
    if decided is not None:
        return _decide_elsewhere(
            journal, record, lambda now: _recorded(run_id, decided, now, asked.raised)
        )
    if cancel is not None and record.cancel is None:
        return _decide_elsewhere(journal, record, lambda _now: [cancels.kept(run_id, cancel)])
    return None


def _ready(
    setting: Setting, record: RunRecord, how: Resuming, options: RunOptions, asked: _Asked
) -> tuple[_loading.Loaded, ResumeStart] | Refused:
    """Check the run may go on here as asked; load its workflow and say where it starts."""
    journal = setting.journal
    assert journal is not None  # noqa: S101 - a recorded run is read from its journal
    refused = _check_host(journal, record, here=how.here)
    if refused is not None:
        return refused
    loaded = workflow_for(journal, record, options, how, setting.say)
    if isinstance(loaded, Refused):
        return loaded
    start = _start(journal, record, loaded.workflow, how, ending=asked.ending)
    if isinstance(start, Refused):
        return start
    if start.resume_from is None:
        if asked.decided is not None or asked.cancel is not None:  # it ended since it was read
            changed = journal.changed(record.run_id, record.seen)
            return Refused(
                changed or f"run {record.run_id} has nothing left to decide: every step succeeded"
            )
        return Refused(f"every step of run {record.run_id} already succeeded; nothing to resume", 0)
    refused = _stop_children(record, setting.say, force=how.force)
    return refused or (loaded, start)


def continue_run(  # noqa: PLR0913 - the run, how it goes on, and what is recorded with it
    setting: Setting,
    record: RunRecord,
    how: Resuming,
    *,
    decided: tuple[str, Decision] | None = None,
    cancel: CancelRecord | None = None,
    observers: Observers = (),
) -> RunOutcome | HandedOver | Refused:
    """Continue a recorded run as `adws resume` does; `decided` is a decision to record first.

    `adws approve` and `adws reject` come through here with theirs: it is
    journaled in the run's claim, so of two people deciding at once one
    decides, and the other is told the run changed since they read it. A
    decision on a run of another host is only recorded (`HandedOver`): its
    host continues the run, unless `how.here`. A `cancel` (or one asked for
    earlier, on the run's row) continues it only to fail the step it
    stopped at `Cancelled`, so its cleanup steps run, as a rejection does.
    """
    journal = setting.journal
    assert journal is not None  # noqa: S101 - a recorded run is read from its journal
    cancel = cancel or (record.cancel if record.status != "cancelled" else None)
    decided = None if cancel is not None else decided
    budget = _raise(how, record, decided)
    options, described = options_for(record, how.options)
    if budget is not None:  # the raised limits replace the workflow's, from now on
        options = attrs.evolve(options, raised=True)
    asked = _Asked(decided, cancel, None if budget is None else (budget, options))
    handed = _handed_over(journal, record, how, asked)
    if handed is not None:
        return handed
    ready = _ready(setting, record, how, options, asked)
    if isinstance(ready, Refused):
        return ready
    loaded, start = ready
    # The claim is the check: compare-and-set, so of several resumes or decisions one acts.
    claimed_start = _claim(journal, record, start, how, asked)
    if isinstance(claimed_start, Refused):
        return claimed_start
    if cancel is not None:
        loaded = attrs.evolve(loaded, runnable=_cancelled_at(loaded.runnable, start, cancel))
    return _run_claimed(
        setting,
        record,
        loaded,
        claimed_start,
        inputs=how.inputs,
        described=described,
        observers=observers,
    )


def cancelled_error(step: str, cancel: CancelRecord) -> PipelineError:
    """Say, as a run's failure, that a person cancelled it: who, when and why."""
    stopped = Cancellation(cancel.by, cancel.at, cancel.reason)
    return PipelineError(step, ErrorType.CANCELLED, str(stopped), stopped.context())


def _cancelled_at(workflow: Workflow, start: ResumeStart, cancel: CancelRecord) -> Workflow:
    """Make the step the run stopped at fail `Cancelled` at once: then only cleanup runs."""
    step_name = str(start.resume_from)
    error = cancelled_error(step_name, cancel)

    def cancelled(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return IOFailure(error)

    steps = tuple(
        Step(step.name, cancelled, always_run=step.always_run) if step.name == step_name else step
        for step in workflow.steps
    )
    return attrs.evolve(workflow, steps=steps)


def _run_claimed(  # noqa: PLR0913 - the claimed run, and how it goes on
    setting: Setting,
    record: RunRecord,
    loaded: _loading.Loaded,
    start: ResumeStart,
    *,
    inputs: Mapping[str, object],
    described: str,
    observers: Observers,
) -> RunOutcome:
    """Reset what the attempt in flight left in its worktrees, then run the claimed run."""
    journal = setting.journal
    assert journal is not None  # noqa: S101 - as in `continue_run`
    run_id = record.run_id
    if start.resets:  # only once claimed: a resume its claim refused touches nothing
        for line in reset_in_flight(start.resets, journal.attempts(run_id), run_id):
            setting.say(line)
    if inputs:
        journal.add_inputs(run_id, inputs)  # a later resume needs them too
    kept = not_spent(kept_spend(start.plan, journal.attempts(run_id), start.reuse))
    plan = Plan(
        loaded.runnable,
        start.context,
        run_id,
        start.steps,
        fingerprint(loaded.workflow, start.steps),
        loaded.options,
        start.resume_from,
        start.reuse,
        start.spent,
        start.rerun,
        start.bases,
        start.decisions,
        start.sessions,
        starting=Starting(run_id, record.workflow, resumed=True, options=described, kept=kept),
    )
    return execute(setting, plan, observers)
