"""What the journal's history says calls and runs cost: rows crafted with sqlite3, read as hostile."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from adws.engine.scope import Decision
from adws.engine.usage import Budget, Usage
from adws.journal import Journal
from adws.journal.store.estimates import FinishEstimate, call_estimates, finish_estimate
from adws.journal.store.workspaces import approvals_of, asked_statement, decided_statement
from tests.journal.test_journal_v2 import v1_journal

if TYPE_CHECKING:
    from pathlib import Path


def journal_with_calls(path: Path, calls: list[tuple[object, object, object, object]]) -> Journal:
    """Record one run of `w` and its agent calls: (asked_by, cost, input, output tokens)."""
    Journal(path).close()
    db = sqlite3.connect(path)
    with db:
        db.execute(
            "INSERT INTO runs (run_id, workflow, fingerprint, status, steps, inputs, started)"
            " VALUES ('r1', 'w', 'f', 'succeeded', '[]', '', 'then')"
        )
        db.executemany(
            "INSERT INTO exchanges (run_id, step, attempt, asked_by, recorded, started, seconds,"
            " prompt, prompt_size, cost_usd, input_tokens, output_tokens)"
            " VALUES ('r1', 's', 1, ?, '', 0, 1, 'p', 1, ?, ?, ?)",
            calls,
        )
    db.close()
    return Journal(path)


def test_a_call_estimate_is_the_90th_percentile_of_five_or_more_recorded_calls(
    tmp_path: Path,
) -> None:
    calls: list[tuple[object, object, object, object]] = [
        ("ask", n / 10, n * 100, 10) for n in range(1, 11)
    ]
    calls += [("few", 1.0, 1, 1)] * 4  # four calls: no estimate
    calls += [("tokens", None, 50, None)] * 5  # tokens only
    calls += [("cost", 0.5, None, None)] * 5  # cost only
    calls += [(b"\x00", 9.0, 9, 9)] * 5  # a step name no adws wrote
    calls += [("ask", -1.0, -5, None), ("ask", float("inf"), 10**13, None)]  # forged: left out
    journal = journal_with_calls(tmp_path / "runs.db", calls)
    assert call_estimates(journal, "w") == {
        "ask": Usage(0.9, 910),
        "cost": Usage(0.5),
        "tokens": Usage(None, 50),
    }
    assert call_estimates(journal, "other") == {}


def test_a_journal_older_than_the_exchanges_has_no_call_estimates(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    v1_journal(path, {"seed": "s"}, [("fetch", {"seed": "s"})])
    journal = Journal(path, readonly=True)
    assert call_estimates(journal, "pipeline") == {}
    assert finish_estimate(journal, "pipeline", ["fetch", "build"]) == FinishEstimate(
        0.0, 0.0, 1, ("build",)
    )


def test_a_raised_budget_no_adws_wrote_is_read_as_none(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "runs.db")
    decision = Decision("approved", "ann", "now")
    with journal.transaction() as db:
        for step in ("a", "b", "c", "d"):
            db.execute(*asked_statement("r1", step, "more?", None))
        db.execute(*decided_statement("r1", "a", decision, Budget(10.0)))
        db.execute(*decided_statement("r1", "d", decision))
        db.execute("UPDATE approvals SET verdict = 'approved', budget = '[1]' WHERE step = 'b'")
        db.execute(
            "UPDATE approvals SET verdict = 'approved', budget = '{\"max_cost_usd\": -1}'"
            " WHERE step = 'c'"
        )
    raised = [record.raised for record in approvals_of(journal, "r1")]
    assert raised == [Budget(10.0), None, None, None]
    assert approvals_of(journal, "r1")[0].to_dict()["raised"] == {
        "max_cost_usd": 10.0,
        "max_tokens": None,
    }


def test_a_journal_read_before_its_budget_migration_has_no_raised_budgets(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    Journal(path).close()
    db = sqlite3.connect(path)
    with db:
        db.execute("ALTER TABLE approvals DROP COLUMN budget")
        db.execute("UPDATE schema_version SET version = 11")
        db.execute(
            "INSERT INTO approvals (run_id, step, message, asked, verdict) VALUES"
            " ('r1', 'a', 'm', 'then', 'approved')"
        )
    db.close()
    (record,) = approvals_of(Journal(path, readonly=True), "r1")
    assert record.raised is None
