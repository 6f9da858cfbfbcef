"""`adws cost`: what the journal says agent calls cost, summed."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from adws.cli._args import UsageError
from adws.cli._options import add_journal, journal_of
from adws.cli._output import err, out, out_json
from adws.journal.store.costs import KEY_NAMES, costs
from adws.render import table

if TYPE_CHECKING:
    import argparse

    from adws.engine.usage import Usage
    from adws.journal.store.costs import CostRow, Grouping

__all__ = ["add_cost", "cmd_cost", "cost_table"]


def add_cost(parser: argparse.ArgumentParser) -> None:
    """Declare `adws cost [--workflow W] [--since DATE] [--by step|workflow|day] [--json]`."""
    parser.description = (
        "Sum the usage the journal recorded for every attempt (failed ones "
        "included), by step, workflow or day, with a total."
    )
    add_journal(parser)
    parser.add_argument("--workflow", help="only runs of this workflow")
    parser.add_argument(
        "--since", metavar="DATE", help="only attempts recorded on or after DATE (2026-11-01)"
    )
    parser.add_argument(
        "--by", choices=["step", "workflow", "day"], default="step", help="group by (default: step)"
    )
    parser.add_argument("--json", action="store_true", help="print a JSON list")


def _since(text: str | None) -> str | None:
    if text is None:
        return None
    try:
        return dt.datetime.fromisoformat(text).isoformat()
    except ValueError:
        msg = f"--since: expected a date such as 2026-11-01, got {text!r}"
        raise UsageError(msg) from None


def _number(value: float | None, template: str) -> str:
    return "-" if value is None else template.format(value)


def cost_table(rows: list[CostRow], by: Grouping) -> str:
    """Render the rows, one per group, then their total."""
    names = tuple(name.upper() for name in KEY_NAMES[by])
    total = rows[0].usage
    for row in rows[1:]:
        total += row.usage
    lines = [(*row.key, str(row.runs), str(row.attempts), *_cells(row.usage)) for row in rows]
    # A run spends in many steps and on many days: only per workflow do the runs add up.
    runs = str(sum(row.runs for row in rows)) if by == "workflow" else ""
    blank = ("",) * (len(names) - 1)
    lines.append(("TOTAL", *blank, runs, str(sum(r.attempts for r in rows)), *_cells(total)))
    header = (*names, "RUNS", "ATTEMPTS", "COST", "INPUT TOKENS", "OUTPUT TOKENS")
    return table(header, lines)


def _cells(usage: Usage) -> tuple[str, str, str]:
    return (
        _number(usage.cost_usd, "${:.4f}"),
        _number(usage.input_tokens, "{:,}"),
        _number(usage.output_tokens, "{:,}"),
    )


def cmd_cost(args: argparse.Namespace) -> int:
    """Sum the spend the journal recorded, by step, workflow or day."""
    journal = journal_of(args, readonly=True)
    rows = costs(journal, by=args.by, workflow=args.workflow, since=_since(args.since))
    if args.json:
        out_json([row.to_dict(args.by) for row in rows])
    elif rows:
        out(cost_table(rows, args.by))
    else:
        err(f"no agent usage recorded in {journal.path}")
    running = journal.runs(status="running", workflow=args.workflow)
    elsewhere = [f"{run.run_id} {run.held_elsewhere}" for run in running if run.held_elsewhere]
    if elsewhere:
        err(f"note: these runs count as far as they recorded: {'; '.join(elsewhere)}")
    return 0
