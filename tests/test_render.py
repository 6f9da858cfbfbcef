"""Progress lines and descriptions."""

from __future__ import annotations

from returns.io import IOResult, IOSuccess

from adws import PipelineError, RetryPolicy, Step, Workflow, WorkflowContext
from adws.events import (
    AttemptFailed,
    ObserverFailed,
    RunFinished,
    RunStarted,
    StepSkipped,
    StepStarted,
)
from adws.journal import AttemptRecord, RunRecord
from adws.render import describe_retry, format_event, status_text, to_mermaid

ERROR = PipelineError("verify", "ContractViolation", "STATUS missing\nmore")


def test_progress_lines() -> None:
    ctx = WorkflowContext()
    assert format_event(RunStarted("r", "w", ("a", "b"), ctx)) == "w: run r, 2 steps"
    assert format_event(RunStarted("r", "w", ("a", "b"), ctx, 1, resumed=True)) == (
        "w: run r, 2 steps, resuming at b"
    )
    assert format_event(RunStarted("r", "w", ("a",), ctx, 1, resumed=True)) == "w: run r, 1 step"
    assert format_event(StepStarted("r", "verify", 1, 4, 3, False)) == "[2/4] verify … running"
    assert format_event(AttemptFailed("r", "verify", 1, 4, 2, 3, ERROR, True, 0.0, 0.1)) == (
        "[2/4] verify … attempt 2/3 failed: ContractViolation: STATUS missing; retrying"
    )
    assert format_event(AttemptFailed("r", "verify", 1, 4, 1, 3, ERROR, True, 2.0, 0.1)).endswith(
        "; retrying in 2.0s"
    )
    assert format_event(AttemptFailed("r", "verify", 1, 4, 1, 1, ERROR, False, 0.0, 0.1)) == (
        "[2/4] verify … failed: ContractViolation: STATUS missing"
    )
    assert format_event(StepSkipped("r", "write", 2, 4, "halted")) == (
        "[3/4] write … skipped (an earlier step failed)"
    )
    assert (
        format_event(StepSkipped("r", "write", 2, 4, "condition"))
        == "[3/4] write … skipped (condition is false)"
    )
    assert (
        format_event(RunFinished("r", "w", "succeeded", None, ctx, 1.25))
        == "w succeeded in 1.2s (run r)"
    )
    assert format_event(RunFinished("r", "w", "failed", ERROR, ctx, 2)) == (
        "w failed in 2.0s at verify: ContractViolation: STATUS missing (run r)"
    )
    no_step = PipelineError("", "MissingInput", "")
    assert (
        format_event(RunFinished("r", "w", "failed", no_step, ctx, 0))
        == "w failed in 0.0s: MissingInput:  (run r)"
    )
    assert format_event(ObserverFailed("r", "journal", "OSError: disk full")) == (
        "warning: observer journal failed and was detached: OSError: disk full"
    )


def test_long_errors_are_cut_to_one_readable_line() -> None:
    long = PipelineError("s", "ShellFailed", "x" * 500)
    line = format_event(AttemptFailed("r", "s", 0, 1, 1, 1, long, False, 0.0, 0.0))
    assert line.endswith("x…")
    assert len(line) < 300


def test_describe_retry_mentions_jitter() -> None:
    assert (
        describe_retry(RetryPolicy(2, delay=1, jitter=0.5))
        == "2 attempts, wait 1s x2 up to 60s +≤0.5s jitter"
    )


def test_mermaid_draws_no_failure_edge_after_the_last_always_run_step() -> None:
    flow = Workflow("w", (Step("a", noop, always_run=True), Step("b", noop)))
    assert to_mermaid(flow).splitlines()[-2:] == [
        "    b --> finish((done))",
        "    classDef always stroke-dasharray: 5 3",
    ]


def noop(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    return IOSuccess(ctx)


def test_status_text_marks_steps_never_reached() -> None:
    record = RunRecord(
        "r", "w", "f", "running", ("a", "b"), "{}", "t0", None, None, None, None, None, None, 0
    )
    attempt = AttemptRecord("a", 0, 1, "succeeded", "t1", 0.5, None, None)
    assert status_text(record, [attempt]) == (
        "run r · w · running\nstarted t0\n  1. a: succeeded (1 attempt, 0.5s)\n  2. b: not run"
    )
