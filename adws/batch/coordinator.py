"""The coordinator: queue a batch's runs, feed workers, write the journal, resume the lost.

The coordinator holds no run's context: a run is a `Task` of text while it
waits, and only its status once it ends, so memory stays flat however many
runs a batch has.
"""

from __future__ import annotations

import json
import uuid
from collections import deque
from typing import TYPE_CHECKING, Any, Final, Protocol, final

import attrs

from adws import io_ops
from adws.batch.local import LocalPool
from adws.batch.tasks import Message, Task
from adws.errors import PipelineError
from adws.journal import resume_point, stored_branches
from adws.journal.batches import batch_runs, finish_batch, queue_batch
from adws.journal.codec import decode_error, encode_context, encode_outputs

if TYPE_CHECKING:
    import contextlib
    from collections.abc import Callable, Mapping, Sequence

    from adws.journal import Journal
    from adws.step import Workflow

__all__ = ["BatchReport", "Pool", "Progress", "RunResult", "plan_batch", "run_batch"]

_TICK: Final = 0.2


@final
@attrs.frozen
class RunResult:
    """How one run of a batch ended."""

    line: int
    run_id: str
    status: str
    error: PipelineError | None

    def to_dict(self) -> dict[str, object]:
        """Return the `--json` record of this run."""
        return {
            "line": self.line,
            "run_id": self.run_id,
            "status": self.status,
            "error": None if self.error is None else self.error.to_dict(),
        }


@final
@attrs.frozen
class Progress:
    """Counts of a batch in flight, for the progress line."""

    total: int
    done: int
    failed: int
    blocked: int
    interrupted: int
    running: int
    seconds: float

    @property
    def finished(self) -> int:
        """Runs that ended, however they ended."""
        return self.done + self.failed + self.blocked + self.interrupted

    def line(self, batch_id: str) -> str:
        """Render the progress line: done, failed, blocked, running, runs per minute, ETA.

        >>> Progress(10, 4, 1, 0, 0, 2, 30.0).line("b1")
        'batch b1: 4/10 done, 1 failed, 0 blocked, 2 running · 10 runs/min · ETA 0m30s'
        """
        rate = self.finished / self.seconds * 60 if self.seconds > 0 else 0.0
        left = self.total - self.finished
        eta = (
            "?" if rate == 0 else f"{int(left / rate * 60) // 60}m{int(left / rate * 60) % 60:02d}s"
        )
        return (
            f"batch {batch_id}: {self.done}/{self.total} done, {self.failed} failed, "
            f"{self.blocked} blocked, {self.running} running · {rate:.0f} runs/min · ETA {eta}"
        )


@final
@attrs.frozen
class BatchReport:
    """A finished (or interrupted) batch: its id, its runs, and its overall status."""

    batch_id: str
    workflow: str
    runs: tuple[RunResult, ...]
    interrupted: bool = False

    def counts(self) -> dict[str, int]:
        """Count runs by status."""
        counted: dict[str, int] = {}
        for run in self.runs:
            counted[run.status] = counted.get(run.status, 0) + 1
        return counted

    @property
    def status(self) -> str:
        """`interrupted`, else `failed` if any run failed, else `blocked` if any, else done."""
        counts = self.counts()
        if self.interrupted:
            return "interrupted"
        for status in ("failed", "blocked"):
            if counts.get(status):
                return status
        return "succeeded" if set(counts) <= {"succeeded"} else "failed"

    def to_dict(self) -> dict[str, object]:
        """Return the `--json` object: batch id, counts and one record per run."""
        return {
            "batch_id": self.batch_id,
            "workflow": self.workflow,
            "status": self.status,
            "counts": self.counts(),
            "runs": [run.to_dict() for run in self.runs],
        }


def new_batch_id() -> str:
    """Return a fresh, short batch id."""
    return "b" + uuid.uuid4().hex[:11]


