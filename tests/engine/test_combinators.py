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
    sequence,
    with_verification,
)
from adws.engine.combinators import SequenceSpec, VerificationSpec
from tests.conftest import failure, success

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


def test_a_sequence_promotes_outputs_between_its_steps_and_outputs_them_all(
    recorder: Recorder,
) -> None:
    stage = sequence(
        "stage",
        [Step("plan", recorder.ok("plan", plan="p")), Step("act", recorder.ok("act", done=1))],
    )
    ctx = success(run_workflow(Workflow("w", (stage,)), WorkflowContext(inputs={"task": "t"})))
    assert dict(recorder.seen("act")[0].inputs) == {"task": "t", "plan": "p"}
    assert dict(ctx.inputs) == {"task": "t", "plan": "p", "done": 1}


def test_a_sequence_fails_at_its_first_failure_but_runs_its_always_run_steps(
    recorder: Recorder,
) -> None:
    stage = sequence(
        "stage",
        [
            Step("a", recorder.fail("a")),
            Step("b", recorder.ok("b")),
            Step("c", recorder.fail("c"), always_run=True),
            Step("d", recorder.ok("d"), always_run=True),
        ],
    )
    error = failure(run_workflow(Workflow("w", (stage,))))
    assert recorder.names == ["a", "c", "d"]
    assert recorder.seen("d")[0].failure == PipelineError(
        "a", "ShellFailed", "a broke", {"attempts": 1, "feedback": []}
    )
    assert (error.step_name, error.message) == ("a", "a broke")
    assert [e.step_name for e in error.context["always_run_failures"]] == ["c"]


def test_a_sequence_honours_conditions_and_reports_one_that_raises(recorder: Recorder) -> None:
    def boom(_ctx: WorkflowContext) -> bool:
        msg = "no"
        raise ValueError(msg)

    stage = sequence(
        "stage",
        [
            Step("skipped", recorder.ok("skipped"), when=lambda _ctx: False),
            Step("runs", recorder.ok("runs", x=1)),
            Step("raises", recorder.ok("raises"), when=boom),
        ],
    )
    error = failure(run_workflow(Workflow("w", (stage,))))
    assert recorder.names == ["runs"]
    assert (error.step_name, error.error_type, error.message) == (
        "raises",
        "StepException",
        "the condition of step 'raises' raised ValueError: no",
    )


def test_a_collision_inside_a_sequence_is_a_context_collision(recorder: Recorder) -> None:
    stage = sequence("stage", [Step("a", recorder.ok("a", x=1)), Step("b", recorder.ok("b", x=2))])
    error = failure(run_workflow(Workflow("w", (stage,))))
    assert (error.step_name, error.error_type) == ("b", "ContextCollision")


def test_verifying_a_sequence_reruns_the_whole_stage_with_the_feedback(recorder: Recorder) -> None:
    stage = sequence(
        "stage", [Step("plan", recorder.ok("plan", plan="p")), Step("act", recorder.ok("act", a=1))]
    )
    verify = Step("verify", recorder.fail("verify", times=1, verdict="ok"))
    ctx = success(run_workflow(Workflow("w", (with_verification(stage, verify),))))
    assert recorder.names == ["plan", "act", "verify"] * 2
    assert recorder.seen("plan")[1].feedback == (
        "verification round 1/3 failed: ShellFailed: verify broke",
    )
    assert recorder.seen("act")[1].feedback == recorder.seen("plan")[1].feedback
    assert (ctx.inputs["plan"], ctx.inputs["a"], ctx.inputs["verdict"]) == ("p", 1, "ok")


def test_a_sequence_checks_its_definition() -> None:
    step = Step("a", IOSuccess)
    with pytest.raises(ValueError, match=r"sequence 's': step names must be distinct"):
        sequence("s", [step, step])
    with pytest.raises(TypeError, match=r"sequence 's'.*steps"):
        sequence("s", "ab")  # type: ignore[arg-type] # a mistake on purpose
    with pytest.raises(TypeError, match=r"sequence 's'.*steps"):
        sequence("s", [step, "b"])  # type: ignore[list-item] # a mistake on purpose
    empty = sequence("s", [], always_run=True, when=lambda _ctx: True, rerun_on_resume=True)
    assert (empty.kind, empty.spec, empty.always_run, empty.rerun_on_resume) == (
        "sequence",
        SequenceSpec(()),
        True,
        True,
    )
    assert success(run_workflow(Workflow("w", (empty,)))) == WorkflowContext()


def test_a_sequence_is_drawn_as_a_chain_and_shown_with_its_steps() -> None:
    from adws.render import show_text, to_mermaid  # noqa: PLC0415 - only this test draws

    ok = Step("plan", IOSuccess)
    stage = sequence("stage", [ok, Step("act", IOSuccess), Step("check", IOSuccess)])
    drawn = to_mermaid(Workflow("w", (stage,))).splitlines()
    for line in (
        '    subgraph stage["stage · sequence"]',
        '        plan["plan<br/>python"]',
        "        plan --> act",
        "        act --> check",
        "    start --> stage",
    ):
        assert line in drawn
    assert show_text(Workflow("w", (stage,))).splitlines()[2] == (
        "  1. stage: sequence · 1 attempt · runs plan then act then check"
    )
    assert show_text(Workflow("w", (sequence("empty", []),))).splitlines()[2] == (
        "  1. empty: sequence · 1 attempt · runs nothing"
    )
