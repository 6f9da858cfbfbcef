"""Definition-time checks of Step, Workflow and RetryPolicy."""

from __future__ import annotations

import math

import pytest
from returns.io import IOResult, IOSuccess

from adws import PipelineError, RetryPolicy, Step, Workflow, WorkflowContext
from adws.engine.step import iter_steps


def noop(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    return IOSuccess(ctx)


@pytest.mark.parametrize("name", ["", "Upper", "has space", "1st", "dash-ed", "_private"])
def test_step_names_must_be_identifiers(name: str) -> None:
    with pytest.raises(ValueError, match="is not an identifier"):
        Step(name, noop)


def test_duplicate_step_names_are_refused() -> None:
    with pytest.raises(ValueError, match="workflow 'w' has two steps named 'a'"):
        Workflow("w", (Step("a", noop), Step("a", noop)))


def test_a_non_step_is_refused() -> None:
    with pytest.raises(TypeError, match="is not a Step"):
        Workflow("w", ("a",))


def test_an_empty_workflow_is_valid() -> None:
    assert Workflow("w", ()).steps == ()


def test_workflow_names_and_inputs_are_checked() -> None:
    with pytest.raises(ValueError, match="workflow name 'My Flow'"):
        Workflow("My Flow", (Step("a", noop),))
    with pytest.raises(ValueError, match="input name 'Bad' is not an identifier"):
        Workflow("w", (Step("a", noop),), inputs=("Bad",))


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"max_attempts": 0}, ValueError, "max_attempts must be an int >= 1, got 0"),
        ({"max_attempts": math.nan}, TypeError, "max_attempts must be an int >= 1, got nan"),
        ({"max_attempts": 2.0}, TypeError, "max_attempts must be an int >= 1, got 2.0"),
        ({"max_attempts": True}, TypeError, "max_attempts must be an int >= 1, got True"),
        ({"delay": -1}, ValueError, "delay must be a finite number >= 0.0, got -1"),
        ({"delay": math.inf}, ValueError, "delay must be a finite number >= 0.0, got inf"),
        ({"delay": "1"}, TypeError, "delay must be a finite number >= 0.0, got '1'"),
        ({"max_delay": -1}, ValueError, "max_delay must be a finite number >= 0.0, got -1"),
        ({"jitter": -0.1}, ValueError, "jitter must be a finite number >= 0.0, got -0.1"),
        ({"jitter": math.inf}, ValueError, "jitter must be a finite number >= 0.0, got inf"),
        ({"backoff": 0.5}, ValueError, "backoff must be a finite number >= 1.0, got 0.5"),
        ({"backoff": math.nan}, ValueError, "backoff must be a finite number >= 1.0, got nan"),
        ({"retry_on": "always"}, TypeError, "retry_on must be callable, got 'always'"),
    ],
)
def test_impossible_retry_policies_are_refused(
    kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        RetryPolicy(**kwargs)  # type: ignore[arg-type] # each case is one bad field
    assert str(raised.value) == f"RetryPolicy: {message}"


def test_no_retry_policy_computes_a_wait_that_overflows() -> None:
    policy = RetryPolicy(max_attempts=10**6, delay=1e300, backoff=1e200, max_delay=1e300)
    assert [policy.delay_before(n) for n in (2, 3, 10**6)] == [1e300, 1e300, 1e300]
    huge = RetryPolicy(max_attempts=10**400, delay=1, backoff=2)
    assert huge.delay_before(10**400) == 60


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"run": None}, TypeError, "Step 's': run must be callable, got None"),
        ({"retry": 3}, TypeError, "Step 's': retry must be a RetryPolicy, got 3"),
        ({"when": "yes"}, TypeError, "Step 's': when must be callable or None, got 'yes'"),
        ({"always_run": 1}, TypeError, "Step 's': always_run must be a bool, got 1"),
        ({"kind": None}, TypeError, "Step 's': kind must be a str, got None"),
    ],
)
def test_impossible_steps_are_refused(
    kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    arguments: dict[str, object] = {"run": noop, **kwargs}
    run = arguments.pop("run")
    with pytest.raises(error) as raised:
        Step("s", run, **arguments)  # type: ignore[arg-type] # each case is one bad field
    assert str(raised.value) == message


def test_a_workflow_description_must_be_text() -> None:
    with pytest.raises(TypeError, match="workflow 'w': description must be a str, got 3"):
        Workflow("w", (), description=3)  # type: ignore[arg-type] # wrong on purpose


def test_delay_before_the_first_attempt_is_zero() -> None:
    assert RetryPolicy(delay=5).delay_before(1) == 0.0


def test_iter_steps_walks_children_depth_first() -> None:
    inner = Step("inner", noop)
    outer = Step("outer", noop, children=(inner,))
    assert [s.name for s in iter_steps((outer, Step("last", noop)))] == ["outer", "inner", "last"]


def test_missing_inputs_keeps_declared_order() -> None:
    flow = Workflow("w", (Step("a", noop),), inputs=("b", "a"))
    assert flow.missing_inputs({"c": 1}) == ("b", "a")
