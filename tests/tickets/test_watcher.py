"""The GitHub watcher in one process: review rounds, deferrals, status comments as runs move."""

from __future__ import annotations

import sqlite3
import threading
from typing import TYPE_CHECKING

import pytest

from adws.engine.context import WorkflowContext
from adws.journal import Journal
from adws.journal.records.codec import encode_context
from adws.journal.records.tickets import TicketLimits
from adws.journal.store import tickets as journal_tickets
from adws.runs import Refused, Runs
from adws.testing.github_api import FakeGitHub
from adws.tickets.gate import Gate
from adws.tickets.github import GitHub
from adws.tickets.intake import Intake, Taken
from adws.tickets.loop import Loop
from adws.tickets.publish import _paths
from adws.tickets.watcher import GitHubWatcher
from tests.tickets.flows import project

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

BRANCH = "adws/1-crash"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.add_repo("octo/app", permissions={"ana": "write", "bo": "read"})
        fake.add_issue("octo/app", "Crash", "It fails.", author="ana", labels=("adws",))
        yield fake


def watcher(
    tmp_path: Path,
    github: FakeGitHub,
    *,
    limits: TicketLimits | None = None,
    review_workflow: str | None = None,
) -> GitHubWatcher:
    runs = Runs.open(str(tmp_path / "runs.db"))
    intake = Intake(
        runs,
        "github:octo/app",
        "ticketed",
        Gate("adws-bot"),
        limits or TicketLimits(),
        project(tmp_path) / "workflows",
        review_workflow=review_workflow,
    )
    said: list[str] = []
    return GitHubWatcher(intake, GitHub(github.url, github.token), "octo/app", "adws", said.append)


def journal_of(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "runs.db")


def finish(tmp_path: Path, status: str = "succeeded") -> None:
    journal = journal_of(tmp_path)
    journal.write("UPDATE runs SET status = ?", (status,))


def open_pull(github: FakeGitHub, branch: str = BRANCH) -> int:
    made = github.open_issue("octo/app", "adws-bot", {"title": "Fix", "head": branch})
    return int(made["number"])


def test_a_conversation_comment_on_the_pull_request_starts_a_round_answered_there(
    tmp_path: Path, github: FakeGitHub
) -> None:
    watching = watcher(tmp_path, github)
    assert not isinstance(watching.poll(), Refused)
    finish(tmp_path)
    number = open_pull(github)
    github.comment("octo/app", number, "ana", "/adws handle None too")
    taken = watching.poll()
    assert not isinstance(taken, Refused)
    (review,) = [t for t in taken if t.round is not None and t.round.event.startswith("comment:")]
    assert review.state == "started"
    (answer,) = github.comments("octo/app", number)[1:]
    assert answer["body"] == f"adws run {review.run_id} queued: round 2"
    run = journal_of(tmp_path).find(str(review.run_id))
    assert not isinstance(run, str)
    assert dict(run.inputs().inputs)["review_branch"] == BRANCH
    assert dict(run.inputs().inputs)["review_path"] == ""


def test_comments_that_are_not_adws_s_to_take_start_nothing(
    tmp_path: Path, github: FakeGitHub
) -> None:
    watching = watcher(tmp_path, github)
    assert not isinstance(watching.poll(), Refused)
    finish(tmp_path)
    theirs = open_pull(github, "feature/x")
    untracked = open_pull(github, "adws/9-other")
    ours = open_pull(github)
    github.comment("octo/app", theirs, "ana", "/adws on someone's branch")
    github.comment("octo/app", untracked, "ana", "/adws on a ticket adws never started")
    github.comment("octo/app", ours, "adws-bot", "/adws by adws itself")
    github.comment("octo/app", 1, "ana", "/adws on the issue, not a pull request")
    github.comment("octo/app", ours, "ana", "a comment that asks for nothing")
    github.state["repos"]["octo/app"]["comments"].append(
        {"id": "x", "body": "/adws forged", "updated_at": "9999"}
    )
    taken = watching.poll()
    assert not isinstance(taken, Refused)
    assert [t.state for t in taken] == ["seen"]  # the issue itself, seen before
    assert len(journal_of(tmp_path).runs()) == 1
    assert watching.since == "9999"


def test_a_ticket_whose_first_run_was_pruned_takes_no_round_and_is_not_shown(
    tmp_path: Path, github: FakeGitHub
) -> None:
    watching = watcher(tmp_path, github)
    assert not isinstance(watching.poll(), Refused)
    journal = journal_of(tmp_path)
    journal.write("DELETE FROM runs", ())
    journal.write(
        "INSERT INTO tickets (ticket, event, round, state, author, source, recorded, at)"
        " VALUES ('github:octo/app#1', 'comment:0', 0, 'refused', 'bo', 's', 'now', 0)",
        (),
    )
    number = open_pull(github)
    github.add_review_comment("octo/app", number, "/adws", author="ana", path="a", line=1)
    taken = watching.poll()
    assert not isinstance(taken, Refused)
    assert [t.state for t in taken] == ["seen"]
    # A row whose run id is also a prefix of another run's: found ambiguous, left as it is.
    for run_id in ("ab", "abc"):
        journal.write(
            "INSERT INTO runs (run_id, workflow, fingerprint, status, steps, inputs, started)"
            " VALUES (?, 'ticketed', 'f', 'failed', '[]', '', 'now')",
            (run_id,),
        )
    journal.write(
        "INSERT INTO tickets (ticket, event, round, state, author, source, recorded, at, run_id)"
        " VALUES ('github:octo/app#1', 'comment:1', 2, 'started', 'ana', 'github:octo/app',"
        " 'now', 0, 'ab')",
        (),
    )
    before = len(github.requests)
    watching.sync()
    assert len(github.requests) == before


