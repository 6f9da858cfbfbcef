"""What `adws eval` prints: the table (plain or Markdown), the failure hint, the per-task table.

The plain table is for a terminal; `--markdown` writes the same figures as
a GitHub table for a pull request comment. Below either, a variant whose
every ended run failed gets its most common failure and the command that
shows one such run (`adws status RUN`), and the baseline gate's verdicts.
Progress goes to stderr: every update on a terminal, off one (a CI log)
a line when a run finished, at most every few seconds (`ProgressLines`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Final, final

from adws.batch.evaluation import by_task, common_failure

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from adws.batch.evaluation import Comparison, EvalRun, EvalScore, Failure
    from adws.batch.report import Progress

__all__ = [
    "PROGRESS_EVERY",
    "ProgressLines",
    "failures_of",
    "markdown",
    "task_table",
    "text_table",
]

PROGRESS_EVERY: Final = 5.0
"""Seconds between two progress lines off a terminal."""


def _figure(value: float | None, form: str) -> str:
    return "-" if value is None else form.format(value)


def _compared(comparison: Comparison | None) -> list[str]:
    if comparison is None:
        return []
    difference = f"{comparison.first} - {comparison.second}: {comparison.difference:+.3f}"
    return [f"{difference}; Fisher's exact test: {comparison.verdict}"]


def failures_of(names: Sequence[str], runs: Sequence[EvalRun]) -> list[Failure]:
    """Return the most common failure of every variant whose every ended run failed."""
    return [f for f in (common_failure(name, runs) for name in names) if f is not None]


def _hint(failure: Failure) -> str:
    return (
        f"{failure.variant}: all {failure.failed} ended runs failed; most common:"
        f" {failure.error_type} at step {failure.step} ({failure.count} of {failure.failed});"
        f" see one: adws status {failure.run_id}"
    )


def text_table(
    scores: Sequence[EvalScore],
    comparison: Comparison | None,
    metric: str | None,
    failures: Sequence[Failure] = (),
) -> str:
    """Render the terminal table, the comparison, and each all-failed variant's hint."""
    what = f"mean {metric}" if metric else "pass rate"
    head = f"{'variant':<12} {'runs':>5} {'passed':>6} {'waiting':>7} {what:>10}"
    lines = [f"{head}  {'95% interval':<16} {'mean cost':>10} {'mean time':>9}"]
    lines.extend(
        f"{s.variant:<12} {s.runs:>5} {s.passed:>6} {s.waiting:>7} {s.rate:>10.3f}  "
        f"{f'[{s.low:.3f}, {s.high:.3f}]':<16} {_figure(s.mean_cost_usd, '${:.4f}'):>10} "
        f"{_figure(s.mean_seconds, '{:.2f}s'):>9}"
        for s in scores
    )
    lines.extend(_compared(comparison))
    lines.extend(_hint(failure) for failure in failures)
    return "\n".join(lines)


def _cell(text: str) -> str:
    r"""Make text safe in a Markdown table cell: no pipe, no line break, no HTML.

    >>> _cell("a|b<i>\nc")
    'a\\|b&lt;i&gt; c'
    """
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("|", "\\|")
        .replace("\n", " ")
    )


def markdown(  # noqa: PLR0913 - the figures, and everything said under them
    title: str,
    scores: Sequence[EvalScore],
    comparison: Comparison | None,
    metric: str | None,
    *,
    failures: Sequence[Failure] = (),
    verdicts: Sequence[str] = (),
) -> str:
    """Render the evaluation as Markdown for a pull request comment."""
    what = f"mean {metric}" if metric else "pass rate"
    lines = [
        f"### {_cell(title)}",
        "",
        f"| variant | runs | passed | waiting | {what} | 95% interval | mean cost | mean time |",
        "|---|--:|--:|--:|--:|---|--:|--:|",
    ]
    lines.extend(
        f"| {_cell(s.variant)} | {s.runs} | {s.passed} | {s.waiting} | {s.rate:.3f} |"
        f" [{s.low:.3f}, {s.high:.3f}] | {_figure(s.mean_cost_usd, '${:.4f}')} |"
        f" {_figure(s.mean_seconds, '{:.2f}s')} |"
        for s in scores
    )
    said = [*_compared(comparison), *(_hint(f) for f in failures), *verdicts]
    if said:
        lines.append("")
        lines.extend(f"- {_cell(line)}" for line in said)
    return "\n".join(lines)


def task_table(names: Sequence[str], runs: Sequence[EvalRun], lines: Sequence[int]) -> str:
    """Render each task's passes per variant; `lines` are the tasks' line numbers in the file."""
    table = by_task(names, runs)
    cells = [cell for _, row in table for cell in row]
    width = max(len(text) for text in [*names, *cells]) + 2
    rows = [f"{'task line':<9}" + "".join(f"{name:>{width}}" for name in names)]
    rows.extend(
        f"{lines[task]:<9}" + "".join(f"{cell:>{width}}" for cell in row) for task, row in table
    )
    return "\n".join(rows)


@final
class ProgressLines:
    """Choose the progress lines to print: every update on a terminal, few off one.

    Off a terminal (a CI log), a line is printed only when a run finished,
    and at most once every `every` seconds, the last one (all finished)
    always: 40 runs make a handful of lines, not one per update.
    """

    def __init__(
        self,
        batch_id: str,
        *,
        terminal: bool,
        every: float = PROGRESS_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Print for `batch_id`; `clock` tells the time in seconds (a fake one in tests)."""
        self._batch_id = batch_id
        self._terminal = terminal
        self._every = every
        self._clock = clock
        self._finished = 0
        self._last: float | None = None

    def __call__(self, state: Progress) -> str | None:
        """Return the line to print for `state`, or None to print nothing."""
        if self._terminal:
            return state.line(self._batch_id)
        if state.finished == self._finished:
            return None
        now = self._clock()
        recent = self._last is not None and now - self._last < self._every
        if recent and state.finished < state.total:
            return None
        self._finished, self._last = state.finished, now
        return state.line(self._batch_id)
