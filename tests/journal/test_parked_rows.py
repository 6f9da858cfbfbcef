"""The journal's parked runs: journals from before `wake_at` read, forged values named."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from adws.journal import MIGRATIONS, Journal
from adws.journal.store.sqlite import WORDS

PARKING = 14
"""The schema that added `runs.wake_at` and `runs.parked_reason`."""


def old_journal(path: Path, version: int) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    for number, statements in enumerate(MIGRATIONS[:version], 1):
        for statement in statements:
            db.execute(statement.format_map(WORDS))
        db.execute("INSERT INTO schema_version VALUES (?)", (number,))
    db.execute(
        "INSERT INTO runs (run_id, workflow, fingerprint, status, steps, inputs, started)"
        " VALUES ('r1', 'w', 'fp', 'failed', '[\"a\"]', '', '2026-11-27T09:00:00+00:00')"
    )
    db.commit()
    db.close()


def test_a_journal_written_before_parking_reads_read_only_and_migrates(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old_journal(path, PARKING - 1)
    [record] = Journal(path, readonly=True).runs()
    assert (record.status, record.wake_at, record.parked_reason, record.problems) == (
        "failed",
        None,
        None,
        (),
    )
    assert Journal(path, readonly=True).runs(status="parked") == []
    [migrated] = Journal(path).runs()
    assert (migrated.wake_at, migrated.parked_reason) == (None, None)


def test_a_forged_wake_time_or_reason_is_named_never_trusted(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    old_journal(path, len(MIGRATIONS))
    db = sqlite3.connect(path)
    db.execute("UPDATE runs SET status = 'parked', wake_at = 'soon', parked_reason = X'07'")
    db.commit()
    db.close()
    [record] = Journal(path, readonly=True).runs()
    assert (record.wake_at, record.parked_reason) == (0.0, None)
    assert record.problems == (
        "wake_at is not a number of seconds from 0 to 100000000000: 'soon'",
        "parked_reason is not text: b'\\x07'",
    )
