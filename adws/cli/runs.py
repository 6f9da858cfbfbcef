"""`adws runs`: the runs recorded, newest first, and pruning the old ones."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Final

from adws.cli import EXIT_CODES
from adws.cli._args import UsageError
from adws.cli._options import add_journal, journal_of
from adws.cli._output import err, err_unreadable, out, out_json
from adws.cli._values import days, whole
from adws.journal.records.runs import named_problems
from adws.journal.store.batches import find_batch
from adws.journal.store.caps import holding
from adws.journal.store.prune import prune
from adws.journal.store.tickets import rounds
from adws.render import runs_table
from adws.render.tickets import round_dict, rounds_text
from adws.render.words import RUN_STATUSES
from adws.runs.worktrees import repositories_of
from adws.workspaces.branches import delete_branches_of

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping, Sequence

    from adws.journal import AttemptRecord, Journal, RunRecord
    from adws.journal.records.diffs import DiffRecord
    from adws.journal.records.exchanges import ExchangeRecord


__all__ = ["add_runs", "cmd_runs", "find_run", "unreadable", "unreadable_runs"]

EXIT_OK: Final = EXIT_CODES["succeeded"]
EXIT_FAILED: Final = EXIT_CODES["failed"]


def add_runs(parser: argparse.ArgumentParser) -> None:
    """Declare `adws runs [--workflow W] [--status S] [--limit N] [--batch B] [--prune ...]`."""
    add_journal(parser)
    parser.add_argument("--workflow", help="only runs of this workflow")
    parser.add_argument("--status", choices=RUN_STATUSES, help="only runs with this status")
    parser.add_argument("--limit", type=whole, metavar="N", help="at most N runs")
    parser.add_argument(
        "--batch", metavar="BATCH", help="only the runs of this batch, in line order"
    )
    parser.add_argument(
        "--ticket",
        metavar="KEY",
        help="the rounds of one ticket (github:OWNER/NAME#7): runs, refusals and why",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON list")
    parser.add_argument(
        "--prune",
        action="store_true",
        help="delete finished runs (with --older-than or --keep) and reclaim the space",
    )
    parser.add_argument(
        "--older-than", type=days, metavar="DAYS", help="with --prune: runs started before"
    )
    parser.add_argument("--keep", type=whole, metavar="N", help="with --prune: keep the newest N")


def unreadable(
    journal: Journal,
    records: Sequence[RunRecord],
    attempts: Sequence[AttemptRecord] = (),
    calls: Sequence[ExchangeRecord] = (),
    diffs: Sequence[DiffRecord] = (),
) -> int:
    """Name the rows of the journal that could not be read whole; return the exit code.

    `attempts`, `calls` (its agent exchanges) and `diffs` (its worktree
    diffs) are those of the first run of `records`. What could be read was
    shown already: one bad row never hides the rest.
    """
    runs: list[tuple[RunRecord, Sequence[AttemptRecord], Sequence[ExchangeRecord]]]
    runs = [(record, (), ()) for record in records]
    if runs:
        runs[0] = (records[0], attempts, calls)
    return unreadable_runs(journal, runs, {records[0].run_id: diffs} if diffs else None)


def unreadable_runs(
    journal: Journal,
    runs: Sequence[tuple[RunRecord, Sequence[AttemptRecord], Sequence[ExchangeRecord]]],
    diffs: Mapping[str, Sequence[DiffRecord]] | None = None,
) -> int:
    """Name the unreadable rows of runs, their attempts, exchanges and diffs; return the exit code.

    `diffs` are the worktree diffs read, by run id.
    """
    problems = [
        f"run {record.run_id}: {problem}" for record, _, _ in runs for problem in record.problems
    ]
    for record, attempts, calls in runs:
        problems += named_problems("attempts", record.run_id, attempts)
        problems += named_problems("exchanges", record.run_id, calls)
    for run_id, found in (diffs or {}).items():
        problems += named_problems("diffs", run_id, found)
    if not problems:
        return EXIT_OK
    err_unreadable(str(journal.path), problems)
    return EXIT_FAILED


def _prune(journal: Journal, args: argparse.Namespace) -> int:
    if args.older_than is None and args.keep is None:
        msg = "--prune needs --older-than DAYS or --keep N"
        raise UsageError(msg)

    before = repositories_of(journal, [run.run_id for run in journal.runs()])
    deleted = prune(journal, older_than_days=args.older_than, keep=args.keep)
    left = {run.run_id for run in journal.runs()}
    gone = delete_branches_of({r: repos for r, repos in before.items() if r not in left})
    err(f"deleted {deleted} run{'' if deleted == 1 else 's'} from {journal.path}")
    if gone:
        err(f"deleted their {len(gone)} branch{'' if len(gone) == 1 else 'es'}: {', '.join(gone)}")
    return EXIT_OK


def _ticket(journal: Journal, args: argparse.Namespace) -> int:
    """List a ticket's rounds: each event, who asked, and its run or why it was refused."""
    rows = rounds(journal, args.ticket)
    if args.json:
        out_json([round_dict(row) for row in rows])
    elif rows:
        out(rounds_text(rows))
    else:
        err(f"no rounds of ticket {args.ticket!r} recorded in {journal.path}")
    return EXIT_OK


def cmd_runs(args: argparse.Namespace) -> int:
    """List recorded runs, newest first (or prune old ones)."""
    journal = journal_of(args, readonly=not args.prune)
    if args.prune:
        return _prune(journal, args)
    if args.ticket is not None:
        return _ticket(journal, args)
    batch = None
    if args.batch is not None:
        found = find_batch(journal, args.batch)
        if isinstance(found, str):
            raise UsageError(found)
        batch = found[0]
    records = journal.runs(
        workflow=args.workflow, status=args.status, limit=args.limit, batch=batch
    )
    held = held_queued(journal, records)
    if args.json:
        out_json([{**record.to_dict(), **held_dict(held, record)} for record in records])
    elif records:
        out(runs_table(records))
        for record in records:
            if record.run_id in held:
                out(f"{record.run_id} stays queued: {held[record.run_id]}")
    else:
        err(f"no runs recorded in {journal.path}")
    return unreadable(journal, records)


def held_queued(journal: Journal, records: list[RunRecord]) -> dict[str, str]:
    """Say, by run id, which `--runs` cap keeps each queued run queued (and when it frees)."""
    now = dt.datetime.now(dt.UTC)
    held = {}
    for record in records:
        if record.status == "queued":
            found = holding(journal, record.workflow, record.options.to_json(), now)
            if found is not None:
                held[record.run_id] = found
    return held


def held_dict(held: dict[str, str], record: RunRecord) -> dict[str, object]:
    """Return `{"held": why}` for a run a cap keeps queued (`--json`), else nothing."""
    return {"held": held[record.run_id]} if record.run_id in held else {}


def find_run(journal: Journal, run_id: str) -> RunRecord:
    """Find a run by id or unique prefix, or raise a `UsageError` saying why not."""
    found = journal.find(run_id)
    if isinstance(found, str):
        raise UsageError(found)
    return found
