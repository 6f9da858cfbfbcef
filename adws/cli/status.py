"""`adws status RUN`: one run's steps, attempts and errors; `--step` shows one attempt whole."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from adws.cli import EXIT_CODES
from adws.cli._args import UsageError
from adws.cli._options import add_journal, journal_of
from adws.cli._output import colour, out, out_json, write_text
from adws.cli._values import positive
from adws.cli.runs import find_run, held_dict, held_queued, unreadable
from adws.cli.workflows import load_workflow
from adws.engine.errors import json_safe
from adws.journal.records.sessions import by_attempt
from adws.journal.store.diffs import diffs_of
from adws.journal.store.exchanges import exchanges
from adws.journal.store.sessions import sessions_of
from adws.journal.store.tickets import ticket_of
from adws.journal.store.workspaces import approvals_of, worktrees_of
from adws.render import attempt_text, status_text, step_outcomes, to_mermaid, workspaces_text
from adws.render.diffs import diff_dict, shows_diff, step_diff_lines
from adws.render.proved import proofs_of
from adws.render.tickets import round_dict, ticket_line
from adws.render.words import waits

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from adws.journal import AttemptRecord, Journal, RunRecord
    from adws.journal.records.exchanges import ExchangeRecord, Text
    from adws.journal.records.sessions import SessionRecord


__all__ = ["add_status", "cmd_status"]

EXIT_OK: Final = EXIT_CODES["succeeded"]
_ATTEMPTS: Final = ("retried", "failed", "succeeded", "cancelled")


def add_status(parser: argparse.ArgumentParser) -> None:
    """Declare `adws status RUN [--step STEP [--attempt N]] [--json] [--mermaid]`."""
    add_journal(parser)
    parser.add_argument("run", help="run id (or a unique prefix)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--mermaid",
        action="store_true",
        help="print the workflow's flowchart coloured by what happened in this run",
    )
    parser.add_argument(
        "--workflows",
        metavar="DIR",
        help="folder of workflow modules, for --mermaid (default: $ADWS_WORKFLOWS or ./workflows)",
    )
    parser.add_argument(
        "--step",
        metavar="STEP",
        help="print one attempt of STEP (or of a branch, verify_claims[2]) whole: each prompt "
        "and answer, the outputs it added and its error",
    )
    parser.add_argument(
        "--attempt", type=positive, metavar="N", help="with --step: attempt N (default: the last)"
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="print tracebacks of steps that raised"
    )


def _attempt_dict(
    attempt: AttemptRecord, sessions: Sequence[SessionRecord] = ()
) -> dict[str, object]:
    """Describe one attempt row for `--json`; `sessions` are its agent sessions."""
    return {
        "step": attempt.step,
        "attempt": attempt.attempt,
        # An approval's pause is journaled as a failed row; it is no failure (as `status` says).
        "status": "waiting"
        if attempt.status == "failed" and waits(attempt.error)
        else attempt.status,
        "recorded": attempt.recorded,
        "started": attempt.started,
        "seconds": attempt.seconds,
        "error": None if attempt.error is None else attempt.error.to_dict(),
        "usage": None if attempt.usage is None else attempt.usage.to_dict(),
        "sessions": list(attempt.sessions),
        "agent_sessions": [found.to_dict() for found in sessions],
    }


def _attempt_dicts(
    attempts: Sequence[AttemptRecord], sessions: Sequence[SessionRecord]
) -> list[dict[str, object]]:

    mine = by_attempt(sessions, attempts)
    return [_attempt_dict(row, found) for row, found in zip(attempts, mine, strict=True)]


def _text_dict(text: Text | None) -> dict[str, object] | None:
    if text is None:
        return None
    return {"sha256": text.digest, "size": text.size, "text": text.text, "cut": text.cut}


def _exchange_dict(exchange: ExchangeRecord) -> dict[str, object]:
    return {
        "asked_by": exchange.asked_by,
        "seconds": exchange.seconds,
        "prompt": _text_dict(exchange.prompt),
        "answer": _text_dict(exchange.answer),
        "stderr": _text_dict(exchange.stderr),
        "exit_code": exchange.exit_code,
        "session_id": exchange.session_id,
        "error_type": exchange.error_type,
        "error": exchange.error,
        "usage": None if exchange.usage is None else exchange.usage.to_dict(),
    }


def _chosen(
    record: RunRecord, attempts: Sequence[AttemptRecord], step: str, number: int | None
) -> tuple[list[AttemptRecord], list[str]]:
    """Find the rows of one attempt of `step` (the last by default) and the step's branches."""
    rows = [attempt for attempt in attempts if attempt.step == step]
    branches = sorted({a.step for a in attempts if a.step.startswith(f"{step}[")})
    if not rows:
        known = ", ".join(record.steps)
        msg = f"run {record.run_id} has no step or branch {step!r} that ran; its steps: {known}"
        raise UsageError(msg)
    tried = [row.attempt for row in rows if row.status in _ATTEMPTS]
    if not tried:
        msg = f"step {step!r} of run {record.run_id} did not run ({rows[-1].status})"
        raise UsageError(msg)
    wanted = tried[-1] if number is None else number
    mine = [row for row in rows if row.attempt == wanted]
    if not mine:
        msg = (
            f"step {step!r} of run {record.run_id} has no attempt {wanted}; "
            f"its attempts: {', '.join(str(n) for n in sorted(set(tried)))}"
        )
        raise UsageError(msg)
    return mine, branches