def test_a_review_workflow_that_cannot_take_the_round_stops_the_watcher(
    tmp_path: Path, github: FakeGitHub
) -> None:
    watching = watcher(tmp_path, github, review_workflow="untaking")
    assert not isinstance(watching.poll(), Refused)
    finish(tmp_path)
    github.add_review_comment(
        "octo/app", open_pull(github), "/adws", author="ana", path="a", line=1
    )
    assert isinstance(watching.poll(), Refused)


def test_a_ticket_past_the_hour_s_runs_is_deferred_and_said_once(
    tmp_path: Path, github: FakeGitHub
) -> None:
    github.add_issue("octo/app", "Slow", "", author="ana", labels=("adws",))
    watching = watcher(tmp_path, github, limits=TicketLimits(runs_per_hour=1))
    taken = watching.poll()
    assert not isinstance(taken, Refused)
    assert [t.state for t in taken] == ["started", "deferred"]
    assert github.comments("octo/app", 2) == []


def test_the_status_comment_follows_the_run_as_it_parks_waits_and_runs(
    tmp_path: Path, github: FakeGitHub
) -> None:
    watching = watcher(tmp_path, github)
    assert not isinstance(watching.poll(), Refused)
    journal = journal_of(tmp_path)
    (run,) = journal.runs()
    bodies = []
    for status, extra in (
        ("running", ""),
        ("parked", ", wake_at = 0"),
        ("parked", ", wake_at = NULL"),
        ("waiting", ""),
    ):
        journal.write(f"UPDATE runs SET status = ?{extra}", (status,))  # noqa: S608 - the test's
        journal.write("UPDATE tickets SET shown = 'queued'", ())
        watching.sync()
        bodies.append(github.comments("octo/app", 1)[0]["body"])
    journal.write(
        "UPDATE run_inputs SET inputs = ?",
        (encode_context(WorkflowContext(inputs={"ticket": "jira:X-1"})),),
    )
    journal.write("UPDATE runs SET status = 'succeeded'", ())
    watching.sync()
    bodies.append(github.comments("octo/app", 1)[0]["body"])
    rid = run.run_id
    assert bodies == [
        f"adws run {rid} started (ticketed)",
        f"adws run {rid} parked until 00:00 UTC; it goes on by itself",
        f"adws run {rid} parked until later; it goes on by itself",
        f"adws run {rid} waiting for approval: adws approve {rid}",
        f"adws run {rid} succeeded",
    ]


def test_a_journal_from_before_tickets_has_no_rounds(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "old.db") as db:
        db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        db.execute("INSERT INTO schema_version (version) VALUES (17)")
    journal = Journal(tmp_path / "old.db", readonly=True)
    assert journal_tickets.rounds(journal, "k") == []
    assert journal_tickets.ticket_of(journal, "r") is None


def test_a_loop_stops_with_the_code_a_poll_returns_and_on_a_signal() -> None:
    assert Loop(lambda: 1, 0.0).run() == 1
    stopped = threading.Event()
    loop = Loop(lambda: None, 0.01, stopped=stopped)
    threading.Timer(0.2, stopped.set).start()
    assert loop.run() == 143


def test_a_diffstat_s_paths_are_read_safely() -> None:
    assert _paths(None) == ()
    assert _paths({"files": "x"}) == ()
    assert _paths({"files": [{"path": "a.py"}, "b", {"nopath": 1}]}) == ("a.py",)


def test_taken_values_say_what_became_of_a_ticket() -> None:
    assert Taken("k", "seen").new is False


def test_of_two_watchers_one_shows_a_status_and_a_comment_being_made_is_left_alone(
    tmp_path: Path, github: FakeGitHub
) -> None:
    first, second = watcher(tmp_path, github), watcher(tmp_path, github)
    taken = first.issues()
    assert not isinstance(taken, Refused)
    # As if the first had not answered yet: the second's sync shows the run, the first keeps quiet.
    journal = journal_of(tmp_path)
    journal.write("UPDATE tickets SET shown = NULL, comment_id = NULL", ())
    github.state["repos"]["octo/app"]["comments"].clear()
    second.sync()
    first.answer(taken[0])
    assert len(github.comments("octo/app", 1)) == 1
    # A round whose comment another watcher is making (shown, no id yet) waits.
    journal.write("UPDATE tickets SET comment_id = NULL", ())
    journal.write("UPDATE runs SET status = 'running'", ())
    before = len(github.requests)
    second.sync()
    assert len(github.requests) == before
