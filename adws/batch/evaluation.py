"""`adws eval`'s arithmetic: pass rates with Wilson intervals, Fisher's exact test, the verdict.

Pure functions over what each run ended as; the command (`adws.cli.eval`)
runs the batch and prints. A variant's pass rate is `passed / runs` with
its 95% Wilson score interval; two variants are compared on their pooled
counts with Fisher's exact test (two-sided: the probability, under the
hypergeometric law of the table's margins, of every table no more likely
than the one seen). With `metric`, a run's score is its numeric output
`metric` (a run without it, or failed, scores 0) and the rate is the mean.

A run that stopped for a person's approval (`waiting`) is neither a pass
nor a failure: it is counted in its own column and left out of the rate
and the interval, which are over the runs that ended. When every run of a
variant that ended failed, `common_failure` names the most common way
(error kind and step) and one run that shows it; `by_task` gives each
task's passes per variant.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, Final, final

import attrs

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "Z_95",
    "Comparison",
    "EvalRun",
    "EvalScore",
    "Failure",
    "by_task",
    "common_failure",
    "compare",
    "fisher_exact",
    "metric_value",
    "p_said",
    "score",
    "wilson",
]

Z_95: Final = 1.959963984540054
"""The standard normal quantile of 0.975: a two-sided 95% interval."""

_RELATIVE: Final = 1 + 1e-7
"""Tables whose probability equals the observed one's up to rounding count as extreme too."""


def wilson(passed: int, runs: int, z: float = Z_95) -> tuple[float, float]:
    """Return the Wilson score interval of `passed` out of `runs` ((0, 1) with no runs).

    >>> low, high = wilson(8, 10)
    >>> round(low, 4), round(high, 4)
    (0.4902, 0.9433)
    """
    if runs == 0:
        return 0.0, 1.0
    rate = passed / runs
    denominator = 1 + z * z / runs
    centre = (rate + z * z / (2 * runs)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / runs + z * z / (4 * runs * runs)) / denominator
    # At 0 and at `runs` the bound is exact: no rounding may move it off 0 or 1.
    low = 0.0 if passed == 0 else max(0.0, centre - half)
    return low, 1.0 if passed == runs else min(1.0, centre + half)


def fisher_exact(a: int, b: int, c: int, d: int) -> float:
    """Return the two-sided p-value of Fisher's exact test on the table `[[a, b], [c, d]]`.

    Rows are variants, columns passed and failed. Exact integer arithmetic
    (binomial coefficients), so no float underflows on large tables.

    >>> round(fisher_exact(8, 2, 1, 5), 6)
    0.034965
    >>> fisher_exact(3, 3, 3, 3)
    1.0
    """
    row1, column1, total = a + b, a + c, a + b + c + d
    low, high = max(0, column1 - (c + d)), min(row1, column1)

    def weight(x: int) -> int:
        return math.comb(row1, x) * math.comb(total - row1, column1 - x)

    observed = weight(a)
    extreme = sum(w for x in range(low, high + 1) if (w := weight(x)) <= observed * _RELATIVE)
    return min(1.0, extreme / math.comb(total, column1))


def p_said(p_value: float) -> str:
    """Write a p-value with four decimals, or as a bound below 0.0001.

    >>> p_said(0.5), p_said(0.00012), p_said(2e-9)
    ('p = 0.5000', 'p = 0.0001', 'p < 0.0001')
    """
    return "p < 0.0001" if p_value < 0.0001 else f"p = {p_value:.4f}"  # noqa: PLR2004 - the bound printed


@final
@attrs.frozen
class EvalRun:
    """One run of an evaluation, as it ended."""

    variant: str
    task: int
    status: str
    cost_usd: float | None = None
    seconds: float | None = None
    metric: float | None = None
    run_id: str = ""
    error_type: str | None = None
    """The kind of error a failed run ended with (`StepException`, ...)."""
    step: str | None = None
    """The step a failed run ended at."""


@final
@attrs.frozen
class Failure:
    """The most common way a variant's runs failed: error kind, step, how many, one run."""

    variant: str
    error_type: str
    step: str
    count: int
    failed: int
    run_id: str

    def to_dict(self) -> dict[str, object]:
        """Return the failure by name, for `--json`."""
        return attrs.asdict(self)


@final
@attrs.frozen
class EvalScore:
    """One variant's figures: runs, passes, rate and its interval, mean cost and time.

    `waiting` runs stopped for approval: counted in `runs`, not in the rate.
    """

    variant: str
    runs: int
    passed: int
    rate: float
    low: float
    high: float
    mean_cost_usd: float | None
    mean_seconds: float | None
    waiting: int = 0

    def to_dict(self) -> dict[str, object]:
        """Return the figures by name, for `--json`."""
        return attrs.asdict(self)


