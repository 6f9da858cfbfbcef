"""Parking: a run whose agent's limit resets later than it may wait stops, to go on later.

An agent's usage limit (a subscription's 5-hour window, an API quota) names
when it resets. A reset within the run's `max_wait` is waited for through
the run's `sleep`; one further away parks the run: the step's error becomes
`Parked`, holding `wake_at` (Unix seconds) and a one-line `reason`
(`claude usage limit`), and the run ends `parked` with its always_run
steps not run yet, as a run waiting for approval. Inside `parallel`,
`fan_out` and `best_of` only the branch parks; its siblings run to their
end, and then the step parks (see `parked_branches`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final, TypeGuard

from adws.engine.errors import ErrorType, PipelineError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["DEFAULT_MAX_WAIT", "is_parked", "park", "parked_branches", "wake_at"]

DEFAULT_MAX_WAIT: Final = 900.0
"""How long a run waits in its process for a limit to reset before it parks (`--max-wait`)."""


def is_parked(error: PipelineError | None) -> TypeGuard[PipelineError]:
    """Tell whether an error parks its run (or branch) rather than failing it.

    >>> is_parked(PipelineError("ask", "Parked", "claude usage limit", {"wake_at": 5.0}))
    True
    >>> is_parked(PipelineError("ask", "AgentUnavailable", "API error 429"))
    False
    """
    return error is not None and error.error_type == ErrorType.PARKED


def wake_at(error: PipelineError | None) -> float | None:
    """Return when a parked run may go on (Unix seconds), None for any other error.

    >>> wake_at(PipelineError("ask", "Parked", "limit", {"wake_at": 1800000000}))
    1800000000.0
    >>> wake_at(PipelineError("ask", "Parked", "limit", {"wake_at": "soon"})) is None
    True
    """
    if not is_parked(error):
        return None
    found = error.context.get("wake_at")
    if isinstance(found, int | float) and not isinstance(found, bool) and found >= 0:
        return float(found) if math.isfinite(found) else None
    return None


def park(error: PipelineError, when: float, reason: str) -> PipelineError:
    """Turn an error whose limit resets at `when` into the `Parked` error that stops the run.

    The message and what the error's context held stay (the usage its call
    cost, the session), with `wake_at`, the `reason` and the kind it was.

    >>> limit = PipelineError("ask", "AgentUnavailable", "claude: API error 429 (usage limit)")
    >>> parked = park(limit, 1800000000.0, "claude usage limit")
    >>> str(parked), parked.context["wake_at"], parked.context["was"]
    ('ask: Parked: claude: API error 429 (usage limit)', 1800000000.0, 'AgentUnavailable')
    """
    context = {**error.context, "wake_at": when, "reason": reason, "was": error.error_type}
    return PipelineError(error.step_name, ErrorType.PARKED, error.message, context)


def parked_branches(
    name: str, parked: Sequence[PipelineError], of: int, branches: Mapping[str, object]
) -> PipelineError:
    """Park a step whose branches parked (each `parked` error names its branch's path).

    The step wakes when the last of them may go on; its reason is the first's.

    >>> one = PipelineError("v[0]", "Parked", "codex usage limit", {"wake_at": 50.0})
    >>> two = PipelineError("v[2]", "Parked", "codex usage limit", {"wake_at": 90.0})
    >>> error = parked_branches("v", [one, two], 3, {})
    >>> error.message, error.context["wake_at"], error.context["parked_branches"]
    ('codex usage limit (2 of 3 branches parked: v[0], v[2])', 90.0, ('v[0]', 'v[2]'))
    """
    latest = max((wake_at(error) or 0.0) for error in parked)
    paths = [error.step_name for error in parked]
    reason = str(parked[0].context.get("reason") or parked[0].message)
    noun = "branch" if of == 1 else "branches"
    message = f"{reason} ({len(parked)} of {of} {noun} parked: {', '.join(paths)})"
    context = {
        "wake_at": latest,
        "reason": reason,
        "parked_branches": paths,
        "branches": branches,
    }
    return PipelineError(name, ErrorType.PARKED, message, context)
