"""The executor, one rule of DESIGN.md's "Executor semantics" per test."""

from __future__ import annotations

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
from adws.engine.events import (
    AttemptFailed,
    ObserverFailed,
    RunEvent,
    RunFinished,
    StepSkipped,
    StepSucceeded,
)
from adws.engine.executor import feedback_line, retry_step
from tests.conftest import Events, FakeSleep, Recorder
from tests.conftest import failure as err
from tests.conftest import success as ok_ctx


def test_steps_run_in_declaration_order(recorder: Recorder) -> None:
    """Rule 1: one for-loop, in order."""
    flow = Workflow("w", [Step(n, recorder.ok(n)) for n in ("a", "b", "c")])
    run_workflow(flow)
    assert recorder.names == ["a", "b", "c"]


def test_outputs_are_promoted_into_inputs_for_later_steps(recorder: Recorder) -> None:
    """Rule 2: each later step sees earlier outputs as inputs; outputs start empty."""
    flow = Workflow(
        "w",
        (
            Step("a", recorder.ok("a", x=1)),
            Step("b", recorder.ok("b", y=2)),
            Step("c", recorder.ok("c")),
        ),
    )
    final = ok_ctx(run_workflow(flow, WorkflowContext(inputs={"seed": 0})))
    assert dict(recorder.seen("b")[0].inputs) == {"seed": 0, "x": 1}
    assert dict(recorder.seen("b")[0].outputs) == {}
    assert dict(recorder.seen("c")[0].inputs) == {"seed": 0, "x": 1, "y": 2}
    assert dict(final.inputs) == {"seed": 0, "x": 1, "y": 2}
    assert dict(final.outputs) == {}


def test_an_output_that_clashes_with_an_input_is_a_context_collision(recorder: Recorder) -> None:
    """Rule 2: never a silent overwrite."""
    flow = Workflow(
        "w",
        (
            Step("a", recorder.ok("a", x=1)),
            Step("b", recorder.ok("b", x=2)),
            Step("c", recorder.ok("c")),
        ),
    )
    error = err(run_workflow(flow))
    assert (error.step_name, error.error_type) == ("b", ErrorType.CONTEXT_COLLISION)
    assert error.message == "output 'x' would overwrite an existing input"
    assert error.context["keys"] == ("x",)
    assert recorder.names == ["a", "b"]


def test_a_collision_is_not_retried(recorder: Recorder, fake_sleep: FakeSleep) -> None:
    flow = Workflow("w", (Step("a", recorder.ok("a", x=1), retry=RetryPolicy(max_attempts=3)),))
    error = err(run_workflow(flow, WorkflowContext(inputs={"x": 0}), sleep=fake_sleep))
    assert error.error_type == ErrorType.CONTEXT_COLLISION
    assert recorder.names == ["a"]
    assert error.context["attempts"] == 1


def test_a_step_whose_condition_is_false_is_skipped_not_failed(
    recorder: Recorder, events: Events
) -> None:
    """Rule 3."""
    flow = Workflow(
        "w",
        (
            Step("a", recorder.ok("a")),
            Step("b", recorder.ok("b"), when=lambda ctx: "go" in ctx.inputs),
            Step("c", recorder.ok("c")),
        ),
    )
    result = run_workflow(flow, observers=[events])
    assert isinstance(result, IOSuccess)
    assert recorder.names == ["a", "c"]
    skipped = [e for e in events.events if isinstance(e, StepSkipped)]
    assert [(e.step, e.reason) for e in skipped] == [("b", "condition")]


def test_a_failure_halts_the_pipeline_and_is_returned(recorder: Recorder, events: Events) -> None:
    """Rule 4: later steps are skipped unless always_run."""
    flow = Workflow(
        "w",
        (
            Step("a", recorder.ok("a")),
            Step("b", recorder.fail("b")),
            Step("c", recorder.ok("c")),
            Step("d", recorder.ok("d"), always_run=True),
        ),
    )
    error = err(run_workflow(flow, observers=[events]))
    assert recorder.names == ["a", "b", "d"]
    assert (error.step_name, error.error_type, error.message) == ("b", "ShellFailed", "b broke")
    skipped = [(e.step, e.reason) for e in events.events if isinstance(e, StepSkipped)]
    assert skipped == [("c", "halted")]


