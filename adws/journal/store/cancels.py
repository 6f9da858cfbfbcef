"""A cancel in the journal: the request a run's holder acts on, and the end of a run not running.

`adws cancel RUN` writes who asked, when and why on the run's row
(`runs.cancel`). A running run's holder (the `adws run` process, a
worker's held run, a batch's coordinator) reads it (`requested`) within a
few seconds and stops the run. A run nobody holds ends at once: a queued
one (`end_queued`, compare-and-set on its status, so of a cancel and a
worker taking it exactly one acts) or one that ended resumable (`end`).
A waiting or parked run is claimed like a decision and continued only to
run its cleanup (see `adws.runs`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from adws import io_ops
from adws.journal.records.codec import encode_error
from adws.journal.records.runs import CancelRecord

if TYPE_CHECKING:
    from collections.abc import Sequence

    from adws.engine.errors import PipelineError
    from adws.journal.store.journal import Journal
    from adws.journal.store.schema import Guarded, Statement

__all__ = [
    "end",
    "end_queued",
    "kept",
    "request",
    "request_statement",
    "requested",
    "requests",
]

_REQUEST: Final = (
    "UPDATE runs SET cancel = ? WHERE run_id = ? AND status = 'running' AND cancel IS NULL"
)
_END: Final = (
    "UPDATE runs SET status = 'cancelled', finished = COALESCE(finished, ?), error = ?,"
    " failed_step = COALESCE(failed_step, ?), cancel = ?, pid = NULL WHERE run_id = ?"
)


def request_statement(run_id: str, cancel: CancelRecord) -> Statement:
    """Ask the holder of a running run to cancel it (changes no row unless it still runs)."""
    return _REQUEST, (cancel.to_json(), run_id)


def kept(run_id: str, cancel: CancelRecord) -> Guarded:
    """Keep who cancels a run on its row, in the claim that ends it (its cleanup runs next)."""
    return ("UPDATE runs SET cancel = ? WHERE run_id = ?", (cancel.to_json(), run_id)), None


def request(journal: Journal, run_id: str, cancel: CancelRecord) -> bool:
    """Ask the holder of a running run to cancel it; tell whether the run was still running.

    A second request changes nothing: the first one stands.
    """
    with journal.transaction() as db:
        sql, params = request_statement(run_id, cancel)
        return bool(db.execute(sql, params).rowcount)


def requested(journal: Journal, run_id: str) -> CancelRecord | None:
    """Return the cancel asked for a run (None: none).

    Asked by the holder of a run, whose journal is written, so migrated.
    """
    rows = journal.query("SELECT cancel FROM runs WHERE run_id = ?", (run_id,))
    return CancelRecord.from_json(rows[0][0]) if rows else None


def requests(journal: Journal, run_ids: Sequence[str]) -> dict[str, CancelRecord]:
    """Return the cancels asked for any of `run_ids` (a batch's runs in flight; not none).

    Asked by a batch's coordinator, whose journal is written, so migrated.
    """
    marks = ", ".join("?" * len(run_ids))
    rows = journal.query(
        f"SELECT run_id, cancel FROM runs WHERE cancel IS NOT NULL AND run_id IN ({marks})",  # noqa: S608 - placeholders only
        tuple(run_ids),
    )
    found = {str(run_id): CancelRecord.from_json(text) for run_id, text in rows}
    return {run_id: cancel for run_id, cancel in found.items() if cancel is not None}


def end_queued(run_id: str, cancel: CancelRecord, error: PipelineError) -> Guarded:
    """End a queued run cancelled, in a claim: refused when it is no longer queued."""
    sql = _END + " AND status = 'queued'"
    params = (io_ops.utc_now(), encode_error(error), None, cancel.to_json(), run_id)
    return (sql, params), f"run {run_id} left the queue meanwhile; look again: adws status {run_id}"


def end(run_id: str, cancel: CancelRecord, error: PipelineError | None) -> Statement:
    """End a run cancelled: its status, when, who and why; its error says so too.

    `error` is the run's own when it ended already (a failure it keeps),
    else the `Cancelled` one.
    """
    step = None if error is None else error.step_name or None
    return _END, (io_ops.utc_now(), encode_error(error), step, cancel.to_json(), run_id)
