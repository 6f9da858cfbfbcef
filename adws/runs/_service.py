"""`Runs`: start, resume, decide, cancel and read runs, for every front end alike.

The command line, the author's kit, `adws worker` and `adws batch` differ
only in what they watch a run with (the observers they pass) and in how
they say what `Runs` says (its `say` lines: warnings, what it stopped).
Every method returns its value or a `Refused`; exceptions are for what
cannot go on at all (a journal that cannot be opened, a setting in the
environment adws cannot use).
"""

from __future__ import annotations

import datetime as dt
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Literal, final

import attrs

from adws import io_ops
from adws.engine.context import WorkflowContext
from adws.engine.executor import new_run_id
from adws.engine.scope import Decision
from adws.journal.identity.fingerprint import fingerprint, step_fingerprints
from adws.journal.records.codec import encode_context
from adws.journal.records.options import RunOptions
from adws.journal.records.sessions import parent_sessions
from adws.journal.store import queue, tickets
from adws.journal.store.backend import JournalError, JournalUrl, where
from adws.journal.store.caps import start_within
from adws.journal.store.estimates import FinishEstimate, finish_estimate
from adws.journal.store.journal import DEFAULT_PATH, ENV_VAR, Journal
from adws.journal.store.quotas import forget_full
from adws.journal.store.sessions import sessions_of
from adws.runs import _loading, _settings
from adws.runs._cancel import cancel_run
from adws.runs._continue import (
    Resuming,
    continue_run,
    login,
    options_for,
    take_back,
    workflow_for,
)
from adws.runs._execute import Plan, Setting, execute
from adws.runs._preview import ResumePreview, preview
from adws.runs._values import Refused, RunState, Starting
from adws.runs._waits import asks_budget, expired

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from adws.agents.base import AgentBackend
    from adws.engine.scope import AgentSession, Sleep
    from adws.engine.step import Workflow
    from adws.journal import RunRecord
    from adws.journal.records.tickets import TicketClaim, TicketRound
    from adws.journal.store.schema import Statement
    from adws.runs._values import (
        CancelOutcome,
        HandedOver,
        Observers,
        RunOutcome,
        RunRequest,
    )

__all__ = ["Runs"]


def _quiet(_line: str) -> None:
    """Say nothing (what a `Runs` says by default)."""


