"""`adws.runs.Runs`, in this process: the face every front end stands on.

Runs are started with the kit's agents and a `Runs` that leaves the test's
process alone (`whole_process=False`); the journal is a real SQLite file,
and what another host or a crashed process would have left in it is
written into it as they would have.
"""

from __future__ import annotations

import os
import socket
import sqlite3
from typing import TYPE_CHECKING

import pytest
from returns.io import IOFailure, IOSuccess

from adws import PipelineError, Step, Workflow, WorkflowContext, approval_step
from adws._exceptions import NotFoundError, RefusedError
from adws.journal import Journal
from adws.journal.records.options import RunOptions
from adws.runs import CancelOutcome, HandedOver, Refused, RunOutcome, RunRequest, Runs
from tests.conftest import dead_pid

if TYPE_CHECKING:
    from pathlib import Path

    from returns.io import IOResult

CLEANED: list[str] = []

FLOWS = """
from returns.io import IOSuccess

from adws import Step, Workflow


def greet(ctx):
    return IOSuccess(ctx.merge_outputs({"greeting": "hello " + ctx.inputs["name"]}))


def anything(ctx):
    return IOSuccess(ctx)


greet = Workflow(
    "greet", (Step("greet", greet, reads=("name",), writes=("greeting",)),), inputs=("name",)
)
loose = Workflow("loose", (Step("anything", anything),), inputs=("name",))
"""


