"""What a cap's window spent, read from the journal's attempts and runs, whatever they hold."""

from __future__ import annotations

import datetime as dt
import sqlite3
from typing import TYPE_CHECKING

from adws.journal import Journal
from adws.journal.records.caps import Cap
from adws.journal.store.caps import CapState, set_cap, states

if TYPE_CHECKING:
    from pathlib import Path

NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)
RUN = (
    "INSERT INTO runs (run_id, workflow, fingerprint, status, steps, inputs, started, options)"
    " VALUES (?, 'fix', 'f', 'succeeded', '[]', '{}', ?, ?)"
)
ATTEMPT = (
    "INSERT INTO attempts (run_id, step, step_index, attempt, status, recorded, seconds,"
    " cost_usd, input_tokens, output_tokens) VALUES (?, 'ask', 0, 1, 'succeeded', ?, 1, ?, ?, ?)"
)


def journal_with_spends(path: Path) -> Journal:
    journal = Journal(path)
    rows = [
        ("r1", "2026-11-29T10:00:00+00:00", '{"agent": "claude"}', 1.5, 100, 20),
        ("r2", "2026-11-29T10:30:00+00:00", '{"agent": "codex"}', None, 300, 30),
        ("r3", "2026-11-29T11:00:00+00:00", "{broken", 0.25, None, None),
        ("r4", "not a time", "null", 9.0, 9, 9),
        ("r5", "2026-11-29T11:30:00", "{}", 9.0, 9, 9),  # no zone: not counted
        ("r6", "2026-11-29T11:45:00+00:00", '{"agent": "claude"}', 0.0, 0, 0),
    ]
    with sqlite3.connect(path) as db:
        for run_id, when, options, cost, tokens_in, tokens_out in rows:
            db.execute(RUN, (run_id, when, options))
            db.execute(ATTEMPT, (run_id, when, cost, tokens_in, tokens_out))
    return journal


def by_name(journal: Journal) -> dict[str, CapState]:
    return {state.name: state for state in states(journal, NOW)}


def test_each_cap_counts_what_its_scope_spent_in_its_window(tmp_path: Path) -> None:
    journal = journal_with_spends(tmp_path / "runs.db")
    caps = [
        Cap.checked(name="usd", currency="usd", amount=5, per="day"),
        Cap.checked(name="claude", currency="tokens", amount=1000, per="day", agent="claude"),
        Cap.checked(name="runs", currency="runs", amount=10, per="day", agent="codex"),
        Cap.checked(name="other", currency="usd", amount=5, per="day", workflow="other"),
    ]
    for cap in caps:
        set_cap(journal, cap, NOW)
    found = by_name(journal)
    assert (found["usd"].spent, found["usd"].remaining) == (1.75, 3.25)
    assert (found["claude"].spent, found["runs"].spent, found["other"].spent) == (120, 1, 0)
    assert found["usd"].resets == dt.datetime(2026, 11, 30, tzinfo=dt.UTC)


def test_a_rolling_cap_counts_from_when_it_was_set(tmp_path: Path) -> None:
    journal = journal_with_spends(tmp_path / "runs.db")
    set_cap(journal, Cap.checked(name="five", currency="usd", amount=5, per="5h"), NOW)
    assert by_name(journal)["five"].spent == 0.0


def test_an_unreadable_cap_has_nothing_left(tmp_path: Path) -> None:
    journal = journal_with_spends(tmp_path / "runs.db")
    with sqlite3.connect(tmp_path / "runs.db") as db:
        db.execute("INSERT INTO caps (name, spec, created) VALUES ('bad', '[]', 'x')")
    (bad,) = states(journal, NOW)
    assert (bad.cap, bad.remaining, bad.error) == (
        None,
        0.0,
        "cap bad: its journal row is unreadable",
    )


def test_a_journal_older_than_caps_has_none(tmp_path: Path) -> None:
    journal_with_spends(tmp_path / "runs.db")
    with sqlite3.connect(tmp_path / "runs.db") as db:
        db.execute("DROP TABLE caps")
    assert states(Journal(tmp_path / "runs.db", readonly=True), NOW) == []