def _one_attempt(
    args: argparse.Namespace,
    journal: Journal,
    record: RunRecord,
    attempts: Sequence[AttemptRecord],
) -> int:

    rows, branches = _chosen(record, attempts, args.step, args.attempt)
    rows = [row.checked() for row in rows]  # its outputs are shown: decode them safely
    others = [attempt for attempt in attempts if attempt.step == args.step]
    number = rows[-1].attempt
    calls = exchanges(journal, record.run_id, step=args.step, attempt=number)
    diffs = diffs_of(journal, record.run_id, step=args.step, attempt=number)
    if args.json:
        out_json(
            {
                "run_id": record.run_id,
                "step": args.step,
                "attempt": rows[-1].attempt,
                "rows": _attempt_dicts(rows, sessions_of(journal, record.run_id)),
                "outputs": json_safe(rows[-1].outputs()),
                "exchanges": [_exchange_dict(call) for call in calls],
                "diffs": [diff_dict(found) for found in diffs],
                "branches": branches,
            }
        )
        return unreadable(journal, [record], rows, calls, diffs)
    text = attempt_text(record, args.step, rows, calls, verbose=args.verbose, others=others)
    if branches:
        text += f"\n\nbranches (see --step 'PATH'): {', '.join(branches)}"
    out(text)
    shows = shows_diff(record.run_id, args.step, number)
    shown = step_diff_lines(diffs, shows, verbose=args.verbose, colour=colour())
    if shown:
        write_text("\n".join(shown))  # escaped already, and coloured on a terminal
    return unreadable(journal, [record], rows, calls, diffs)


def cmd_status(args: argparse.Namespace) -> int:
    """Show one run's steps, attempts and errors (or, with --step, one attempt whole)."""
    if args.attempt is not None and args.step is None:
        msg = "--attempt needs --step STEP"
        raise UsageError(msg)
    journal = journal_of(args, readonly=True)
    record = find_run(journal, args.run)
    attempts = journal.attempts(record.run_id)
    if args.step is not None:
        return _one_attempt(args, journal, record, attempts)
    if args.mermaid:
        out(to_mermaid(load_workflow(record.workflow, args.workflows), step_outcomes(attempts)))
        return unreadable(journal, [record], attempts)

    sessions = sessions_of(journal, record.run_id)
    worktrees = worktrees_of(journal, record.run_id)
    approvals = approvals_of(journal, record.run_id)
    ticket = ticket_of(journal, record.run_id)
    held = held_queued(journal, [record])
    if args.json:
        payload = {
            **record.to_dict(),
            **held_dict(held, record),
            "ticket": None if ticket is None else round_dict(ticket),
            "worktrees": [tree.to_dict() for tree in worktrees],
            "approvals": [asked.to_dict() for asked in approvals],
            "error": None if record.error is None else record.error.to_dict(),
            "proved": proofs_of(attempts, record.error),
            "attempts": _attempt_dicts(attempts, sessions),
        }
        out_json(payload)
    else:
        text = status_text(record, attempts, verbose=args.verbose, sessions=sessions)
        linked = [] if ticket is None else [ticket_line(ticket)]
        linked += [f"stays queued: {why}" for why in held.values()]
        out("\n".join([text, *linked, *workspaces_text(worktrees, approvals)]))
    return unreadable(journal, [record], attempts)