def test_always_run_steps_also_run_when_nothing_failed(recorder: Recorder) -> None:
    flow = Workflow(
        "w", (Step("a", recorder.ok("a")), Step("z", recorder.ok("z"), always_run=True))
    )
    final = ok_ctx(run_workflow(flow))
    assert recorder.names == ["a", "z"]
    assert recorder.seen("z")[0].failure is None
    assert final.failure is None


def test_always_run_steps_see_the_last_good_context_and_the_first_failure(
    recorder: Recorder,
) -> None:
    """Rule 5."""
    flow = Workflow(
        "w",
        (
            Step("a", recorder.ok("a", made="yes")),
            Step("b", recorder.fail("b")),
            Step("z", recorder.ok("z", report="written"), always_run=True),
            Step("y", recorder.ok("y"), always_run=True),
        ),
    )
    error = err(run_workflow(flow))
    seen = recorder.seen("z")[0]
    assert dict(seen.inputs) == {"made": "yes"}
    assert seen.failure == PipelineError(
        "b", "ShellFailed", "b broke", {"attempts": 1, "feedback": ()}
    )
    later = recorder.seen("y")[0]
    assert dict(later.inputs) == {"made": "yes", "report": "written"}
    assert later.failure == seen.failure
    assert error == seen.failure


def test_always_run_failures_are_listed_and_never_replace_the_first_error(
    recorder: Recorder,
) -> None:
    """Rule 5: errors of always_run steps go under always_run_failures."""
    flow = Workflow(
        "w",
        (
            Step("a", recorder.fail("a", ErrorType.TIMEOUT)),
            Step("z", recorder.fail("z"), always_run=True),
            Step("y", recorder.boom("y"), always_run=True),
        ),
    )
    error = err(run_workflow(flow))
    assert (error.step_name, error.error_type) == ("a", "Timeout")
    late = error.context["always_run_failures"]
    assert [(e.step_name, e.error_type) for e in late] == [
        ("z", "ShellFailed"),
        ("y", "StepException"),
    ]


def test_a_failing_always_run_step_fails_a_run_that_had_succeeded(recorder: Recorder) -> None:
    flow = Workflow(
        "w", (Step("a", recorder.ok("a")), Step("z", recorder.fail("z"), always_run=True))
    )
    error = err(run_workflow(flow))
    assert (error.step_name, "always_run_failures" in error.context) == ("z", False)


def test_a_raising_step_becomes_a_step_exception(recorder: Recorder) -> None:
    """Rule 6: type, message and traceback in context."""
    flow = Workflow("w", (Step("a", recorder.boom("a")),))
    error = err(run_workflow(flow))
    assert (error.step_name, error.error_type) == ("a", ErrorType.STEP_EXCEPTION)
    assert error.message == "step 'a' raised RuntimeError: a exploded"
    assert error.context["exception_type"] == "RuntimeError"
    assert error.context["exception_message"] == "a exploded"
    assert "raise RuntimeError(msg)" in error.context["traceback"]


def test_a_step_returning_something_else_is_a_step_exception_naming_it() -> None:
    """Rule 6: the message names what the step returned."""
    bad_values = {
        "none": lambda _ctx: None,
        "plain": lambda ctx: ctx,
        "wrong_success": lambda _ctx: IOSuccess(42),
        "wrong_failure": lambda _ctx: IOFailure("nope"),
    }
    expected = {
        "none": "NoneType",
        "plain": "WorkflowContext",
        "wrong_success": "IOSuccess holding int",
        "wrong_failure": "IOFailure holding str",
    }
    for name, run in bad_values.items():
        error = err(run_workflow(Workflow("w", (Step(name, run),))))
        assert error.error_type == ErrorType.STEP_EXCEPTION
        assert error.message == (
            f"step {name!r} returned {expected[name]}; a step must return "
            "IOSuccess(WorkflowContext) or IOFailure(PipelineError)"
        )


