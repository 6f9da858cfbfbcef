"""The parsers of the commands that continue a recorded run: resume, approvals, approve, reject."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

__all__ = ["add_approvals", "add_resume"]


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
        "produced. A run waiting for approval waits again (see adws approve); a kept worktree that "
        "changed since the run left it is refused (see --force).",
    )
    resume.add_argument("run", help="run id (or a unique prefix)")
    resume.add_argument(
        "--plan",
        action="store_true",
        help="print what a resume would do with each step (kept, changed, rerun, to run) and "
        "the options it would use; run nothing",
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
        "--force",
        action="store_true",
        help="keep the outputs of changed finished steps; resume a run that looks alive; "
        "stop a child process group a crashed run left running; go on with a kept worktree "
        "that changed (or start a missing one again from its base)",
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
    continuing = "; the run continues in this process, like adws resume, with the options it "
    continuing += "was started with, and the exit code is the run's"
    approve = commands.add_parser(
        "approve",
        parents=[common, journaled, running],
        help="approve a run waiting for approval, and continue it",
        description="Record who approved the run (--by, else your login name), when, and "
        f"--note{continuing}.",
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
        parser.add_argument(
            "--force",
            action="store_true",
            help="go on although a worktree the run kept changed (as adws resume --force)",
        )
    approve.add_argument("--note", default="", metavar="TEXT", help="a note kept with the approval")
    reject.add_argument("--reason", required=True, metavar="TEXT", help="why, kept with the run")
