"""Prune the journal: delete finished runs, and everything only they held, then vacuum."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from adws.journal.store.batches import live_batches

if TYPE_CHECKING:
    from adws.journal.store.journal import Journal

__all__ = ["prune"]


def prune(
    journal: Journal, *, older_than_days: float | None = None, keep: int | None = None
) -> int:
    """Delete finished runs older than `older_than_days`, or all but the newest `keep`.

    Runs still `running` or `queued` are never deleted, nor any run of a
    batch a live process is running (it may resume them); a run's agent
    exchanges and snapshots go with it, and so does every text no remaining exchange
    names. The file is vacuumed after, so the space comes back. Returns
    how many runs were deleted.
    """
    clauses, params = ["status NOT IN ('running', 'queued', 'parked')"], []
    live = live_batches(journal)
    if live:
        marks = ", ".join("?" * len(live))
        clauses.append(f"(batch_id IS NULL OR batch_id NOT IN ({marks}))")
        params.extend(live)
    if older_than_days is not None:
        cutoff = datetime.now(tz=UTC) - timedelta(days=older_than_days)
        clauses.append("started < ?")
        params.append(cutoff.isoformat(timespec="seconds"))
    if keep is not None:
        clauses.append(
            "run_id NOT IN (SELECT run_id FROM runs ORDER BY started DESC, rowid DESC LIMIT ?)"
        )
        params.append(str(keep))
    where = " AND ".join(clauses)
    with journal.transaction() as db:
        query = f"SELECT run_id FROM runs WHERE {where}"  # noqa: S608 - fixed clauses, values bound
        doomed = [row[0] for row in db.execute(query, params).fetchall()]
        db.executemany("DELETE FROM attempts WHERE run_id = ?", [(r,) for r in doomed])
        db.executemany("DELETE FROM worktrees WHERE run_id = ?", [(r,) for r in doomed])
        db.executemany("DELETE FROM approvals WHERE run_id = ?", [(r,) for r in doomed])
        db.executemany("DELETE FROM exchanges WHERE run_id = ?", [(r,) for r in doomed])
        db.executemany("DELETE FROM agent_sessions WHERE run_id = ?", [(r,) for r in doomed])
        db.executemany("DELETE FROM diffs WHERE run_id = ?", [(r,) for r in doomed])
        db.executemany("DELETE FROM snapshots WHERE run_id = ?", [(r,) for r in doomed])
        # A text stays while any exchange or diff, of any run, still names it.
        db.execute(
            "DELETE FROM texts WHERE hash NOT IN (SELECT prompt FROM exchanges"
            " UNION SELECT answer FROM exchanges WHERE answer IS NOT NULL"
            " UNION SELECT stderr FROM exchanges WHERE stderr IS NOT NULL"
            " UNION SELECT patch FROM exchanges WHERE patch IS NOT NULL"
            " UNION SELECT diff FROM diffs)"
        )
        db.executemany("DELETE FROM run_inputs WHERE run_id = ?", [(r,) for r in doomed])
        db.executemany("DELETE FROM runs WHERE run_id = ?", [(r,) for r in doomed])
    journal.vacuum()
    return len(doomed)
