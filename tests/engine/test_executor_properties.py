"""Invariants of the executor for any mix of succeeding, failing and raising steps."""

from __future__ import annotations

from hypothesis import given
from returns.io import IOFailure, IOResult, IOSuccess
from returns.unsafe import unsafe_perform_io

from adws import ErrorType, PipelineError, Step, Workflow, WorkflowContext, run_workflow
from tests.strategies import step_plans


def _behave(name: str, behaviour: str, ran: list[str]) -> Step:
    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        ran.append(name)
        if behaviour == "raise":
            raise RuntimeError(name)
        if behaviour == "interrupt":
            raise KeyboardInterrupt
        if behaviour == "fail":
            return IOFailure(PipelineError(name, ErrorType.SHELL_FAILED, name))
        if behaviour == "blocked":
            return IOFailure(PipelineError(name, ErrorType.BLOCKED, name))
        return IOSuccess(ctx.merge_outputs({name: True}))

    return Step(name, run)


@given(step_plans)
def test_the_executor_never_raises_and_keeps_its_promises(plan: list[tuple[str, bool]]) -> None:
    """Never raises; every always_run step runs once; nothing else after the first failure."""
    ran: list[str] = []
    steps = []
    for i, (behaviour, always) in enumerate(plan):
        step = _behave(f"s{i}", behaviour, ran)
        steps.append(Step(step.name, step.run, always_run=always))
    result = run_workflow(Workflow("w", steps))

    failing = [i for i, (behaviour, _) in enumerate(plan) if behaviour != "ok"]
    always_names = [f"s{i}" for i, (_, always) in enumerate(plan) if always]
    assert all(ran.count(name) == 1 for name in always_names)
    if not failing:
        assert isinstance(result, IOSuccess)
        assert ran == [f"s{i}" for i in range(len(plan))]
        return
    first = failing[0]
    assert isinstance(result, IOFailure)
    error = unsafe_perform_io(result.failure())
    assert error.step_name == f"s{first}"
    after = [name for name in ran if int(name[1:]) > first]
    assert after == [f"s{i}" for i in range(first + 1, len(plan)) if plan[i][1]]
