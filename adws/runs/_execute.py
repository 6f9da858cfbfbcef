"""The one call of `run_workflow` outside the engine: a run with its journal, signals and watchers.

`execute` assembles what every run gets, whoever started it: the journal
observer (what the run records), the summary (what is reported of it), the
caller's observers (progress, `--json`, spans, a test's), and, when the
run owns its process (`whole_process`), the signal handlers (Ctrl-C ends
it `interrupted` after cleanup), the subreaper (a step's orphans are
stopped as the run ends), the `ADWS_RUN_ID` mark on every process it
starts, the record of its process groups, and a watcher that acts on a
cancel asked for in the journal within `CANCEL_POLL` seconds. Then it
calls `run_workflow` and records how the run ended.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final, final

import attrs

from adws import io_ops
from adws._exceptions import AdwsError
from adws.engine.context import WorkflowContext  # as above
from adws.engine.errors import Cancellation
from adws.engine.executor import run_workflow
from adws.engine.scope import AgentSession, Decision, Sleep  # attrs resolves the annotations
from adws.engine.step import Workflow  # as above
from adws.engine.usage import Usage  # as above
from adws.journal import Journal
from adws.journal.records.options import RunOptions  # as above
from adws.journal.store import cancels
from adws.journal.store.cap_holds import gate
from adws.journal.store.children import ChildrenRecorder
from adws.journal.store.estimates import call_estimates
from adws.journal.store.exchanges import keeps_transcripts
from adws.journal.store.journal import BUSY_TIMEOUT_SECONDS
from adws.journal.store.observer import JournalObserver
from adws.journal.store.patience import JOURNAL_WAIT
from adws.journal.store.quotas import DEFAULT_PARK_AT, book
from adws.journal.store.workspaces import worktrees_of
from adws.runs import _settings
from adws.runs._values import RunOutcome, Starting
from adws.runs.interrupts import Interrupts
from adws.runs.summary import RunSummary
from adws.workspaces.branches import delete_merged
from adws.workspaces.notify import notify

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from adws.engine.caps import CapGate, QuotaBook
    from adws.engine.events import RunObserver
    from adws.runs._values import Observers

__all__ = ["CANCEL_POLL", "Plan", "Setting", "execute"]

CANCEL_POLL: Final = 1.0
"""Seconds between two looks at the journal for a cancel of the run in flight."""


@final
@attrs.frozen
class Plan:
    """One call of `run_workflow`: the run, where it starts, and how it runs.

    `steps` and `fingerprint` are those of the workflow as written (the
    journal compares them at the next resume); `workflow` is what runs
    (its agents chosen). A resume passes where it starts and what it keeps
    (`resume_from`, `reuse`, `spent`, `rerun`, `bases`, `decisions`,
    `sessions`: see `adws.runs._resume.ResumeStart`); `queued` says the
    run's row was made before it started (`adws submit`, a batch).
    """

    workflow: Workflow
    context: WorkflowContext
    run_id: str
    steps: Mapping[str, str]
    fingerprint: str
    options: RunOptions = attrs.field(factory=RunOptions)
    resume_from: str | None = None
    reuse: Mapping[str, Mapping[str, object]] = attrs.field(factory=dict)
    spent: Usage | None = None
    rerun: tuple[str, ...] = ()
    bases: Mapping[str, str] = attrs.field(factory=dict)
    decisions: Mapping[str, Decision] = attrs.field(factory=dict)
    sessions: Mapping[tuple[str, str], AgentSession] = attrs.field(factory=dict)
    queued: bool = False
    starting: Starting | None = None
    """What the caller's observers are told as the run starts (None: a run, not a resume)."""


@final
@attrs.frozen
class Setting:
    """Where and how runs execute, the same for every run of one `Runs`.

    `journal` records the run (None: the caller records it, as a batch's
    worker sends statements to its coordinator); `whole_process`: the run
    owns its process (see the module's docstring); `say` is told warnings.
    """

    journal: Journal | None
    sleep: Sleep
    worktrees: str
    whole_process: bool = False
    say: Callable[[str], None] = attrs.field(default=lambda _line: None, kw_only=True)
    notifies: bool = attrs.field(default=True, kw_only=True)
    """Run a waiting run's `--notify` command (a batch's coordinator runs it for its runs)."""
    journal_wait: float = attrs.field(default=JOURNAL_WAIT, kw_only=True)
    """Seconds a failed journal write is tried again before the run stops (`--journal-wait`)."""


