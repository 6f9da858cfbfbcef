"""The smallest workflow: plain Python steps showing retry, promotion and cleanup.

Run it with `adws run hello -i name=Ada`.
"""

from __future__ import annotations

from returns.io import IOFailure, IOResult, IOSuccess

from adws import ErrorType, PipelineError, RetryPolicy, Step, Workflow, WorkflowContext


def greet(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    """Write a greeting; the next step sees it as the input `greeting`."""
    return IOSuccess(ctx.merge_outputs({"greeting": f"Hello, {ctx.inputs['name']}!"}))


def shout(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    """Fail on the first attempt, then succeed using the feedback it was given.

    A real step would fail for a real reason (a flaky network, an agent's
    malformed answer); the executor retries it with a line of feedback per
    failed attempt, which this step reports in its output.
    """
    if not ctx.feedback:
        return IOFailure(PipelineError("shout", ErrorType.STEP_EXCEPTION, "warming up; try again"))
    return IOSuccess(
        ctx.merge_outputs(
            {"shout": ctx.inputs["greeting"].upper(), "shout_feedback": list(ctx.feedback)}
        )
    )


def sign_off(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    """Always run last, reporting the failure if there was one."""
    outcome = "failed: " + str(ctx.failure) if ctx.failure else "ok"
    return IOSuccess(ctx.merge_outputs({"sign_off": f"hello finished ({outcome})"}))


workflow = Workflow(
    "hello",
    (
        Step("greet", greet, reads=("name",), writes=("greeting",)),
        Step(
            "shout",
            shout,
            retry=RetryPolicy(max_attempts=2),
            reads=("greeting",),
            writes=("shout", "shout_feedback"),
        ),
        Step("sign_off", sign_off, always_run=True, reads=(), writes=("sign_off",)),
    ),
    description="Greet someone; shows retry, promotion and an always_run step.",
    inputs=("name",),
)
