"""The error value that travels on the failure track: `PipelineError`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from enum import Enum, StrEnum
from typing import Any, Final, final

import attrs

from adws._frozen import freeze_mapping
from adws.contract._schemas import instance_fields

__all__ = [
    "INFRASTRUCTURE",
    "Cancellation",
    "ErrorType",
    "PipelineError",
    "is_permanent",
    "json_safe",
]


class ErrorType(StrEnum):
    """Name the built-in kinds of `PipelineError`.

    `error_type` is a plain string, so plugins may add kinds of their own;
    these are the ones adws itself produces.

    >>> ErrorType.BLOCKED == "Blocked"
    True
    """

    STEP_EXCEPTION = "StepException"
    CONTEXT_COLLISION = "ContextCollision"
    MISSING_INPUT = "MissingInput"
    CONTRACT_VIOLATION = "ContractViolation"
    AGENT_RETRY_REQUESTED = "AgentRetryRequested"
    BLOCKED = "Blocked"
    AGENT_FAILED = "AgentFailed"
    SHELL_FAILED = "ShellFailed"
    TIMEOUT = "Timeout"
    INTERRUPTED = "Interrupted"
    INVALID_WORKFLOW = "InvalidWorkflow"
    BUDGET_EXCEEDED = "BudgetExceeded"
    AGENT_UNAVAILABLE = "AgentUnavailable"
    """The agent reached its model API and got an error: rate limit, overload, server error."""
    AGENT_HUNG = "AgentHung"
    """The agent printed nothing for its step's `idle_timeout`."""
    PERMISSION_DENIED = "PermissionDenied"
    """The agent was refused a tool it needed (a file edit without `edits=True`, say)."""
    WORKER_LOST = "WorkerLost"
    """A batch worker died running the step (killed, out of memory) twice: not tried again."""
    AWAITING_APPROVAL = "AwaitingApproval"
    """An `approval_step` was reached: the run waits for a person (`adws approve`)."""
    REJECTED = "Rejected"
    """A person said no at an `approval_step` (`adws reject`), or the wait timed out."""
    PARKED = "Parked"
    """The agent's limit resets later than the run may wait (`--max-wait`): the run is parked
    until `context["wake_at"]` (Unix seconds), and `adws resume` goes on from there."""
    TAMPERED = "Tampered"
    """An attempt changed a path its step protects (`protect=`): the checks were weakened."""
    CANCELLED = "Cancelled"
    """A person ended the run (`adws cancel`): the step in flight stopped as on Ctrl-C, and
    the `always_run` steps see this failure; `context` holds `cancelled_by`, `cancelled_at`
    and `reason`."""
    NO_CHANGE = "NoChange"
    """An agent step that edits (`edits=True`) changed no file in its round: nothing is no fix."""
    NOT_FIXED = "NotFixed"
    """A verification round's targets (`must_pass`) did not all run and pass."""
    NOT_REPRODUCED = "NotReproduced"
    """A reproducer (`reproduce`) added no test that fails on the untouched code."""
    UNKNOWN_TARGETS = "UnknownTargets"
    """`must_pass` names tests the baseline never ran (a typo in an id): no agent was asked."""


class Cancellation(KeyboardInterrupt):
    """A person cancelled the run: it stops the step in flight as a Ctrl-C does.

    A `KeyboardInterrupt`, not an error: no `except Exception` swallows it,
    and the executor turns it into a `Cancelled` failure (not `Interrupted`)
    that the `always_run` steps see, with who cancelled, when and why.

    >>> cancel = Cancellation("ana", "2026-01-02T03:04:05+00:00", "wrong branch")
    >>> str(cancel), cancel.context()["cancelled_by"]
    ('cancelled by ana: wrong branch', 'ana')
    """

    def __init__(self, by: str, at: str, reason: str = "") -> None:
        """Say who cancelled the run, when (ISO 8601, UTC) and why (may be empty)."""
        super().__init__(f"cancelled by {by}" + (f": {reason}" if reason else ""))
        self.by, self.at, self.reason = by, at, reason

    def context(self) -> dict[str, str]:
        """Return what the `Cancelled` failure keeps of it."""
        return {"cancelled_by": self.by, "cancelled_at": self.at, "reason": self.reason}