def _observers(given: Observers, starting: Starting) -> list[RunObserver]:
    return list(given(starting) if callable(given) else given)


@contextlib.contextmanager
def _children_recorded(
    journal: Journal, run_id: str, unrecorded: list[str], wait: float
) -> Iterator[None]:
    """Record in the journal, off the step's thread, which process groups the step has started.

    A resume reads them to refuse resuming a run whose child still runs.
    A write that fails (after `wait` seconds of tries) is kept in
    `unrecorded`, never raised into the step.
    """
    recorder = ChildrenRecorder(journal, run_id, unrecorded, wait)
    io_ops.GROUPS.on_change = recorder
    try:
        yield
    finally:
        io_ops.GROUPS.on_change = None
        recorder.close(wait + BUSY_TIMEOUT_SECONDS + 1.0)


@contextlib.contextmanager
def _run_marked(run_id: str) -> Iterator[None]:
    """Put `ADWS_RUN_ID` in the environment every process of the run inherits, then restore it.

    A resume with `force` signals a recorded process group only when one of
    its processes still carries the run's id (see `adws.io_ops.marks`).
    """
    before = os.environ.get(io_ops.RUN_MARK)
    os.environ[io_ops.RUN_MARK] = run_id
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(io_ops.RUN_MARK, None)
        else:
            os.environ[io_ops.RUN_MARK] = before


@contextlib.contextmanager
def _adopted_stopped() -> Iterator[None]:
    """Kill the orphans adws adopted during the run (`env -i setsid daemon &`), however it ends."""
    try:
        yield
    finally:
        io_ops.kill_adopted(frozenset(io_ops.GROUPS.current()))