@final
@attrs.frozen
class Comparison:
    """Two variants compared: the difference of their rates and Fisher's p-value."""

    first: str
    second: str
    difference: float
    p_value: float

    @property
    def verdict(self) -> str:
        """Say what the test shows, in words.

        >>> Comparison("a", "b", 0.1, 0.5).verdict
        'no detectable difference (p = 0.5000 >= 0.05)'
        >>> Comparison("a", "b", -0.9, 1e-9).verdict
        'b is better (p < 0.0001)'
        """
        if self.p_value >= 0.05:  # noqa: PLR2004 - the conventional level, named in the words
            return f"no detectable difference ({p_said(self.p_value)} >= 0.05)"
        better = self.first if self.difference > 0 else self.second
        said = p_said(self.p_value)
        return f"{better} is better ({said if said.startswith('p <') else f'{said} < 0.05'})"

    def to_dict(self) -> dict[str, object]:
        """Return the comparison by name, with its verdict, for `--json`."""
        return {**attrs.asdict(self), "verdict": self.verdict}


def _mean(values: Sequence[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return sum(known) / len(known) if known else None


def score(
    names: Sequence[str], runs: Sequence[EvalRun], *, metric: bool = False
) -> list[EvalScore]:
    """Score each variant (in `names` order) from its runs.

    A run passes when it succeeded; with `metric`, the rate is the mean of
    the runs' metrics (a missing one counts 0) and the interval is Wilson's
    over the passes still (a success is a run whose metric is above 0).
    Runs `waiting` for approval count in `runs` and `waiting` only.
    """
    scores = []
    for name in names:
        everyone = [run for run in runs if run.variant == name]
        mine = [run for run in everyone if run.status != "waiting"]
        if metric:
            values = [run.metric or 0.0 for run in mine]
            passed = sum(1 for value in values if value > 0)
            rate = sum(values) / len(values) if values else 0.0
        else:
            passed = sum(1 for run in mine if run.status == "succeeded")
            rate = passed / len(mine) if mine else 0.0
        low, high = wilson(passed, len(mine))
        scores.append(
            EvalScore(
                name,
                len(everyone),
                passed,
                rate,
                low,
                high,
                _mean([run.cost_usd for run in mine]),
                _mean([run.seconds for run in mine]),
                len(everyone) - len(mine),
            )
        )
    return scores


def common_failure(variant: str, runs: Sequence[EvalRun]) -> Failure | None:
    """Name the most common failure of `variant` when every one of its runs that ended failed.

    The most common (error kind, step) wins, ties by first seen; its run is
    the first that failed so. None when a run passed, or none ended.

    >>> runs = [EvalRun("a", 0, "failed", run_id="r1", error_type="E", step="s")]
    >>> common_failure("a", runs)
    Failure(variant='a', error_type='E', step='s', count=1, failed=1, run_id='r1')
    """
    ended = [run for run in runs if run.variant == variant and run.status != "waiting"]
    if not ended or any(run.status == "succeeded" for run in ended):
        return None
    ways = Counter((run.error_type or "unknown", run.step or "-") for run in ended)
    (kind, step), count = ways.most_common(1)[0]
    first = next(r for r in ended if (r.error_type or "unknown", r.step or "-") == (kind, step))
    return Failure(variant, kind, step, count, len(ended), first.run_id)


def by_task(names: Sequence[str], runs: Sequence[EvalRun]) -> list[tuple[int, list[str]]]:
    """Return each task's passes per variant, as `passed/ended` (and `+N waiting`).

    >>> by_task(["a"], [EvalRun("a", 0, "succeeded"), EvalRun("a", 0, "waiting")])
    [(0, ['1/1 +1 waiting'])]
    """
    tasks = sorted({run.task for run in runs})
    rows = []
    for task in tasks:
        cells = []
        for name in names:
            mine = [run for run in runs if (run.variant, run.task) == (name, task)]
            waiting = sum(1 for run in mine if run.status == "waiting")
            passed = sum(1 for run in mine if run.status == "succeeded")
            cell = f"{passed}/{len(mine) - waiting}"
            cells.append(f"{cell} +{waiting} waiting" if waiting else cell)
        rows.append((task, cells))
    return rows


def compare(scores: Sequence[EvalScore]) -> Comparison | None:
    """Compare two variants with Fisher's exact test on their pooled counts (None otherwise)."""
    if len(scores) != 2:  # noqa: PLR2004 - a comparison is of two
        return None
    first, second = scores
    p_value = fisher_exact(
        first.passed, first.runs - first.passed, second.passed, second.runs - second.passed
    )
    return Comparison(first.variant, second.variant, first.rate - second.rate, p_value)


def metric_value(outputs: Mapping[str, object], key: str) -> float | None:
    """Read a run's numeric output `key` (None when it has none, or a non-number)."""
    value = outputs.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None
