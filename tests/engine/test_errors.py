"""PipelineError, ErrorType and json_safe."""

from __future__ import annotations

import json

import attrs

from adws import ErrorType, PipelineError
from adws.engine.errors import json_safe


def test_every_design_kind_exists() -> None:
    assert [kind.value for kind in ErrorType] == [
        "StepException",
        "ContextCollision",
        "MissingInput",
        "ContractViolation",
        "AgentRetryRequested",
        "Blocked",
        "AgentFailed",
        "ShellFailed",
        "Timeout",
        "Interrupted",
        "InvalidWorkflow",
        "BudgetExceeded",
        "AgentUnavailable",
        "AgentHung",
        "PermissionDenied",
        "WorkerLost",
        "AwaitingApproval",
        "Rejected",
        "Parked",
        "Tampered",
        "Cancelled",
        "NoChange",
        "NotFixed",
        "NotReproduced",
        "UnknownTargets",
    ]


def test_str_is_one_line() -> None:
    error = PipelineError("verify", ErrorType.CONTRACT_VIOLATION, "first\nsecond")
    assert str(error) == "verify: ContractViolation: first"
    assert str(PipelineError("", "Timeout", "")) == "Timeout: "


@attrs.frozen
class _Point:
    x: int


def test_to_dict_is_json_safe_whatever_the_context_holds() -> None:
    inner = PipelineError("z", "ShellFailed", "late")
    error = PipelineError(
        "s",
        "StepException",
        "m",
        {
            "nested": {"t": (1, 2)},
            "late": [inner],
            "obj": object,
            "nan": float("inf"),
            "p": _Point(1),
            "set": {2, 1},
        },
    )
    data = error.to_dict()
    assert json.loads(json.dumps(data)) == data
    context = data["context"]
    assert isinstance(context, dict)
    assert context["nested"] == {"t": [1, 2]}
    assert context["late"] == [
        {"step_name": "z", "error_type": "ShellFailed", "message": "late", "context": {}}
    ]
    assert context["obj"] == "<class 'object'>"
    assert (context["nan"], context["p"], context["set"]) == ("inf", {"x": 1}, [1, 2])


def test_with_context_and_with_step_name() -> None:
    error = PipelineError("", "Timeout", "slow", {"a": 1})
    assert error.with_context(b=2).context == {"a": 1, "b": 2}
    assert error.with_step_name("s").step_name == "s"
    named = error.with_step_name("s")
    assert named.with_step_name("other") is named


def test_json_safe_of_plain_values() -> None:
    assert json_safe([None, True, 1, "x", 1.5]) == [None, True, 1, "x", 1.5]