def resume_task(
    journal: Journal, workflow: Workflow, run_id: str, workflows_dir: str
) -> Task | None:
    """Build the task that continues `run_id` from its last finished step.

    A queued run starts from the beginning. A run whose every step finished
    (its worker died as it ended) is marked `succeeded` and needs no task.
    """
    found = journal.find(run_id)
    assert not isinstance(found, str)  # noqa: S101 - the batch's own run
    if found.status == "queued":
        return Task(run_id, workflow.name, workflows_dir, found.inputs_json)
    names = [step.name for step in workflow.steps]
    attempts = journal.attempts(run_id)
    first, ctx = resume_point(names, attempts, found.inputs())
    if first is None:  # every step finished; only the run's end was not recorded
        journal.mark(run_id, "succeeded")
        return None
    reuse = {
        path: encode_outputs(outputs) for path, outputs in stored_branches(attempts, first).items()
    }
    return Task(run_id, workflow.name, workflows_dir, encode_context(ctx), first, json.dumps(reuse))


def plan_batch(
    journal: Journal,
    workflow: Workflow,
    lines: Sequence[tuple[int, Mapping[str, object]]],
    *,
    source: str,
    workflows_dir: str,
) -> tuple[str, list[Task]]:
    """Record a new batch with every run queued; return its id and the runs' tasks."""
    from adws.context import WorkflowContext  # noqa: PLC0415 - as above
    from adws.executor import new_run_id  # noqa: PLC0415 - the executor is loaded already
    from adws.journal.fingerprint import fingerprint  # noqa: PLC0415 - as above

    batch_id = new_batch_id()
    queued = [
        (line, new_run_id(), encode_context(WorkflowContext(inputs=inputs)))
        for line, inputs in lines
    ]
    queue_batch(
        journal,
        batch_id,
        workflow.name,
        source,
        runs=queued,
        steps=[step.name for step in workflow.steps],
        fingerprint=fingerprint(workflow),
    )
    tasks = [Task(run_id, workflow.name, workflows_dir, inputs) for _, run_id, inputs in queued]
    return batch_id, tasks


class Pool(Protocol):
    """Where a batch's runs execute: `LocalPool` or `DaskPool`, one slot per run in flight."""

    def start(self) -> Any:  # noqa: ANN401 - a pipe for the local pool, a number for Dask
        """Open a slot that can take a task."""

    def send(self, slot: Any, task: Task) -> None:  # noqa: ANN401 - as above
        """Give the slot a task."""

    def receive(self, timeout: float) -> list[tuple[Any, Message | None]]:
        """Return the messages waiting (up to `timeout`); None for a slot whose worker died."""

    def forget(self, slot: Any) -> None:  # noqa: ANN401 - as above
        """Drop a slot whose worker died."""

    def signal_all(self, signum: int) -> None:
        """Pass a signal on: the first stops every run after its cleanup, a second kills."""

    def close(self, grace: float = 5.0) -> None:
        """Stop everything this pool started."""


