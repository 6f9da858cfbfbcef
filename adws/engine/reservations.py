"""Reservations: agent calls of concurrent branches hold their estimate of the budget.

Before each agent call the run's spend is checked against its `Budget`;
that alone lets a `fan_out` of twenty branches started at once overshoot
by nineteen calls. Inside `parallel`, `fan_out` and `best_of` a call
therefore starts only while spent + reserved + its estimate stays within
the budget, and it reserves its estimate until it reports its cost (the
reservation is then replaced by the actual, charged to the meters). The
estimate of a call is what the run's `estimate` says for its step (the
journal's history: the 90th percentile of that step's recorded calls,
given 5 or more), else the largest call of this run so far, else nothing.
A call with no estimate reserves nothing, so it starts only when no other
call is in flight: the first call of a run sets the estimate of the rest.
A call that cannot start waits for the calls in flight to settle; when
none is left and it still does not fit, it is refused (the step fails
`BudgetExceeded`, or asks: `Budget(on_exceeded="ask")`).

Calls outside branches run one at a time and reserve nothing, but the
same rule holds for them (`fits`: spent + the call's estimate within the
budget; see `adws.agents.step`); they tell the ledger their cost, so later
calls have an estimate.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Final, final

from adws.engine.usage import Usage

if TYPE_CHECKING:
    from collections.abc import Callable

    from adws.engine.metering import Meter
    from adws.engine.usage import Budget

__all__ = ["Ledger", "Refusal", "fits", "unknown"]

_TICK: Final = 0.05
"""How often a waiting call looks whether its branch was cancelled (seconds)."""


@final
class Refusal:
    """Why a call may not start: the spend, the budget and the call's estimate."""

    __slots__ = ("estimate", "spent")

    def __init__(self, spent: Usage, estimate: Usage | None) -> None:
        """Keep what the run had spent with nothing in flight, and what the call would cost."""
        self.spent = spent
        self.estimate = estimate


def fits(limit: Budget, spent: Usage, reserved: Usage, estimate: Usage | None) -> bool:
    """Tell whether a call estimated at `estimate` fits beside what is spent and reserved."""
    guess = estimate or Usage()
    checks = (
        (limit.max_cost_usd, spent.cost_usd, reserved.cost_usd, guess.cost_usd),
        (limit.max_tokens, spent.tokens, reserved.tokens, guess.tokens),
    )
    for most, used, held, needs in checks:
        if most is None:
            continue
        # Rounded to a billionth, as `Budget.exceeded` does: $0.1 + $0.2 fits in $0.30.
        taken = round((used or 0) + (held or 0), 9)
        if taken >= most or (needs is not None and round(taken + needs, 9) > most):
            return False
    return True


def unknown(limit: Budget, estimate: Usage | None) -> bool:
    """Tell whether the estimate says nothing about a limit the budget sets."""
    if estimate is None:
        return True
    return (limit.max_cost_usd is not None and estimate.cost_usd is None) or (
        limit.max_tokens is not None and estimate.tokens is None
    )


def _larger(left: Usage | None, right: Usage) -> Usage:
    """Keep the larger cost and the larger token count of two calls."""
    if left is None:
        return Usage(right.cost_usd, right.tokens)
    costs = [cost for cost in (left.cost_usd, right.cost_usd) if cost is not None]
    tokens = [count for count in (left.tokens, right.tokens) if count is not None]
    return Usage(max(costs, default=None), max(tokens, default=None))


@final
class Ledger:
    """What a run's agent calls in flight have reserved of its budget, and its largest call.

    One per run, shared by every branch thread; one condition guards it and
    wakes the calls that wait when one settles.
    """

    __slots__ = ("_changed", "_in_flight", "_reserved", "largest")

    def __init__(self) -> None:
        """Start with nothing reserved, nothing in flight and no call seen."""
        self._changed = threading.Condition()
        self._reserved = Usage()
        self._in_flight = 0
        self.largest: Usage | None = None
        """The largest cost and token count of one call of this run so far (None: none yet)."""

    def estimate(self, step: str, history: Callable[[str], Usage | None] | None) -> Usage | None:
        """Estimate a call of `step`: from the journal's history, else the largest call so far."""
        found = history(step) if history is not None else None
        return found if found is not None else self.largest

    def reserve(
        self,
        *,
        step: str,
        limit: Budget,
        meter: Meter,
        history: Callable[[str], Usage | None] | None,
        cancelled: Callable[[], bool],
    ) -> Usage | Refusal | None:
        """Reserve a call's estimate, waiting while calls in flight may settle.

        Returns the reservation to pass to `settle` (None: nothing reserved
        for a call with no estimate), or a `Refusal` once nothing is in
        flight and the call still does not fit, or the branch was cancelled.
        """
        with self._changed:
            while True:
                estimate = self.estimate(step, history)
                spent = meter.usage
                alone = self._in_flight == 0
                blind = unknown(limit, estimate)
                if (alone or not blind) and fits(limit, spent, self._reserved, estimate):
                    self._in_flight += 1
                    if blind or estimate is None:
                        return None
                    self._reserved += estimate
                    return estimate
                if alone or cancelled():
                    return Refusal(spent, estimate)
                self._changed.wait(_TICK)

    def settle(self, reserved: Usage | None, usage: Usage | None) -> None:
        """End a reserved call: drop its reservation (its cost is charged already)."""
        with self._changed:
            self._in_flight -= 1
            if reserved is not None:
                self._reserved = _less(self._reserved, reserved)
            if usage is not None:
                self.largest = _larger(self.largest, usage)
            self._changed.notify_all()

    def saw(self, usage: Usage | None) -> None:
        """Remember the cost of a call made outside a branch (one at a time: no reservation)."""
        if usage is not None:
            with self._changed:
                self.largest = _larger(self.largest, usage)


def _less(total: Usage, part: Usage) -> Usage:
    """Take a settled reservation out of the total reserved (never below zero)."""
    cost = None if total.cost_usd is None else max(total.cost_usd - (part.cost_usd or 0.0), 0.0)
    tokens = None if total.tokens is None else max(total.tokens - (part.tokens or 0), 0)
    return Usage(cost, tokens)
