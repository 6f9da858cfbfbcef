"""The SQLite journal: what a run records reads back as what happened."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from returns.io import IOFailure, IOResult, IOSuccess

from adws import (
    ErrorType,
    PipelineError,
    RetryPolicy,
    Step,
    Workflow,
    WorkflowContext,
    run_workflow,
)
from adws.journal import MIGRATIONS, Journal, JournalError, JournalObserver, resume_point
from adws.journal.store.sqlite import WORDS
from tests.conftest import FakeSleep, Recorder
from tests.strategies import Claim, Packet


def packet(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    return IOSuccess(ctx.merge_outputs({"packet": Packet("pass", (Claim("a", "b"),))}))


def test_a_runs_events_read_back_as_what_happened(
    journal_at: str, recorder: Recorder, fake_sleep: FakeSleep
) -> None:
    journal = Journal(journal_at)
    flow = Workflow(
        "w",
        (
            Step("make", packet),
            Step("flaky", recorder.fail("flaky", times=1, n=2), retry=RetryPolicy(max_attempts=2)),
            Step("skip", recorder.ok("skip"), when=lambda _ctx: False),
            Step("broken", recorder.fail("broken", ErrorType.SHELL_FAILED)),
            Step("after", recorder.ok("after")),
            Step("cleanup", recorder.ok("cleanup", cleaned=True), always_run=True),
        ),
    )
    result = run_workflow(
        flow,
        WorkflowContext(inputs={"seed": 1}),
        observers=[JournalObserver(journal, "fp1")],
        run_id="run1",
        sleep=fake_sleep,
    )
    assert isinstance(result, IOFailure)

    [run] = journal.runs()
    assert (run.run_id, run.workflow, run.fingerprint, run.status, run.failed_step) == (
        "run1",
        "w",
        "fp1",
        "failed",
        "broken",
    )
    assert run.steps == ("make", "flaky", "skip", "broken", "after", "cleanup")
    assert run.inputs() == WorkflowContext()  # a listing leaves the inputs out
    found = journal.find("run1")
    assert not isinstance(found, str)
    assert dict(found.inputs().inputs) == {"seed": 1}
    assert run.error is not None
    assert (run.error.step_name, run.error.message) == ("broken", "broken broke")
    assert run.finished is not None
    assert not run.stale

    attempts = journal.attempts("run1")
    assert [(a.step, a.attempt, a.status) for a in attempts] == [
        ("make", 1, "succeeded"),
        ("flaky", 1, "retried"),
        ("flaky", 2, "succeeded"),
        ("skip", 0, "skipped:condition"),
        ("broken", 1, "failed"),
        ("after", 0, "skipped:halted"),
        ("cleanup", 1, "succeeded"),
    ]
    assert attempts[0].outputs() == {"packet": Packet("pass", (Claim("a", "b"),))}
    flaky_error = attempts[1].error
    assert flaky_error is not None
    assert flaky_error.message == "flaky broke"
    assert attempts[4].error == PipelineError("broken", "ShellFailed", "broken broke")
    assert attempts[6].outputs() == {"cleaned": True}
    assert (attempts[1].outputs(), attempts[0].context()) == (None, None)


def test_resume_point_is_the_first_step_that_did_not_succeed(
    journal_at: str, recorder: Recorder
) -> None:
    journal = Journal(journal_at)
    flow = Workflow(
        "w",
        (
            Step("a", recorder.fail("a", times=1, x=1), retry=RetryPolicy(max_attempts=2)),
            Step("b", recorder.fail("b")),
            Step("c", recorder.ok("c")),
        ),
    )
    run_workflow(flow, observers=[JournalObserver(journal, "f")], run_id="r")
    name, ctx = resume_point(("a", "b", "c"), journal.attempts("r"))
    assert name == "b"
    assert ctx is not None
    assert dict(ctx.inputs) == {"x": 1}
    assert resume_point(("b", "c"), []) == ("b", WorkflowContext())


def test_resume_point_is_none_when_every_step_succeeded(
    journal_at: str, recorder: Recorder
) -> None:
    journal = Journal(journal_at)
    run_workflow(
        Workflow("w", (Step("a", recorder.ok("a", x=1)),)),
        observers=[JournalObserver(journal, "f")],
        run_id="r",
    )
    name, ctx = resume_point(("a",), journal.attempts("r"))
    assert name is None
    assert ctx is not None


def test_runs_are_listed_newest_first_and_filtered(journal_at: str, recorder: Recorder) -> None:
    journal = Journal(journal_at)
    good = Workflow("good", (Step("a", recorder.ok("a")),))
    bad = Workflow("bad", (Step("a", recorder.fail("a")),))
    for run_id, flow in (("r1", good), ("r2", bad), ("r3", good)):
        run_workflow(flow, observers=[JournalObserver(journal, "f")], run_id=run_id)
    assert [r.run_id for r in journal.runs()] == ["r3", "r2", "r1"]
    assert [r.run_id for r in journal.runs(workflow="good")] == ["r3", "r1"]
    assert [r.run_id for r in journal.runs(status="failed")] == ["r2"]
    assert [r.run_id for r in journal.runs(limit=1)] == ["r3"]


def test_find_accepts_a_unique_prefix(journal_at: str, recorder: Recorder) -> None:
    journal = Journal(journal_at)
    for run_id in ("abc1", "abc2", "x_y"):
        run_workflow(
            Workflow("w", (Step("a", recorder.ok("a")),)),
            observers=[JournalObserver(journal, "f")],
            run_id=run_id,
        )
    found = journal.find("x_")
    assert not isinstance(found, str)
    assert found.run_id == "x_y"
    assert (
        journal.find("abc") == f"run id 'abc' is ambiguous in {journal.path}; give more characters"
    )
    assert journal.find("zzz") == f"no run 'zzz' in {journal.path}"
    assert isinstance(journal.find("x%"), str)


def test_a_resumed_run_is_updated_in_place(journal_at: str, recorder: Recorder) -> None:
    journal = Journal(journal_at)
    flow = Workflow(
        "w", (Step("a", recorder.ok("a", x=1)), Step("b", recorder.fail("b", times=1, y=2)))
    )
    run_workflow(flow, observers=[JournalObserver(journal, "f1")], run_id="r")
    run_workflow(
        flow,
        WorkflowContext(inputs={"x": 1}),
        observers=[JournalObserver(journal, "f2")],
        run_id="r",
        resume_from="b",
    )
    [run] = journal.runs()
    assert (run.status, run.resumes, run.fingerprint, run.error) == ("succeeded", 1, "f2", None)
    assert [(a.step, a.status) for a in journal.attempts("r")] == [
        ("a", "succeeded"),
        ("b", "failed"),
        ("b", "succeeded"),
    ]


def test_mark_sets_the_status(journal_at: str, recorder: Recorder) -> None:
    journal = Journal(journal_at)
    run_workflow(
        Workflow("w", (Step("a", recorder.ok("a")),)),
        observers=[JournalObserver(journal, "f")],
        run_id="r",
    )
    journal.mark("r", "interrupted")
    assert journal.runs()[0].status == "interrupted"


def test_a_running_run_whose_process_is_gone_is_stale(journal_at: str) -> None:
    journal = Journal(journal_at)

    def dead_pid(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        journal.write("UPDATE runs SET pid = ? WHERE run_id = 'r'", (2**22 + 12345,))
        return IOSuccess(ctx)

    events: list[object] = []
    run_workflow(
        Workflow("w", (Step("a", dead_pid),)),
        observers=[JournalObserver(journal, "f"), events.append],
        run_id="r",
    )
    journal.write("UPDATE runs SET status = 'running'", ())
    [run] = journal.runs()
    assert run.stale
    assert run.to_dict()["stale"] is True


def test_a_corrupt_journal_is_a_clear_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(
        JournalError, match=f"cannot use the run journal {path}: file is not a database"
    ):
        Journal(path)


def test_an_unreadable_journal_path_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    path.mkdir()
    with pytest.raises(JournalError, match=f"cannot use the run journal {path}"):
        Journal(path)


def test_a_journal_from_a_newer_adws_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    Journal(path).close()
    db = sqlite3.connect(path)
    db.execute("INSERT INTO schema_version (version) VALUES (99)")
    db.commit()
    db.close()
    known = len(MIGRATIONS)
    with pytest.raises(
        JournalError, match=rf"written by a newer adws \(schema 99, this one knows {known}\)"
    ):
        Journal(path)


def test_reopening_does_not_migrate_twice(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    Journal(path).close()
    journal = Journal(path)
    assert [tuple(row) for row in journal.query("SELECT version FROM schema_version")] == [
        (number,) for number in range(1, len(MIGRATIONS) + 1)
    ]


def test_a_journal_written_by_schema_1_is_migrated_forward_in_place(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    for statement in MIGRATIONS[0]:
        db.execute(statement.format_map(WORDS))
    db.execute("INSERT INTO schema_version (version) VALUES (1)")
    db.execute(
        "INSERT INTO runs (run_id, workflow, fingerprint, status, steps, inputs, started)"
        " VALUES ('old', 'w', 'f', 'failed', '[\"a\"]', '{}', 'then')"
    )
    db.commit()
    db.close()
    journal = Journal(path)
    [run] = journal.runs()
    assert (run.run_id, run.status, run.children) == ("old", "failed", ())
    journal.record_children("old", [12345])
    assert journal.runs()[0].children == (12345,)


def test_a_read_failure_names_the_file(journal_at: str) -> None:
    journal = Journal(journal_at)
    journal._db.execute("DROP TABLE attempts")
    with pytest.raises(
        JournalError, match=r"cannot read the run journal .*: (no such table: |relation \")attempts"
    ):
        journal.attempts("r")


def test_a_failed_write_rolls_back(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "runs.db")
    with pytest.raises(sqlite3.Error):
        journal.write("INSERT INTO nowhere VALUES (?)", (1,))
    journal.write("UPDATE runs SET status = 'x'", ())


def test_opening_a_new_journal_locked_by_another_process_waits_and_retries(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    waits: list[float] = []

    def release_on_first_wait(seconds: float) -> None:
        waits.append(seconds)
        if other.in_transaction:
            other.execute("COMMIT")

    Journal(path, busy_timeout=0, sleep=release_on_first_wait).close()
    other.close()
    assert waits == [0.05]


def test_a_journal_that_stays_locked_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    waits: list[float] = []
    with pytest.raises(JournalError, match="database is locked"):
        Journal(path, busy_timeout=0, sleep=waits.append)
    other.close()
    assert waits == [0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2]


def test_children_on_another_host_are_not_checked(journal_at: str) -> None:
    journal = Journal(journal_at)
    journal.write(
        "INSERT INTO runs (run_id, workflow, fingerprint, status, steps, inputs, started, host,"
        " children) VALUES ('r', 'w', 'f', 'running', '[]', '{}', 'now', 'elsewhere', '[1]')",
        (),
    )
    [run] = journal.runs()
    assert (run.children, run.live_children()) == ((1,), ())
