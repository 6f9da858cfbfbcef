"""Sum what the journal says agent calls cost: `adws cost`.

Only top-level attempt rows are summed: a parallel step's attempt already
holds what its branches spent, and its branch rows (`name[i]`) say how that
split. Failed attempts count; spend is dated by when the attempt was
recorded, so a run resumed the next day spends on both days.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, final

import attrs

from adws.engine.usage import Usage

if TYPE_CHECKING:
    from adws.journal.store.journal import Journal

__all__ = ["GROUPINGS", "KEY_NAMES", "CostRow", "Grouping", "costs"]

Grouping: TypeAlias = Literal["step", "workflow", "day", "week", "agent", "ticket", "host"]

GROUPINGS: Final[dict[str, tuple[str, ...]]] = {
    "step": ("runs.workflow", "a.step"),
    "workflow": ("runs.workflow",),
    "day": ("substr(a.recorded, 1, 10)",),
}
"""The columns each grouping of `adws cost --by` groups and orders by in SQL.

The others (`week`, `agent`, `ticket`, `host`) read what a run recorded
(its options, inputs and host) and are grouped here, per attempt."""

KEY_NAMES: Final[dict[str, tuple[str, ...]]] = {
    "step": ("workflow", "step"),
    "workflow": ("workflow",),
    "day": ("day",),
    "week": ("week",),
    "agent": ("agent",),
    "ticket": ("ticket",),
    "host": ("host",),
}
"""What each grouping's key is made of, for `--json` and the table's header."""

_SUMMED: Final = ("cost_usd", "input_tokens", "output_tokens", "turns")


@final
@attrs.frozen
class CostRow:
    """One group's spend: `key` names it (workflow and step, workflow, or day)."""

    key: tuple[str, ...]
    runs: int
    attempts: int
    usage: Usage

    def to_dict(self, by: Grouping) -> dict[str, object]:
        """Return the JSON-safe dict `adws cost --json` prints."""
        return {
            **dict(zip(KEY_NAMES[by], self.key, strict=True)),
            "runs": self.runs,
            "attempts": self.attempts,
            **self.usage.to_dict(),
        }


def costs(
    journal: Journal,
    *,
    by: Grouping = "step",
    workflow: str | None = None,
    since: str | None = None,
) -> list[CostRow]:
    """Sum the attempts that reported usage, grouped `by`, oldest day or name first.

    `since` is an ISO date (or date and time): only attempts recorded then
    or later count. `week` is the ISO week an attempt was recorded in
    (`2026-W48`); `agent` the `--agent` its run was started with, `ticket`
    its run's `ticket` input (the watcher sets it), `host` the host that ran
    it last: `-` where the run recorded none. A journal older than schema 5 recorded no usage: [].
    """
    if not journal.records_usage:
        return []
    if by not in GROUPINGS:
        return _by_run(journal, by, workflow, since)
    columns = GROUPINGS[by]
    keys = ", ".join(columns)
    sql = (
        f"SELECT {keys}, COUNT(DISTINCT a.run_id), COUNT(*), {journal.safe_sum('a.cost_usd')},"  # noqa: S608 - fixed column names
        f" {journal.safe_sum('a.input_tokens')}, {journal.safe_sum('a.output_tokens')},"
        f" {journal.safe_sum('a.turns')}"
        " FROM attempts AS a JOIN runs USING (run_id)"
        " WHERE a.step NOT LIKE '%[%'"
        " AND (a.cost_usd IS NOT NULL OR a.input_tokens IS NOT NULL"
        " OR a.output_tokens IS NOT NULL OR a.turns IS NOT NULL)"
        " AND (? IS NULL OR runs.workflow = ?) AND (? IS NULL OR a.recorded >= ?)"
        f" GROUP BY {keys} ORDER BY {keys}"
    )
    rows = journal.query(sql, (workflow, workflow, since, since))
    width = len(columns)
    return [
        CostRow(
            tuple(str(value) for value in row[:width]),
            row[width],
            row[width + 1],
            # A sum no adws could have written (negative, past the bounds) saturates.
            Usage.from_sums(*row[width + 2 :], None),
        )
        for row in rows
    ]


_PER_ATTEMPT: Final = (
    "SELECT a.run_id, a.recorded, runs.options, runs.host, run_inputs.inputs,"
    " a.cost_usd, a.input_tokens, a.output_tokens, a.turns"
    " FROM attempts AS a JOIN runs USING (run_id) LEFT JOIN run_inputs USING (run_id)"
    " WHERE a.step NOT LIKE '%[%'"
    " AND (a.cost_usd IS NOT NULL OR a.input_tokens IS NOT NULL"
    " OR a.output_tokens IS NOT NULL OR a.turns IS NOT NULL)"
    " AND (? IS NULL OR runs.workflow = ?) AND (? IS NULL OR a.recorded >= ?)"
)


def _field(text: object, *path: str) -> str:
    """Return the text at `path` in a JSON object (`-` where there is none)."""
    try:
        found: object = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return "-"
    for name in path:
        found = found.get(name) if isinstance(found, dict) else None
    return found if isinstance(found, str) and found else "-"


def _week(recorded: object) -> str:
    try:
        year, week, _day = dt.date.fromisoformat(str(recorded)[:10]).isocalendar()
    except ValueError:
        return "-"
    return f"{year}-W{week:02d}"


def _key(by: Grouping, recorded: object, options: object, inputs: object, host: object) -> str:
    """Return the group of one attempt, from what its run recorded."""
    if by == "week":
        return _week(recorded)
    if by == "agent":
        return _field(options, "agent")
    if by == "ticket":
        return _field(inputs, "inputs", "ticket")
    return host if isinstance(host, str) and host else "-"


def _by_run(
    journal: Journal, by: Grouping, workflow: str | None, since: str | None
) -> list[CostRow]:
    """Sum the attempts grouped by what their runs recorded (week, agent, ticket or host)."""
    runs: dict[str, set[str]] = {}
    attempts: dict[str, int] = {}
    totals: dict[str, Usage] = {}
    rows = journal.query(_PER_ATTEMPT, (workflow, workflow, since, since))
    for run_id, recorded, options, host, inputs, *usage in rows:
        key = _key(by, recorded, options, inputs, host)
        runs.setdefault(key, set()).add(str(run_id))
        attempts[key] = attempts.get(key, 0) + 1
        spent = Usage.from_sums(*usage, None)
        totals[key] = totals[key] + spent if key in totals else spent
    return [CostRow((key,), len(runs[key]), attempts[key], totals[key]) for key in sorted(totals)]
