"""Where each run of a batch starts again: `adws batch --resume`, and a run whose worker died.

Both go through `prepare_resume`, the one resume path `adws resume` uses:
a finished step that changed is refused (unless `rerun_changed` or
`force`), the run's earlier spend counts against its budget, its
`rerun_on_resume` steps run again, the branches a parallel step finished
are kept, and the options it was started with are used again (with the
ones given to the resume over them). A run never started starts afresh.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, final

import attrs

from adws import io_ops
from adws.engine.context import WorkflowContext
from adws.engine.executor import new_run_id
from adws.journal.identity.fingerprint import fingerprint
from adws.journal.records.codec import encode_context
from adws.journal.records.holders import Seen  # attrs resolves the annotations at run time
from adws.journal.records.options import RunOptions  # as above
from adws.journal.store.batches import batch_runs, claim_batch, claim_batch_run, queue_batch
from adws.journal.store.schema import Statement  # as above
from adws.journal.store.workspaces import approvals_of, worktrees_of
from adws.runs.resume import ResumeStart, baseline, prepare_resume

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from adws.engine.step import Workflow
    from adws.journal.records.runs import RunRecord
    from adws.journal.store.journal import Journal

__all__ = [
    "BatchRun",
    "hold",
    "new_batch_id",
    "queue_runs",
    "resume_batch",
    "resume_run",
    "take",
]


@final
@attrs.frozen
class BatchRun:
    """One run of a batch to hand to a worker, and where it starts."""

    line: int
    run_id: str
    inputs_json: str | None
    """The run's inputs as recorded: where a queued run starts (None: read them when it does)."""
    options: RunOptions
    start: ResumeStart | None = None
    """Where a run that ran before continues (None: it never started)."""
    seen: Seen | None = None
    """What the batch's resume read of the run: its claim compares it (None: not read)."""
    then: tuple[Statement, ...] = ()
    """What the run's claim records with it (`--keep-changed`: the new fingerprint baseline)."""


def new_batch_id() -> str:
    """Return a fresh, short batch id."""
    return "b" + uuid.uuid4().hex[:11]


def queue_runs(  # noqa: PLR0913 - the batch, its runs, and how they run
    journal: Journal,
    workflow: Workflow,
    lines: Iterable[tuple[int, Mapping[str, object]]],
    *,
    source: str,
    options: RunOptions,
    max_cost: float | None = None,
    batch_id: str | None = None,
) -> tuple[str, list[BatchRun]]:
    """Record a new batch, held by this process, with every run queued; return its id and runs.

    `batch_id` is the id to give it (a fresh one by default).
    """
    batch_id = batch_id or new_batch_id()
    queued = (
        (line, new_run_id(), encode_context(WorkflowContext(inputs=inputs)))
        for line, inputs in lines
    )
    written = queue_batch(
        journal,
        batch_id,
        workflow.name,
        source,
        runs=queued,
        steps=[step.name for step in workflow.steps],
        fingerprint=fingerprint(workflow),
        options=options.to_json(),
        max_cost=max_cost,
    )
    # The inputs stay in the journal until a worker takes the run: memory stays flat.
    return batch_id, [BatchRun(line, run_id, None, options) for line, run_id in written]


def resume_run(  # noqa: PLR0913 - the run, and every way a resume can be asked for
    journal: Journal,
    workflow: Workflow,
    record: RunRecord,
    *,
    rerun_changed: bool = False,
    keep_changed: bool = False,
    accept_drift: bool = False,
) -> ResumeStart | str:
    """Say where a run of a batch continues, or why it may not (see `prepare_resume`)."""
    attempts = journal.attempts(record.run_id)
    return prepare_resume(
        workflow,
        record,
        attempts,
        rerun_changed=rerun_changed,
        keep_changed=keep_changed,
        accept_drift=accept_drift,
        worktrees=worktrees_of(journal, record.run_id),
        approvals=approvals_of(journal, record.run_id),
    )