def test_a_condition_that_raises_fails_the_step(recorder: Recorder) -> None:
    def broken(_ctx: WorkflowContext) -> bool:
        msg = "flag"
        raise KeyError(msg)

    flow = Workflow(
        "w",
        (Step("a", recorder.ok("a"), when=broken), Step("z", recorder.ok("z"), always_run=True)),
    )
    error = err(run_workflow(flow))
    assert error.message == "the condition of step 'a' raised KeyError: 'flag'"
    assert recorder.names == ["z"]


def test_ctrl_c_stops_the_step_runs_always_run_steps_and_ends_interrupted(
    recorder: Recorder,
) -> None:
    """Rule 6: KeyboardInterrupt."""

    def interrupted(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        raise KeyboardInterrupt

    flow = Workflow(
        "w",
        (
            Step("a", interrupted, retry=RetryPolicy(max_attempts=5)),
            Step("b", recorder.ok("b")),
            Step("z", recorder.ok("z"), always_run=True),
        ),
    )
    events = Events()
    error = err(run_workflow(flow, observers=[events]))
    assert (error.step_name, error.error_type, error.message) == (
        "a",
        "Interrupted",
        "interrupted by Ctrl-C",
    )
    assert recorder.names == ["z"]
    finished = events.events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.status == "interrupted"


def test_ctrl_c_during_an_always_run_step_still_runs_the_next_one(recorder: Recorder) -> None:
    def interrupted(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        raise KeyboardInterrupt

    flow = Workflow(
        "w",
        (
            Step("a", recorder.fail("a")),
            Step("y", interrupted, always_run=True),
            Step("z", recorder.ok("z"), always_run=True),
        ),
    )
    error = err(run_workflow(flow))
    assert error.step_name == "a"
    assert [e.error_type for e in error.context["always_run_failures"]] == ["Interrupted"]
    assert recorder.names == ["a", "z"]


def test_retry_sleeps_with_backoff_and_feeds_back_each_failure(
    recorder: Recorder, fake_sleep: FakeSleep
) -> None:
    """Rule 7: delay=1, backoff=2, max_attempts=3 sleeps [1, 2]."""
    policy = RetryPolicy(max_attempts=3, delay=1, backoff=2)
    flow = Workflow("w", (Step("a", recorder.fail("a", times=2, done=True), retry=policy),))
    final = ok_ctx(run_workflow(flow, sleep=fake_sleep))
    assert fake_sleep.calls == [1, 2]
    assert [ctx.feedback for ctx in recorder.seen("a")] == [
        (),
        ("attempt 1/3 failed: ShellFailed: a broke",),
        ("attempt 1/3 failed: ShellFailed: a broke", "attempt 2/3 failed: ShellFailed: a broke"),
    ]
    assert final.inputs["done"] is True
    assert final.feedback == ()


def test_retry_delay_is_capped_by_max_delay(recorder: Recorder, fake_sleep: FakeSleep) -> None:
    policy = RetryPolicy(max_attempts=5, delay=10, backoff=3, max_delay=40)
    run_workflow(Workflow("w", (Step("a", recorder.fail("a"), retry=policy),)), sleep=fake_sleep)
    assert fake_sleep.calls == [10, 30, 40, 40]


def test_jitter_adds_at_most_its_value(recorder: Recorder, fake_sleep: FakeSleep) -> None:
    policy = RetryPolicy(max_attempts=4, delay=1, backoff=1, jitter=0.5)
    run_workflow(Workflow("w", (Step("a", recorder.fail("a"), retry=policy),)), sleep=fake_sleep)
    assert len(fake_sleep.calls) == 3
    assert all(1 <= seconds <= 1.5 for seconds in fake_sleep.calls)


def test_exhausted_retries_carry_attempts_and_the_feedback_history(
    recorder: Recorder, fake_sleep: FakeSleep
) -> None:
    """Rule 7: context["attempts"] and the whole feedback history."""
    flow = Workflow("w", (Step("a", recorder.fail("a"), retry=RetryPolicy(max_attempts=3)),))
    error = err(run_workflow(flow, sleep=fake_sleep))
    assert error.context["attempts"] == 3
    assert error.context["feedback"] == (
        "attempt 1/3 failed: ShellFailed: a broke",
        "attempt 2/3 failed: ShellFailed: a broke",
    )
    assert fake_sleep.calls == []


def test_blocked_and_other_final_kinds_are_never_retried(recorder: Recorder) -> None:
    """Rule 7: Blocked, ContextCollision, InvalidWorkflow, Interrupted."""
    for kind in ("Blocked", "ContextCollision", "InvalidWorkflow", "Interrupted"):
        rec = Recorder()
        flow = Workflow("w", (Step("a", rec.fail("a", kind), retry=RetryPolicy(max_attempts=4)),))
        error = err(run_workflow(flow))
        assert (rec.names, error.context["attempts"]) == (["a"], 1), kind


def test_a_custom_retry_on_decides_and_a_raising_one_stops_retrying(recorder: Recorder) -> None:
    only_timeouts = RetryPolicy(max_attempts=3, retry_on=lambda e: e.error_type == "Timeout")
    run_workflow(
        Workflow("w", (Step("a", recorder.fail("a", "ShellFailed"), retry=only_timeouts),))
    )
    assert recorder.names == ["a"]

    def broken(_error: PipelineError) -> bool:
        raise ValueError

    rec = Recorder()
    run_workflow(Workflow("w", (Step("b", rec.fail("b"), retry=RetryPolicy(3, retry_on=broken)),)))
    assert rec.names == ["b"]


def test_a_custom_retry_on_cannot_retry_an_interrupt() -> None:
    calls: list[int] = []

    def interrupted(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        calls.append(1)
        return IOFailure(PipelineError("", ErrorType.INTERRUPTED, "stop"))

    always = RetryPolicy(max_attempts=3, retry_on=lambda _e: True)
    run_workflow(Workflow("w", (Step("a", interrupted, retry=always),)))
    assert calls == [1]


def test_step_name_is_filled_in_when_a_step_left_it_empty_and_kept_otherwise() -> None:
    """Rule 8."""

    def anonymous(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return IOFailure(PipelineError("", "Timeout", "slow"))

    def named(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return IOFailure(PipelineError("inner", "Timeout", "slow"))

    assert err(run_workflow(Workflow("w", (Step("outer", anonymous),)))).step_name == "outer"
    assert err(run_workflow(Workflow("w", (Step("outer", named),)))).step_name == "inner"


def test_every_transition_is_an_event(
    recorder: Recorder, fake_sleep: FakeSleep, events: Events
) -> None:
    """Rule 9: run started, step started, attempt failed, step succeeded, skipped, run finished."""
    flow = Workflow(
        "w",
        (
            Step("a", recorder.fail("a", times=1), retry=RetryPolicy(max_attempts=2, delay=0.5)),
            Step("b", recorder.fail("b")),
            Step("c", recorder.ok("c")),
        ),
    )
    run_workflow(flow, observers=[events], sleep=fake_sleep, run_id="r1")
    assert events.kinds() == [
        "RunStarted",
        "StepStarted",
        "AttemptFailed",
        "StepSucceeded",
        "StepStarted",
        "AttemptFailed",
        "StepSkipped",
        "RunFinished",
    ]
    assert {event.run_id for event in events.events} == {"r1"}
    first_failure = events.events[2]
    assert isinstance(first_failure, AttemptFailed)
    assert (first_failure.attempt, first_failure.will_retry, first_failure.delay) == (1, True, 0.5)
    succeeded = events.events[3]
    assert isinstance(succeeded, StepSucceeded)
    assert (succeeded.attempts, succeeded.index, succeeded.total) == (2, 0, 3)
    finished = events.events[-1]
    assert isinstance(finished, RunFinished)
    assert (finished.status, finished.error.step_name if finished.error else None) == (
        "failed",
        "b",
    )


def test_a_raising_observer_is_detached_and_reported_to_the_others(
    recorder: Recorder, events: Events
) -> None:
    calls: list[RunEvent] = []

    def flaky(event: RunEvent) -> None:
        calls.append(event)
        msg = "disk full"
        raise OSError(msg)

    flow = Workflow("w", (Step("a", recorder.ok("a")), Step("b", recorder.ok("b"))))
    result = run_workflow(flow, observers=[flaky, events])
    assert isinstance(result, IOSuccess)
    assert len(calls) == 1
    failed = [e for e in events.events if isinstance(e, ObserverFailed)]
    assert [(e.observer, e.message) for e in failed] == [
        (
            "test_a_raising_observer_is_detached_and_reported_to_the_others.<locals>.flaky",
            "OSError: disk full",
        )
    ]
    assert events.kinds()[-1] == "RunFinished"


def test_declared_inputs_are_checked_before_any_step_runs(recorder: Recorder) -> None:
    flow = Workflow(
        "w",
        (Step("a", recorder.ok("a")), Step("z", recorder.ok("z"), always_run=True)),
        inputs=("topic", "depth"),
    )
    error = err(run_workflow(flow, WorkflowContext(inputs={"depth": 1})))
    assert (error.step_name, error.error_type) == ("", ErrorType.MISSING_INPUT)
    assert error.message == "workflow 'w' needs input 'topic'"
    assert error.context["missing"] == ("topic",)
    assert recorder.names == ["z"]


def test_resume_from_starts_at_that_step(recorder: Recorder, events: Events) -> None:
    flow = Workflow("w", (Step("a", recorder.ok("a", x=1)), Step("b", recorder.ok("b", y=2))))
    final = ok_ctx(
        run_workflow(flow, WorkflowContext(inputs={"x": 1}), resume_from="b", observers=[events])
    )
    assert recorder.names == ["b"]
    assert dict(final.inputs) == {"x": 1, "y": 2}
    assert events.kinds() == ["RunStarted", "StepStarted", "StepSucceeded", "RunFinished"]


def test_resume_from_an_unknown_step_is_an_invalid_workflow(recorder: Recorder) -> None:
    flow = Workflow("w", (Step("a", recorder.ok("a")),))
    error = err(run_workflow(flow, resume_from="nope"))
    assert (error.error_type, error.message) == (
        "InvalidWorkflow",
        "workflow 'w' has no step 'nope' to resume from",
    )
    assert recorder.names == []


def test_a_step_cannot_rewrite_its_inputs() -> None:
    def rewrite(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return IOSuccess(WorkflowContext(inputs={"x": "forged"}, outputs={"y": 1}))

    final = ok_ctx(
        run_workflow(Workflow("w", (Step("a", rewrite),)), WorkflowContext(inputs={"x": "real"}))
    )
    assert dict(final.inputs) == {"x": "real", "y": 1}


def test_retry_step_reports_each_failed_attempt(recorder: Recorder, fake_sleep: FakeSleep) -> None:
    heard: list[tuple[int, bool, float]] = []
    step = Step("a", recorder.fail("a", times=1, v=1), retry=RetryPolicy(max_attempts=2, delay=2))
    result, attempts = retry_step(
        step,
        WorkflowContext(),
        sleep=fake_sleep,
        on_attempt_failed=lambda n, _e, again, delay, _s: heard.append((n, again, delay)),
    )
    assert isinstance(result, WorkflowContext)
    assert (attempts, heard, fake_sleep.calls) == (2, [(1, True, 2)], [2])
    assert dict(result.outputs) == {"v": 1}
    failed, _ = retry_step(Step("b", recorder.fail("b")), WorkflowContext())
    assert isinstance(failed, PipelineError)


def test_feedback_line_names_the_attempt_and_the_error() -> None:
    assert feedback_line(2, 3, PipelineError("s", "ContractViolation", "STATUS missing")) == (
        "attempt 2/3 failed: ContractViolation: STATUS missing"
    )
