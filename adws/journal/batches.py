"""A batch in the journal: its row, its queued runs, and how it ended (`adws batch`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from adws import io_ops

if TYPE_CHECKING:
    from collections.abc import Sequence

    from adws.journal.store import Journal

__all__ = ["batch_runs", "find_batch", "finish_batch", "queue_batch"]


def queue_batch(  # noqa: PLR0913 - the batch row and every run it queues
    journal: Journal,
    batch_id: str,
    workflow: str,
    source: str,
    *,
    runs: Sequence[tuple[int, str, str]],
    steps: Sequence[str],
    fingerprint: str,
    options: str | None = None,
) -> None:
    """Record a batch and queue its runs, `(line, run_id, encoded inputs)` each, in one go.

    Queued runs have status `queued` until a worker starts them; a run
    that never started is started by `adws batch --resume`. `options` is
    the runs' encoded `RunOptions`, shared by every run of the batch.
    """
    now = io_ops.utc_now()
    names = json.dumps(list(steps))
    with journal.transaction() as db:
        db.execute(
            "INSERT INTO batches (batch_id, workflow, source, total, status, started)"
            " VALUES (?, ?, ?, ?, 'running', ?)",
            (batch_id, workflow, source, len(runs), now),
        )
        db.executemany(
            "INSERT INTO runs (run_id, workflow, fingerprint, status, steps, inputs, started,"
            " batch_id, line, options) VALUES (?, ?, ?, 'queued', ?, '', ?, ?, ?, ?)",
            [
                (run_id, workflow, fingerprint, names, now, batch_id, line, options)
                for line, run_id, _ in runs
            ],
        )
        db.executemany(
            "INSERT INTO run_inputs (run_id, inputs) VALUES (?, ?)",
            [(run_id, inputs) for _, run_id, inputs in runs],
        )


def finish_batch(journal: Journal, batch_id: str, status: str) -> None:
    """Record how a batch ended (`succeeded`, `failed`, `blocked`, `interrupted`)."""
    journal.write(
        "UPDATE batches SET status = ?, finished = ? WHERE batch_id = ?",
        (status, io_ops.utc_now(), batch_id),
    )


def find_batch(journal: Journal, batch_id: str) -> tuple[str, str, int] | str:
    """Return a batch's `(batch_id, workflow, total)` by id or unique prefix, or why not."""
    escaped = batch_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    rows = journal.query(
        "SELECT batch_id, workflow, total FROM batches WHERE batch_id LIKE ? ESCAPE '\\' LIMIT 2",
        (escaped + "%",),
    )
    if len(rows) != 1:
        problem = "no batch" if not rows else "an ambiguous batch id"
        return f"{problem} {batch_id!r} in {journal.path}"
    found_id, workflow, total = rows[0]
    return found_id, workflow, total


def batch_runs(journal: Journal, batch_id: str) -> list[tuple[int, str, str, str | None]]:
    """List a batch's runs in line order: `(line, run_id, status, error JSON)`."""
    rows = journal.query(
        "SELECT line, run_id, status, error FROM runs WHERE batch_id = ? ORDER BY line",
        (batch_id,),
    )
    return [(line, run_id, status, error) for line, run_id, status, error in rows]
