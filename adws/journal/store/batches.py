"""A batch in the journal: its row, its queued runs, who holds it, and how it ended.

A batch is held by the process coordinating it (`adws batch`, or `adws
batch --resume`): its id and host are on the batch's row while it runs.
Holding is exclusive, like a run's claim: a second coordinator is refused
while the holder lives, and so is `adws resume` of one of the batch's runs
(`Journal.claim` asks `adws.journal.store.claims.holder_of`). The coordinator claims each run as it
hands it to a worker (`claim_batch_run`), so a run pruned from under it,
or taken by someone else, is not run.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING

from adws import io_ops
from adws._exceptions import RefusedError
from adws.journal.records.codec import encode_error
from adws.journal.records.holders import alive, here, started_here
from adws.journal.store.caps import refusing_runs
from adws.journal.store.claims import changed_since, holder_of

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from adws.engine.errors import PipelineError
    from adws.journal.records.holders import Seen
    from adws.journal.store.journal import Journal
    from adws.journal.store.schema import Statement

__all__ = [
    "batch_lines",
    "batch_runs",
    "batch_source",
    "batch_spent",
    "batch_status",
    "children_statement",
    "claim_batch",
    "claim_batch_run",
    "ended_statement",
    "failed_statement",
    "find_batch",
    "finish_batch",
    "live_batches",
    "mark_statement",
    "queue_batch",
]


def queue_batch(  # noqa: PLR0913 - the batch row and every run it queues
    journal: Journal,
    batch_id: str,
    workflow: str,
    source: str,
    *,
    runs: Iterable[tuple[int, str, str]],
    steps: Sequence[str],
    fingerprint: str,
    options: str | None = None,
    max_cost: float | None = None,
    options_for: Callable[[int], str | None] | None = None,
) -> list[tuple[int, str]]:
    """Record a batch, held by this process, and queue its runs, `(line, run_id, inputs)` each.

    The runs are read one at a time (a generator of them keeps memory flat
    however large the inputs file) and written in one transaction: all of
    them or, if reading one fails, none. Returns `(line, run_id)` of each.
    Queued runs have status `queued` until a worker starts them; a run
    that never started is started by `adws batch --resume`. `options` is
    the runs' encoded `RunOptions`, shared by every run of the batch;
    `max_cost` is the batch's cap (`--batch-max-cost`), kept for a resume.
    `options_for(line)`, when given, encodes each run's own options instead
    (`adws eval`: each variant's). A `--runs` cap with no room for all the
    runs refuses the batch (`RefusedError`, nothing written), checked with
    the caps' rows locked.
    """
    now = io_ops.utc_now()
    names = json.dumps(list(steps))
    queued: list[tuple[int, str]] = []
    given: list[str | None] = []
    with journal.transaction() as db:
        db.execute(f"SELECT name FROM caps ORDER BY name{db.locks_rows}")  # noqa: S608 - a fixed clause
        db.execute(
            "INSERT INTO batches (batch_id, workflow, source, total, status, started, pid, host,"
            " max_cost) VALUES (?, ?, ?, 0, 'running', ?, ?, ?, ?)",
            (batch_id, workflow, source, now, *here(), max_cost),
        )
        for line, run_id, inputs in runs:
            given.append(options if options_for is None else options_for(line))
            db.execute(
                "INSERT INTO runs (run_id, workflow, fingerprint, status, steps, inputs, started,"
                " batch_id, line, options) VALUES (?, ?, ?, 'queued', ?, '', ?, ?, ?, ?)",
                (
                    run_id,
                    workflow,
                    fingerprint,
                    names,
                    now,
                    batch_id,
                    line,
                    given[-1],
                ),
            )
            db.execute("INSERT INTO run_inputs (run_id, inputs) VALUES (?, ?)", (run_id, inputs))
            queued.append((line, run_id))
        # Checked with the caps' rows locked, before the batch is written: all its runs or none.
        full = refusing_runs(journal, workflow, given, dt.datetime.now(dt.UTC))
        if full is not None:
            msg = f"batch not started: {full}"
            raise RefusedError(msg)
        db.execute("UPDATE batches SET total = ? WHERE batch_id = ?", (len(queued), batch_id))
    return queued


def claim_batch(
    journal: Journal, batch_id: str, *, force: bool = False, max_cost: float | None = None
) -> str | None:
    """Take a batch for this process to coordinate, atomically; say who holds it otherwise.

    Of two `adws batch --resume B` started at once, exactly one gets it;
    one started while B's first coordinator still runs is refused too.
    `force` takes it anyway (the holder is known not to be running it).
    `max_cost` replaces the batch's recorded `--batch-max-cost`.
    """
    with journal.transaction() as db:
        holder = holder_of(db, batch_id)
        if holder is not None and not force:
            pid, host = holder
            return (
                f"batch {batch_id} is being run by process {pid} on {host}; "
                "pass --force if it is not"
            )
        db.execute(
            "UPDATE batches SET status = 'running', finished = NULL, pid = ?, host = ?,"
            " max_cost = COALESCE(?, max_cost) WHERE batch_id = ?",
            (*here(), max_cost, batch_id),
        )
    return None


def claim_batch_run(
    journal: Journal,
    run_id: str,
    *,
    force: bool = False,
    seen: Seen | None = None,
    then: Sequence[Statement] = (),
) -> str | None:
    """Take one run of the batch this process holds, as it is handed to a worker.

    Returns None when taken, else why not: its row is gone (pruned), it
    succeeded meanwhile, it changed since the batch's resume read it as
    `seen` (compare-and-set), or another live process runs it (`adws resume
    RUN --force`), unless `force` (`batch --resume --force`). A taken run is
    `running`, held by this process, with no child process recorded, and
    `then` (a new fingerprint baseline) is recorded in the same transaction.
    """
    with journal.transaction() as db:
        changed = None if seen is None else changed_since(db, run_id, seen)
        row = (
            None
            if changed
            else db.execute(
                "SELECT status, pid, host, holder_started FROM runs"  # noqa: S608 - a fixed clause
                f" WHERE run_id = ?{db.locks_rows}",
                (run_id,),
            ).fetchone()
        )
        if changed:
            return f"{changed}; it was not run"
        if row is None:
            return f"run {run_id} is no longer in the journal (pruned?); it was not run"
        status, pid, host, started = row
        if status == "succeeded":
            return f"run {run_id} succeeded meanwhile (resumed elsewhere); it was left as it is"
        if status == "cancelled":
            return f"run {run_id} was cancelled; it was not run"
        held = alive(pid, host, started) and (pid, host) != here()
        if status == "running" and held and not force:
            return f"run {run_id} is being run by process {pid} on {host}; it was left to it"
        db.execute(
            "UPDATE runs SET status = 'running', pid = ?, host = ?, children = NULL,"
            " holder_started = ? WHERE run_id = ?",
            (*here(), started_here(), run_id),
        )
        for sql, params in then:
            db.execute(sql, params)
    return None


def live_batches(journal: Journal) -> list[str]:
    """List the batches a live process is running: `adws runs --prune` leaves their runs alone."""
    rows = journal.query("SELECT batch_id, pid, host FROM batches WHERE status = 'running'")
    return [batch_id for batch_id, pid, host in rows if alive(pid, host)]


def finish_batch(journal: Journal, batch_id: str, status: str) -> None:
    """Record how a batch ended (`succeeded`, `failed`, `blocked`, `interrupted`)."""
    journal.apply([ended_statement(batch_id, status)])


def find_batch(journal: Journal, batch_id: str) -> tuple[str, str, int, float | None] | str:
    """Return a batch's `(batch_id, workflow, total, max_cost)` by id or prefix, or why not."""
    escaped = batch_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    rows = journal.query(
        "SELECT batch_id, workflow, total, max_cost FROM batches"
        " WHERE batch_id LIKE ? ESCAPE '\\' LIMIT 2",
        (escaped + "%",),
    )
    if len(rows) != 1:
        problem = "no batch" if not rows else "an ambiguous batch id"
        return f"{problem} {batch_id!r} in {journal.path}"
    found_id, workflow, total, max_cost = rows[0]
    return found_id, workflow, total, max_cost


def batch_status(journal: Journal, batch_id: str) -> str:
    """Return how a batch ended (`running` while it runs, or if its coordinator died)."""
    return str(journal.query("SELECT status FROM batches WHERE batch_id = ?", (batch_id,))[0][0])


def batch_runs(journal: Journal, batch_id: str) -> list[tuple[int, str, str, str | None]]:
    """List a batch's runs in line order: `(line, run_id, status, error JSON)`."""
    rows = journal.query(
        "SELECT line, run_id, status, error FROM runs WHERE batch_id = ? ORDER BY line",
        (batch_id,),
    )
    return [(line, run_id, status, error) for line, run_id, status, error in rows]


def batch_source(journal: Journal, batch_id: str) -> str:
    """Return what a batch was started from: its inputs file, or an evaluation's description."""
    rows = journal.query("SELECT source FROM batches WHERE batch_id = ?", (batch_id,))
    return str(rows[0][0] or "") if rows else ""


def batch_lines(journal: Journal, batch_id: str) -> dict[str, int | None]:
    """Map each run of a batch to its line in the batch's inputs (None: not recorded)."""
    rows = journal.query("SELECT run_id, line FROM runs WHERE batch_id = ?", (batch_id,))
    return {str(run_id): line for run_id, line in rows}


def batch_spent(journal: Journal, batch_id: str) -> float:
    """Return what the batch's runs have spent so far, in US dollars (unknown costs as 0).

    The coordinator's journal is writable, so migrated: its attempts record usage.
    """
    rows = journal.query(
        "SELECT SUM(a.cost_usd) FROM attempts AS a JOIN runs USING (run_id)"
        " WHERE runs.batch_id = ? AND a.step NOT LIKE '%[%'",
        (batch_id,),
    )
    return float(rows[0][0] or 0.0)


def children_statement(run_id: str, groups: Sequence[int]) -> Statement:
    """Record a run's live child process groups (none: cleared)."""
    children = json.dumps(list(groups)) if groups else None
    return "UPDATE runs SET children = ? WHERE run_id = ?", (children, run_id)


def mark_statement(run_id: str, status: str) -> Statement:
    """Set a run's status, and when it finished unless it had."""
    return (
        "UPDATE runs SET status = ?, finished = COALESCE(finished, ?) WHERE run_id = ?",
        (status, io_ops.utc_now(), run_id),
    )


def failed_statement(run_id: str, error: PipelineError) -> Statement:
    """End a run `failed` with `error`."""
    sql = (
        "UPDATE runs SET status = 'failed', finished = ?, error = ?, failed_step = ?"
        " WHERE run_id = ?"
    )
    return sql, (io_ops.utc_now(), encode_error(error), error.step_name or None, run_id)


def ended_statement(batch_id: str, status: str) -> Statement:
    """Record how a batch ended, and when."""
    return (
        "UPDATE batches SET status = ?, finished = ? WHERE batch_id = ?",
        (status, io_ops.utc_now(), batch_id),
    )
