"""A `--runs` cap holds submitted runs queued: no worker takes one it has no room for.

Real `python -m adws` processes (`submit`, `worker --once`, `runs`,
`status`) on a SQLite file and a real PostgreSQL server; one test holds a
queued row locked from another connection, as a second worker would.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING

import pytest

from adws.journal import Journal
from adws.journal.store.queue import take_queued
from tests.cli.test_cancel import adws
from tests.journal.test_cap_holds import project

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.slow

__all__ = ["project"]  # the fixture, shared


def _statuses(journal: str) -> list[str]:
    rows = Journal(journal).query("SELECT status FROM runs ORDER BY started, rowid")
    return [str(status) for (status,) in rows]


@pytest.mark.parametrize("journal_at", ["sqlite", "postgres"], indirect=True)
def test_a_full_runs_cap_keeps_submitted_runs_queued_and_says_why_and_when_it_frees(
    project: Path, journal_at: str
) -> None:
    code, _, err = adws(project, journal_at, "caps", "set", "one", "--runs", "1", "--per", "day")
    assert code == 0, err
    ids = []
    for _ in range(2):
        code, out, err = adws(project, journal_at, "submit", "three")
        assert code == 0, err
        ids.append(out.strip().split()[-1])
    assert _statuses(journal_at) == ["queued", "queued"]  # queued runs have not started

    code, _, err = adws(project, journal_at, "worker", "--once", "--poll", "0.2")
    assert code == 0, err
    assert _statuses(journal_at) == ["succeeded", "queued"]
    code, _, err = adws(project, journal_at, "worker", "--once", "--poll", "0.2")
    assert code == 0, err
    assert _statuses(journal_at) == ["succeeded", "queued"]  # the cap is full: it waits

    midnight = (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).date().isoformat()
    why = f"cap one: 1 of 1 runs started (1 runs per day (UTC)); it frees at {midnight}T00:00+00:00"
    code, out, err = adws(project, journal_at, "runs")
    assert code == 0, err
    assert f"{ids[1]} stays queued: {why}\n" in out
    code, out, err = adws(project, journal_at, "runs", "--json")
    held = {run["run_id"]: run.get("held") for run in json.loads(out)}
    assert held == {ids[0]: None, ids[1]: why}
    code, out, err = adws(project, journal_at, "status", ids[1])
    assert f"\nstays queued: {why}" in out
    code, out, err = adws(project, journal_at, "status", ids[1], "--json")
    assert json.loads(out)["held"] == why

    code, _, err = adws(project, journal_at, "caps", "rm", "one")
    assert code == 0, err
    code, _, err = adws(project, journal_at, "worker", "--once", "--poll", "0.2")
    assert code == 0, err
    assert _statuses(journal_at) == ["succeeded", "succeeded"]


@pytest.mark.parametrize("journal_at", ["postgres"], indirect=True)
def test_a_queued_run_another_worker_holds_is_skipped_for_the_next(
    project: Path, journal_at: str
) -> None:
    ids = []
    for _ in range(2):
        code, out, err = adws(project, journal_at, "submit", "three")
        assert code == 0, err
        ids.append(out.strip().split()[-1])
    other = Journal(journal_at)
    with other.transaction() as db:
        db.execute("SELECT run_id FROM runs WHERE run_id = ? FOR UPDATE", (ids[0],))
        assert take_queued(Journal(journal_at)) == ids[1]
