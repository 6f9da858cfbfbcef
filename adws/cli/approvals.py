"""`adws approvals`, `adws approve` and `adws reject`: a person's say on a waiting run.

A run that reaches an `approval_step` ends `waiting` (exit 3). `approve`
and `reject` record who decided, when and why, then continue the run in
this process through `adws.runs.Runs` (recorded options, the resume plan,
the run's compare-and-set claim). A wait past its timeout is ended by
whichever of `approvals`, `approve` and `resume` sees it first, as a
rejection with the reason `timeout`.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

from adws.cli import EXIT_CODES
from adws.cli._options import (
    add_going_on,
    add_journal,
    add_journal_wait,
    add_running,
    add_workflows,
    add_worktrees,
    given_options,
    opened,
    runs_of,
)
from adws.cli._output import colour, err, err_unreadable, out, out_json, write_text
from adws.cli._runs import ended, traced, watching
from adws.journal.records.options import RunOptions
from adws.journal.records.runs import named_problems
from adws.journal.store.diffs import latest_diffs
from adws.render.diffs import diff_dict, review_lines
from adws.runs import Refused
from adws.runs._loading import absolute_options
from adws.runs._waits import asks_budget, open_question

if TYPE_CHECKING:
    from adws.journal import RunRecord
    from adws.journal.records.diffs import DiffRecord
    from adws.journal.records.workspaces import ApprovalRecord
    from adws.runs import Runs

__all__ = [
    "add_approvals",
    "add_approve",
    "add_reject",
    "cmd_approvals",
    "cmd_approve",
    "cmd_reject",
]

EXIT_OK: Final = EXIT_CODES["succeeded"]
EXIT_FAILED: Final = EXIT_CODES["failed"]
_QUIETLY: Final = argparse.Namespace(quiet=True, verbose=False, json=False)
"""How a wait past its timeout is ended while listing: as `adws resume RUN -q` would end it."""
_CONTINUING: Final = (
    "; the run continues in this process, like adws resume, with the options it was started "
    "with, and the exit code is the run's"
)


def add_approvals(parser: argparse.ArgumentParser) -> None:
    """Declare `adws approvals [-v] [--json]`."""
    parser.description = (
        "List the runs waiting at an approval step, each with its message. A wait "
        "past its timeout is ended first, as a rejection with the reason timeout (the run's "
        "cleanup steps run, from the workflows folder the run was started with unless "
        "--workflows is given)."
    )
    add_workflows(parser)
    add_journal(parser)
    parser.add_argument("--json", action="store_true", help="print a JSON list")
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="under each run's message, show the diff each of its worktrees holds now (its "
        "latest attempt's, from the worktree's base; coloured on a terminal, its first and last "
        "16,000 bytes past 32,000); with --json, a diffs list for each run",
    )


def _deciding(parser: argparse.ArgumentParser) -> None:
    add_workflows(parser)
    add_journal(parser)
    add_running(parser)
    add_journal_wait(parser)
    add_worktrees(parser)
    parser.add_argument("run", help="run id (or a unique prefix)")
    parser.add_argument("--by", metavar="NAME", help="who decides (default: your login name)")


def add_approve(parser: argparse.ArgumentParser) -> None:
    """Declare `adws approve RUN [--note TEXT] [--max-cost USD]`."""
    parser.description = (
        "Record who approved the run (--by, else your login name), when, and "
        f"--note{_CONTINUING}. The decision is recorded only while the question is open, in the "
        "run's claim: of two people deciding at once (or one deciding and one cancelling), one "
        "acts and the other is told the run changed (exit 2)."
    )
    _deciding(parser)
    add_going_on(parser)
    parser.add_argument("--note", default="", metavar="TEXT", help="a note kept with the approval")


def add_reject(parser: argparse.ArgumentParser) -> None:
    """Declare `adws reject RUN --reason TEXT`."""
    parser.description = (
        "Record who rejected the run, when and why; the run continues only to "
        f"run its always_run steps and ends failed (Rejected, final: no resume){_CONTINUING}."
    )
    _deciding(parser)
    parser.add_argument(
        "--force",
        action="store_true",
        help="take the run although another process seems to hold it, and stop a child process "
        "group a crashed run left running (a rejection checks no definition and no worktree: "
        "it only runs the cleanup steps)",
    )
    parser.add_argument("--reason", required=True, metavar="TEXT", help="why, kept with the run")


def cmd_approve(args: argparse.Namespace) -> int:
    """Approve a waiting run and continue it; the exit code is the run's."""
    options = given_options(args, resume=True)
    with traced(args) as tracing:
        outcome = runs_of(args, create=False).approve(
            args.run,
            args.note,
            options.max_cost,
            max_tokens=options.max_tokens,
            by=args.by,
            options=options,
            force=args.force,
            keep_changed=args.keep_changed,
            accept_drift=args.accept_drift,
            observers=watching(args, tracing),
        )
        return ended(args, outcome)


