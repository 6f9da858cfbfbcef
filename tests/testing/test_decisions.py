"""approve and reject: a test decides a waiting run through the claim `adws approve` uses."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

import pytest
from returns.io import IOSuccess

from adws import Step, Workflow, WorkflowContext, approval_step
from adws.journal import Journal
from adws.testing import approve, reject, resume, run

if TYPE_CHECKING:
    from pathlib import Path

    from returns.io import IOResult

    from adws import PipelineError


def write(key: str) -> Step:
    def step(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return IOSuccess(ctx.merge_outputs({key: f"{key} done"}))

    return Step(key, step, writes=(key,))


def gated(name: str = "gated") -> Workflow:
    return Workflow(
        name,
        (
            write("build"),
            approval_step("ok", message="Ship {build}?"),
            write("ship"),
            Step("cleanup", write("cleaned").run, always_run=True, writes=("cleaned",)),
        ),
    )


def waiting(journal: Path) -> str:
    report = run(gated(), journal=journal)
    assert report.status == "waiting"
    return report.run_id


def decisions(journal: Path) -> list[tuple[str, str | None, str | None, str | None]]:
    with sqlite3.connect(journal) as db:
        return db.execute("SELECT step, verdict, decided_by, note FROM approvals").fetchall()


def test_approve_records_the_decision_and_continues_the_run(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    run_id = waiting(journal)

    done = approve(journal, run_id, note="looks right", workflow=gated())

    assert (done.run_id, done.status) == (run_id, "succeeded")
    assert (done["build"].status, done["ship"].status) == ("carried_over", "succeeded")
    assert done.inputs["ship"] == "ship done"
    assert decisions(journal) == [("ok", "approved", "test", "looks right")]
    assert Journal(journal).find(run_id).status == "succeeded"  # type: ignore[union-attr] # found


def test_reject_runs_cleanup_and_ends_the_run_rejected(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    run_id = waiting(journal)

    done = reject(Journal(journal), run_id, reason="not now", by="ann", workflow=gated())

    assert done.status == "failed"
    assert done.error is not None
    assert (done.error.error_type, done.error.step_name) == ("Rejected", "ok")
    assert (done["ship"].status, done["cleanup"].status) == ("skipped", "succeeded")
    assert decisions(journal) == [("ok", "rejected", "ann", "not now")]


def test_without_a_workflow_it_is_found_by_name_in_the_workflows_folder(in_tmp: Path) -> None:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "gated.py").write_text(
        "from tests.testing.test_decisions import gated\n\nworkflow = gated()\n"
    )
    run_id = waiting(in_tmp / "runs.db")

    assert approve(in_tmp / "runs.db", run_id).status == "succeeded"


def test_a_workflow_not_in_the_workflows_folder_is_a_lookup_error(in_tmp: Path) -> None:
    run_id = waiting(in_tmp / "runs.db")

    with pytest.raises(LookupError) as raised:
        approve(in_tmp / "runs.db", run_id)

    assert str(raised.value) == (
        f"unknown workflow 'gated' in {in_tmp / 'workflows'}; known workflows: none"
    )


def test_a_run_that_is_not_waiting_is_refused(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    run_id = waiting(journal)
    approve(journal, run_id, workflow=gated())

    with pytest.raises(ValueError, match="is not waiting") as raised:
        reject(journal, run_id, reason="too late", workflow=gated())

    assert str(raised.value) == f"run {run_id} is not waiting for approval (it is succeeded)"


def test_a_run_the_journal_does_not_know_is_a_lookup_error(tmp_path: Path) -> None:
    waiting(tmp_path / "runs.db")

    with pytest.raises(LookupError, match="nope"):
        approve(tmp_path / "runs.db", "nope", workflow=gated())


def test_a_question_answered_meanwhile_is_refused_by_the_claim(tmp_path: Path) -> None:
    """Compare-and-set: the decision is recorded only while the question is open."""
    journal = tmp_path / "runs.db"
    run_id = waiting(journal)
    with sqlite3.connect(journal) as db:  # another person's decision, landed after our read
        db.execute("UPDATE approvals SET verdict = 'rejected', decided_by = 'bob'")

    with pytest.raises(ValueError, match="answered meanwhile") as raised:
        approve(journal, run_id, workflow=gated())

    assert str(raised.value) == (
        f"the question at step 'ok' of run {run_id} was answered meanwhile;"
        f" look again: adws status {run_id}"
    )
    assert decisions(journal) == [("ok", "rejected", "bob", None)]


def test_a_changed_finished_step_is_refused_as_adws_approve_refuses_it(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    run_id = waiting(journal)
    build = Step("build", write("other").run, writes=("build",))  # other code, same name
    changed = Workflow("gated", (build, *gated().steps[1:]))

    with pytest.raises(ValueError, match=run_id):
        approve(journal, run_id, workflow=changed)

    assert decisions(journal) == [("ok", None, None, None)]


def test_a_run_of_another_host_is_decided_there_so_the_kit_says_so(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    run_id = waiting(journal)
    with sqlite3.connect(journal) as db:  # as a run another host ran would be recorded
        db.execute("UPDATE runs SET host = 'elsewhere'")

    with pytest.raises(ValueError, match=f"run {run_id} continues on host elsewhere"):
        approve(journal, run_id, workflow=gated())

    assert decisions(journal) == [("ok", "approved", "test", "")]  # recorded, for its host


def test_a_resume_takes_inputs_by_their_older_name_too(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"

    def use(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return IOSuccess(ctx.merge_outputs({"used": ctx.inputs["extra_note"]}))

    needs = Workflow("needs", (write("build"), Step("use", use, reads=("extra_note",))))
    first = run(needs, journal=journal)
    assert first.status == "failed"  # extra_note is missing

    done = resume(needs, first.run_id, journal=journal, extra={"extra_note": "here"})

    assert (done.status, done["build"].status, done.inputs["used"]) == (
        "succeeded",
        "carried_over",
        "here",
    )
