"""What the pages show, read from the journal: runs, one run whole, waiting runs, spend, workers.

Every reader takes an open `Journal` and returns values; none writes. A
list of runs holds at most `MOST_RUNS` (the newest): a page of 10,000 rows
helps nobody, and the filters narrow it.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Final, final

import attrs

from adws import io_ops
from adws.journal import RunRecord
from adws.journal.records.diffs import DiffRecord
from adws.journal.store import caps, queue, tickets
from adws.journal.store.costs import costs
from adws.journal.store.diffs import diffs_of, latest_diffs
from adws.journal.store.exchanges import exchanges
from adws.journal.store.workspaces import approvals_of, worktrees_of
from adws.render.report import RunView
from adws.runs._waits import asks_budget

if TYPE_CHECKING:
    from adws.journal import Journal
    from adws.journal.records.workers import WorkerRecord
    from adws.journal.store.caps import CapState

__all__ = [
    "CHART_DAYS",
    "MOST_RUNS",
    "Spend",
    "Waiting",
    "asks_budget",
    "cap_states",
    "live_workers",
    "runs_of",
    "spend",
    "stamp",
    "view_of",
    "waiting_runs",
]

MOST_RUNS: Final = 200
"""Runs a list shows at most, newest first."""
CHART_DAYS: Final = 30
"""Days the cost chart goes back."""
_STAMPED: Final = 100


def runs_of(
    journal: Journal,
    *,
    status: str | None = None,
    workflow: str | None = None,
    ticket: str | None = None,
) -> list[RunRecord]:
    """List the newest runs (at most `MOST_RUNS`), filtered by status, workflow and ticket."""
    if ticket is None:
        return journal.runs(status=status, workflow=workflow, limit=MOST_RUNS)
    found = []
    for row in reversed(tickets.rounds(journal, ticket)):
        record = None if row.run_id is None else journal.find(row.run_id)
        if record is None or isinstance(record, str):
            continue  # refused or deferred rounds start no run; a pruned run is gone
        if (status in {None, record.status}) and (workflow in {None, record.workflow}):
            found.append(record)
    return found[:MOST_RUNS]


def view_of(journal: Journal, run_id: str) -> RunView | None:
    """Read one run whole, as `adws report` draws it (None: no such run, or an ambiguous id)."""
    record = journal.find(run_id)
    if isinstance(record, str):
        return None
    whole = record.run_id
    return RunView(
        record,
        tuple(row.checked() for row in journal.attempts(whole)),
        tuple(exchanges(journal, whole)),
        tuple(worktrees_of(journal, whole)),
        tuple(approvals_of(journal, whole)),
        tuple(diffs_of(journal, whole)),
    )


@final
@attrs.frozen
class Waiting:
    """A run waiting for a person: the run, whether it asks for a budget, its worktrees' diffs."""

    record: RunRecord
    budget: bool
    diffs: tuple[DiffRecord, ...]


def waiting_runs(journal: Journal) -> list[Waiting]:
    """List the runs waiting for approval, newest first, each with what its worktrees hold now."""
    return [
        Waiting(record, asks_budget(record), tuple(latest_diffs(journal, record.run_id)))
        for record in journal.runs(status="waiting", limit=MOST_RUNS)
    ]


@final
@attrs.frozen
class Spend:
    """Dollars spent per day (`days`, oldest first) for each workflow that spent any."""

    days: tuple[str, ...]
    per_workflow: tuple[tuple[str, tuple[float, ...]], ...]


def spend(journal: Journal, today: dt.date) -> Spend:
    """Sum the dollars agent calls cost per day and workflow, for the last `CHART_DAYS` days."""
    days = tuple(
        (today - dt.timedelta(days=back)).isoformat() for back in range(CHART_DAYS - 1, -1, -1)
    )
    rows = []
    for total in costs(journal, by="workflow", since=days[0]):
        name = total.key[0]
        per_day = {
            row.key[0]: row.usage.cost_usd or 0.0
            for row in costs(journal, by="day", workflow=name, since=days[0])
        }
        rows.append((name, tuple(per_day.get(day, 0.0) for day in days)))
    return Spend(days, tuple(rows))


def live_workers(journal: Journal) -> list[WorkerRecord]:
    """List the `adws worker` processes whose heartbeat is recent."""
    now = io_ops.wall_clock()
    return [worker for worker in queue.workers(journal) if worker.live(now)]


def cap_states(journal: Journal) -> list[CapState]:
    """List every cap with its current window."""
    return caps.states(journal, dt.datetime.now(dt.UTC))


def stamp(journal: Journal) -> str:
    """Sum up what a page could show as a string that changes when any of it changes.

    The newest runs' ids, statuses and spend, and for each that is running
    the status of every attempt it recorded so far.
    """
    parts = []
    for record in journal.runs(limit=_STAMPED):
        parts.append(f"{record.run_id} {record.status} {record.finished} {record.usage}")
        if record.status == "running":
            parts.extend(row.status for row in journal.attempts(record.run_id))
    return "\n".join(parts)
