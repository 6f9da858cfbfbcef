"""Notices of due runs: what a PostgreSQL journal notifies, in the change's own transaction."""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any

import psycopg
import pytest

from adws.journal import Journal
from adws.journal.store.backend import BackendError, JournalUrl
from adws.journal.store.postgres import open_listener
from adws.journal.store.queue import held_row, queued

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture
def heard(postgres_url: str) -> Iterator[psycopg.Connection[Any]]:
    """A connection of the test's own, listening on the channel (what any client hears)."""
    Journal(postgres_url).close()  # migrated: the triggers exist
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute("LISTEN adws_due")
        yield db


def notices(db: psycopg.Connection[Any]) -> list[dict[str, object]]:
    """Take the notices sent so far, their payloads read as JSON."""
    return [json.loads(notice.payload) for notice in db.notifies(timeout=0.3)]


def queue(journal: Journal, run_id: str) -> None:
    journal.apply(queued(run_id, "w", fingerprint="f", steps=["s"], inputs="{}", options=None))


def test_each_change_that_makes_a_run_due_notifies_once_with_a_hint(
    postgres_url: str, heard: psycopg.Connection[Any]
) -> None:
    journal = Journal(postgres_url)
    queue(journal, "r1")
    assert notices(heard) == [{"run": "r1", "what": "queued", "host": None, "wake_at": None}]
    journal.write("UPDATE runs SET host = 'box', step_started = 'now' WHERE run_id = 'r1'", ())
    assert notices(heard) == []
    journal.write("UPDATE runs SET status = 'parked', wake_at = 12.5 WHERE run_id = 'r1'", ())
    journal.write("UPDATE runs SET wake_at = 12.5, parked_reason = 'x' WHERE run_id = 'r1'", ())
    journal.write("UPDATE runs SET wake_at = 99.0 WHERE run_id = 'r1'", ())
    journal.write("UPDATE runs SET cancel = '{}' WHERE run_id = 'r1'", ())
    journal.write("UPDATE runs SET cancel = '{\"by\": 1}' WHERE run_id = 'r1'", ())
    journal.write("UPDATE runs SET status = 'interrupted' WHERE run_id = 'r1'", ())
    journal.write("UPDATE runs SET status = 'interrupted', pid = 3 WHERE run_id = 'r1'", ())
    journal.write("UPDATE runs SET status = 'running' WHERE run_id = 'r1'", ())
    journal.write("UPDATE runs SET status = 'queued' WHERE run_id = 'r1'", ())
    hint = {"run": "r1", "host": "box"}
    assert notices(heard) == [
        {**hint, "what": "parked", "wake_at": 12.5},
        {**hint, "what": "parked", "wake_at": 99.0},
        {**hint, "what": "cancelled", "wake_at": 99.0},
        {**hint, "what": "interrupted", "wake_at": 99.0},
        {**hint, "what": "queued", "wake_at": 99.0},
    ]


def test_a_decision_notifies_and_a_question_asked_does_not(
    postgres_url: str, heard: psycopg.Connection[Any]
) -> None:
    journal = Journal(postgres_url)
    journal.write(
        "INSERT INTO approvals (run_id, step, message, asked) VALUES ('r2', 'ship', 'ok?', 'now')",
        (),
    )
    journal.write("UPDATE approvals SET note = 'later' WHERE run_id = 'r2'", ())
    assert notices(heard) == []
    journal.write("UPDATE approvals SET verdict = 'approved' WHERE run_id = 'r2'", ())
    journal.write("UPDATE approvals SET verdict = 'rejected' WHERE run_id = 'r2'", ())
    assert notices(heard) == [{"run": "r2", "what": "decided"}]


def queued_then_rolled_back(journal: Journal, run_id: str) -> None:
    with journal.transaction() as db:
        for sql, params in queued(run_id, "w", fingerprint="f", steps=[], inputs="", options=None):
            db.execute(sql, params)
        msg = "changed my mind"
        raise RuntimeError(msg)


def test_a_change_rolled_back_a_batchs_run_and_a_run_started_here_notify_nothing_due(
    postgres_url: str, heard: psycopg.Connection[Any]
) -> None:
    journal = Journal(postgres_url)
    with pytest.raises(RuntimeError, match=r"^changed my mind$"):
        queued_then_rolled_back(journal, "r3")
    journal.write(
        "INSERT INTO runs (run_id, workflow, fingerprint, status, steps, inputs, started,"
        " batch_id) VALUES ('r4', 'w', 'f', 'queued', '[]', '', 'now', 'b1')",
        (),
    )
    assert notices(heard) == []
    # `adws run` writes its row queued then held, in one transaction: a hint, never a start.
    journal.apply(held_row("r5", "w", fingerprint="f", steps=[], inputs="", options=None))
    assert [notice["what"] for notice in notices(heard)] == ["queued"]
    assert journal.query("SELECT status FROM runs WHERE run_id = 'r5'") == [("running",)]


def test_a_listener_hears_notices_takes_them_all_and_says_when_it_dropped(
    postgres_url: str,
) -> None:
    journal = Journal(postgres_url)
    listener = open_listener(JournalUrl(postgres_url))
    assert listener.heard(0.01) is False
    queue(journal, "r6")
    queue(journal, "r7")
    assert listener.heard(5) is True
    assert listener.heard(0.05) is False
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'LISTEN adws_due'"
        )
    with pytest.raises(BackendError) as dropped:
        listener.heard(5)
    password = postgres_url.split(":")[2].split("@", maxsplit=1)[0]
    assert password not in str(dropped.value)
    assert str(dropped.value).startswith("consuming input failed: ")
    listener.close()


def test_a_sqlite_journal_has_no_triggers(tmp_path: Path) -> None:
    Journal(tmp_path / "runs.db").close()
    with sqlite3.connect(tmp_path / "runs.db") as db:
        found = db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall()
    assert found == []
