"""`adws run`: start a run of a workflow with the inputs given (or say what it should cost)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws.cli._options import (
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
from adws.cli._output import out
from adws.cli._runs import ended, traced, watching
from adws.runs import Refused, RunRequest

if TYPE_CHECKING:
    import argparse

    from adws.engine.step import Workflow
    from adws.journal.store.estimates import FinishEstimate

__all__ = ["add_run", "cmd_run"]


def add_run(parser: argparse.ArgumentParser) -> None:
    """Declare `adws run WORKFLOW [-i KEY=VALUE ...] [--plan]`."""
    add_workflows(parser)
    add_journal(parser)
    add_running(parser)
    add_journal_wait(parser)
    add_worktrees(parser)
    parser.add_argument("workflow", help="workflow name")
    parser.add_argument(
        "--plan",
        action="store_true",
        help="print what the run should cost by the journal's history of the workflow (about: "
        "the sum of each step's median cost, up to: of its 90th percentile); run nothing",
    )


def cmd_run(args: argparse.Namespace) -> int:
    """Run a workflow with the inputs given (or, `--plan`, say what it should cost).

    The inputs and the workflow are checked before the journal is opened.
    """
    request = RunRequest(
        args.workflow,
        inputs_of(args.input, args.inputs),
        options=given_options(args),
        workflows=args.workflows,
    )
    runs = runs_of(args)
    if args.plan:
        return _plan(runs.estimate(request))
    with traced(args) as tracing:
        return ended(args, runs.run(request, watching(args, tracing)))


def _plan(estimated: tuple[Workflow, FinishEstimate] | Refused) -> int:
    """Print what a run should cost by the journal's history; run nothing."""
    if isinstance(estimated, Refused):
        return refused(estimated)
    workflow, estimate = estimated
    steps = len(workflow.steps)
    count = f"{steps} step{'' if steps == 1 else 's'}"
    out(f"to run {workflow.name} ({count}): {estimate.describe()}")
    return 0
