"""The team's queue in the journal: heartbeats on journals from before workers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws.journal import Journal
from adws.journal.store.queue import next_wake, workers
from adws.journal.store.schema import MIGRATIONS
from tests.journal.test_parked_rows import PARKING, old_journal

if TYPE_CHECKING:
    from pathlib import Path


def test_a_journal_from_before_workers_lists_none_read_only_and_migrates(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old_journal(path, PARKING)
    assert workers(Journal(path, readonly=True)) == []
    assert workers(Journal(path)) == []
    assert Journal(path).query("SELECT MAX(version) FROM schema_version") == [(len(MIGRATIONS),)]


def test_a_forged_heartbeat_names_no_worker(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "runs.db")
    for worker_id, pid, beat in (("w1", "x", 1.0), ("w2", 7, "soon"), ("w3", 7, 2.5)):
        journal.write(
            "INSERT INTO workers (worker_id, host, pid, since, beat, poll, runs)"
            " VALUES (?, 'far', ?, 'then', ?, 5, '[]')",
            (worker_id, pid, beat),
        )
    assert [worker.worker_id for worker in workers(journal)] == ["w3"]


def test_next_wake_is_the_nearest_future_wake_of_a_parked_run_of_the_host(
    journal_at: str,
) -> None:
    journal = Journal(journal_at)
    assert next_wake(journal, "box", 100.0) is None
    rows = [
        ("due", "parked", "box", 90.0),  # due already: due_runs's, not a time to wait for
        ("far", "parked", "box", 500.0),
        ("near", "parked", "box", 130.5),
        ("elsewhere", "parked", "other", 110.0),
        ("waiting", "waiting", "box", 105.0),
        ("whenever", "parked", "box", None),
    ]
    for run_id, status, host, wake in rows:
        journal.write(
            "INSERT INTO runs (run_id, workflow, fingerprint, status, steps, inputs, started,"
            " host, wake_at) VALUES (?, 'w', 'f', ?, '[]', '', 'now', ?, ?)",
            (run_id, status, host, wake),
        )
    assert next_wake(journal, "box", 100.0) == 130.5
    assert next_wake(journal, "box", 200.0) == 500.0
    assert next_wake(journal, "box", 500.0) is None


def test_a_forged_wake_that_is_no_number_is_no_time_to_wait_for(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "runs.db")
    journal.write(
        "INSERT INTO runs (run_id, workflow, fingerprint, status, steps, inputs, started,"
        " host, wake_at) VALUES ('r', 'w', 'f', 'parked', '[]', '', 'now', 'box', 'soon')",
        (),
    )
    assert next_wake(journal, "box", 100.0) is None
