"""A team's queue in the journal: submitted runs, the runs due on a host, workers' heartbeats.

`adws submit` queues a run (status `queued`, no host); an `adws worker`
takes one at a time with `take_queued` (`FOR UPDATE SKIP LOCKED` on a
server, so workers on several hosts split the queue; `BEGIN IMMEDIATE` on
SQLite), and finds with `due_runs` the runs of its host it should continue:
parked runs whose time came, and waiting runs whose question was decided
on another host; and with `orphans` those nobody runs any more: interrupted
ones, and those whose recorded holder died; `next_wake` says when the next
parked run of a host may go on (a worker sleeps until then, not a poll).
Each worker writes a heartbeat (`beat`); `workers` lists them, each with
whether it is live.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Final

from adws import io_ops
from adws.journal.records.holders import alive, here, started_here
from adws.journal.records.workers import WorkerRecord
from adws.journal.store.caps import holding

if TYPE_CHECKING:
    from collections.abc import Sequence

    from adws.journal.store.journal import Journal
    from adws.journal.store.schema import Statement

__all__ = [
    "beat",
    "due_runs",
    "leave",
    "next_wake",
    "orphans",
    "prune_workers",
    "queued",
    "take_queued",
    "workers",
]


_QUEUE: Final = (
    "INSERT INTO runs (run_id, workflow, fingerprint, status, steps, inputs, started, options)"
    " VALUES (?, ?, ?, 'queued', ?, '', ?, ?)"
)


def queued(  # noqa: PLR0913 - the run's row: what it runs, with what, and how
    run_id: str,
    workflow: str,
    *,
    fingerprint: str,
    steps: Sequence[str],
    inputs: str,
    options: str | None,
) -> list[Statement]:
    """Return the statements that queue a run (for `submit`, or a ticket's claim)."""
    row = (run_id, workflow, fingerprint, json.dumps(list(steps)), io_ops.utc_now(), options)
    return [
        (_QUEUE, row),
        ("INSERT INTO run_inputs (run_id, inputs) VALUES (?, ?)", (run_id, inputs)),
    ]


_HOLD: Final = (
    "UPDATE runs SET status = 'running', pid = ?, host = ?, holder_started = ? WHERE run_id = ?"
)


def held_row(  # noqa: PLR0913 - the run's row: what it runs, with what, and how
    run_id: str,
    workflow: str,
    *,
    fingerprint: str,
    steps: Sequence[str],
    inputs: str,
    options: str | None,
) -> list[Statement]:
    """Return the statements that write a run starting in this process: queued, then held.

    `adws run` writes them with the `--runs` caps' check (`caps.start_within`),
    so two runs starting at once cannot both pass a cap with room for one;
    the run's start then updates the row. Held `running` from the start, no
    worker takes it.
    """
    row = queued(
        run_id, workflow, fingerprint=fingerprint, steps=steps, inputs=inputs, options=options
    )
    return [*row, (_HOLD, (*here(), started_here(), run_id))]


def take_queued(journal: Journal) -> str | None:
    """Take the oldest queued run (not a batch's) for this process; None when none is left.

    The run is recorded `running`, held by this process on this host, in
    the transaction that read it: of several workers, exactly one takes it.
    A run a `--runs` cap has no room for is left queued (the next one may
    fit another cap, or none): the caps' rows are locked first, so two
    workers cannot both take a run into the last room.
    """
    now = dt.datetime.now(dt.UTC)
    with journal.transaction() as db:
        db.execute(f"SELECT name FROM caps ORDER BY name{db.locks_rows}")  # noqa: S608 - a fixed clause
        rows = db.execute(
            "SELECT run_id, workflow, options FROM runs"
            " WHERE status = 'queued' AND batch_id IS NULL ORDER BY started, rowid"
        ).fetchall()
        for run_id, workflow, options in rows:
            if holding(journal, str(workflow), options, now) is not None:
                continue
            mine = db.execute(  # another worker may hold it meanwhile (PostgreSQL)
                f"SELECT run_id FROM runs WHERE run_id = ? AND status = 'queued'{db.skips_locked}",  # noqa: S608 - a fixed clause
                (run_id,),
            ).fetchone()
            if mine is None:
                continue
            db.execute(
                "UPDATE runs SET status = 'running', pid = ?, host = ?, holder_started = ?"
                " WHERE run_id = ?",
                (*here(), started_here(), run_id),
            )
            return str(run_id)
    return None


_DUE: Final = (
    "SELECT run_id, status FROM runs WHERE host = ? AND ("
    "(status = 'parked' AND (wake_at IS NULL OR wake_at <= ?))"
    " OR (status IN ('waiting', 'parked') AND cancel IS NOT NULL)"
    " OR (status = 'waiting' AND EXISTS (SELECT 1 FROM approvals AS a"
    " WHERE a.run_id = runs.run_id AND a.verdict IS NOT NULL"
    " AND a.id = (SELECT MAX(b.id) FROM approvals AS b WHERE b.run_id = runs.run_id))))"
    " ORDER BY started, rowid"
)


def due_runs(journal: Journal, host: str, now: float) -> list[tuple[str, str]]:
    """List `(run_id, status)` of the runs of `host` to continue now, oldest first.

    Parked runs whose time has come, waiting runs whose last question has
    a decision (given on another host: one given here continues at once),
    and waiting or parked runs cancelled on another host (their cleanup
    steps run here, where their worktrees are).
    """
    return [(str(run_id), str(status)) for run_id, status in journal.query(_DUE, (host, now))]


_WAKE: Final = "SELECT MIN(wake_at) FROM runs WHERE host = ? AND status = 'parked' AND wake_at > ?"


def next_wake(journal: Journal, host: str, now: float) -> float | None:
    """Return the nearest `wake_at` after `now` of a parked run of `host` (None: no such run).

    A parked run already due is left out: it is `due_runs`'s (or a batch's),
    not a time to wait for; so is a time that is not a number (a forged row).
    """
    [(found,)] = journal.query(_WAKE, (host, now))
    try:
        return float(found)
    except (TypeError, ValueError):
        return None


_ORPHANS: Final = (
    "SELECT run_id, status, pid, holder_started FROM runs WHERE host = ? AND batch_id IS NULL"
    " AND status IN ('interrupted', 'running') ORDER BY started, rowid"
)


def orphans(journal: Journal, host: str) -> list[tuple[str, str]]:
    """List `(run_id, status)` of the runs of `host` that nobody runs, oldest first.

    Runs `interrupted` (a signal, a journal out of reach, a held run that
    could not start), and runs `running` whose recorded holder is dead on
    this host (a worker killed after its claim, a held run killed; its
    pid gone, or taken by a process that started later: see
    `adws.journal.records.holders.alive`). A
    batch's runs are left to `adws batch --resume`, which knows the batch.
    """
    found = journal.query(_ORPHANS, (host,))
    return [
        (str(run_id), str(status))
        for run_id, status, pid, started in found
        if status == "interrupted" or not alive(pid, host, started)
    ]


def beat(journal: Journal, worker: WorkerRecord) -> None:
    """Write a worker's heartbeat: when it beat, and the runs it holds."""
    runs = json.dumps(list(worker.runs))
    with journal.transaction() as db:
        changed = db.execute(
            "UPDATE workers SET beat = ?, runs = ? WHERE worker_id = ?",
            (worker.beat, runs, worker.worker_id),
        ).rowcount
        if not changed:
            db.execute(
                "INSERT INTO workers (worker_id, host, pid, since, beat, poll, runs)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    worker.worker_id,
                    worker.host,
                    worker.pid,
                    worker.since,
                    worker.beat,
                    worker.poll,
                    runs,
                ),
            )