@final
class Runs:
    """The runs of one journal (or of none), and the one way to start, resume and end them.

    `journal` is an open `Journal`, or None to open `where` when first
    needed (a file's path or a `postgresql://` URL; default:
    `$ADWS_JOURNAL`, else `.adws/runs.db`): a run is checked before its
    journal is opened. `record=False` runs without recording (`--no-journal`;
    a replayed run is still read from the journal). `readonly` opens it
    without writing anything (`runs`, `status`, `resume --plan`); `create`
    makes a journal where there is none (else that is a `Refused`).

    `whole_process`: a run owns this process, as `adws run`'s does: it
    handles Ctrl-C, SIGTERM and SIGHUP, adopts and stops its steps'
    orphans, and watches the journal for a cancel. A library or a test
    (the kit) leaves its process alone. `sleep` is every wait of a run
    (the kit's does not wait); `say` is told what a command would print
    besides the run's own events (warnings, stopped process groups).
    `worktrees` is where `worktree` steps make their folders (default: the
    shared folder outside any project, see `adws.workspaces._home`).
    """

    def __init__(  # noqa: PLR0913 - where the runs are recorded, and how they run
        self,
        journal: Journal | None = None,
        *,
        where: Path | JournalUrl | None = None,
        record: bool = True,
        readonly: bool = False,
        create: bool = True,
        whole_process: bool = True,
        sleep: Sleep = io_ops.sleep,
        say: Callable[[str], None] = _quiet,
        worktrees: str | None = None,
        journal_wait: float | None = None,
    ) -> None:
        """Keep where the runs are recorded; open nothing yet.

        `journal_wait` is how long a failed journal write is tried again
        before a run stops `interrupted` (None: `$ADWS_JOURNAL_WAIT`, else 30 s).
        """
        self._journal = journal
        self.where: Path | JournalUrl = (
            journal.path if journal is not None else where or DEFAULT_PATH
        )
        self.records = record
        self.readonly = readonly
        self.create = create
        self.whole_process = whole_process
        self.sleep = sleep
        self.say = say
        self._worktrees = worktrees
        self.journal_wait = journal_wait

    @classmethod
    def open(  # noqa: PLR0913 - where the journal is, and how the runs run
        cls,
        journal: str | Path | JournalUrl | None = None,
        *,
        record: bool = True,
        readonly: bool = False,
        create: bool = True,
        whole_process: bool = True,
        say: Callable[[str], None] = _quiet,
        journal_wait: float | None = None,
        worktrees: str | None = None,
    ) -> Runs:
        """Name the journal (`$ADWS_JOURNAL`, else `.adws/runs.db`, unless given); open it later."""
        chosen = journal if journal is not None else os.environ.get(ENV_VAR)
        return cls(
            where=where(chosen) if chosen else DEFAULT_PATH,
            record=record,
            readonly=readonly,
            create=create,
            whole_process=whole_process,
            say=say,
            journal_wait=journal_wait,
            worktrees=worktrees,
        )

    # -- the journal ---------------------------------------------------------------

    @property
    def home(self) -> Path:
        """Name the folder of this host's own run state: the journal file's, else `.adws`."""
        path = self.where if isinstance(self.where, Path) else DEFAULT_PATH
        return path.resolve().parent

    def journal(self) -> Journal | Refused:
        """Open the journal (once), or say why it cannot be opened."""
        if self._journal is not None:
            return self._journal
        path = self.where
        if isinstance(path, Path) and not path.exists() and not self.create:
            return Refused(f"no run journal at {path}; `adws run` records runs there")
        try:
            self._journal = Journal(
                path, readonly=self.readonly, busy_timeout=_settings.busy_timeout()
            )
        except JournalError as exc:
            return Refused(str(exc))
        return self._journal

    def _setting(self, journal: Journal | None) -> Setting:
        return Setting(
            journal,
            self.sleep,
            self._worktrees or "",
            self.whole_process,
            say=self.say,
            journal_wait=_settings.journal_wait(self.journal_wait),
        )

    def _replayed(self) -> Journal | Refused:
        """Open the journal a replay of a run reads: this one, or (not recording) read-only."""
        path = self.where
        if isinstance(path, Path) and not path.exists():
            return Refused(f"no run journal at {path} to look in")
        if self.records:
            return self.journal()
        try:
            return Journal(path, readonly=True, busy_timeout=_settings.busy_timeout())
        except JournalError as exc:
            return Refused(str(exc))

    def find(self, run_id: str) -> RunRecord | Refused:
        """Find a run by its id or a unique prefix, whole (its inputs and last attempt read)."""
        journal = self.journal()
        if isinstance(journal, Refused):
            return journal
        found = journal.find(run_id)
        return Refused(found, found=False) if isinstance(found, str) else found

    # -- starting ------------------------------------------------------------------

    def prepare(self, request: RunRequest) -> _loading.Loaded | Refused:
        """Load and check what `request` asks for, as a run would, without running it.

        A workflow asked for by name is checked as `adws run` checks it; a
        `Workflow` object is run as given (see `RunRequest`).
        """
        options = request.options
        folder: Path | None = None
        if isinstance(request.workflow, str):
            folder = _loading.folder_of(request.workflows, options)
            found = _loading.find_workflow(request.workflow, folder, self.say)
            if isinstance(found, Refused):
                return found
            workflow = found
        else:
            workflow = request.workflow
        if options.max_wait is None:  # recorded, so a resume parks as the run did
            waits = _settings.seconds_in(_settings.MAX_WAIT_VAR, _settings.MOST_WAIT)
            options = attrs.evolve(options, max_wait=waits)
        loaded = _loading.with_agents(
            workflow, options, agent=request.agent, journal=self._replayed
        )
        if isinstance(loaded, Refused):
            return loaded
        # Recorded with its paths absolute, so a resume works from any folder.
        loaded = attrs.evolve(loaded, options=_loading.absolute_options(loaded.options, folder))
        if not isinstance(request.workflow, str):
            return loaded
        refused = _loading.check_inputs(workflow, request.inputs, self.say)
        return refused or loaded

    def run(self, request: RunRequest, observers: Observers = ()) -> RunOutcome | Refused:
        """Run `request` here, to its end or its pause; return how it ended.

        The workflow and its inputs are checked before the journal is
        opened. `observers` watch the run (progress lines, `--json`, spans,
        a test's), after the journal and the summary have seen each event.
        """
        loaded = self.prepare(request)
        if isinstance(loaded, Refused):
            return loaded
        journal = self.journal() if self.records else None
        if isinstance(journal, Refused):
            return journal
        steps = step_fingerprints(loaded.workflow)
        plan = Plan(
            loaded.runnable,
            WorkflowContext(inputs=dict(request.inputs)),
            new_run_id(),
            steps,
            fingerprint(loaded.workflow, steps),
            loaded.options,
            queued=journal is not None,  # its row is written first, with the caps' check
        )
        if journal is not None:
            row = queue.held_row(
                plan.run_id,
                loaded.workflow.name,
                fingerprint=plan.fingerprint,
                steps=[step.name for step in loaded.workflow.steps],
                inputs=encode_context(plan.context),
                options=plan.options.to_json(),
            )
            now = dt.datetime.now(dt.UTC)
            full = start_within(journal, loaded.workflow.name, loaded.options.agent, now, row)
            if full is not None:
                return Refused(f"not started: {full}")
        return execute(self._setting(journal), plan, observers)

    def estimate(self, request: RunRequest) -> tuple[Workflow, FinishEstimate] | Refused:
        """Say what a run of `request` should cost by the journal's history; run nothing.

        With no journal yet (or none kept), nothing is known: the estimate is empty.
        """
        loaded = self.prepare(request)
        if isinstance(loaded, Refused):
            return loaded
        workflow = loaded.workflow
        steps = [step.name for step in workflow.steps]
        path = self.where
        if not self.records or (isinstance(path, Path) and not path.exists()):
            return workflow, FinishEstimate(0.0, 0.0, 0)
        journal = self.journal()
        if isinstance(journal, Refused):
            return journal
        return workflow, finish_estimate(journal, workflow.name, steps)

    def submit(self, request: RunRequest) -> str | Refused:
        """Queue a run of `request` for an `adws worker` on any host; return its id.

        Checked as `run` checks it; a worker records its host when it takes it.
        """
        queued = self._queued(request)
        if isinstance(queued, Refused):
            return queued
        journal, run_id, statements = queued
        journal.apply(statements)
        return run_id

    def submit_ticket(self, request: RunRequest, ask: TicketClaim) -> TicketRound | Refused:
        """Queue a run of `request` as the next round of a ticket, unless the journal says no.

        The round and its queued run are written in one transaction, or
        neither (see `adws.journal.store.tickets.claim`): a second ask for
        the same ticket and event, on any host, starts nothing and returns
        the row already there. The row's `new` says whether this call wrote it.
        """
        queued = self._queued(request)
        if isinstance(queued, Refused):
            return queued
        journal, run_id, statements = queued
        return tickets.claim(journal, ask, run_id, statements)

    def _queued(self, request: RunRequest) -> tuple[Journal, str, list[Statement]] | Refused:
        """Check `request` as `run` does; return the journal, a new run id and its queue rows."""
        loaded = self.prepare(request)
        if isinstance(loaded, Refused):
            return loaded
        journal = self.journal()
        if isinstance(journal, Refused):
            return journal
        run_id = new_run_id()
        workflow = loaded.workflow
        statements = queue.queued(
            run_id,
            workflow.name,
            fingerprint=fingerprint(workflow, step_fingerprints(workflow)),
            steps=[step.name for step in workflow.steps],
            inputs=encode_context(WorkflowContext(inputs=dict(request.inputs))),
            options=loaded.options.to_json(),
        )
        return journal, run_id, statements

    # -- going on ------------------------------------------------------------------

    def resume(  # noqa: PLR0913 - every way a resume can be asked for, as adws resume takes them
        self,
        run_id: str,
        *,
        options: RunOptions | None = None,
        inputs: Mapping[str, object] | None = None,
        from_step: str | None = None,
        rerun_changed: bool = False,
        keep_changed: bool = False,
        accept_drift: bool = False,
        here: bool = False,
        now: bool = False,
        force: bool = False,
        workflow: Workflow | None = None,
        agent: AgentBackend | None = None,
        observers: Observers = (),
    ) -> RunOutcome | HandedOver | Refused:
        """Continue a run from its first step that did not succeed, as `adws resume` does.

        The options it was started with are used again, `options` over them;
        `inputs` are added. A wait past its timeout is ended as a rejection;
        a parked run goes on only once its time has come, unless `now`
        (which also forgets what agents said of their quota windows still to
        reset: the person says the limit is gone; a window still full says
        so again on the next call).
        """
        record = self.find(run_id)
        if isinstance(record, Refused):
            return record
        if record.status == "succeeded":
            return Refused(f"run {record.run_id} already succeeded; nothing to resume", 0)
        early = None if now else _too_early(record)
        if early is not None:
            return Refused(early, 75)
        how = Resuming(
            options or RunOptions(),
            inputs or {},
            from_step,
            rerun_changed,
            keep_changed,
            accept_drift,
            here,
            force,
            workflow,
            agent,
        )
        setting = self._setting(self._journal)
        if now:
            forget_full(setting_journal(setting), io_ops.wall_clock())
        decided = expired(setting_journal(setting), record, self.say)
        return continue_run(setting, record, how, decided=decided, observers=observers)

    def approve(  # noqa: PLR0913 - the decision, and how the run goes on
        self,
        run_id: str,
        note: str | None = None,
        max_cost: float | None = None,
        *,
        max_tokens: int | None = None,
        by: str | None = None,
        options: RunOptions | None = None,
        here: bool = False,
        force: bool = False,
        keep_changed: bool = False,
        accept_drift: bool = False,
        workflow: Workflow | None = None,
        agent: AgentBackend | None = None,
        observers: Observers = (),
    ) -> RunOutcome | HandedOver | Refused:
        """Approve a run waiting for approval and continue it here (its host, if another's).

        `max_cost` and `max_tokens` answer a question the run's budget asked
        (`--on-budget ask`): the raised limits replace the workflow's from
        now on, and are recorded with the decision. `by` defaults to the
        login name.
        """
        given = options or RunOptions()
        if max_cost is not None:
            given = attrs.evolve(given, max_cost=max_cost)
        if max_tokens is not None:
            given = attrs.evolve(given, max_tokens=max_tokens)
        how = Resuming(
            given,
            keep_changed=keep_changed,
            accept_drift=accept_drift,
            here=here,
            force=force,
            workflow=workflow,
            agent=agent,
        )
        return self._decide(run_id, ("approved", note or "", by), how, observers)

    def reject(  # noqa: PLR0913 - the decision, and how the run goes on
        self,
        run_id: str,
        reason: str,
        *,
        by: str | None = None,
        options: RunOptions | None = None,
        here: bool = False,
        force: bool = False,
        workflow: Workflow | None = None,
        agent: AgentBackend | None = None,
        observers: Observers = (),
    ) -> RunOutcome | HandedOver | Refused:
        """Reject a waiting run: its `always_run` steps run and it ends `Rejected` (final)."""
        how = Resuming(
            options or RunOptions(), here=here, force=force, workflow=workflow, agent=agent
        )
        return self._decide(run_id, ("rejected", reason, by), how, observers)

    def _decide(
        self,
        run_id: str,
        said: tuple[Literal["approved", "rejected"], str, str | None],
        how: Resuming,
        observers: Observers,
    ) -> RunOutcome | HandedOver | Refused:
        """Record a decision (`said`: the verdict, its note, who) in the run's claim; go on."""
        verdict, note, by = said
        record = self.find(run_id)
        if isinstance(record, Refused):
            return record
        step = record.failed_step
        if record.status != "waiting" or not step:
            return Refused(
                f"run {record.run_id} is not waiting for approval (it is {record.status})"
            )
        setting = self._setting(self._journal)
        ended = expired(setting_journal(setting), record, self.say)
        if ended is not None:
            return continue_run(setting, record, how, decided=ended, observers=observers)
        raising = how.options.max_cost is not None or how.options.max_tokens is not None
        if verdict == "approved" and asks_budget(record) and not raising:
            asked = "" if record.error is None else f" ({record.error.message})"
            return Refused(
                f"run {record.run_id} waits at step {step} for a larger budget{asked}: "
                f"adws approve {record.run_id} --max-cost USD (or --max-tokens N) raises it, "
                f"adws reject {record.run_id} --reason TEXT ends the run"
            )
        decision = Decision(verdict, by or login(), io_ops.utc_now(), note)
        return continue_run(setting, record, how, decided=(step, decision), observers=observers)

    def cancel(
        self,
        run_id: str,
        reason: str | None = None,
        *,
        by: str | None = None,
        observers: Observers = (),
    ) -> CancelOutcome | Refused:
        """End a run on a person's word (see `adws.runs._cancel` for each status).

        `by` defaults to the login name. A waiting or parked run runs its
        cleanup steps here (`observers` watch them); a running one's holder
        stops it within a few seconds (`CancelOutcome.state` is `requested`).
        """
        record = self.find(run_id)
        if isinstance(record, Refused):
            return record
        setting = self._setting(self._journal)
        return cancel_run(setting, record, by or login(), reason or "", observers)

    def status(self, run_id: str) -> RunState | Refused:
        """Read a run as the journal holds it: its record and its attempts."""
        record = self.find(run_id)
        if isinstance(record, Refused):
            return record
        journal = self._journal
        assert journal is not None  # noqa: S101 - `find` opened it
        return RunState(record, tuple(journal.attempts(record.run_id)))

    def preview(
        self,
        run_id: str,
        *,
        options: RunOptions | None = None,
        from_step: str | None = None,
        rerun_changed: bool = False,
    ) -> ResumePreview | Refused:
        """Say what a resume of `run_id` would do with each step, spend and refuse; run nothing."""
        record = self.find(run_id)
        if isinstance(record, Refused):
            return record
        journal = setting_journal(self._setting(self._journal))
        chosen, described = options_for(record, options or RunOptions())
        loaded = workflow_for(journal, record, chosen, Resuming(chosen), self.say)
        if isinstance(loaded, Refused):
            return loaded
        return preview(
            journal,
            record,
            loaded.workflow,
            described,
            from_step=from_step,
            rerun_changed=rerun_changed,
        )

    def due(self) -> list[RunRecord] | Refused:
        """List the runs of this host to resume now, oldest first, read whole (`resume --due`).

        Parked runs whose time has come, then the runs nobody runs any more:
        interrupted ones and those whose holder died on this host (see
        `adws.journal.store.queue.orphans`). The process groups an orphan's
        dead holder left running are stopped here, and waited for, before
        the run is handed back (said on `say`): its step never finishes
        twice.
        """
        journal = self.journal()
        if isinstance(journal, Refused):
            return journal
        now, host = io_ops.wall_clock(), socket.gethostname()
        listed = [run for run in journal.runs(status="parked") if run.host == host and run.due(now)]
        found = [journal.find(run.run_id) for run in reversed(listed)]
        gone = (journal.find(run_id) for run_id, _ in queue.orphans(journal, host))
        orphans = [run for run in gone if not isinstance(run, str)]  # a run pruned meanwhile
        for orphan in orphans:
            take_back(orphan, self.say)
        return [run for run in found if not isinstance(run, str)] + orphans

    # -- a worker's ----------------------------------------------------------------

    def due_on(self, host: str) -> list[tuple[str, str]]:
        """List `(run_id, why)` of the runs of `host` to continue now, oldest first (a worker's).

        Parked runs whose time has come, waiting runs decided (or cancelled)
        on another host, then interrupted runs and runs whose holder died
        on this host; `why` is their status.
        """
        journal = setting_journal(self._setting(self._journal))
        return queue.due_runs(journal, host, io_ops.wall_clock()) + queue.orphans(journal, host)

    def take(self, run_id: str) -> bool:
        """Claim a due run for this process, compare-and-set; another worker may have it first.

        Once claimed, the process groups a dead holder's step left running
        are stopped and waited for (said on `say`), so the step taken back
        never finishes twice (see `take_back`).
        """
        journal = setting_journal(self._setting(self._journal))
        found = journal.find(run_id)
        if isinstance(found, str) or journal.claim(run_id, seen=found.seen) is not None:
            return False
        take_back(found, self.say)
        return True

    def take_queued(self) -> str | None:
        """Take the oldest queued run (not a batch's) for this process; None when none is left."""
        return queue.take_queued(setting_journal(self._setting(self._journal)))

    def run_held(
        self,
        run_id: str,
        kind: str,
        *,
        holder: int | None = None,
        options: RunOptions | None = None,
        observers: Observers = (),
    ) -> RunOutcome | HandedOver | Refused:
        """Run the run this process's `adws worker` claimed for it, and nothing else.

        `kind` is why it was due: `queued` (it starts, with the inputs it
        was submitted with), else it is continued as a resume would.
        `holder` is the worker's pid (None: this process's parent, the
        worker that started it; a run forked from a worker's forkserver is
        the server's child, and is told its worker's).
        """
        record = self.find(run_id)
        if isinstance(record, Refused):
            return record
        held = ("running", os.getppid() if holder is None else holder, socket.gethostname())
        if (record.status, record.pid, record.host) != held:
            return Refused(
                f"run {record.run_id} is {record.status}, not held for this process by an adws "
                f"worker; nothing was run here (adws resume {record.run_id} continues it)"
            )
        given = options or RunOptions()
        setting = self._setting(self._journal)
        if kind != "queued":
            return continue_run(setting, record, Resuming(given, force=True), observers=observers)
        chosen, described = options_for(record, given)
        journal = setting_journal(setting)
        loaded = workflow_for(journal, record, chosen, Resuming(given), self.say)
        if isinstance(loaded, Refused):
            return loaded
        steps = step_fingerprints(loaded.workflow)
        plan = Plan(
            loaded.runnable,
            record.inputs(),
            record.run_id,
            steps,
            fingerprint(loaded.workflow, steps),
            loaded.options,
            sessions=_round_sessions(journal, record.run_id),
            queued=True,
            starting=Starting(record.run_id, record.workflow, options=described),
        )
        return execute(setting, plan, observers)


