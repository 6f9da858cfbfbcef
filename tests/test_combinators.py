"""with_verification: main, then verify; a failed verify feeds main again."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from returns.io import IOFailure, IOResult, IOSuccess
from returns.unsafe import unsafe_perform_io

from adws import (
    ErrorType,
    PipelineError,
    RetryPolicy,
    Step,
    Workflow,
    WorkflowContext,
    run_workflow,
    with_verification,
)
from adws.combinators import VerificationSpec

if TYPE_CHECKING:
    from tests.conftest import Recorder


def test_verify_failing_twice_then_passing_runs_main_three_times_with_both_errors(
    recorder: Recorder,
) -> None:
    main = Step("main", recorder.ok("main", code="v"))
    verify = Step("verify", recorder.fail("verify", times=2, verdict="pass"))
    combined = with_verification(main, verify, max_attempts=3)
    result = run_workflow(Workflow("w", (combined,)))
    assert isinstance(result, IOSuccess)
    assert recorder.names == ["main", "verify"] * 3
    third = recorder.seen("main")[2]
    assert third.feedback == (
        "verification round 1/3 failed: ShellFailed: verify broke",
        "verification round 2/3 failed: ShellFailed: verify broke",
    )
    assert dict(recorder.seen("verify")[0].inputs) == {"code": "v"}
    final = unsafe_perform_io(result.unwrap())
    assert dict(final.inputs) == {"code": "v", "verdict": "pass"}


def test_verify_never_passing_fails_after_max_rounds_with_the_last_verify_error(
    recorder: Recorder,
) -> None:
    combined = with_verification(
        Step("main", recorder.ok("main")), Step("verify", recorder.fail("verify")), max_attempts=2
    )
    result = run_workflow(Workflow("w", (combined,)))
    assert isinstance(result, IOFailure)
    error = unsafe_perform_io(result.failure())
    assert (error.step_name, error.error_type, error.message) == (
        "verify",
        "ShellFailed",
        "verify broke",
    )
    assert error.context["rounds"] == 2
    assert recorder.names == ["main", "verify", "main", "verify"]


def test_a_main_failure_ends_the_step_without_verifying(recorder: Recorder) -> None:
    combined = with_verification(
        Step("main", recorder.fail("main")), Step("verify", recorder.ok("verify"))
    )
    result = run_workflow(Workflow("w", (combined,)))
    assert unsafe_perform_io(result.failure()).step_name == "main"
    assert recorder.names == ["main"]


def test_main_keeps_its_own_retry_policy_inside_a_round(recorder: Recorder) -> None:
    main = Step("main", recorder.fail("main", times=1, x=1), retry=RetryPolicy(max_attempts=2))
    combined = with_verification(main, Step("verify", recorder.ok("verify")))
    assert isinstance(run_workflow(Workflow("w", (combined,))), IOSuccess)
    assert recorder.names == ["main", "main", "verify"]


def test_a_blocked_verify_is_not_run_again(recorder: Recorder) -> None:
    combined = with_verification(
        Step("main", recorder.ok("main")), Step("verify", recorder.fail("verify", "Blocked"))
    )
    result = run_workflow(Workflow("w", (combined,)))
    assert unsafe_perform_io(result.failure()).error_type == ErrorType.BLOCKED
    assert recorder.names == ["main", "verify"]


def test_main_outputs_clashing_with_inputs_is_a_collision(recorder: Recorder) -> None:
    combined = with_verification(
        Step("main", recorder.ok("main", x=1)), Step("verify", recorder.ok("verify"))
    )
    result = run_workflow(Workflow("w", (combined,)), WorkflowContext(inputs={"x": 0}))
    error = unsafe_perform_io(result.failure())
    assert (error.step_name, error.error_type) == ("main", ErrorType.CONTEXT_COLLISION)


def test_verify_outputs_clashing_with_main_outputs_is_a_collision(recorder: Recorder) -> None:
    def overwrite(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return IOSuccess(ctx.merge_outputs({"x": 2}))

    combined = with_verification(Step("main", recorder.ok("main", x=1)), Step("verify", overwrite))
    result = run_workflow(Workflow("w", (combined,)))
    error = unsafe_perform_io(result.failure())
    assert (error.step_name, error.error_type, error.message) == (
        "verify",
        "ContextCollision",
        "verify output 'x' would overwrite main's output",
    )


def test_the_combined_step_is_named_and_describes_itself(recorder: Recorder) -> None:
    main, verify = Step("main", recorder.ok("main")), Step("check", recorder.ok("check"))
    assert with_verification(main, verify).name == "main_verified"
    combined = with_verification(main, verify, name="build", max_attempts=5)
    assert (combined.name, combined.kind, combined.children) == (
        "build",
        "verification",
        (main, verify),
    )
    assert combined.spec == VerificationSpec(main, verify, 5)


def test_zero_rounds_is_refused_at_definition_time(recorder: Recorder) -> None:
    with pytest.raises(
        ValueError, match="with_verification: max_attempts must be an int >= 1, got 0"
    ):
        with_verification(Step("a", recorder.ok("a")), Step("b", recorder.ok("b")), max_attempts=0)