def _children(record: RunRecord, *, force: bool) -> str | None:
    """Refuse a run whose recorded child process still runs; `force` stops it first."""
    alive = record.live_children()
    if not alive or (record.status == "running" and not record.stale):
        return None
    groups = ", ".join(str(pgid) for pgid in alive)
    if not force:
        return (
            f"run {record.run_id} left child process group {groups} running; "
            "pass --force to stop it and resume"
        )
    for pgid in alive:
        io_ops.stop_group(pgid)
    return None


def _held(record: RunRecord) -> str | None:
    if record.status != "running" or record.stale or record.pid is None:
        return None
    return f"run {record.run_id} is being run by process {record.pid} on {record.host}"


def resume_batch(  # noqa: PLR0913 - the batch, and every way a resume can be asked for
    journal: Journal,
    workflow: Workflow,
    batch_id: str,
    given: RunOptions,
    *,
    rerun_changed: bool = False,
    keep_changed: bool = False,
    accept_drift: bool = False,
    force: bool = False,
) -> list[BatchRun] | str:
    """List the runs of a batch that did not succeed, each with where it starts, or why not.

    A cancelled run stays cancelled. A run is refused (and with it the
    resume) when a finished step of it changed (unless `rerun_changed`, or
    `keep_changed`, which keeps its outputs and makes today's definition the
    recorded one when the run is
    claimed), when a kept worktree of it changed (unless `accept_drift`),
    when a child process it left still runs, or when a live process other
    than a dead coordinator holds it (`force` stops the child and takes the
    run over). A run whose every step succeeded, though its end was not
    recorded, is marked `succeeded` and left out; so is a parked run whose
    time has not come (it stays parked: `adws worker`, or a later resume,
    continues it once due). Each run carries what was read of it
    (`BatchRun.seen`): its claim refuses a run that changed since.
    """
    runs: list[BatchRun] = []
    now = io_ops.wall_clock()
    for line, run_id, status, _ in batch_runs(journal, batch_id):
        if status in {"succeeded", "cancelled"}:  # done, or ended on a person's word
            continue
        record = journal.find(run_id)
        assert not isinstance(record, str)  # noqa: S101 - listed just now, under its full id
        if status == "parked" and not record.due(now):
            continue
        options = record.options.merged(given)[0]
        if status == "queued":
            runs.append(BatchRun(line, run_id, record.inputs_json, options, seen=record.seen))
            continue
        refused = None if force else _held(record)
        refused = refused or _children(record, force=force)
        start = refused or resume_run(
            journal,
            workflow,
            record,
            rerun_changed=rerun_changed,
            keep_changed=keep_changed,
            accept_drift=accept_drift,
        )
        if isinstance(start, str):
            return f"line {line}: {start}"
        if start.resume_from is None:  # every step finished; only the run's end was not recorded
            journal.mark(run_id, "succeeded")
            continue
        then = tuple(sql for sql, _ in baseline(run_id, start)) if keep_changed else ()
        runs.append(BatchRun(line, run_id, record.inputs_json, options, start, record.seen, then))
    return runs


def hold(
    journal: Journal, batch_id: str, *, force: bool = False, max_cost: float | None = None
) -> str | None:
    """Take a batch for this process to coordinate, atomically; say who holds it otherwise.

    Of two `adws batch --resume B` started at once exactly one gets it (see
    `adws.journal.store.batches.claim_batch`).
    """
    return claim_batch(journal, batch_id, force=force, max_cost=max_cost)


def take(
    journal: Journal,
    run_id: str,
    *,
    force: bool = False,
    seen: Seen | None = None,
    then: Sequence[Statement] = (),
) -> str | None:
    """Take one run of the batch this process holds, as it is handed to a worker; say why not.

    Compare-and-set against what the batch's resume read (`seen`): a run
    that changed since, was cancelled, or that another live process runs,
    is left alone (see `adws.journal.store.batches.claim_batch_run`).
    """
    return claim_batch_run(journal, run_id, force=force, seen=seen, then=then)