def cleanup(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    failure = ctx.failure
    CLEANED.append("none" if failure is None else f"{failure.error_type}: {failure.message}")
    return IOSuccess(ctx)


def fails(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    return IOFailure(PipelineError("fails", "Failed", "on purpose"))


def gated() -> Workflow:
    return Workflow(
        "gated",
        (approval_step("ship", message="ship?"), Step("cleanup", cleanup, always_run=True)),
    )


def failing() -> Workflow:
    return Workflow("failing", (Step("fails", fails), Step("cleanup", cleanup, always_run=True)))


@pytest.fixture
def runs(tmp_path: Path) -> Runs:
    CLEANED.clear()
    return Runs(Journal(tmp_path / "runs.db"), whole_process=False, worktrees="")


@pytest.fixture
def flows(in_tmp: Path) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "flows.py").write_text(FLOWS)
    return in_tmp


def ran(runs: Runs, workflow: Workflow) -> RunOutcome:
    outcome = runs.run(RunRequest(workflow))
    assert isinstance(outcome, RunOutcome)
    return outcome


def spoil(runs: Runs, sql: str, *params: object) -> None:
    """Write into the journal what another process or host would have left there."""
    journal = runs.journal()
    assert isinstance(journal, Journal)
    with sqlite3.connect(journal.path) as db:  # type: ignore[arg-type] # a file's path
        db.execute(sql, params)


def test_a_named_workflow_is_checked_before_its_journal_is_opened(flows: Path) -> None:
    runs = Runs.open(whole_process=False)
    refused = runs.run(RunRequest("greet"))
    assert refused == Refused("workflow 'greet' needs input name: add -i name=...")
    assert not (flows / ".adws").exists()  # refused before anything was opened
    unknown = runs.run(RunRequest("nope"))
    assert isinstance(unknown, Refused)
    assert unknown.found is False
    assert isinstance(unknown.error(), NotFoundError)
    outcome = runs.run(RunRequest("greet", {"name": "ada"}))
    assert isinstance(outcome, RunOutcome)
    assert (outcome.status, outcome.summary.finished.context.inputs["greeting"]) == (  # type: ignore[union-attr]
        "succeeded",
        "hello ada",
    )
    assert outcome.options.workflows == str(flows / "workflows")
    assert outcome.journal == ".adws/runs.db"  # as it was named: relative to where adws runs


def test_an_input_a_loose_step_might_read_is_only_a_warning(flows: Path) -> None:
    said: list[str] = []
    runs = Runs.open(whole_process=False, say=said.append, record=False)
    outcome = runs.run(RunRequest("loose", {"name": "x", "nickname": "y"}))
    assert isinstance(outcome, RunOutcome)
    assert said == [
        (
            "adws: warning: workflow 'loose' declares no input 'nickname'; the inputs it"
            " declares: name (a step without reads= may still read it)"
        )
    ]
    assert not (flows / ".adws").exists()  # not recorded


def test_a_journal_that_cannot_be_opened_is_a_refusal(tmp_path: Path) -> None:
    missing = Runs.open(tmp_path / "none.db", create=False, whole_process=False)
    assert missing.journal() == Refused(
        f"no run journal at {tmp_path / 'none.db'}; `adws run` records runs there"
    )
    (tmp_path / "folder.db").mkdir()
    broken = Runs.open(tmp_path / "folder.db", whole_process=False).journal()
    assert isinstance(broken, Refused)
    assert broken.reason.startswith(f"cannot use the run journal {tmp_path / 'folder.db'}: ")
    assert missing.home == tmp_path.resolve()
    assert Runs.open("postgresql://db/adws").home == (Runs.open().home)


def test_refused_says_why_and_what_next_and_raises_as_the_kit_does() -> None:
    refused = Refused("run r1 is parked", 75, then="adws resume r1 --now goes on")
    assert str(refused) == "run r1 is parked; adws resume r1 --now goes on"
    assert isinstance(refused.error(), RefusedError)
    assert refused.error().refused is refused  # type: ignore[attr-defined]
    assert isinstance(Refused("nothing to do", 0).error(), NotFoundError)


def test_status_reads_a_run_and_its_attempts(runs: Runs) -> None:
    outcome = ran(runs, failing())
    state = runs.status(outcome.run_id[:6])
    assert not isinstance(state, Refused)
    assert (state.record.status, [row.step for row in state.attempts]) == (
        "failed",
        ["fails", "cleanup"],
    )
    assert runs.status("nope") == Refused(f"no run 'nope' in {runs.where}", found=False)


def test_a_failed_run_is_cancelled_at_once_and_never_resumed(runs: Runs) -> None:
    outcome = ran(runs, failing())
    CLEANED.clear()
    done = runs.cancel(outcome.run_id, "enough", by="ana")
    assert done == CancelOutcome(outcome.run_id, "cancelled")
    assert CLEANED == []  # its cleanup ran when it failed
    state = runs.status(outcome.run_id)
    assert not isinstance(state, Refused)
    record = state.record
    assert (record.status, record.cancel.by, record.cancel.reason) == ("cancelled", "ana", "enough")  # type: ignore[union-attr]
    assert record.error is not None
    assert (record.error.error_type, record.error.context["earlier"].message) == (
        "Cancelled",
        "on purpose",
    )
    again = runs.cancel(outcome.run_id)
    assert again == Refused(
        f"run {outcome.run_id} was cancelled already; there is nothing to cancel", 0
    )
    resumed = runs.resume(outcome.run_id, workflow=failing())
    assert isinstance(resumed, Refused)
    assert resumed.reason.startswith(f"run {outcome.run_id} was cancelled by ana at ")


def test_a_run_whose_holder_is_gone_is_cancelled_as_one_that_ended(runs: Runs) -> None:
    outcome = ran(runs, failing())
    spoil(
        runs,
        "UPDATE runs SET status = 'running', error = NULL, pid = ? WHERE run_id = ?",
        dead_pid(),
        outcome.run_id,
    )
    assert runs.cancel(outcome.run_id) == CancelOutcome(outcome.run_id, "cancelled")


def test_a_waiting_run_of_another_host_is_left_to_its_worker(runs: Runs) -> None:
    outcome = ran(runs, gated())
    spoil(runs, "UPDATE runs SET host = 'elsewhere' WHERE run_id = ?", outcome.run_id)
    done = runs.cancel(outcome.run_id, "from here", by="bo")
    assert done == CancelOutcome(outcome.run_id, "requested", holder="adws worker on elsewhere")
    assert CLEANED == []  # its cleanup runs on its own host
    state = runs.status(outcome.run_id)
    assert not isinstance(state, Refused)
    assert (state.record.status, state.record.cancel.by) == ("waiting", "bo")  # type: ignore[union-attr]
    approved = runs.approve(outcome.run_id, workflow=gated())
    assert isinstance(approved, Refused)  # the run changed: a cancel is on it
    resumed = runs.resume(outcome.run_id, workflow=gated(), here=True)
    assert isinstance(resumed, RunOutcome)  # here, it goes on only to be cancelled
    assert (resumed.status, CLEANED) == ("cancelled", ["Cancelled: cancelled by bo: from here"])


def test_a_decision_on_a_run_of_another_host_is_handed_to_it(runs: Runs) -> None:
    outcome = ran(runs, gated())
    spoil(runs, "UPDATE runs SET host = 'elsewhere' WHERE run_id = ?", outcome.run_id)
    handed = runs.approve(outcome.run_id, "ok", by="cy", workflow=gated())
    assert handed == HandedOver(outcome.run_id, "elsewhere")


def test_a_cancel_that_comes_during_cleanup_still_ends_the_run_cancelled(runs: Runs) -> None:
    def asks(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        journal = runs.journal()
        assert isinstance(journal, Journal)
        [record] = journal.runs(status="running")
        assert runs.cancel(record.run_id, "late") == CancelOutcome(
            record.run_id, "requested", holder=f"process {os.getpid()} on {record.host}"
        )
        return IOSuccess(ctx)

    workflow = Workflow("late", (Step("fails", fails), Step("asks", asks, always_run=True)))
    outcome = ran(runs, workflow)
    assert outcome.status == "cancelled"  # not `failed`: a person asked to end it
    state = runs.status(outcome.run_id)
    assert not isinstance(state, Refused)
    assert state.record.status == "cancelled"


def test_a_run_a_live_batch_holds_is_not_cancelled_from_outside_it(runs: Runs) -> None:
    outcome = ran(runs, failing())
    spoil(
        runs,
        "INSERT INTO batches (batch_id, workflow, source, total, status, started, pid, host)"
        " VALUES ('b1', 'failing', 'x', 1, 'running', 't', 1, ?)",
        socket.gethostname(),
    )
    spoil(runs, "UPDATE runs SET batch_id = 'b1' WHERE run_id = ?", outcome.run_id)
    refused = runs.cancel(outcome.run_id)
    assert isinstance(refused, Refused)
    assert refused.reason.startswith(f"run {outcome.run_id} belongs to batch b1, which process 1")


def test_a_run_held_by_no_worker_is_refused(runs: Runs) -> None:
    outcome = ran(runs, gated())
    refused = runs.run_held(outcome.run_id, "waiting")
    assert refused == Refused(
        f"run {outcome.run_id} is waiting, not held for this process by an adws worker; "
        f"nothing was run here (adws resume {outcome.run_id} continues it)"
    )


def test_every_door_is_refused_alike_when_its_journal_cannot_be_opened(
    flows: Path,
) -> None:
    (flows / "folder.db").mkdir()  # there, but no journal: it cannot be opened
    runs = Runs.open(flows / "folder.db", whole_process=False)
    cannot = runs.journal()
    assert isinstance(cannot, Refused)
    request = RunRequest("greet", {"name": "ada"})
    assert runs.submit(request) == cannot
    assert runs.estimate(request) == cannot
    assert runs.due() == cannot
    assert runs.status("r1") == cannot
    assert runs.preview("r1") == cannot
    assert runs.run_held("r1", "queued") == cannot
    assert runs.approve("r1", max_cost=1.0, max_tokens=10) == cannot
    not_recorded = Runs.open(flows / "folder.db", record=False, whole_process=False)
    replayed = not_recorded.run(
        RunRequest("greet", {"name": "ada"}, options=RunOptions(replay="r1"))
    )
    assert isinstance(replayed, Refused)
    assert replayed.reason.startswith(
        f"--replay r1: no such folder, and cannot read the run journal {flows / 'folder.db'}: "
    )
    assert runs.estimate(RunRequest("nope")) == Refused(
        f"unknown workflow 'nope' in {flows / 'workflows'}; known workflows: greet, loose",
        found=False,
    )


def test_a_preview_of_a_run_whose_workflow_is_gone_is_refused(runs: Runs, flows: Path) -> None:
    outcome = ran(runs, failing())
    refused = runs.preview(outcome.run_id)
    assert refused == Refused(
        f"unknown workflow 'failing' in {flows / 'workflows'}; known workflows: greet, loose",
        found=False,
    )


def test_a_running_run_is_asked_to_stop_once(runs: Runs) -> None:
    outcome = ran(runs, failing())
    spoil(
        runs,
        "UPDATE runs SET status = 'running', pid = 1, holder_started = NULL WHERE run_id = ?",
        outcome.run_id,
    )
    holder = f"process 1 on {socket.gethostname()}"
    first = runs.cancel(outcome.run_id, "first", by="ana")
    assert first == CancelOutcome(outcome.run_id, "requested", holder=holder)
    again = runs.cancel(outcome.run_id, "second", by="bo")
    assert again == CancelOutcome(outcome.run_id, "requested", holder=holder)
    state = runs.status(outcome.run_id)
    assert not isinstance(state, Refused)
    assert (state.record.cancel.by, state.record.cancel.reason) == ("ana", "first")  # type: ignore[union-attr]


def test_a_run_of_another_host_is_resumed_there_unless_here(runs: Runs) -> None:
    outcome = ran(runs, failing())
    spoil(runs, "UPDATE runs SET host = 'elsewhere' WHERE run_id = ?", outcome.run_id)
    refused = runs.resume(outcome.run_id, workflow=failing())
    assert isinstance(refused, Refused)
    assert refused.reason.startswith(f"run {outcome.run_id} belongs to host elsewhere: ")