def _round_sessions(journal: Journal, run_id: str) -> Mapping[tuple[str, str], AgentSession]:
    """Return the parent run's agent sessions a ticket's review round continues.

    Empty for a run that is no ticket's round, or whose parent is gone from
    the journal (pruned): its agent steps start afresh.
    """
    found = tickets.ticket_of(journal, run_id)
    parent = journal.find(found.parent) if found is not None and found.parent else "no parent"
    if isinstance(parent, str):
        return {}
    return parent_sessions(parent, sessions_of(journal, parent.run_id), socket.gethostname())


def setting_journal(setting: Setting) -> Journal:
    """Return the journal a run that was found is in (it was opened to find it)."""
    journal = setting.journal
    assert journal is not None  # noqa: S101 - finding the run opened it
    return journal


def _too_early(record: RunRecord) -> str | None:
    """Say why a parked run may not go on yet (its limit resets later), or None if it may."""
    from adws.render.words import parked_until  # noqa: PLC0415 - words only for this refusal

    if record.status != "parked" or record.due(io_ops.wall_clock()):
        return None
    until = parked_until(record.wake_at, record.parked_reason or "its agent's limit")
    return (
        f"run {record.run_id} is {until}; adws resume {record.run_id} --now goes on before "
        "(the agent may refuse again), adws resume --due once the time has come"
    )
