"""Sum what the journal says agent calls cost: `adws cost`.

Only top-level attempt rows are summed: a parallel step's attempt already
holds what its branches spent, and its branch rows (`name[i]`) say how that
split. Failed attempts count; spend is dated by when the attempt was
recorded, so a run resumed the next day spends on both days.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal, TypeAlias, final

import attrs

from adws.engine.usage import Usage

if TYPE_CHECKING:
    from adws.journal.store.journal import Journal

__all__ = ["GROUPINGS", "KEY_NAMES", "CostRow", "Grouping", "costs"]

Grouping: TypeAlias = Literal["step", "workflow", "day"]

GROUPINGS: Final[dict[str, tuple[str, ...]]] = {
    "step": ("runs.workflow", "a.step"),
    "workflow": ("runs.workflow",),
    "day": ("substr(a.recorded, 1, 10)",),
}
"""The columns each grouping of `adws cost --by` groups and orders by."""

KEY_NAMES: Final[dict[str, tuple[str, ...]]] = {
    "step": ("workflow", "step"),
    "workflow": ("workflow",),
    "day": ("day",),
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
    or later count. A journal older than schema 5 recorded no usage: [].
    """
    if not journal.records_usage:
        return []
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
