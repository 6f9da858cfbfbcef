"""Parking: a limit past the run's max_wait ends the run `parked`; inside parallel, only its branch."""

from __future__ import annotations

from pathlib import Path

import pytest
from returns.io import IOFailure, IOResult, IOSuccess

from adws import (
    PipelineError,
    Step,
    Workflow,
    WorkflowContext,
    fan_out,
    parallel,
    run_workflow,
)
from adws.engine.errors import ErrorType
from adws.engine.events import RunFinished
from adws.engine.parking import is_parked, park, wake_at
from adws.journal import Journal, JournalObserver
from adws.render import Progress, format_event
from adws.runs.summary import RunSummary
from tests.conftest import Events, failure, success


def ok(key: str, value: object = 1) -> Step:
    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return IOSuccess(ctx.merge_outputs({key: value}))

    return Step(key, run)


def limited(name: str, when: float = 5000.0) -> Step:
    """A step whose agent's limit resets at `when`: it parks."""

    def run(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        error = PipelineError("", ErrorType.AGENT_UNAVAILABLE, "API error 429 (usage limit)")
        return IOFailure(park(error, when, "claude usage limit"))

    return Step(name, run)


def broken(name: str) -> Step:
    def run(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return IOFailure(PipelineError("", "ShellFailed", f"{name} broke"))

    return Step(name, run)


def test_a_parked_step_ends_the_run_parked_and_its_cleanup_waits_too() -> None:
    events = Events()
    cleanup = Step("cleanup", ok("cleaned").run, always_run=True)
    error = failure(run_workflow(Workflow("w", (limited("ask"), cleanup)), observers=[events]))
    assert (error.error_type, error.step_name, wake_at(error)) == ("Parked", "ask", 5000.0)
    finished = events.events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.status == "parked"
    assert "cleanup" not in [getattr(event, "step", None) for event in events.events]


def test_a_parked_branch_lets_its_siblings_run_to_their_end_then_the_step_parks() -> None:
    events = Events()
    step = parallel("all", [ok("a"), limited("b", 6000.0), limited("c", 7000.0), ok("d")])
    error = failure(run_workflow(Workflow("w", (step,)), observers=[events]))
    assert error.error_type == "Parked"
    assert error.message == "claude usage limit (2 of 4 branches parked: all[b], all[c])"
    assert (error.context["wake_at"], error.context["parked_branches"]) == (
        7000.0,
        ("all[b]", "all[c]"),
    )
    statuses = {path: branch["status"] for path, branch in error.context["branches"].items()}
    assert statuses == {"all[a]": "succeeded", "all[b]": "failed", "all[c]": "failed"} | {
        "all[d]": "succeeded"
    }
    finished = events.events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.status == "parked"


def test_a_real_failure_beside_a_parked_branch_fails_the_step() -> None:
    step = fan_out("each", limited("ask"), over="items", fail_fast=False)
    mixed = parallel("all", [limited("a"), broken("b")], fail_fast=False)
    assert failure(run_workflow(Workflow("w", (mixed,)))).error_type == "ShellFailed"
    ctx = WorkflowContext(inputs={"items": [1, 2]})
    assert failure(run_workflow(Workflow("w", (step,)), ctx)).error_type == "Parked"


def test_min_successes_reached_without_a_parked_branch_succeeds_listing_it() -> None:
    step = parallel("all", [ok("a"), limited("b")], min_successes=1)
    ctx = success(run_workflow(Workflow("w", (step,))))
    [dropped] = ctx.inputs["all_failures"]
    assert dropped["error_type"] == "Parked"
    needing = parallel("all", [ok("a"), limited("b"), broken("c")], min_successes=2)
    assert failure(run_workflow(Workflow("w", (needing,)))).error_type == "Parked"


def test_the_journal_records_the_parked_run_with_its_wake_time_and_reason(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "runs.db")
    recorder = JournalObserver(journal, "fp", {})
    run_workflow(Workflow("w", (limited("ask"),)), observers=[recorder], run_id="r1")
    [record] = journal.runs(status="parked")
    assert (record.wake_at, record.parked_reason, record.failed_step) == (
        5000.0,
        "claude usage limit",
        "ask",
    )
    assert record.to_dict()["wake_at"] == 5000.0
    assert record.due(5000.0)
    assert not record.due(4999.0)


def test_progress_and_the_summary_say_parked_not_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    summary, lines = RunSummary(), []
    progress = Progress()

    def printed(event: object) -> None:
        lines.extend(progress.lines(event))  # type: ignore[arg-type] # a run event

    step = parallel("all", [ok("a"), limited("b")])
    run_workflow(Workflow("w", (limited("ask"), step)), observers=[summary, printed])
    assert summary.to_dict()["wake_at"] == 5000.0
    assert summary.steps[0].status == "parked"
    assert lines[2].startswith("[1/2] ask … parked until ")
    assert lines[2].endswith(": claude usage limit")
    assert lines[3] == "      API error 429 (usage limit)"
    assert lines[-1].startswith("w parked until ")
    assert lines[-1].endswith(
        f": claude usage limit at ask (run {summary.run_id}): adws resume {summary.run_id} "
        "then, or adws resume --due"
    )
    branch_lines: list[str] = []
    run_workflow(
        Workflow("w", (step,)), observers=[lambda event: branch_lines.extend(progress.lines(event))]
    )
    assert any(line.startswith("[1/1] all[b] … parked until ") for line in branch_lines)
    assert any(line.startswith("[1/1] all[b] … parked · ") for line in branch_lines)
    assert format_event(
        RunFinished("r", "w", "parked", None, WorkflowContext(), 1.0, None, None)
    ) == ("w parked in 1.0s (run r)")


def test_only_a_parked_error_with_a_readable_time_has_one() -> None:
    assert not is_parked(None)
    assert wake_at(PipelineError("s", "Parked", "x", {"wake_at": float("nan")})) is None
    assert wake_at(PipelineError("s", "Parked", "x", {"wake_at": -1})) is None
    assert wake_at(PipelineError("s", "Blocked", "x", {"wake_at": 5})) is None
