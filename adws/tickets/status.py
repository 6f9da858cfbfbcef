"""What a run's status comment on its ticket says, and the label that goes with it.

One comment per run, created when it is queued and edited as it goes on;
each status has one line, and one label of `adws-running`, `adws-failed`
and `adws-done` (the others are taken off).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from adws.journal import RunRecord

__all__ = ["LABELS", "label_for", "status_line"]

LABELS: Final = ("adws-running", "adws-failed", "adws-done")


def label_for(status: str) -> str:
    """Name the label a run of this status puts on its ticket.

    >>> label_for("succeeded"), label_for("failed"), label_for("parked")
    ('adws-done', 'adws-failed', 'adws-running')
    """
    if status == "succeeded":
        return LABELS[2]
    if status in {"failed", "rejected", "cancelled", "blocked", "interrupted"}:
        return LABELS[1]
    return LABELS[0]


def status_line(run: RunRecord, pull_url: str | None = None) -> str:
    """Say in one comment where a run is: started, parked, waiting, failed, or done.

    The ticket's words are never repeated here: only adws's own.
    """
    run_id = run.run_id
    if run.status == "queued":
        return f"adws run {run_id} queued ({run.workflow}); a worker starts it"
    if run.status == "running":
        return f"adws run {run_id} started ({run.workflow})"
    if run.status == "parked":
        when = "later"
        if run.wake_at is not None:
            at = dt.datetime.fromtimestamp(run.wake_at, tz=dt.UTC)
            when = at.strftime("%H:%M UTC")
        return f"adws run {run_id} parked until {when}; it goes on by itself"
    if run.status == "waiting":
        return f"adws run {run_id} waiting for approval: adws approve {run_id}"
    if run.status == "succeeded":
        opened = f": {pull_url}" if pull_url else ""
        return f"adws run {run_id} succeeded{opened}"
    step = run.failed_step or "?"
    said = "" if run.error is None else f": {run.error.message[:300]}"
    return f"adws run {run_id} {run.status} at step {step}{said}; adws resume {run_id}"