INFRASTRUCTURE: Final = frozenset(
    {
        ErrorType.AGENT_UNAVAILABLE,
        ErrorType.AGENT_HUNG,
        ErrorType.TIMEOUT,
        ErrorType.AGENT_FAILED,
    }
)
"""Failures that are not the model's fault: a retry prompt never lists them as feedback."""


def is_permanent(error: PipelineError) -> bool:
    """Tell whether the error says retrying cannot change it (`context["permanent"]`).

    >>> is_permanent(PipelineError("s", "AgentFailed", "no such CLI", {"permanent": True}))
    True
    """
    return error.context.get("permanent") is True


def json_safe(value: object) -> object:
    """Turn any value into one `json.dumps` accepts and that round-trips.

    Mappings become dicts with string keys, sequences and sets become lists,
    an enum member becomes its value, the instances of schemas (attrs,
    dataclass, pydantic) become dicts of their fields, non-finite floats and
    anything else become their `repr`, so recording or printing a value
    never fails.

    >>> json_safe({"a": (1, 2.5, None), 3: {"x"}})
    {'a': [1, 2.5, None], '3': ['x']}
    >>> json_safe(float("nan"))
    'nan'
    """
    result: object
    if isinstance(value, Enum):
        result = json_safe(value.value)
    elif value is None or isinstance(value, str | bool | int):
        result = value
    elif isinstance(value, float):
        result = value if math.isfinite(value) else repr(value)
    elif isinstance(value, PipelineError):
        result = value.to_dict()
    elif isinstance(value, Mapping):
        result = {str(key): json_safe(item) for key, item in value.items()}
    elif isinstance(value, list | tuple):
        result = [json_safe(item) for item in value]
    elif isinstance(value, set | frozenset):
        result = sorted((json_safe(item) for item in value), key=repr)
    else:
        fields = instance_fields(value)
        if fields is None:
            result = repr(value)
        else:
            result = {name: json_safe(getattr(value, name, None)) for name in fields}
    return result


@final
@attrs.frozen
class PipelineError:
    """Describe why a step, or the run, failed.

    `context` holds details a reader or a retry can use (the raw agent
    output, the list of problems, the attempts made); it is frozen on the way
    in like `WorkflowContext`'s mappings.

    >>> error = PipelineError("verify", ErrorType.BLOCKED, "no sources")
    >>> str(error)
    'verify: Blocked: no sources'
    """

    step_name: str
    error_type: str
    message: str
    context: Mapping[str, Any] = attrs.field(factory=dict, converter=freeze_mapping)

    def __str__(self) -> str:
        """Render one line: step, kind and the message's first line."""
        first_line = self.message.strip().splitlines()[0] if self.message.strip() else ""
        prefix = f"{self.step_name}: " if self.step_name else ""
        return f"{prefix}{self.error_type}: {first_line}"

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-safe dict of every field.

        >>> PipelineError("s", "Timeout", "slow", {"seconds": 2}).to_dict()
        {'step_name': 's', 'error_type': 'Timeout', 'message': 'slow', 'context': {'seconds': 2}}
        """
        return {
            "step_name": self.step_name,
            "error_type": str(self.error_type),
            "message": self.message,
            "context": json_safe(self.context),
        }

    def with_context(self, **extra: object) -> PipelineError:
        """Return a copy whose context also holds `extra`."""
        return attrs.evolve(self, context={**self.context, **extra})

    def with_step_name(self, step_name: str) -> PipelineError:
        """Return a copy named after `step_name` unless it already names one."""
        if self.step_name:
            return self
        return attrs.evolve(self, step_name=step_name)
