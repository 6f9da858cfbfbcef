"""`adws approvals`, `adws approve` and `adws reject`: a person's say on a waiting run.

A run that reaches an `approval_step` ends `waiting` (exit 3). `approve`
and `reject` record who decided, when and why, then continue the run in
this process through the one resume path (`adws.cli.resume.continue_run`:
recorded options, `prepare_resume`, `Journal.claim`). A wait past its
timeout is ended by whichever of `approvals`, `approve` and `resume` sees
it first, as a rejection with the reason `timeout`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal

from adws import io_ops
from adws.cli import EXIT_CODES
from adws.cli._args import UsageError, require_journal
from adws.cli._output import colour, err, out, out_json, write_text
from adws.cli._waits import expired, open_question
from adws.cli.resume import asks_budget, continue_run
from adws.cli.runs import find_run, unreadable_runs

if TYPE_CHECKING:
    import argparse

    from adws.journal import Journal, RunRecord
    from adws.journal.diffs import DiffRecord
    from adws.journal.workspaces import ApprovalRecord

# Each command imports what it needs when it runs; see adws.cli.workflows.

__all__ = ["cmd_approvals", "cmd_approve", "cmd_reject"]

EXIT_OK: Final = EXIT_CODES["succeeded"]
EXIT_FAILED: Final = EXIT_CODES["failed"]


def _login() -> str:
    import getpass  # noqa: PLC0415 - see the note on imports

    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name in the environment and no passwd entry
        return "unknown"


def _waiting(journal: Journal, args: argparse.Namespace) -> tuple[RunRecord, str]:
    record = find_run(journal, args.run)
    if record.status != "waiting" or not record.failed_step:
        msg = f"run {record.run_id} is not waiting for approval (it is {record.status})"
        raise UsageError(msg)
    return record, record.failed_step


def _decide(args: argparse.Namespace, verdict: Literal["approved", "rejected"], note: str) -> int:
    from adws.engine.scope import Decision  # noqa: PLC0415 - see the note on imports

    journal = require_journal(args)
    record, step = _waiting(journal, args)
    ended = expired(journal, record)
    if ended is not None:
        return continue_run(args, journal, record, ended)
    raising = args.max_cost is not None or args.max_tokens is not None
    if verdict == "approved" and asks_budget(record) and not raising:
        run_id = record.run_id
        asked = "" if record.error is None else f" ({record.error.message})"
        msg = (
            f"run {run_id} waits at step {step} for a larger budget{asked}: "
            f"adws approve {run_id} --max-cost USD (or --max-tokens N) raises it, "
            f"adws reject {run_id} --reason TEXT ends the run"
        )
        raise UsageError(msg)
    by = args.by or _login()
    decision = Decision(verdict, by, io_ops.utc_now(), note)
    return continue_run(args, journal, record, (step, decision))


def cmd_approve(args: argparse.Namespace) -> int:
    """Approve a waiting run and continue it; the exit code is the run's."""
    args.from_step, args.rerun_changed = None, False
    return _decide(args, "approved", args.note)


def cmd_reject(args: argparse.Namespace) -> int:
    """Reject a waiting run: its `always_run` steps run and it ends `Rejected` (exit 1)."""
    args.from_step, args.rerun_changed = None, False
    return _decide(args, "rejected", args.reason)


def _end_expired(args: argparse.Namespace, journal: Journal, record: RunRecord) -> bool:
    """End a wait past its timeout as `adws reject` would; tell whether one was ended."""
    from adws.cli._parser import build_parser  # noqa: PLC0415 - see the note on imports

    ended = expired(journal, record)
    if ended is None:
        return False
    resume = build_parser().parse_args(["resume", record.run_id, "-q"])
    resume.journal, resume.workflows = args.journal, args.workflows  # a URL stays whole
    whole = find_run(journal, record.run_id)  # a listed record leaves the inputs out
    try:
        code = continue_run(resume, journal, whole, ended)
    except UsageError as exc:
        err(f"adws: run {record.run_id} could not be ended: {exc}")
        return False
    err(f"adws: run {record.run_id} ended (exit code {code})")
    return True


def cmd_approvals(args: argparse.Namespace) -> int:
    """List the runs waiting for approval with their messages; end expired waits first.

    With `-v`, each run's worktrees' latest diffs follow its message (in
    `--json`, a `diffs` list): what a reviewer approves. Diff rows the
    journal cannot read are named on stderr, and the exit code is 1.
    """
    from adws.journal.diffs import latest_diffs  # noqa: PLC0415 - see the note on imports

    journal = require_journal(args)
    listed: list[tuple[RunRecord, ApprovalRecord]] = []
    for record in journal.runs(status="waiting"):
        if _end_expired(args, journal, record):
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
    return unreadable_runs(journal, [], diffs) if diffs else EXIT_OK


def _print_json(
    listed: list[tuple[RunRecord, ApprovalRecord]],
    diffs: dict[str, list[DiffRecord]],
    *,
    verbose: bool,
) -> None:
    from adws.render.diffs import diff_dict  # noqa: PLC0415 - see the note on imports

    shown = []
    for record, question in listed:
        item = {"run_id": record.run_id, "workflow": record.workflow, **question.to_dict()}
        if verbose:
            item["diffs"] = [diff_dict(found) for found in diffs[record.run_id]]
        shown.append(item)
    out_json(shown)


def _print_text(
    listed: list[tuple[RunRecord, ApprovalRecord]], diffs: dict[str, list[DiffRecord]]
) -> None:
    from adws.render.diffs import review_lines  # noqa: PLC0415 - see the note on imports

    coloured = colour()
    for record, question in listed:
        expires = "never" if question.deadline is None else _when(question.deadline)
        out(
            f"{record.run_id} · {record.workflow} · {question.step} · asked {question.asked}"
            f" · expires {expires}"
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
    from datetime import UTC, datetime  # noqa: PLC0415 - see the note on imports

    return datetime.fromtimestamp(epoch, tz=UTC).isoformat(timespec="seconds")
