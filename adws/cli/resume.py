"""`adws resume`: continue a recorded run, with the options it was started with."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from adws.cli import EXIT_CODES
from adws.cli._args import UsageError
from adws.cli._options import (
    add_going_on,
    add_journal,
    add_journal_wait,
    add_running,
    add_workflows,
    add_worktrees,
    given_options,
    inputs_of,
    refused,
    runs_of,
)
from adws.cli._output import err_unreadable, out
from adws.cli._runs import ended, traced, watching
from adws.render import plan_text
from adws.render.words import ended as ended_words
from adws.runs import Refused, RunOutcome

if TYPE_CHECKING:
    import argparse

    from adws.runs import Runs

__all__ = ["add_resume", "cmd_resume", "worst"]

EXIT_OK: Final = EXIT_CODES["succeeded"]
EXIT_FAILED: Final = EXIT_CODES["failed"]
EXIT_USAGE: Final = 2
_INTERRUPTED: Final = frozenset({130, 143, 129})
_WORST: Final = (0, EXIT_CODES["parked"], EXIT_CODES["blocked"], EXIT_USAGE, EXIT_FAILED)
"""Exit codes from best to worst, for `--due`: an interruption is worse than all of them."""


def add_resume(parser: argparse.ArgumentParser) -> None:
    """Declare `adws resume RUN` and its ways past refusals, `--plan` and `--due`."""
    parser.description = (
        "Continue a run from its first step that did not succeed, without running "
        "finished steps again (but those marked rerun_on_resume), with the options the run was "
        "started with (--agent, --model, --agent-output, --max-cost, --max-tokens, --max-agents, "
        "--workflows, --record/--replay, --notify): an option given here overrides the recorded "
        "one, and the first line says what the resume uses. -i adds inputs the run has not "
        "produced. A run waiting for approval waits again (see adws approve); a finished step "
        "whose definition changed is refused (see --rerun-changed, --keep-changed), and so is a "
        "kept worktree that changed since the run left it (see --accept-drift). A cancelled run "
        "is refused. The run is claimed compare-and-set: if it changed since this command read "
        "it (another resume, an approval), nothing is done (exit 2). A run parked on an agent's "
        "usage limit is resumed only once its time has come (before: exit 75, naming the time; "
        "see --now), and --due resumes, one after another, every run of this host that is due "
        "(parked runs whose time has come, interrupted runs, runs whose process died; not a "
        "batch's) for cron or a timer, printing one line per run; its exit code is the "
        "worst of theirs: 130 (or the signal's) if one was interrupted (no later run starts), "
        "else 1 if one failed, else 2 if one could not be resumed, else 3 if one is blocked or "
        "waits for approval, else 75 if one parked again, else 0 (also when none was due)."
    )
    add_workflows(parser)
    add_journal(parser)
    add_running(parser)
    add_journal_wait(parser)
    add_worktrees(parser)
    parser.add_argument("run", nargs="?", help="run id (or a unique prefix)")
    parser.add_argument(
        "--now",
        action="store_true",
        help="resume a parked run before the time its agent's limit resets",
    )
    parser.add_argument(
        "--due",
        action="store_true",
        help="resume every run of this host that is due, oldest first: parked runs whose time "
        "has come, then interrupted runs and runs whose process died",
    )
    parser.add_argument(
        "--plan",
        action="store_true",
        help="print what a resume would do with each step (kept, changed, rerun, to run), what "
        "it does not spend again, what finishing should cost by the journal's history (about: "
        "the sum of each step's median cost, up to: of its 90th percentile) and the options it "
        "would use; run nothing",
    )
    parser.add_argument(
        "--from",
        dest="from_step",
        metavar="STEP",
        help="run again from STEP (a finished step, at or before the first unfinished one), "
        "dropping the outputs of STEP and every step after it",
    )
    parser.add_argument(
        "--rerun-changed",
        action="store_true",
        help="run again from the first finished step whose definition changed",
    )
    parser.add_argument(
        "--here",
        action="store_true",
        help="continue on this host a run another host ran (refused while it has worktrees "
        "present there)",
    )
    add_going_on(parser)


def worst(codes: list[int]) -> int:
    """Return the worst of the runs' exit codes (see `adws resume --help`; `adws worker` too)."""
    stopped = [code for code in codes if code in _INTERRUPTED]
    if stopped:
        return stopped[0]
    return max(codes, key=lambda code: _WORST.index(code) if code in _WORST else len(_WORST))


