"""Caps that hold across runs, checked and reserved before every agent call.

Runs are real `python -m adws` processes (a different PYTHONHASHSEED each)
spending against caps in one journal, a SQLite file or a real PostgreSQL
server (`journal_at`); the agents are `ScriptedAgent`s with a fixed price.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from typing import TYPE_CHECKING

import pytest

from adws.engine.caps import CapFull
from adws.engine.usage import Usage
from adws.journal import Journal
from adws.journal.records.caps import Cap
from adws.journal.store import cap_holds
from adws.journal.store.caps import set_cap, states
from tests.cli.test_cancel import adws, start

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.slow

FLOWS = """
import time
from adws import Workflow
from adws.agents.step import agent_step
from adws.agents import AgentResponse, ScriptedAgent
from adws.contract.validator import OutputContract
from adws.engine.usage import Usage


def answer(request):
    time.sleep(0.02)  # calls of two processes overlap
    return AgentResponse("STATUS: done\\n", {}, Usage(0.1, 100, 10, 1, "m"))


def ask(name):
    return agent_step(name, prompt=name, agent=ScriptedAgent([answer]), contract=OutputContract())


spend = Workflow("spend", tuple(ask(f"s{n}") for n in range(8)))
three = Workflow("three", tuple(ask(f"t{n}") for n in range(3)))
"""
NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "flows.py").write_text(FLOWS)
    return tmp_path


def spent_by_run(journal: str) -> dict[str, float]:
    rows = Journal(journal).query(
        "SELECT run_id, SUM(cost_usd) FROM attempts WHERE step NOT LIKE '%[%' GROUP BY run_id"
    )
    return {str(run_id): round(float(total), 9) for run_id, total in rows}


def parked_reasons(journal: str) -> list[tuple[str, str]]:
    rows = Journal(journal).query("SELECT status, parked_reason FROM runs ORDER BY run_id")
    return [(str(status), str(reason)) for status, reason in rows]


@pytest.mark.parametrize("journal_at", ["sqlite", "postgres"], indirect=True)
def test_two_processes_spending_against_one_cap_together_never_pass_it(
    project: Path, journal_at: str
) -> None:
    code, _, err = adws(project, journal_at, "caps", "set", "shared", "--usd", "1", "--per", "day")
    assert code == 0, err
    runs = [start(project, journal_at, "run", "spend", "-q") for _ in range(2)]
    ended = [run.communicate(timeout=120) for run in runs]
    codes = sorted(run.returncode for run in runs)
    assert codes in ([0, 75], [75, 75]), ended  # 16 calls wanted, 10 fit: one parks at least
    spent = spent_by_run(journal_at)
    assert round(sum(spent.values()), 9) == 1.0
    reasons = parked_reasons(journal_at)
    assert [status for status, _ in reasons].count("parked") == codes.count(75)
    assert {reason for status, reason in reasons if status == "parked"} == {
        "parked until 00:00 UTC: cap shared, $1.00 of $1.00"
    }
    code, out, err = adws(project, journal_at, "caps", "--json")
    [shared] = json.loads(out)
    assert (shared["spent"], shared["reserved"], shared["remaining"]) == (1.0, 0.0, 0.0)


@pytest.mark.parametrize("journal_at", ["sqlite"], indirect=True)
def test_a_run_parked_by_a_rolling_window_is_woken_by_resume_due_once_it_frees(
    project: Path, journal_at: str
) -> None:
    code, _, err = adws(project, journal_at, "caps", "set", "brief", "--usd", "0.25", "--per", "2s")
    assert code == 0, err
    code, _, err = adws(project, journal_at, "run", "three", "-q")
    assert code == 75, err
    [(status, reason)] = parked_reasons(journal_at)
    assert status == "parked"
    assert reason.startswith("parked until ")
    assert reason.endswith(" UTC: cap brief, $0.20 of $0.25")
    [record] = Journal(journal_at).runs()
    assert record.wake_at is not None
    time.sleep(max(record.wake_at - time.time(), 0.0) + 0.1)
    code, _, err = adws(project, journal_at, "resume", "--due", "-q")
    assert code == 0, err
    assert [status for status, _ in parked_reasons(journal_at)] == ["succeeded"]
    assert list(spent_by_run(journal_at).values()) == [0.3]


def test_a_call_reserves_against_each_cap_that_applies_and_settles_to_its_spend(
    tmp_path: Path,
) -> None:
    journal = Journal(tmp_path / "runs.db")
    journal.query("SELECT 1")
    for cap in (
        Cap.checked(name="all", currency="usd", amount=1, per="7d"),
        Cap.checked(name="tokens", currency="tokens", amount=500, per="5h", workflow="w"),
        Cap.checked(name="other", currency="usd", amount=1, per="day", agent="codex"),
        Cap.checked(name="runs", currency="runs", amount=1, per="day"),
    ):
        set_cap(journal, cap, NOW)
    with journal.transaction() as db:
        db.execute(
            "INSERT INTO runs (run_id, workflow, fingerprint, status, steps, inputs, started)"
            " VALUES ('r1', 'w', 'f', 'running', '[]', '', ?)",
            (NOW.isoformat(),),
        )
    check = cap_holds.gate(journal, "r1", "w", "claude", patience=0.0, clock=lambda: NOW)
    settle = check("s", Usage(0.4, 200, 100))
    assert not isinstance(settle, CapFull)
    reserved = {state.name: state.reserved for state in states(journal, NOW)}
    assert reserved == {"all": 0.4, "other": 0.0, "runs": 0.0, "tokens": 300.0}
    full = check("s", Usage(0.1, 250))
    assert full == CapFull(
        "parked until 17:00 UTC: cap tokens, 300 tokens of 500 tokens",
        (NOW + dt.timedelta(hours=5)).timestamp(),
    )
    settle(Usage(0.5, 0, 0))  # no tokens spent: that hold is released
    reserved = {state.name: state.reserved for state in states(journal, NOW)}
    assert reserved == {"all": 0.5, "other": 0.0, "runs": 0.0, "tokens": 0.0}
    again = check("s", None)  # no estimate: starts while the cap is not full
    assert not isinstance(again, CapFull)
    again(None)
    assert cap_holds.reserve(
        journal, run_id="r1", workflow="w", agent=None, estimate=Usage(0.6), now=NOW
    ) == CapFull(
        "parked until 2026-12-06 12:00 UTC: cap all, $0.50 of $1.00",
        (NOW + dt.timedelta(days=7)).timestamp(),
    )
    with journal.transaction() as db:
        db.execute("UPDATE runs SET status = 'failed'")
    assert [state.reserved for state in states(journal, NOW)] == [0.0, 0.0, 0.0, 0.0]


def test_a_hold_whose_cap_went_or_became_unreadable_is_released_and_refuses_new_calls(
    tmp_path: Path,
) -> None:
    journal = Journal(tmp_path / "runs.db")
    set_cap(journal, Cap.checked(name="gone", currency="usd", amount=1, per="day"), NOW)
    holds = cap_holds.reserve(
        journal, run_id="r1", workflow="w", agent=None, estimate=Usage(0.2), now=NOW
    )
    assert isinstance(holds, list)
    with journal.transaction() as db:
        db.execute("UPDATE caps SET spec = 'nonsense'")
    cap_holds.settle(journal, holds, Usage(0.2))
    assert journal.query("SELECT COUNT(*) FROM cap_holds") == [(0,)]
    assert cap_holds.reserve(
        journal, run_id="r1", workflow="w", agent=None, estimate=None, now=NOW
    ) == CapFull("cap gone: its journal row is unreadable; fix it or remove it (adws caps rm gone)")
    cap_holds.settle(journal, [], Usage(1.0))


def running(journal: Journal, *run_ids: str) -> None:
    with journal.transaction() as db:
        for run_id in run_ids:
            db.execute(
                "INSERT INTO runs (run_id, workflow, fingerprint, status, steps, inputs, started)"
                " VALUES (?, 'w', 'f', 'running', '[]', '', ?)",
                (run_id, NOW.isoformat()),
            )


def test_calls_in_flight_make_a_call_wait_and_one_with_no_estimate_goes_alone(
    tmp_path: Path,
) -> None:
    journal = Journal(tmp_path / "runs.db")
    set_cap(journal, Cap.checked(name="day", currency="usd", amount=1, per="day"), NOW)
    running(journal, "r1", "r2")

    def reserve(estimate: Usage | None) -> list[int] | CapFull | cap_holds.Busy:
        return cap_holds.reserve(
            journal, run_id="r1", workflow="w", agent=None, estimate=estimate, now=NOW
        )

    full = CapFull("parked until 00:00 UTC: cap day, $0.60 of $1.00", 1795996800.0)
    first = reserve(Usage(0.6))
    assert isinstance(first, list)
    # $0.60 in flight: $0.50 more would fit only if it spends less than it holds
    assert reserve(Usage(0.5)) == cap_holds.Busy(full)
    assert reserve(None) == cap_holds.Busy(full)
    waiting = cap_holds.gate(journal, "r2", "w", None, patience=0.1, clock=lambda: NOW)
    began = time.monotonic()
    assert waiting("s", None) == full  # waited its patience for the call in flight, then parks
    assert time.monotonic() - began >= 0.1
    cap_holds.settle(journal, first, None)
    blind = reserve(None)
    assert isinstance(blind, list)
    nothing = CapFull("parked until 00:00 UTC: cap day, $0.00 of $1.00", 1795996800.0)
    assert reserve(Usage(0.1)) == cap_holds.Busy(nothing)
    cap_holds.settle(journal, blind, Usage(1.0))
    spent = CapFull("parked until 00:00 UTC: cap day, $1.00 of $1.00", 1795996800.0)
    assert reserve(None) == spent
    assert reserve(Usage(0.0)) == spent