@contextlib.contextmanager
def _cancels_watched(journal: Journal, run_id: str, interrupts: Interrupts) -> Iterator[None]:
    """Look at the journal every `CANCEL_POLL` seconds; stop the run when a cancel is asked.

    A journal that cannot be read for a moment is looked at again next time.
    """
    done = threading.Event()

    def watch() -> None:
        while not done.wait(CANCEL_POLL):
            found = None
            with contextlib.suppress(Exception):  # a journal out of reach is asked again later
                found = cancels.requested(journal, run_id)
            if found is not None:
                interrupts.cancel(Cancellation(found.by, found.at, found.reason))
                return

    watcher = threading.Thread(target=watch, name="adws-cancels", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


def _estimates(journal: Journal, workflow: Workflow) -> Callable[[str], Usage | None]:
    """Estimate agent calls from the journal's history of this workflow (see reservations).

    The history is read on the first estimate a budget asks for: a run
    under no budget never reads it.
    """
    read: list[dict[str, Usage]] = []

    def estimate(step: str) -> Usage | None:
        if not read:
            read.append(call_estimates(journal, workflow.name))
        return read[0].get(step)

    return estimate


def _caps(journal: Journal, plan: Plan) -> CapGate:
    """Check each agent call of the run against the journal's caps (see `cap_holds`)."""
    patience = _settings.max_wait(plan.options.max_wait)
    return gate(journal, plan.run_id, plan.workflow.name, plan.options.agent, patience=patience)


def _quotas(journal: Journal, park_at: float | None) -> QuotaBook:
    """Keep the agents' reports of their quota in the journal; park past `--park-at`."""
    return book(journal, DEFAULT_PARK_AT if park_at is None else park_at, io_ops.wall_clock)


def _guards(
    setting: Setting, plan: Plan, interrupts: Interrupts, unrecorded: list[str]
) -> contextlib.ExitStack:
    """Enter what a run that owns its process runs inside (see the module's docstring)."""
    stack = contextlib.ExitStack()
    journal = setting.journal
    if setting.whole_process:
        io_ops.become_subreaper()  # a run's orphans come to adws, which stops them as it ends
        stack.enter_context(interrupts.installed())
    if journal is not None:
        stack.enter_context(
            _children_recorded(journal, plan.run_id, unrecorded, setting.journal_wait)
        )
    stack.enter_context(_run_marked(plan.run_id))
    if setting.whole_process:
        stack.enter_context(_adopted_stopped())
        if journal is not None:
            stack.enter_context(_cancels_watched(journal, plan.run_id, interrupts))
    return stack


def execute(setting: Setting, plan: Plan, observers: Observers = ()) -> RunOutcome:
    """Run `plan` to its end (or its pause) and record it; return how it ended."""
    journal, run_id, options = setting.journal, plan.run_id, plan.options
    summary = RunSummary()
    mark = (lambda: journal.mark(run_id, "interrupted")) if journal else (lambda: None)
    interrupts = Interrupts(mark)
    watching: list[RunObserver] = [interrupts.observe] if setting.whole_process else []
    recorder = None
    if journal is not None:
        transcripts = keeps_transcripts(refused=bool(options.no_transcripts))
        recorder = JournalObserver(
            journal,
            plan.fingerprint,
            plan.steps,
            options,
            transcripts=transcripts,
            queued=plan.queued,
            wait=setting.journal_wait,
        )
        watching.append(recorder)
    watching.append(summary)
    starting = plan.starting or Starting(run_id, plan.workflow.name)
    watching.extend(_observers(observers, starting))
    unrecorded: list[str] = []
    with _guards(setting, plan, interrupts, unrecorded):
        result = run_workflow(
            plan.workflow,
            plan.context,
            observers=watching,
            sleep=setting.sleep,
            run_id=run_id,
            resume_from=plan.resume_from,
            max_agents=options.max_agents,
            reuse=plan.reuse,
            budget=options.budget(),
            raised=options.raised_budget(),
            estimate=None if journal is None else _estimates(journal, plan.workflow),
            spent=plan.spent,
            rerun=plan.rerun,
            worktrees=setting.worktrees,
            bases=plan.bases,
            decisions=plan.decisions,
            sessions=plan.sessions,
            max_wait=_settings.max_wait(options.max_wait),
            caps=None if journal is None else _caps(journal, plan),
            quotas=None if journal is None else _quotas(journal, options.park_at),
        )
    problems = _unrecorded(journal, recorder, summary, unrecorded)
    status = summary.status
    if journal is not None and status in _ENDS_RESUMABLE and not problems:
        status = _cancelled_meanwhile(journal, run_id, summary) or status
    if journal is not None and status not in _GOES_ON:
        _tidied(journal, run_id)
    if summary.status == "waiting" and options.notify and setting.notifies:
        error = summary.error
        warning = notify(options.notify, run_id, "" if error is None else error.message)
        if warning is not None:
            setting.say(f"adws: warning: {warning}")
    return RunOutcome(
        run_id,
        status,
        result,
        summary,
        options,
        interrupts.first,
        tuple(problems),
        None if journal is None else str(journal.path),
        frozenset(plan.context.inputs),
    )


_ENDS_RESUMABLE: Final = frozenset({"failed", "blocked", "interrupted"})
_GOES_ON: Final = frozenset({"queued", "running", "parked", "waiting", "interrupted"})
"""A run in one of these has not ended (an interrupted one is resumed): its branches stay."""


def _tidied(journal: Journal, run_id: str) -> None:
    """Delete the run's branches their checkout's branch holds all of (see `delete_merged`).

    A journal row that cannot be read (or names a repository that is gone)
    deletes nothing.
    """
    by_repo: dict[str, list[str]] = {}
    with contextlib.suppress(AdwsError):
        for tree in worktrees_of(journal, run_id):
            by_repo.setdefault(tree.repo, []).append(tree.branch)
    by_repo.pop("", None)  # a row from before worktrees named their repository
    for repo, branches in by_repo.items():
        delete_merged(Path(repo), run_id, branches)


def _cancelled_meanwhile(journal: Journal, run_id: str, summary: RunSummary) -> str | None:
    """End the run `cancelled` when a cancel came too late to stop a step (during cleanup).

    A person asked to end it: it must not be resumed. Returns the new
    status (None: no cancel was asked).
    """
    found = cancels.requested(journal, run_id)
    if found is None:
        return None
    journal.apply([cancels.end(run_id, found, summary.error)])
    return "cancelled"


def _unrecorded(
    journal: Journal | None,
    recorder: JournalObserver | None,
    summary: RunSummary,
    problems: Sequence[str],
) -> list[str]:
    """Say what the journal did not record; try once more to record how the run ended."""
    if journal is None or recorder is None:
        return list(problems)
    found = list(problems)
    if recorder.failure is not None:
        found.insert(0, recorder.failure)
    if found and summary.run_id:
        with contextlib.suppress(Exception):  # best effort: the caller says what is missing
            journal.mark(summary.run_id, summary.status)
    return found
