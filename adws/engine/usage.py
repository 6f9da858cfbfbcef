"""What agent calls cost: `Usage`, and the `Budget` a run or step may spend.

A backend reports a call's `Usage` on its `AgentResponse`; the meters in
`adws.engine.metering` add it up per attempt, and the executor checks the run's
spend against the `Budget` before every agent call. Both are bounded
(`adws.engine._limits`): sums saturate, so an absurd report stays over any budget.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, TypeAlias, final

import attrs

from adws._checks import require_count, require_seconds, require_type
from adws._exceptions import DefinitionError
from adws.engine._limits import MAX_COST_USD, MAX_COUNT

__all__ = [
    "MAX_COST_USD",
    "MAX_COUNT",
    "Budget",
    "OnExceeded",
    "Unestimated",
    "Usage",
    "dollars",
    "usage_of_failure",
]

OnExceeded: TypeAlias = Literal["fail", "ask"]
"""What a run does when its budget cannot pay for the next agent call."""

Unestimated: TypeAlias = Literal["ask", "allow"]
"""Whether a call with no estimate may start under a budget (see `Budget`)."""

_FIELDS: Final = ("cost_usd", "input_tokens", "output_tokens", "turns", "model")
_NUMBERS: Final = ("cost_usd", "input_tokens", "output_tokens", "turns")


Validator: TypeAlias = Callable[[object, "attrs.Attribute[Any]", object], None]


def _bounded_cost(owner: str) -> Validator:
    """Build the validator of a dollar field of `owner`: unknown, or 0 up to the most."""

    def check(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        require_seconds(owner, attribute.name, value, optional=True)
        if value is not None and value > MAX_COST_USD:  # type: ignore[operator] # a number, checked
            msg = f"{owner}: {attribute.name} must be at most {MAX_COST_USD:.0f}, got {value!r}"
            raise DefinitionError(msg)

    return check


def _bounded_count(owner: str) -> Validator:
    """Build the validator of a count field of `owner`: unknown, or 0 up to the most."""

    def check(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is not None:
            require_count(owner, attribute.name, value, minimum=0)
            if value > MAX_COUNT:  # type: ignore[operator] # an int, checked above
                msg = f"{owner}: {attribute.name} must be at most {MAX_COUNT:,}, got {value!r}"
                raise DefinitionError(msg)

    return check


_cost, _count = _bounded_cost("Usage"), _bounded_count("Usage")
_limit_cost, _limit_tokens = _bounded_cost("Budget"), _bounded_count("Budget")


def _model(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    require_type("Usage", attribute.name, value, (str, type(None)), "a str or None")


def _add(left: float | None, right: float | None, most: float) -> float | None:
    """Add two parts of a usage, saturating at `most`: a sum never leaves the bounds."""
    if left is None:
        return right
    return left if right is None else min(left + right, most)


def _bounded(value: object, most: float, *, whole: bool) -> float | None:
    """Read a number the journal summed: anything impossible or past `most` saturates to it.

    A negative, non-finite or oversized sum (a forged or corrupt row, a sum
    past the bounds) counts as `most`, which is at or over any budget.
    """
    if value is None:
        return None
    number = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else -1
    if not math.isfinite(number) or not 0 <= number <= most:
        return int(most) if whole else most
    return int(number) if whole else number


@final
@attrs.frozen
class Usage:
    """What one agent call (or a sum of them) cost; every field may be unknown.

    Costs are US dollars; `input_tokens` counts every token the model read
    (cache reads and writes included), `output_tokens` every one it wrote.
    A backend that reports nothing leaves the field `None`, and sums keep
    unknown apart from zero. Impossible values (a negative or non-finite
    cost, a negative count) are refused, so an agent cannot forge a refund,
    and so are values no call could reach (over `MAX_COST_USD` dollars or
    `MAX_COUNT` tokens), so nothing an agent reports can overflow a sum or
    the journal. Sums saturate at those bounds, and a budget can be no
    larger: a saturated sum is over any budget.

    >>> total = Usage(0.25, 100, 20, 1, "sonnet") + Usage(0.5, 10, 2, 2, "sonnet")
    >>> total.describe(), total.tokens
    ('$0.7500, 132 tokens', 132)
    >>> Usage(cost_usd=-1.0)
    Traceback (most recent call last):
    ...
    adws._exceptions.DefinitionError: Usage: cost_usd must be a finite number >= 0.0 or None, ...
    """

    cost_usd: float | None = attrs.field(default=None, validator=_cost)
    input_tokens: int | None = attrs.field(default=None, validator=_count)
    output_tokens: int | None = attrs.field(default=None, validator=_count)
    turns: int | None = attrs.field(default=None, validator=_count)
    model: str | None = attrs.field(default=None, validator=_model)

    @property
    def tokens(self) -> int | None:
        """Return input plus output tokens, or None when neither is known."""
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)

    @property
    def known(self) -> bool:
        """Tell whether anything at all was reported."""
        return any(getattr(self, name) is not None for name in _FIELDS)

    def __add__(self, other: Usage) -> Usage:
        """Sum two usages; a model is kept when both agree (or one is unknown)."""
        if self.model == other.model or other.model is None:
            model = self.model
        elif self.model is None:
            model = other.model
        else:
            model = ", ".join(sorted({*self.model.split(", "), *other.model.split(", ")}))
        # A sum of valid usages is valid: skip the validators, which cost more than the sum.
        total = _new(Usage)
        _set(total, "cost_usd", _add(self.cost_usd, other.cost_usd, MAX_COST_USD))
        _set(total, "input_tokens", _add(self.input_tokens, other.input_tokens, MAX_COUNT))
        _set(total, "output_tokens", _add(self.output_tokens, other.output_tokens, MAX_COUNT))
        _set(total, "turns", _add(self.turns, other.turns, MAX_COUNT))
        _set(total, "model", model)
        return total

    def to_dict(self) -> dict[str, object]:
        """Return the JSON-safe dict `--json` prints and a failed call's context carries.

        Costs are rounded to a billionth of a dollar, so sums print as they should.

        >>> (Usage(0.1) + Usage(0.2)).to_dict()["cost_usd"]
        0.3
        """
        described = {name: getattr(self, name) for name in _FIELDS}
        if self.cost_usd is not None:
            described["cost_usd"] = round(self.cost_usd, 9)
        return described

    @classmethod
    def from_dict(cls, data: object) -> Usage | None:
        """Read what `to_dict` wrote; anything else (a forged or broken value) is None.

        >>> Usage.from_dict({"cost_usd": 0.5}), Usage.from_dict({"cost_usd": "free"})
        (Usage(cost_usd=0.5, input_tokens=None, output_tokens=None, turns=None, model=None), None)
        """
        if not isinstance(data, Mapping):
            return None
        try:
            return cls(**{name: data.get(name) for name in _FIELDS})
        except (TypeError, ValueError):
            return None

    @classmethod
    def from_sums(cls, *columns: object) -> Usage:
        """Build a usage from the journal's sums (`cost_usd`, the counts, `model`), saturated.

        A sum past the bounds, or a corrupt value, reads as the bound: the
        spend stays over any budget instead of reading as unknown or $0.

        >>> Usage.from_sums(float("inf"), 2**70, None, 3, None).describe()
        'over $1,000,000,000, over 1,000,000,000,000 tokens'
        """
        values = dict(zip(_FIELDS, columns, strict=True))
        total = _new(Usage)
        _set(total, "cost_usd", _bounded(values["cost_usd"], MAX_COST_USD, whole=False))
        for name in _NUMBERS[1:]:
            _set(total, name, _bounded(values[name], MAX_COUNT, whole=True))
        model = values["model"]
        _set(total, "model", model if isinstance(model, str) else None)
        return total

    def describe(self) -> str:
        """Say the cost and the tokens in a few words ("unknown" when nothing was reported).

        >>> Usage(input_tokens=1200).describe(), Usage().describe()
        ('1,200 tokens', 'unknown')
        """
        parts = []
        if self.cost_usd is not None:
            over = self.cost_usd >= MAX_COST_USD
            parts.append(f"over ${MAX_COST_USD:,.0f}" if over else f"${self.cost_usd:.4f}")
        tokens = self.tokens
        if tokens is not None:
            over = max(self.input_tokens or 0, self.output_tokens or 0) >= MAX_COUNT
            parts.append(f"over {MAX_COUNT:,} tokens" if over else f"{tokens:,} tokens")
        return ", ".join(parts) or "unknown"


_new = object.__new__
_set = object.__setattr__


def _tighter(left: float | None, right: float | None) -> float | None:
    if left is None:
        return right
    return left if right is None else min(left, right)


def _on_exceeded(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value not in {"fail", "ask"}:
        msg = f"Budget: {attribute.name} must be 'fail' or 'ask', got {value!r}"
        raise DefinitionError(msg)


def _unestimated(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value not in {"ask", "allow"}:
        msg = f"Budget: {attribute.name} must be 'ask' or 'allow', got {value!r}"
        raise DefinitionError(msg)


@final
@attrs.frozen
class Budget:
    """A ceiling on a run's spend, checked before every agent call.

    On a `Workflow`, on an `agent_step`, or from `adws run --max-cost USD
    --max-tokens N`. Before each agent call the run's spend so far (every
    attempt of every step, failed ones and earlier sessions of a resumed
    run included) is compared with the tightest budget that applies; at or
    past it the call is not made and the step fails `BudgetExceeded`, which
    is never retried. A budget on an `agent_step` is the run's spend past
    which that step no longer calls its agent. A call whose backend reports
    no cost counts as $0 against `max_cost_usd` (and likewise for tokens):
    give such backends a token budget or none.

    Inside `parallel`, `fan_out` and `best_of` a call also reserves its
    estimate until it reports its cost (see `adws.engine.reservations`), so
    concurrent branches cannot overshoot the budget together. A call made
    one at a time starts only when the spend so far plus its estimate fits
    (the same rule). A call with no estimate yet (the run's first, with no
    history in the journal) gets the room left when its backend caps its
    own spend (the claude CLI's `--max-budget-usd`, `ClaudeAgent`'s
    `max_budget_usd`); for other backends `unestimated` decides: `"allow"`
    lets it start while the spend is under the budget, the default `"ask"`
    asks a person first under a budget that asks (a budget that fails has
    nobody to ask and lets it start). Once a person raised the budget
    (`adws approve`) such a call starts.
    `on_exceeded="ask"` (or `adws run --on-budget ask`) turns the
    `BudgetExceeded` of a run that has not failed into a question: the run
    ends `waiting`, and `adws approve RUN --max-cost USD` (or
    `--max-tokens N`) raises the budget and continues it; `adws reject`
    ends it. Either budget asking makes the run ask.

    >>> Budget(max_cost_usd=1.0).exceeded(Usage(cost_usd=1.25))
    'the run has spent $1.2500 of its $1.0000 budget (max_cost_usd)'
    >>> Budget(max_tokens=10).exceeded(Usage(input_tokens=3)) is None
    True
    """

    max_cost_usd: float | None = attrs.field(default=None, validator=_limit_cost)
    max_tokens: int | None = attrs.field(default=None, validator=_limit_tokens)
    on_exceeded: OnExceeded = attrs.field(default="fail", validator=_on_exceeded, kw_only=True)
    unestimated: Unestimated = attrs.field(default="ask", validator=_unestimated, kw_only=True)

    def tighter(self, other: Budget | None) -> Budget:
        """Return the budget that holds both this one and `other` (asking if either asks)."""
        if other is None:
            return self
        ask = "ask" in {self.on_exceeded, other.on_exceeded}
        allow = self.unestimated == other.unestimated == "allow"
        return Budget(
            _tighter(self.max_cost_usd, other.max_cost_usd),
            _tighter(self.max_tokens, other.max_tokens),  # type: ignore[arg-type] # min of ints
            on_exceeded="ask" if ask else "fail",
            unestimated="allow" if allow else "ask",
        )

    def raised_to(self, raised: Budget | None) -> Budget:
        """Return this budget with each limit `raised` sets replacing its own (`adws approve`).

        >>> Budget(5.0, 100).raised_to(Budget(10.0)).describe()
        '$10.0000, 100 tokens'
        """
        if raised is None:
            return self
        return Budget(
            self.max_cost_usd if raised.max_cost_usd is None else raised.max_cost_usd,
            self.max_tokens if raised.max_tokens is None else raised.max_tokens,
            on_exceeded=self.on_exceeded,
            unestimated=self.unestimated,
        )

    def exceeded(self, spent: Usage) -> str | None:
        """Say why no further call fits in this budget, or None while one does."""
        # Rounded to a billionth: $0.03 + $0.29 + $0.29 + $0.49 has spent $1.10, not $1.0999….
        cost, tokens = round(spent.cost_usd or 0.0, 9), spent.tokens or 0
        if self.max_cost_usd is not None and cost >= self.max_cost_usd:
            return (
                f"the run has spent ${cost:.4f} of its ${self.max_cost_usd:.4f} budget"
                " (max_cost_usd)"
            )
        if self.max_tokens is not None and tokens >= self.max_tokens:
            return f"the run has used {tokens:,} of its {self.max_tokens:,} tokens (max_tokens)"
        return None

    def describe(self) -> str:
        """Say the limits in a few words.

        >>> Budget(0.5, 10_000).describe()
        '$0.5000, 10,000 tokens'
        """
        return Usage(self.max_cost_usd, self.max_tokens).describe()

    def to_dict(self) -> dict[str, object]:
        """Return the JSON-safe dict `--json` prints."""
        return {"max_cost_usd": self.max_cost_usd, "max_tokens": self.max_tokens}


def dollars(cost: float) -> str:
    """Write a cost for people: to the cent, or to the hundredth of a cent when cents hide it.

    >>> dollars(4.1), dollars(0.0027), dollars(0.0), dollars(1234.5)
    ('$4.10', '$0.0027', '$0.00', '$1,234.50')
    """
    cents = round(cost, 2)
    return f"${cost:,.2f}" if cents == round(cost, 9) else f"${cost:,.4f}"


def usage_of_failure(context: Mapping[str, object]) -> Usage | None:
    """Return the usage a failed call reported in its error's context, if any."""
    return Usage.from_dict(context.get("usage"))
