"""The parsers of the commands that continue a recorded run: resume, approvals, approve, reject."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

__all__ = ["add_approvals", "add_going_on", "add_resume"]


def add_resume(commands: Any, parents: list[argparse.ArgumentParser]) -> None:  # noqa: ANN401 - argparse's private subparsers type
    resume = commands.add_parser(
        "resume",
        parents=parents,
        help="continue a run from its first step that did not succeed",
        description="Continue a run from its first step that did not succeed, without running "
        "finished steps again (but those marked rerun_on_resume), with the options the run was "
        "started with (--agent, --model, --agent-output, --max-cost, --max-tokens, --max-agents, "
        "--workflows, --record/--replay, --notify): an option given here overrides the recorded "
        "one, and the first line says what the resume uses. -i adds inputs the run has not "
        "produced. A run waiting for approval waits again (see adws approve); a finished step "
        "whose definition changed is refused (see --rerun-changed, --keep-changed), and so is a "
        "kept worktree that changed since the run left it (see --accept-drift). The run is claimed "
        "compare-and-set: if it changed since this command read it (another resume, an approval), "
        "nothing is done (exit 2). A run parked on an agent's usage limit is resumed only once "
        "its time has come (before: exit 75, naming the time; see --now), and --due resumes, "
        "one after another, every parked run of this host whose time has come (for cron or a "
        "timer), printing one line per run; its exit code is the worst of theirs: 130 (or the "
        "signal's) if one was interrupted (no later run starts), else 1 if one failed, else 2 "
        "if one could not be resumed, else 3 if one is blocked or waits for approval, else 75 "
        "if one parked again, else 0 (also when none was due).",
    )
    resume.add_argument("run", nargs="?", help="run id (or a unique prefix)")
    resume.add_argument(
        "--now",
        action="store_true",
        help="resume a parked run before the time its agent's limit resets",
    )
    resume.add_argument(
        "--due",
        action="store_true",
        help="resume every parked run of this host whose time has come, oldest first",
    )
    resume.add_argument(
        "--plan",
        action="store_true",
        help="print what a resume would do with each step (kept, changed, rerun, to run), what "
        "it does not spend again, what finishing should cost by the journal's history (about: "
        "the sum of each step's median cost, up to: of its 90th percentile) and the options it "
        "would use; run nothing",
    )
    resume.add_argument(
        "--from",
        dest="from_step",
        metavar="STEP",
        help="run again from STEP (a finished step, at or before the first unfinished one), "
        "dropping the outputs of STEP and every step after it",
    )
    resume.add_argument(
        "--rerun-changed",
        action="store_true",
        help="run again from the first finished step whose definition changed",
    )
    resume.add_argument(
        "--here",
        action="store_true",
        help="continue on this host a run another host ran (refused while it has worktrees "
        "present there)",
    )
    add_going_on(resume)


def add_going_on(parser: argparse.ArgumentParser, *, batch: bool = False) -> None:
    """Add --force, --keep-changed and --accept-drift: three ways past three refusals."""
    runs = "each run" if batch else "the run"
    parser.add_argument(
        "--force",
        action="store_true",
        help=f"take {runs} although another process seems to hold it, and stop a child process "
        "group a crashed run left running",
    )
    parser.add_argument(
        "--keep-changed",
        action="store_true",
        help="keep the outputs of finished steps whose definition changed, and make today's "
        "definition the recorded one (a later approve, reject or resume is not refused again)",
    )
    parser.add_argument(
        "--accept-drift",
        action="store_true",
        help="go on with a kept worktree that changed since the run left it (a missing one "
        "starts again from its base)",
    )


def add_approvals(commands: Any, parents: list[argparse.ArgumentParser]) -> None:  # noqa: ANN401 - argparse's private subparsers type
    common, journaled, running = parents
    listing = commands.add_parser(
        "approvals",
        parents=[common, journaled],
        help="list the runs waiting for approval, with their messages",
        description="List the runs waiting at an approval step, each with its message. A wait "
        "past its timeout is ended first, as a rejection with the reason timeout (the run's "
        "cleanup steps run, from the workflows folder the run was started with unless "
        "--workflows is given).",
    )
    listing.add_argument("--json", action="store_true", help="print a JSON list")
    listing.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="under each run's message, show the diff each of its worktrees holds now (its "
        "latest attempt's, from the worktree's base; coloured on a terminal, its first and last "
        "16,000 bytes past 32,000); with --json, a diffs list for each run",
    )
    continuing = "; the run continues in this process, like adws resume, with the options it "
    continuing += "was started with, and the exit code is the run's"
    approve = commands.add_parser(
        "approve",
        parents=[common, journaled, running],
        help="approve a run waiting for approval, and continue it",
        description="Record who approved the run (--by, else your login name), when, and "
        f"--note{continuing}. The decision is recorded only while the question is open, in the "
        "run's claim: of two people deciding at once, one decides and the other is told the "
        "run changed (exit 2).",
    )
    reject = commands.add_parser(
        "reject",
        parents=[common, journaled, running],
        help="reject a run waiting for approval: its cleanup steps run and it ends Rejected",
        description="Record who rejected the run, when and why; the run continues only to "
        f"run its always_run steps and ends failed (Rejected, final: no resume){continuing}.",
    )
    for parser in (approve, reject):
        parser.add_argument("run", help="run id (or a unique prefix)")
        parser.add_argument("--by", metavar="NAME", help="who decides (default: your login name)")
    add_going_on(approve)
    reject.add_argument(
        "--force",
        action="store_true",
        help="take the run although another process seems to hold it, and stop a child process "
        "group a crashed run left running (a rejection checks no definition and no worktree: "
        "it only runs the cleanup steps)",
    )
    approve.add_argument("--note", default="", metavar="TEXT", help="a note kept with the approval")
    reject.add_argument("--reason", required=True, metavar="TEXT", help="why, kept with the run")
