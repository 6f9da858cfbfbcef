"""Definition-time checks of Step, Workflow and RetryPolicy."""

from __future__ import annotations

import pytest
from returns.io import IOResult, IOSuccess

from adws import PipelineError, RetryPolicy, Step, Workflow, WorkflowContext
from adws.step import iter_steps


def noop(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    return IOSuccess(ctx)


@pytest.mark.parametrize("name", ["", "Upper", "has space", "1st", "dash-ed", "_private"])
def test_step_names_must_be_identifiers(name: str) -> None:
    with pytest.raises(ValueError, match="is not an identifier"):
        Step(name, noop)


def test_duplicate_step_names_are_refused() -> None:
    with pytest.raises(ValueError, match="workflow 'w' has two steps named 'a'"):
        Workflow("w", (Step("a", noop), Step("a", noop)))


def test_an_empty_workflow_and_a_non_step_are_refused() -> None:
    with pytest.raises(ValueError, match="workflow 'w' has no steps"):
        Workflow("w", ())
    with pytest.raises(TypeError, match="is not a Step"):
        Workflow("w", ("a",))


def test_workflow_names_and_inputs_are_checked() -> None:
    with pytest.raises(ValueError, match="workflow name 'My Flow'"):
        Workflow("My Flow", (Step("a", noop),))
    with pytest.raises(ValueError, match="input name 'Bad' is not an identifier"):
        Workflow("w", (Step("a", noop),), inputs=("Bad",))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_attempts": 0}, "max_attempts must be >= 1, got 0"),
        ({"delay": -1}, "delay must be >= 0, got -1"),
        ({"max_delay": -1}, "max_delay must be >= 0"),
        ({"jitter": -0.1}, "jitter must be >= 0"),
        ({"backoff": 0.5}, "backoff must be >= 1"),
    ],
)
def test_impossible_retry_policies_are_refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RetryPolicy(**kwargs)  # type: ignore[arg-type] # each case is one bad field


def test_delay_before_the_first_attempt_is_zero() -> None:
    assert RetryPolicy(delay=5).delay_before(1) == 0.0


def test_iter_steps_walks_children_depth_first() -> None:
    inner = Step("inner", noop)
    outer = Step("outer", noop, children=(inner,))
    assert [s.name for s in iter_steps((outer, Step("last", noop)))] == ["outer", "inner", "last"]


def test_missing_inputs_keeps_declared_order() -> None:
    flow = Workflow("w", (Step("a", noop),), inputs=("b", "a"))
    assert flow.missing_inputs({"c": 1}) == ("b", "a")
