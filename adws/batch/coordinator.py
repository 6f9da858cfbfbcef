"""The coordinator: feed a batch's runs to workers, write the journal, resume the lost.

The coordinator holds no run's context: a run is a `Task` of text while it
waits, and only its status once it ends, so memory stays flat however many
runs a batch has. Where a run starts again (`--resume`, a lost worker) is
the journal's business (`adws.runs.batches`); what could not be
written, the ledger's (`adws.batch.ledger`).
"""

from __future__ import annotations

import socket
from collections import Counter, deque
from typing import TYPE_CHECKING, Any, Final, cast, final

import attrs

from adws import io_ops
from adws.agents.offline import OFFLINE
from adws.batch.ledger import Ledger
from adws.batch.local import LocalPool
from adws.batch.pool import Pool, Stop
from adws.batch.report import BatchReport, Progress, RunResult
from adws.batch.tasks import Batch, Message, Task, task_for
from adws.engine.errors import ErrorType, PipelineError
from adws.engine.events import AttemptFailed
from adws.journal.records.codec import decode_error, encode_error
from adws.journal.records.options import RunOptions
from adws.journal.store.batches import batch_runs, batch_spent
from adws.journal.store.patience import JOURNAL_WAIT
from adws.journal.store.statements import statements_for
from adws.runs.batches import BatchRun, resume_run
from adws.workspaces.notify import notify

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from adws.engine.step import Workflow
    from adws.journal import Journal

__all__ = ["Resuming", "run_batch"]

_TICK: Final = 0.2
_LOSSES_TO_FAIL: Final = 2
"""A run whose worker dies this many times ends failed (`WorkerLost`), after its cleanup."""
_HOST: Final = socket.gethostname()
_ASKS: Final = 4
"""A `journal` message longer than this is a step's start, waiting for its answer."""


@final
@attrs.frozen
class Resuming:
    """How a run whose worker died is resumed: the flags `batch --resume` was given."""

    rerun_changed: bool = False
    keep_changed: bool = False
    accept_drift: bool = False
    force: bool = False
    """Take a run another process seems to hold (the other flags are `resume_run`'s)."""