@final
@final
class _Stop:
    """The coordinator's signal handler: the first signal stops, a second one kills."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self.signals = 0
        self.first = 0

    def __call__(self, signum: int, _frame: object) -> None:
        self.signals += 1
        self.first = self.first or signum
        self.pool.signal_all(signum)  # the workers stop their runs (then, the second time, die)

    def installed(self) -> contextlib.AbstractContextManager[None]:
        return io_ops.handling_signals(self)


@final
class _Coordinator:
    """The state of one batch in flight: who runs what, and what ended how."""

    def __init__(
        self,
        journal: Journal,
        workflow: Workflow,
        tasks: Sequence[Task],
        *,
        concurrency: int,
        pool: Pool,
    ) -> None:
        self.journal, self.workflow = journal, workflow
        self.pool = pool
        self.stop = _Stop(self.pool)
        self.waiting = deque(tasks)
        self.assigned: dict[Any, str] = {}
        self.idle: list[Any] = []
        self.results: dict[str, str] = {}
        self.total = len(tasks)
        self.workers = max(1, min(concurrency, len(tasks)))
        self.workflows_dir = tasks[0].workflows_dir if tasks else ""
        self.started = io_ops.monotonic()

    def progress(self) -> Progress:
        statuses = list(self.results.values())
        return Progress(
            self.total,
            statuses.count("succeeded"),
            statuses.count("failed"),
            statuses.count("blocked"),
            statuses.count("interrupted"),
            len(self.assigned),
            io_ops.monotonic() - self.started,
        )

    def feed(self) -> None:
        while self.idle and self.waiting and not self.stop.signals:
            conn = self.idle.pop()
            task = self.waiting.popleft()
            self.assigned[conn] = task.run_id
            self.pool.send(conn, task)

    def lost(self, conn: Any) -> None:  # noqa: ANN401 - a slot of either pool
        """A worker died: resume its run on a new worker (or, when stopping, mark it)."""
        run_id = self.assigned.pop(conn, None)
        self.pool.forget(conn)
        if conn in self.idle:  # it died waiting for work: nothing to resume, one worker fewer
            self.idle.remove(conn)
            self.idle.append(self.pool.start())
        if run_id is None:  # it ended between runs: stopping, told to stop, or idle
            return
        if self.stop.signals:  # killed by a second signal in the middle of its cleanup
            self.journal.mark(run_id, "interrupted")
            self.results[run_id] = "interrupted"
            return
        task = resume_task(self.journal, self.workflow, run_id, self.workflows_dir)
        self.waiting.extendleft(task for task in (task,) if task is not None)
        self.idle.append(self.pool.start())

    def handle(self, conn: Any, message: Message) -> None:  # noqa: ANN401 - as above
        kind = message[0]
        if kind == "journal":
            self.journal.apply(message[2])  # type: ignore[arg-type] # statements, as sent
            return
        run_id = str(message[1])
        self.assigned.pop(conn, None)
        status = "failed" if kind == "failed" else str(message[2])
        if kind == "failed":  # the workflow did not load in the worker
            self.journal.mark(run_id, "failed")
        self.results[run_id] = status
        self.idle.append(conn)

    def loop(self, on_progress: Callable[[Progress], None]) -> None:
        last = 0.0
        self.idle.extend(self.pool.start() for _ in range(self.workers))
        while self.waiting or self.assigned:
            self.feed()
            if self.stop.signals and not self.assigned:
                break
            for conn, message in self.pool.receive(_TICK):
                if message is None:
                    self.lost(conn)
                else:
                    self.handle(conn, message)
            if io_ops.monotonic() - last >= 1.0:
                last = io_ops.monotonic()
                on_progress(self.progress())


def run_batch(  # noqa: PLR0913 - the batch and how to run it, all keyword-only after the first
    journal: Journal,
    workflow: Workflow,
    tasks: Sequence[Task],
    *,
    batch_id: str,
    concurrency: int,
    on_progress: Callable[[Progress], None] = lambda _progress: None,
    pool: Pool | None = None,
) -> tuple[BatchReport, int]:
    """Run `tasks`, `concurrency` at a time; return the report and the first signal (0: none).

    `pool` is where they run: a `LocalPool` of worker processes by default,
    or a `DaskPool`.

    The journal is written here only. A worker that dies mid-run has its run
    resumed on a new worker from the last step the journal holds; after a
    signal no new run starts, the runs in flight end `interrupted` after
    their cleanup, and runs never started stay `queued` for `--resume`.
    """
    coordinator = _Coordinator(
        journal, workflow, tasks, concurrency=concurrency, pool=pool or LocalPool()
    )
    with coordinator.stop.installed():
        try:
            coordinator.loop(on_progress)
        finally:
            coordinator.pool.close(grace=1.0 if coordinator.stop.signals > 1 else 5.0)
    on_progress(coordinator.progress())
    runs = tuple(
        RunResult(line, run_id, status, _error(error))
        for line, run_id, status, error in batch_runs(journal, batch_id)
    )
    batch = BatchReport(batch_id, workflow.name, runs, interrupted=bool(coordinator.stop.signals))
    finish_batch(journal, batch_id, batch.status)
    return batch, coordinator.stop.first


def _error(text: str | None) -> PipelineError | None:
    return None if text is None else decode_error(text)