def leave(journal: Journal, worker_id: str) -> None:
    """Remove a worker's heartbeat as it stops (one killed leaves its row, no longer live)."""
    journal.write("DELETE FROM workers WHERE worker_id = ?", (worker_id,))


def prune_workers(journal: Journal, now: float) -> list[str]:
    """Remove the heartbeats of workers that are no longer live (a killed one leaves its row).

    A row is removed only if it has not beat since it was read: a worker
    that was only slow keeps its row, and one whose row went writes it
    again at its next beat. Returns the ids removed.
    """
    gone = [worker for worker in workers(journal) if not worker.live(now)]
    for worker in gone:
        journal.write(
            "DELETE FROM workers WHERE worker_id = ? AND beat = ?", (worker.worker_id, worker.beat)
        )
    return [worker.worker_id for worker in gone]


def workers(journal: Journal) -> list[WorkerRecord]:
    """List every worker whose heartbeat the journal holds, the longest running first.

    A row whose pid or times are not numbers (forged) is left out: it names no live worker.
    """
    if not journal.has_table("workers"):  # a journal read, never migrated
        return []
    rows = journal.query(
        "SELECT worker_id, host, pid, since, beat, poll, runs FROM workers ORDER BY since, rowid"
    )
    found = []
    for worker_id, host, pid, since, at, poll, runs in rows:
        try:
            numbers = (int(pid), float(at), float(poll))
        except (TypeError, ValueError):
            continue
        found.append(
            WorkerRecord(
                str(worker_id), str(host), numbers[0], str(since), *numbers[1:], _runs(runs)
            )
        )
    return found


def _runs(text: object) -> tuple[str, ...]:
    """Read the runs a heartbeat names (a forged value names none).

    >>> _runs('["r1", "r2"]'), _runs("{"), _runs("[1]")
    (('r1', 'r2'), (), ())
    """
    try:
        found = json.loads(str(text))
    except ValueError:
        return ()
    if not isinstance(found, list) or not all(isinstance(item, str) for item in found):
        return ()
    return tuple(found)