@final
class _Coordinator:
    """The state of one batch in flight: who runs what, and what ended how."""

    def __init__(  # noqa: PLR0913 - the batch and how to run it
        self,
        journal: Journal,
        workflow: Workflow,
        batch: Batch,
        runs: Sequence[BatchRun],
        *,
        concurrency: int,
        pool: Pool,
        resuming: Resuming,
        journal_wait: float,
    ) -> None:
        self.journal, self.workflow, self.batch = journal, workflow, batch
        self.pool = pool
        self.stop = Stop(self.pool)
        self.ledger = Ledger(journal, self.stop.halt, journal_wait)
        self.resuming = resuming
        # Runs wait as they are (a new batch's inputs stay in the journal); each becomes a
        # task only when a worker takes it, so memory stays flat however many runs there are.
        self.waiting: deque[BatchRun | Task] = deque(runs)
        self.assigned: dict[Any, Task] = {}
        self.idle: list[Any] = []
        self.results: dict[str, str] = {}
        self.skipped: list[str] = []
        self.groups: dict[str, tuple[str, tuple[int, ...]]] = {}
        self.dirty: dict[str, tuple[int, ...]] = {}
        self.losses: Counter[str] = Counter()
        self.spent: dict[str, float] = {}
        self.spent_before = batch_spent(journal, batch.batch_id) if batch.max_cost else 0.0
        self.over_budget = False
        self.warnings: list[str] = []
        self.unstarted: str | None = None
        """Why a worker process could not be started (its forkserver killed, say), if so."""
        self.cancelled: set[str] = set()
        """The runs in flight whose cancel was passed to their worker."""
        self.total = len(runs)
        self.workers = max(1, min(concurrency, len(runs)))
        self.started = io_ops.monotonic()

    def progress(self) -> Progress:
        statuses = list(self.results.values())
        return Progress(
            self.total,
            statuses.count("succeeded"),
            statuses.count("failed"),
            statuses.count("blocked") + statuses.count("waiting") + statuses.count("parked"),
            statuses.count("interrupted"),
            len(self.assigned),
            io_ops.monotonic() - self.started,
        )

    def feed(self) -> None:
        while self.idle and self.waiting and not self.stop.signals and not self.over_budget:
            waiting = self.waiting.popleft()
            read = (None, ()) if isinstance(waiting, Task) else (waiting.seen, waiting.then)
            refused = self.ledger.take(
                waiting.run_id, force=self.resuming.force, seen=read[0], then=read[1]
            )
            if refused is not None:
                self.skipped.append(refused)
                continue
            task = (
                waiting
                if isinstance(waiting, Task)
                else task_for(self.batch, waiting, self.journal.run_inputs)
            )
            slot = self.idle.pop()
            self.assigned[slot] = task
            self.pool.send(slot, task)

    def _check_budget(self) -> None:
        cap = self.batch.max_cost
        if cap is None or self.over_budget:
            return
        if round(self.spent_before + sum(self.spent.values()), 9) >= cap:
            self.over_budget = True
            self.pool.over_budget(self.batch.batch_id)

    def _stop_children(self, run_id: str) -> None:
        """Stop the process groups a dead worker's run left, before it runs anywhere again."""
        host, groups = self.groups.pop(run_id, ("", ()))
        if host == _HOST:  # another machine's groups are its own worker's to stop
            for pgid in groups:
                io_ops.stop_group(pgid)
        if groups:
            self.dirty[run_id] = ()

    def lost(self, slot: Any, how: str) -> None:  # noqa: ANN401 - a slot of either pool
        """A worker died: stop what its run left, then resume the run on a new worker."""
        task = self.assigned.pop(slot, None)
        self.pool.forget(slot)
        if slot in self.idle:  # it died waiting for work: nothing to resume, one worker fewer
            self.idle.remove(slot)
        if not self.stop.signals:
            self._start_worker()
        if task is None:  # it ended between runs: stopping, told to stop, or idle
            return
        run_id = task.run_id
        self._stop_children(run_id)
        if self.stop.signals:  # killed by a second signal in the middle of its cleanup
            self.ledger.mark(run_id, "interrupted")
            self.results[run_id] = "interrupted"
            return
        self.losses[run_id] += 1
        again = self._resumed(task, how)
        if again is not None:
            self.waiting.appendleft(again)

    def _resumed(self, task: Task, how: str) -> Task | None:
        """Build the task that continues a lost run, or end the run (the second loss fails it)."""
        run_id = task.run_id
        record = self.journal.find(run_id)
        start = (
            record  # pruned from under the batch: nothing to resume
            if isinstance(record, str)
            else resume_run(
                self.journal,
                self.workflow,
                record,
                rerun_changed=self.resuming.rerun_changed,
                keep_changed=self.resuming.keep_changed,
                accept_drift=self.resuming.accept_drift,
            )
        )
        if isinstance(start, str):  # a finished step changed meanwhile, say
            error = PipelineError("", ErrorType.WORKER_LOST, f"its worker died ({how}); {start}")
            self._end(run_id, error)
            return None
        assert not isinstance(record, str)  # noqa: S101 - a record, since it has a start
        if start.resume_from is None:  # every step finished; only the run's end was not recorded
            self.ledger.mark(run_id, "succeeded")
            self.results[run_id] = "succeeded"
            return None
        step = start.resume_from
        losses = self.losses[run_id]
        if (
            losses > _LOSSES_TO_FAIL
        ):  # the run's cleanup, after its second loss, killed a worker too
            message = f"the worker running step {step!r} died a third time ({how}), in cleanup"
            self._end(run_id, PipelineError(step, ErrorType.WORKER_LOST, message))
            return None
        again = task_for(
            self.batch,
            BatchRun(0, run_id, record.inputs_json, record.options, start),
            self.journal.run_inputs,
        )
        if losses == 1:
            message = f"the worker running step {step!r} died ({how}); resumed on a new worker"
            self._record_loss(
                start.resume_from, run_id, PipelineError(step, ErrorType.WORKER_LOST, message)
            )
            return again
        message = f"the worker running step {step!r} died twice ({how}); not tried again"
        error = PipelineError(step, ErrorType.WORKER_LOST, message)
        return attrs.evolve(again, lost_json=encode_error(error))  # fails there; cleanup runs

    def _record_loss(self, step: str, run_id: str, error: PipelineError) -> None:
        names = [each.name for each in self.workflow.steps]
        index = names.index(step)
        event = AttemptFailed(run_id, step, index, len(names), 1, 1, error, False, 0.0, 0.0)
        self.ledger.apply(statements_for(event, "", {}), f"the lost attempt of run {run_id}")

    def _end(self, run_id: str, error: PipelineError) -> None:
        self.ledger.fail(run_id, error)
        self.results[run_id] = "failed"

    def handle(self, slot: Any, message: Message) -> None:  # noqa: ANN401 - as above
        kind, run_id = message[0], str(message[1])
        if kind == "lost":
            self.lost(slot, run_id)  # ("lost", how)
        elif kind == "journal":
            starts = len(message) > _ASKS
            what = f"the {'start of a step' if starts else 'step statements'} of run {run_id}"
            done = self.ledger.apply(message[2], what, starts=starts)  # type: ignore[arg-type] # statements, as sent
            if starts:  # the worker waits for this answer before its step starts
                self.pool.recorded(slot, run_id, None if done else self.ledger.stopping(run_id))
            self.spent[run_id] = float(message[3])  # type: ignore[arg-type] # a float, as sent
            self._check_budget()
        elif kind == "groups":
            host, groups = str(message[2]), tuple(cast("Sequence[int]", message[3]))
            self.groups[run_id] = (host, groups)
            self.dirty[run_id] = groups
        else:
            self._finish(slot, message)

    def _finish(self, slot: Any, message: Message) -> None:  # noqa: ANN401 - as above
        kind, run_id = message[0], str(message[1])
        task = self.assigned.pop(slot, None)
        self.groups.pop(run_id, None)
        self.dirty.pop(run_id, None)
        self.idle.append(slot)
        if kind == "failed":  # the workflow did not load in the worker
            self.ledger.fail(run_id, PipelineError("", ErrorType.INVALID_WORKFLOW, str(message[2])))
            self.results[run_id] = "failed"
            return
        _, _, status, error, statements, refused = message
        self.ledger.apply(statements, f"the end of run {run_id}")  # type: ignore[arg-type] # statements, as sent
        self.results[run_id] = str(status)
        for reason in refused:  # type: ignore[attr-defined] # a tuple of str, as sent
            OFFLINE.note(reason)
        if status == "waiting" and task is not None:
            self._notify(task, run_id, _error(None if error is None else str(error)))

    def _notify(self, task: Task, run_id: str, error: PipelineError | None) -> None:
        """Run the run's `--notify` command: it waits for approval (a failure is a warning)."""
        command = RunOptions.from_json(task.options_json).notify
        if command is None:
            return
        warning = notify(command, run_id, "" if error is None else error.message)
        if warning is not None:
            self.warnings.append(f"run {run_id}: {warning}")

    def _start_worker(self) -> bool:
        """Start a worker; tell whether it started (one that cannot leaves the runs queued).

        The local pool forks its workers from a forkserver: killed while it
        forks, the start reads an end of file. The runs not started stay
        `queued`, for `--resume`; the workers that started go on.
        """
        try:
            self.idle.append(self.pool.start())
        except (EOFError, OSError) as exc:
            why = str(exc) or type(exc).__name__
            self.unstarted = f"a worker process could not be started ({why})"
            return False
        return True

    def loop(self, on_progress: Callable[[Progress], None]) -> None:
        last = 0.0
        self._check_budget()  # a resumed batch may have spent its cap already
        if not self.over_budget:
            for _ in range(self.workers):
                if not self._start_worker():
                    break
        while self.waiting or self.assigned:
            self.feed()
            if (self.stop.signals or self.over_budget) and not self.assigned:
                break
            if self.unstarted is not None and not (self.assigned or self.idle):
                self.skipped.append(
                    f"{len(self.waiting)} run(s) not started: {self.unstarted}; "
                    f"adws batch --resume {self.batch.batch_id} runs them"
                )
                break
            for slot, message in self.pool.receive(_TICK):
                self.handle(slot, message)
            if io_ops.monotonic() - last >= 1.0:
                last = io_ops.monotonic()
                self._record_children()
                self._cancel_asked()
                on_progress(self.progress())
        self._record_children()

    def _cancel_asked(self) -> None:
        """Pass on, once a second, each cancel asked for a run in flight (`adws cancel`).

        The coordinator holds its runs, so it is who stops one: its worker
        stops the run as a first Ctrl-C would, failing its step `Cancelled`.
        A journal out of reach is asked again next time.
        """
        flying = {task.run_id: slot for slot, task in self.assigned.items()}
        asked = self.ledger.cancels(list(flying)) if flying else {}
        for run_id in asked.keys() - self.cancelled:
            cancel = asked[run_id]
            self.cancelled.add(run_id)
            self.pool.cancel(flying[run_id], (run_id, cancel.by, cancel.at, cancel.reason))

    def _record_children(self) -> None:
        """Journal the runs' child process groups that changed, once a second.

        The coordinator stops a dead worker's groups from what the worker
        reported, at once; the journal's copy is for a coordinator that died
        too (its workers kill their own groups then), so a second's delay
        costs nothing, where a write per process started would.
        """
        if self.dirty:
            dirty, self.dirty = self.dirty, {}
            self.ledger.children(dirty)