def _resume(args: argparse.Namespace, runs: Runs, run_id: str, *, now: bool) -> int:
    """Resume one run as the flags ask; print what it did; return its exit code."""
    with traced(args) as tracing:
        outcome = runs.resume(
            run_id,
            options=given_options(args, resume=True),
            inputs=inputs_of(args.input, args.inputs),
            from_step=args.from_step,
            rerun_changed=args.rerun_changed,
            keep_changed=args.keep_changed,
            accept_drift=args.accept_drift,
            here=args.here,
            now=now,
            force=args.force,
            observers=watching(args, tracing),
        )
        return ended(args, outcome)


def _plan(args: argparse.Namespace, runs: Runs) -> int:
    """Print what a resume would do, and the options it would use; run nothing."""
    shown = runs.preview(
        args.run,
        options=given_options(args, resume=True),
        from_step=args.from_step,
        rerun_changed=args.rerun_changed,
    )
    if isinstance(shown, Refused):
        return refused(shown)
    out(plan_text(shown.record, shown.plan))
    out(shown.kept if shown.to_finish is None else f"{shown.kept}\nto finish: {shown.to_finish}")
    for problem in shown.drift:
        out(f"drift: {problem}; a resume refuses it (--accept-drift goes on with it)")
    out(f"options: {shown.options or 'none'}")
    if shown.problems:
        err_unreadable(str(runs.where), shown.problems)
        return EXIT_FAILED
    return EXIT_OK


def _due(args: argparse.Namespace) -> int:
    """Resume every run of this host that is due (parked and come, interrupted, orphaned)."""
    for given, flag in ((args.run, "a run id"), (args.plan, "--plan"), (args.from_step, "--from")):
        if given:
            msg = f"--due resumes every run of this host that is due; leave out {flag}"
            raise UsageError(msg)
    if args.input or args.inputs:
        msg = "--due resumes every run of this host that is due; leave out -i and --inputs"
        raise UsageError(msg)
    runs = runs_of(args, create=False)
    due = runs.due()
    if isinstance(due, Refused):
        return refused(due)
    if not due:
        out(f"no run of this host is due in {runs.where}")
        return EXIT_OK
    codes: list[int] = []
    for record in due:
        outcome = runs.resume(
            record.run_id,
            options=given_options(args, resume=True),
            here=args.here,
            now=True,
            force=args.force,
            keep_changed=args.keep_changed,
            accept_drift=args.accept_drift,
            rerun_changed=args.rerun_changed,
            observers=watching(args, None),
        )
        if not isinstance(outcome, RunOutcome):  # a parked run of this host is continued here
            out(f"{record.run_id} {record.workflow}: not resumed: {outcome}")
            codes.append(EXIT_USAGE)
            continue
        code = ended(args, outcome)
        codes.append(code)
        said = ended_words(outcome.status, outcome.summary.error)
        out(f"{record.run_id} {record.workflow}: {said} (exit {code})")
        if code in _INTERRUPTED:
            break  # a Ctrl-C stops the round: the runs after it stay parked
    return worst(codes)


def cmd_resume(args: argparse.Namespace) -> int:
    """Continue a run from its first step that did not succeed (or show the plan).

    A run waiting for approval whose wait expired is ended as rejected
    (reason `timeout`); one still waiting waits again. A parked run goes on
    only once its time has come, unless `--now`; `--due` resumes every
    run of this host that is due (see `adws.runs.Runs.due`).
    """
    if args.due:
        return _due(args)
    if args.run is None:
        msg = "name the run to resume (adws runs lists them), or pass --due"
        raise UsageError(msg)
    if args.plan:
        return _plan(args, runs_of(args, readonly=True, create=False))
    return _resume(args, runs_of(args, create=False), args.run, now=args.now)