def cmd_reject(args: argparse.Namespace) -> int:
    """Reject a waiting run: its `always_run` steps run and it ends `Rejected` (exit 1)."""
    with traced(args) as tracing:
        outcome = runs_of(args, create=False).reject(
            args.run,
            args.reason,
            by=args.by,
            options=given_options(args, resume=True),
            force=args.force,
            observers=watching(args, tracing),
        )
        return ended(args, outcome)


def _end_expired(args: argparse.Namespace, runs: Runs, record: RunRecord) -> bool:
    """End a wait past its timeout as `adws reject` would, quietly; tell whether one was ended.

    The run's cleanup steps run from the workflows folder it was started
    with, unless `--workflows` is given.
    """
    question = open_question(opened(runs), record)
    if question is None or not question.expired():
        return False
    folder = RunOptions(workflows=args.workflows)
    outcome = runs.resume(record.run_id, options=absolute_options(folder))
    if isinstance(outcome, Refused):
        err(f"adws: run {record.run_id} could not be ended: {outcome}")
        return False
    code = ended(_QUIETLY, outcome)
    err(f"adws: run {record.run_id} ended (exit code {code})")
    return True


def cmd_approvals(args: argparse.Namespace) -> int:
    """List the runs waiting for approval with their messages; end expired waits first.

    With `-v`, each run's worktrees' latest diffs follow its message (in
    `--json`, a `diffs` list): what a reviewer approves. Diff rows the
    journal cannot read are named on stderr, and the exit code is 1.
    """
    runs = runs_of(args, create=False)
    journal = opened(runs)
    listed: list[tuple[RunRecord, ApprovalRecord]] = []
    for record in journal.runs(status="waiting"):
        if _end_expired(args, runs, record):
            continue
        question = open_question(journal, record)
        if question is not None:
            listed.append((record, question))
    diffs: dict[str, list[DiffRecord]] = {}
    if args.verbose:
        diffs = {record.run_id: latest_diffs(journal, record.run_id) for record, _ in listed}
    if args.json:
        _print_json(listed, diffs, verbose=args.verbose)
    elif not listed:
        err(f"no run waits for approval in {journal.path}")
    else:
        _print_text(listed, diffs)
    problems = [
        p for run_id, found in diffs.items() for p in named_problems("diffs", run_id, found)
    ]
    if problems:
        err_unreadable(str(journal.path), problems)
        return EXIT_FAILED
    return EXIT_OK


def _print_json(
    listed: list[tuple[RunRecord, ApprovalRecord]],
    diffs: dict[str, list[DiffRecord]],
    *,
    verbose: bool,
) -> None:
    shown = []
    for record, question in listed:
        item = {
            "run_id": record.run_id,
            "workflow": record.workflow,
            "waits_elsewhere": record.waits_elsewhere,
            **question.to_dict(),
        }
        if verbose:
            item["diffs"] = [diff_dict(found) for found in diffs[record.run_id]]
        shown.append(item)
    out_json(shown)


def _print_text(
    listed: list[tuple[RunRecord, ApprovalRecord]], diffs: dict[str, list[DiffRecord]]
) -> None:
    coloured = colour()
    for record, question in listed:
        expires = "never" if question.deadline is None else _when(question.deadline)
        where = "" if record.waits_elsewhere is None else f" · {record.waits_elsewhere}"
        out(
            f"{record.run_id} · {record.workflow} · {question.step} · asked {question.asked}"
            f" · expires {expires}{where}"
        )
        out("\n".join(f"  {line}" for line in question.message.splitlines() or [""]))
        run_id = record.run_id
        reviewed = review_lines(diffs.get(run_id, ()), run_id, colour=coloured)
        if reviewed:
            write_text("\n".join(reviewed))  # escaped already, and coloured on a terminal
        raise_it = "--max-cost USD" if asks_budget(record) else "--note ..."
        out(f"  (adws approve {run_id} {raise_it} | adws reject {run_id} --reason ...)")


def _when(epoch: float) -> str:
    """Write a time as the journal does: ISO 8601, UTC, to the second.

    >>> _when(0.0)
    '1970-01-01T00:00:00+00:00'
    """
    return datetime.fromtimestamp(epoch, tz=UTC).isoformat(timespec="seconds")
