"""What the journal's history says runs and agent calls cost: estimates and plans.

Two estimates, both drawn from runs of the same workflow in this journal:

- A call's estimate (`call_estimates`), for reservations inside
  `parallel`, `fan_out` and `best_of`: per agent step, the 90th percentile
  of the cost (and, apart, of the tokens) of its recorded calls (the
  journal's `exchanges`, failed calls included), once it has 5 or more.
- A run's (`finish_estimate`), for `adws run --plan` and `adws resume
  --plan`: per step to run, the median ("about") and the 90th percentile
  ("up to") of what its recorded succeeded attempts cost (an attempt that
  reported nothing counts $0), each summed over the steps. A step with no
  succeeded attempt on record has no history and adds nothing; it is named.

Percentiles are nearest-rank: the q-th percentile of n sorted values is the
value at rank ceil(q * n / 100), so it is always a value that was recorded.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final, final

import attrs

from adws.engine.usage import MAX_COST_USD, MAX_COUNT, Usage, dollars

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Sequence

    from adws.journal.records.plan import StepPlan
    from adws.journal.records.runs import AttemptRecord
    from adws.journal.store.journal import Journal

__all__ = [
    "MIN_CALLS",
    "FinishEstimate",
    "call_estimates",
    "finish_estimate",
    "kept_spend",
    "not_spent",
    "percentile",
]

MIN_CALLS: Final = 5
"""How many recorded calls of a step its estimate needs."""


def percentile(values: Sequence[float], q: int) -> float:
    """Return the q-th percentile of `values` by nearest rank (a value that was recorded).

    >>> percentile([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0], 90)
    0.9
    >>> percentile([3.0, 1.0, 2.0], 50)
    2.0
    """
    ordered = sorted(values)
    return ordered[max(math.ceil(q * len(ordered) / 100), 1) - 1]


def _number(value: object, most: float) -> float | None:
    """Read a recorded cost or count; anything no adws could have written is left out."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and 0 <= number <= most else None


_CALLS: Final = (
    "SELECT e.asked_by, e.cost_usd, e.input_tokens, e.output_tokens FROM exchanges AS e"
    " JOIN runs USING (run_id) WHERE runs.workflow = ?"
)


def call_estimates(journal: Journal, workflow: str) -> dict[str, Usage]:
    """Estimate one agent call per step of `workflow`: the 90th percentile of its recorded calls.

    Cost and tokens are estimated apart, each from the calls that reported
    it, and only once 5 or more did. Steps with fewer have no estimate.
    """
    if not journal.has_table("exchanges"):
        return {}
    costs: dict[str, list[float]] = {}
    tokens: dict[str, list[float]] = {}
    for step, cost, read, wrote in journal.query(_CALLS, (workflow,)):
        if not isinstance(step, str):
            continue
        spent = _number(cost, MAX_COST_USD)
        if spent is not None:
            costs.setdefault(step, []).append(spent)
        counts = [_number(count, MAX_COUNT) for count in (read, wrote)]
        if any(count is not None for count in counts):
            tokens.setdefault(step, []).append(sum(count or 0 for count in counts))
    estimates = {}
    for step in sorted({*costs, *tokens}):
        cost_values, token_values = costs.get(step, []), tokens.get(step, [])
        cost = percentile(cost_values, 90) if len(cost_values) >= MIN_CALLS else None
        count = int(percentile(token_values, 90)) if len(token_values) >= MIN_CALLS else None
        if cost is not None or count is not None:
            estimates[step] = Usage(cost, count)
    return estimates


@final
@attrs.frozen
class FinishEstimate:
    """What finishing a run should cost: about (medians), up to (90th percentiles), from how many.

    `runs` counts the runs the history is drawn from; `unknown` names the
    steps to run that have none.
    """

    about: float
    up_to: float
    runs: int
    unknown: tuple[str, ...] = ()

    def describe(self) -> str:
        """Say the estimate in one line.

        >>> FinishEstimate(0.8, 1.4, 3).describe()
        'about $0.80, up to $1.40 (from 3 runs)'
        >>> FinishEstimate(0.0, 0.0, 0, ("a",)).describe()
        'no estimate: no history'
        """
        if not self.runs:
            return "no estimate: no history"
        runs = "1 run" if self.runs == 1 else f"{self.runs} runs"
        said = f"about {dollars(self.about)}, up to {dollars(self.up_to)} (from {runs}"
        if self.unknown:
            said += f"; no history for {', '.join(self.unknown)}"
        return said + ")"


_SUCCEEDED: Final = (
    "SELECT a.step, a.run_id, {} FROM attempts AS a JOIN runs USING (run_id)"
    " WHERE runs.workflow = ? AND a.status = 'succeeded'"
)


def finish_estimate(journal: Journal, workflow: str, steps: Iterable[str]) -> FinishEstimate:
    """Estimate what running `steps` of `workflow` costs, from its recorded succeeded attempts."""
    wanted = list(dict.fromkeys(steps))
    history: dict[str, list[float]] = {}
    runs: set[str] = set()
    # A journal older than schema 5 recorded no costs: its steps count $0, but are history.
    sql = _SUCCEEDED.format("a.cost_usd" if journal.records_usage else "NULL")
    for step, run_id, cost in journal.query(sql, (workflow,)):
        if step in wanted:
            history.setdefault(step, []).append(_number(cost, MAX_COST_USD) or 0.0)
            runs.add(str(run_id))
    about = sum(percentile(history[step], 50) for step in wanted if step in history)
    up_to = sum(percentile(history[step], 90) for step in wanted if step in history)
    unknown = tuple(step for step in wanted if step not in history)
    return FinishEstimate(round(about, 9), round(up_to, 9), len(runs), unknown)


def kept_spend(
    plan: Sequence[StepPlan], attempts: Collection[AttemptRecord], reused: Collection[str] = ()
) -> tuple[int, int, float]:
    """Count the steps and branches a resume keeps, and what they cost: not spent again.

    A kept step's cost is its latest succeeded attempt's; `reused` names the
    branches of the step it starts at that succeeded and are kept too.
    """
    kept = {item.step for item in plan if item.action == "kept"}
    cost: dict[str, float] = {}
    for record in attempts:
        if (record.step in kept or record.step in reused) and record.status == "succeeded":
            usage = record.usage or Usage()
            cost[record.step] = usage.cost_usd or 0.0
    return len(kept), len(reused), round(sum(cost.values()), 9)


def not_spent(kept: tuple[int, int, float]) -> str:
    """Say what a resume keeps and so does not spend again.

    >>> not_spent((23, 0, 4.1)), not_spent((1, 3, 3.0))
    ('kept 23 steps, $4.10 not spent again', 'kept 1 step and 3 branches, $3.00 not spent again')
    """
    steps, branches, cost = kept
    said = f"kept {steps} step{'' if steps == 1 else 's'}"
    if branches:
        said += f" and {branches} branch{'' if branches == 1 else 'es'}"
    return f"{said}, {dollars(cost)} not spent again"
