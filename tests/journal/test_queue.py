"""The team's queue in the journal: heartbeats on journals from before workers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws.journal import Journal
from adws.journal.store.queue import workers
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
