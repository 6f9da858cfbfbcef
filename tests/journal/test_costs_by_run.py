"""`adws cost --by week|agent|ticket|host`: attempts summed by what their runs recorded."""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING

import pytest

from adws.cli import main
from adws.journal import Journal
from adws.journal.store.costs import costs

if TYPE_CHECKING:
    from pathlib import Path

RUN = (
    "INSERT INTO runs (run_id, workflow, fingerprint, status, steps, inputs, started, options,"
    " host) VALUES (?, ?, 'f', 'succeeded', '[]', '{}', ?, ?, ?)"
)
ATTEMPT = (
    "INSERT INTO attempts (run_id, step, step_index, attempt, status, recorded, seconds,"
    " cost_usd, input_tokens, output_tokens, turns)"
    " VALUES (?, ?, 0, 1, 'succeeded', ?, 1, ?, 10, 1, 1)"
)
RUNS = [
    # run, workflow, recorded, options, host, inputs
    ("r1", "fix", "2026-11-23T10:00:00+00:00", '{"agent": "claude"}', "a", {"ticket": "GH-1"}),
    ("r2", "fix", "2026-11-24T10:00:00+00:00", '{"agent": "codex"}', "b", {"ticket": "GH-2"}),
    ("r3", "triage", "2026-11-30T10:00:00+00:00", "{broken", None, None),
    ("r4", "triage", "not a date", '["no"]', "", {"ticket": 7}),
]


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    path = tmp_path / "runs.db"
    opened = Journal(path)
    with sqlite3.connect(path) as db:
        for run_id, workflow, when, options, host, inputs in RUNS:
            db.execute(RUN, (run_id, workflow, when, options, host))
            db.execute(ATTEMPT, (run_id, "ask", when, 1.0))
            db.execute(ATTEMPT, (run_id, "ask[0]", when, 5.0))  # a branch: its parent holds it
            if inputs is not None:
                encoded = json.dumps({"inputs": inputs, "outputs": {}, "feedback": []})
                db.execute(
                    "INSERT INTO run_inputs (run_id, inputs) VALUES (?, ?)", (run_id, encoded)
                )
    return opened


def keyed(journal: Journal, by: str, **where: str) -> dict[str, tuple[int, int, float | None]]:
    rows = costs(journal, by=by, **where)  # type: ignore[arg-type] # the grouping under test
    return {row.key[0]: (row.runs, row.attempts, row.usage.cost_usd) for row in rows}


def test_spend_by_iso_week(journal: Journal) -> None:
    assert keyed(journal, "week") == {
        "-": (1, 1, 1.0),
        "2026-W48": (2, 2, 2.0),
        "2026-W49": (1, 1, 1.0),
    }


def test_spend_by_agent_ticket_and_host(journal: Journal) -> None:
    assert keyed(journal, "agent") == {
        "-": (2, 2, 2.0),
        "claude": (1, 1, 1.0),
        "codex": (1, 1, 1.0),
    }
    assert keyed(journal, "ticket") == {"-": (2, 2, 2.0), "GH-1": (1, 1, 1.0), "GH-2": (1, 1, 1.0)}
    assert keyed(journal, "host") == {"-": (2, 2, 2.0), "a": (1, 1, 1.0), "b": (1, 1, 1.0)}


def test_by_run_groupings_honour_workflow_and_since(journal: Journal) -> None:
    assert keyed(journal, "host", workflow="fix", since="2026-11-24") == {"b": (1, 1, 1.0)}


def test_adws_cost_by_ticket_prints_a_table_and_json(
    journal: Journal, capsys: pytest.CaptureFixture[str]
) -> None:
    where = ["--journal", str(journal.path)]
    assert main(["cost", "--by", "ticket", *where]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "TICKET  RUNS  ATTEMPTS  COST     INPUT TOKENS  OUTPUT TOKENS",
        "-       2     2         $2.0000  20            2",
        "GH-1    1     1         $1.0000  10            1",
        "GH-2    1     1         $1.0000  10            1",
        "TOTAL         4         $4.0000  40            4",
    ]
    assert main(["cost", "--by", "agent", "--json", *where]) == 0
    assert json.loads(capsys.readouterr().out)[1] == {
        "agent": "claude",
        "runs": 1,
        "attempts": 1,
        "cost_usd": 1.0,
        "input_tokens": 10,
        "output_tokens": 1,
        "turns": 1,
        "model": None,
    }
