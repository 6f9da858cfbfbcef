"""`RetryPolicy`: how often a failing step runs again, how long it waits, and for what.

By default a step is retried on any error but those retrying cannot mend
(`NEVER_RETRIED`, `PermissionDenied` and errors marked permanent), and a
service's own `retry_after` is honoured when it is sane.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, final

import attrs

from adws._checks import require_callable, require_count, require_seconds
from adws.engine.errors import ErrorType, PipelineError, is_permanent

__all__ = ["NEVER_RETRIED", "RetryPolicy", "default_retry_on", "retry_after"]

NEVER_RETRIED: Final = frozenset(
    {
        ErrorType.BLOCKED,
        ErrorType.CONTEXT_COLLISION,
        ErrorType.INVALID_WORKFLOW,
        ErrorType.INTERRUPTED,
        ErrorType.BUDGET_EXCEEDED,
        ErrorType.PERMISSION_DENIED,
        ErrorType.AWAITING_APPROVAL,
        ErrorType.REJECTED,
        ErrorType.PARKED,
        ErrorType.CANCELLED,
    }
)


_LONGEST_WAIT: Final = 1e9
"""A wait past this (or negative, or NaN) is no wait a service meant: ignored."""


def default_retry_on(error: PipelineError) -> bool:
    """Retry every error except those retrying cannot fix.

    Never retried: the kinds in `NEVER_RETRIED`, any error marked
    `permanent`, and an `AgentUnavailable` that does not say when to come
    back: the agent CLIs retry rate limits, overloads and server errors
    themselves, so when one gives up, asking again at once would only
    multiply its retries. One that names a wait (`context["retry_after"]`,
    a reset time the CLI reported) is retried after that wait.

    >>> default_retry_on(PipelineError("s", "Timeout", "slow"))
    True
    >>> default_retry_on(PipelineError("s", "Blocked", "needs a human"))
    False
    >>> default_retry_on(PipelineError("s", "AgentUnavailable", "API error 429"))
    False
    >>> default_retry_on(PipelineError("s", "AgentUnavailable", "limit", {"retry_after": 30.0}))
    True
    """
    if error.error_type in NEVER_RETRIED or is_permanent(error):
        return False
    if error.error_type == ErrorType.AGENT_UNAVAILABLE:
        return retry_after(error) is not None
    return True


def retry_after(error: PipelineError) -> float | None:
    """Return the wait the error names before a retry (`context["retry_after"]`), if any.

    >>> retry_after(PipelineError("s", "AgentUnavailable", "limit", {"retry_after": 30}))
    30.0
    >>> retry_after(PipelineError("s", "AgentUnavailable", "x", {"retry_after": "soon"})) is None
    True
    """
    wait = error.context.get("retry_after")
    if isinstance(wait, int | float) and not isinstance(wait, bool) and 0 <= wait < _LONGEST_WAIT:
        return float(wait)
    return None


def _seconds(minimum: float) -> Callable[[object, attrs.Attribute[Any], object], None]:
    def check(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        require_seconds("RetryPolicy", attribute.name, value, minimum=minimum)

    return check


def _attempts(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    require_count("RetryPolicy", attribute.name, value)


def _retry_on(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    require_callable("RetryPolicy", attribute.name, value)


@final
@attrs.frozen
class RetryPolicy:
    """Say how often a failing step runs again and how long to wait between.

    Attempt n (n >= 2) waits `min(max_delay, delay * backoff**(n-2))` plus a
    uniform jitter in `[0, jitter]`. `backoff` below 1 would shrink the waits
    and is refused.

    Examples:
        >>> policy = RetryPolicy(max_attempts=4, delay=1, backoff=2)
        >>> [policy.delay_before(n) for n in (2, 3, 4)]
        [1.0, 2.0, 4.0]
    """

    max_attempts: int = attrs.field(default=1, validator=_attempts)
    delay: float = attrs.field(default=0.0, validator=_seconds(0.0))
    backoff: float = attrs.field(default=2.0, validator=_seconds(1.0))
    max_delay: float = attrs.field(default=60.0, validator=_seconds(0.0))
    jitter: float = attrs.field(default=0.0, validator=_seconds(0.0))
    retry_on: Callable[[PipelineError], bool] = attrs.field(
        default=default_retry_on, validator=_retry_on
    )

    def delay_before(self, attempt: int) -> float:
        """Return the wait before `attempt` without jitter (0 for the first).

        Computed so that no policy can overflow: once `delay * backoff**k`
        would pass `max_delay`, the wait is `max_delay`.

        >>> RetryPolicy(max_attempts=10**6, delay=1, backoff=1e200).delay_before(10**6)
        60.0
        """
        if attempt < 2:  # noqa: PLR2004 - the first attempt never waits
            return 0.0
        try:
            # float: an int backoff would make Python compute an exact, endless power.
            wait = self.delay * float(self.backoff) ** (attempt - 2)
        except OverflowError:  # past any float, so past max_delay
            return float(self.max_delay)
        return min(self.max_delay, wait)
