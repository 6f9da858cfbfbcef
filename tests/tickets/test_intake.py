"""One run per ticket and event, claimed with its queue row; refusals recorded once (both backends)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import pytest

from adws.journal.records.tickets import TicketLimits
from adws.journal.store import tickets as journal_tickets
from adws.runs import Refused, Runs
from adws.tickets import Ticket
from adws.tickets.gate import Gate
from adws.tickets.intake import Intake, Taken
from tests.tickets.flows import project

if TYPE_CHECKING:
    from pathlib import Path

TICKET = Ticket("github:octo/app#7", "Crash", "It fails.", "https://x/7", "ana", 7)


def intake(
    tmp_path: Path, where: str, *, gate: Gate | None = None, limits: TicketLimits | None = None
) -> Intake:
    runs = Runs.open(where)
    return Intake(
        runs,
        "github:octo/app",
        "ticketed",
        gate,
        limits or TicketLimits(),
        project(tmp_path) / "workflows",
        clock=lambda: 1_000_000.0,
    )


def test_a_ticket_starts_one_run_and_a_second_ask_starts_nothing(
    tmp_path: Path, journal_at: str
) -> None:
    door = intake(tmp_path, journal_at)
    first = door.take(TICKET)
    assert isinstance(first, Taken)
    assert (first.state, first.new, first.round and first.round.round) == ("started", True, 1)
    again = door.take(TICKET)
    assert isinstance(again, Taken)
    assert (again.state, again.run_id, again.new) == ("seen", first.run_id, False)
    journal = door.runs.journal()
    assert not isinstance(journal, Refused)
    queued = journal.find(str(first.run_id))
    assert not isinstance(queued, str)
    assert (queued.status, queued.workflow, dict(queued.inputs().inputs)) == (
        "queued",
        "ticketed",
        TICKET.inputs(),
    )
    assert [r.run_id for r in journal_tickets.rounds(journal, TICKET.key)] == [first.run_id]


def test_many_asks_at_once_start_exactly_one_run(tmp_path: Path, journal_at: str) -> None:
    doors = [intake(tmp_path, journal_at) for _ in range(6)]
    got: list[object] = []
    threads = [threading.Thread(target=lambda d=d: got.append(d.take(TICKET))) for d in doors]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    started = [t for t in got if isinstance(t, Taken) and t.new]
    assert len(started) == 1
    journal = doors[0].runs.journal()
    assert not isinstance(journal, Refused)
    assert len(journal.runs()) == 1


def test_a_next_round_waits_for_the_run_of_the_ticket_to_end(
    tmp_path: Path, journal_at: str
) -> None:
    door = intake(tmp_path, journal_at)
    first = door.take(TICKET)
    assert isinstance(first, Taken)
    second = door.take(TICKET, event="comment:5", inputs={})
    assert isinstance(second, Taken)
    assert (second.state, second.new) == ("refused", True)
    assert second.reason == f"run {first.run_id} of this ticket is queued; one at a time"
    assert isinstance(door.take(TICKET, event="comment:5"), Taken)
    journal = door.runs.journal()
    assert not isinstance(journal, Refused)
    journal.write("UPDATE runs SET status = 'succeeded' WHERE run_id = ?", (first.run_id,))
    third = door.take(TICKET, event="comment:6")
    assert isinstance(third, Taken)
    assert third.round is not None
    assert (third.state, third.round.round, third.round.parent) == ("started", 2, first.run_id)


def test_rounds_a_day_per_ticket_are_counted(tmp_path: Path) -> None:
    door = intake(tmp_path, str(tmp_path / "runs.db"), limits=TicketLimits(rounds_per_day=1))
    first = door.take(TICKET)
    assert isinstance(first, Taken)
    journal = door.runs.journal()
    assert not isinstance(journal, Refused)
    journal.write("UPDATE runs SET status = 'failed' WHERE run_id = ?", (first.run_id,))
    second = door.take(TICKET, event="comment:9")
    assert isinstance(second, Taken)
    assert (second.state, second.reason) == (
        "refused",
        "1 rounds of this ticket today (at most 1)",
    )


def test_runs_an_hour_per_source_defer_a_ticket_until_there_is_room(tmp_path: Path) -> None:
    door = intake(tmp_path, str(tmp_path / "runs.db"), limits=TicketLimits(runs_per_hour=1))
    assert isinstance(door.take(TICKET), Taken)
    other = Ticket("github:octo/app#8", "Slow", "", "https://x/8", "ana", 8)
    deferred = door.take(other)
    assert isinstance(deferred, Taken)
    assert (deferred.state, deferred.new, deferred.reason) == (
        "deferred",
        True,
        "1 runs from github:octo/app this hour (at most 1)",
    )
    still = door.take(other)
    assert isinstance(still, Taken)
    assert (still.state, still.new) == ("seen", False)
    later = Intake(
        door.runs,
        door.source,
        door.workflow,
        limits=door.limits,
        workflows=door.workflows,
        clock=lambda: 1_000_000.0 + 3_601,
    )
    started = later.take(other)
    assert isinstance(started, Taken)
    assert (started.state, started.new, started.reason) == ("started", True, None)


def test_a_refused_author_is_recorded_once_and_the_permission_asked_once(
    tmp_path: Path, journal_at: str
) -> None:
    asked: list[str] = []

    def permission(user: str) -> str:
        asked.append(user)
        return "read"

    door = intake(tmp_path, journal_at, gate=Gate("adws-bot"))
    first = door.take(TICKET, permission=permission)
    second = door.take(TICKET, permission=permission)
    assert isinstance(first, Taken)
    assert isinstance(second, Taken)
    reason = "ana's permission on the repository is read (write, maintain or admin, or --allow ana)"
    assert (first.state, first.new, first.reason) == ("refused", True, reason)
    assert (second.state, second.new, second.reason) == ("seen", False, reason)
    assert asked == ["ana"]
    journal = door.runs.journal()
    assert not isinstance(journal, Refused)
    assert journal.runs() == []


def test_a_workflow_that_cannot_take_the_ticket_is_refused_and_nothing_recorded(
    tmp_path: Path,
) -> None:
    door = intake(tmp_path, str(tmp_path / "runs.db"))
    wrong = Intake(door.runs, door.source, "untaking", workflows=door.workflows)
    found = wrong.take(TICKET)
    assert isinstance(found, Refused)
    journal = door.runs.journal()
    assert not isinstance(journal, Refused)
    assert journal_tickets.rounds(journal, TICKET.key) == []


def test_a_journal_that_cannot_be_opened_is_refused(tmp_path: Path) -> None:
    runs = Runs.open(str(tmp_path / "none" / "runs.db"), create=False)
    found = Intake(runs, "s", "ticketed").take(TICKET)
    assert isinstance(found, Refused)


@pytest.mark.parametrize("state", ["started", "refused", "deferred", "forged"])
def test_rows_are_read_with_their_state_and_a_forged_one_counts_as_refused(
    tmp_path: Path, state: str
) -> None:
    door = intake(tmp_path, str(tmp_path / "runs.db"))
    journal = door.runs.journal()
    assert not isinstance(journal, Refused)
    journal.write(
        "INSERT INTO tickets (ticket, event, round, state, author, source, recorded, at)"
        " VALUES ('k', 'issue', 0, ?, 'ana', 's', 'now', 0)",
        (state,),
    )
    (row,) = journal_tickets.rounds(journal, "k")
    assert row.state == ("refused" if state == "forged" else state)
    assert journal_tickets.ticket_of(journal, "nothing") is None
