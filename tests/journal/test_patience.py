"""The journal first: a failed write is tried again on a new connection, then the run stops."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from returns.io import IOResult, IOSuccess

from adws import ErrorType, PipelineError, Step, Workflow, WorkflowContext, run_workflow
from adws.cli import main
from adws.journal import Journal, JournalError, JournalObserver
from adws.journal.store.patience import persist
from adws.runs._settings import journal_wait
from tests.conftest import FakeSleep, failure


class Clock:
    """A clock that moves only when slept on."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def failing(times: int) -> tuple[list[int], Callable[[], None]]:
    calls: list[int] = []

    def write() -> None:
        calls.append(1)
        if len(calls) <= times:
            msg = "database or disk is full"
            raise sqlite3.OperationalError(msg)

    return calls, write


def test_a_write_that_takes_at_once_is_not_tried_again(tmp_path: Path) -> None:
    calls, write = failing(0)
    clock = Clock()
    tries = persist(Journal(tmp_path / "j.db"), write, wait=30, sleep=clock.sleep, clock=clock)
    assert (tries, len(calls), clock.slept) == (0, 1, [])


def test_a_failed_write_is_tried_again_on_a_new_connection_until_it_takes(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.db")
    connections: list[object] = []

    def write() -> None:
        connections.append(journal._db)
        if len(connections) <= 3:
            msg = "database or disk is full"
            raise sqlite3.OperationalError(msg)

    clock = Clock()
    tries = persist(journal, write, wait=30, sleep=clock.sleep, clock=clock)
    assert (tries, clock.slept) == (3, [0.05, 0.1, 0.2])
    assert len({id(connection) for connection in connections}) == 4


def test_a_write_still_failing_after_the_wait_raises_its_last_failure(tmp_path: Path) -> None:
    calls, write = failing(100)
    clock = Clock()
    with pytest.raises(sqlite3.OperationalError, match="database or disk is full"):
        persist(Journal(tmp_path / "j.db"), write, wait=2.0, sleep=clock.sleep, clock=clock)
    assert clock.slept[:5] == [0.05, 0.1, 0.2, 0.5, 1.0]
    assert clock.slept[5:] == [pytest.approx(0.15)]  # what was left of the wait
    assert len(calls) == 7
    assert clock.now == pytest.approx(2.0)


def test_no_wait_means_the_first_failure_is_raised(tmp_path: Path) -> None:
    calls, write = failing(1)
    clock = Clock()
    with pytest.raises(sqlite3.OperationalError):
        persist(Journal(tmp_path / "j.db"), write, wait=0, sleep=clock.sleep, clock=clock)
    assert (len(calls), clock.slept) == (1, [])


def test_a_connection_that_cannot_be_opened_again_counts_as_a_failed_try(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    journal = Journal(path)
    path.unlink()
    path.mkdir()  # the file is gone: no new connection opens
    before = journal._db
    _calls, write = failing(2)
    clock = Clock()
    assert persist(journal, write, wait=30, sleep=clock.sleep, clock=clock) == 2
    assert journal._db is before


def test_a_journal_file_opened_for_reading_keeps_its_connection_when_reopened(
    tmp_path: Path,
) -> None:
    path = tmp_path / "j.db"
    Journal(path).close()
    journal = Journal(path, readonly=True)
    before = journal._db
    journal.reopen()
    assert journal._db is before
    assert journal.runs() == []


def test_a_servers_journal_opened_for_reading_reopens_for_reading(postgres_url: str) -> None:
    Journal(postgres_url).close()
    journal = Journal(postgres_url, readonly=True)
    before = journal._db
    journal.reopen()
    assert journal._db is not before
    with pytest.raises(JournalError, match="read-only transaction"):
        journal.write("DELETE FROM runs", ())


# -- the observer: the run stops at the step boundary --------------------------


def appends(log: list[str], name: str) -> Step:
    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        log.append(name)
        return IOSuccess(ctx)

    return Step(name, run)


def renames(path: Path, old: str, new: str) -> None:
    db = sqlite3.connect(path)
    db.execute(f"ALTER TABLE {old} RENAME TO {new}")
    db.commit()
    db.close()


def breaking(path: Path, log: list[str]) -> Step:
    """A step that takes the journal's `attempts` table away: its success cannot be recorded."""

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        log.append("break")
        renames(path, "attempts", "attempts_away")
        return IOSuccess(ctx)

    return Step("break", run)


def test_a_step_whose_end_was_not_recorded_stops_the_run_before_the_next_step(
    tmp_path: Path, fake_sleep: FakeSleep
) -> None:
    path = tmp_path / "j.db"
    journal = Journal(path)
    log: list[str] = []
    cleanup = Step("cleanup", appends(log, "cleanup").run, always_run=True)
    flow = Workflow("w", (breaking(path, log), appends(log, "after"), cleanup))
    observer = JournalObserver(journal, "f", wait=0, sleep=fake_sleep)
    error = failure(run_workflow(flow, observers=[observer], run_id="r1"))
    assert log == ["break", "cleanup"]
    assert (error.step_name, error.error_type) == ("after", ErrorType.INTERRUPTED)
    assert error.message == (
        f"interrupted: the journal {path} did not record the run for 0s (StepSucceeded of "
        "step 'break': no such table: attempts); no further step starts unrecorded"
    )
    assert observer.failure == "StepSucceeded of step 'break': no such table: attempts"
    # the break's end, the after's stop, the cleanup's end; the cleanup's start and the run's
    # end are recorded (they write to the runs table)
    assert (observer.lost, observer.retried) == (3, 0)
    [run] = journal.runs()
    assert (run.status, run.failed_step) == ("interrupted", "after")


def test_a_step_whose_start_was_not_recorded_never_starts(
    tmp_path: Path, fake_sleep: FakeSleep
) -> None:
    path = tmp_path / "j.db"
    journal = Journal(path)
    log: list[str] = []

    def drop_runs(ctx: WorkflowContext) -> bool:
        renames(path, "runs", "runs_away")  # the next start's write updates the run's row
        return True

    flow = Workflow(
        "w",
        (appends(log, "first"), Step("second", appends(log, "second").run, when=drop_runs)),
    )
    observer = JournalObserver(journal, "f", wait=0, sleep=fake_sleep)
    error = failure(run_workflow(flow, observers=[observer], run_id="r1"))
    assert log == ["first"]
    assert (error.step_name, error.error_type) == ("second", ErrorType.INTERRUPTED)
    assert observer.failure == "StepStarted of step 'second': no such table: runs"


def test_a_journal_back_within_the_wait_records_everything_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    path = tmp_path / "j.db"
    journal = Journal(path)
    log: list[str] = []
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 2:  # the journal comes back during the second pause
            renames(path, "attempts_away", "attempts")

    flow = Workflow("w", (breaking(path, log), appends(log, "after")))
    observer = JournalObserver(journal, "f", wait=30, sleep=sleep)
    result = run_workflow(flow, observers=[observer], run_id="r1")
    assert isinstance(result, IOSuccess)
    assert (log, slept) == (["break", "after"], [0.05, 0.1])
    assert (observer.failure, observer.lost, observer.retried) == (None, 0, 1)
    assert [attempt.step for attempt in journal.attempts("r1")] == ["break", "after"]
    assert journal.runs()[0].status == "succeeded"


def test_a_stopping_run_waits_for_its_cleanup_steps_writes(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    journal = Journal(path)
    log: list[str] = []
    clock = Clock()
    cleanup = Step("cleanup", appends(log, "cleanup").run, always_run=True)
    flow = Workflow("w", (breaking(path, log), appends(log, "after"), cleanup))
    observer = JournalObserver(journal, "f", wait=0.2, sleep=clock.sleep)
    failure(run_workflow(flow, observers=[observer], run_id="r1"))
    assert log == ["break", "cleanup"]
    # waited for: the break's end (lost), the cleanup's start (recorded), its end (lost), the
    # run's end (recorded); the after's stop is tried once
    assert clock.slept.count(0.05) == 2


def test_the_journal_wait_is_the_flags_else_the_environments_else_30s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ADWS_JOURNAL_WAIT", raising=False)
    assert journal_wait() == 30.0
    monkeypatch.setenv("ADWS_JOURNAL_WAIT", "2.5")
    assert (journal_wait(), journal_wait(7.0)) == (2.5, 7.0)


def test_a_journal_wait_that_is_not_seconds_is_refused_naming_the_variable(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "w.py").write_text(
        "from returns.io import IOSuccess\nfrom adws import Step, Workflow\n"
        "w = Workflow('w', (Step('s', lambda ctx: IOSuccess(ctx)),))\n"
    )
    monkeypatch.setenv("ADWS_JOURNAL_WAIT", "soon")
    assert main(["run", "w", "-q"]) == 2
    assert capsys.readouterr().err == (
        "adws: error: ADWS_JOURNAL_WAIT='soon': expected a number of seconds from 0 to "
        "2,592,000, got 'soon'\n"
    )
    assert main(["run", "w", "-q", "--journal-wait", "0.5"]) == 0