def run_batch(  # noqa: PLR0913 - the batch and how to run it, all keyword-only after the first
    journal: Journal,
    workflow: Workflow,
    batch: Batch,
    runs: Sequence[BatchRun],
    *,
    concurrency: int,
    on_progress: Callable[[Progress], None] = lambda _progress: None,
    pool: Pool | None = None,
    resuming: Resuming = Resuming(),
    journal_wait: float = JOURNAL_WAIT,
) -> tuple[BatchReport, int]:
    """Run `runs`, `concurrency` at a time; return the report and the first signal (0: none).

    `pool` is where they run: a `LocalPool` of worker processes by default,
    or a `DaskPool`. The journal is written here only. A worker that dies
    mid-run has its run's process groups stopped, then the run resumed on
    a new worker from the last step the journal holds; a run that loses
    its worker twice ends `WorkerLost` (after its cleanup). After a signal
    (or a journal write that failed) no new run starts, the runs in flight
    end `interrupted` after their cleanup, and runs never started stay
    `queued` for `--resume`; past `batch.max_cost` likewise no new run
    starts and the runs in flight fail at their next agent call.

    The journal first, as for `adws run`: a write that fails is tried again
    for `journal_wait` seconds (`--journal-wait`) before the batch halts,
    and a local pool's run starts each step only once its start is
    recorded, so a halted run stops at that step boundary `interrupted`
    and `--resume` runs no step twice.
    """
    coordinator = _Coordinator(
        journal,
        workflow,
        batch,
        runs,
        concurrency=concurrency,
        pool=pool or LocalPool(),
        resuming=resuming,
        journal_wait=journal_wait,
    )
    with coordinator.stop.installed():
        try:
            coordinator.loop(on_progress)
        finally:
            coordinator.pool.close(grace=1.0 if coordinator.stop.signals > 1 else 5.0)
    on_progress(coordinator.progress())
    report = _report(coordinator, journal, workflow, batch)
    coordinator.ledger.close(batch.batch_id, report.status, coordinator.results)
    report = attrs.evolve(report, unrecorded=coordinator.ledger.describe())
    return report, coordinator.stop.first


def _report(
    coordinator: _Coordinator, journal: Journal, workflow: Workflow, batch: Batch
) -> BatchReport:
    """Build the report from the journal, with what the coordinator knows it could not record."""
    listed = batch_runs(journal, batch.batch_id)  # reading needs no write: it works
    runs = tuple(
        RunResult(line, run_id, coordinator.results.get(run_id, status), _error(error))
        if coordinator.ledger.broken
        else RunResult(line, run_id, status, _error(error))
        for line, run_id, status, error in listed
    )
    return BatchReport(
        batch.batch_id,
        workflow.name,
        runs,
        interrupted=bool(coordinator.stop.first),
        unrecorded=coordinator.ledger.describe(),
        skipped=tuple(coordinator.skipped),
        over_budget=batch.max_cost if coordinator.over_budget else None,
        warnings=tuple(coordinator.warnings),
    )


def _error(text: str | None) -> PipelineError | None:
    return None if text is None else decode_error(text)
