"""`adws submit`: queue a run of a workflow for an `adws worker` to start, on whatever host."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws.cli._options import (
    add_journal,
    add_running,
    add_workflows,
    given_options,
    inputs_of,
    refused,
    runs_of,
)
from adws.cli._output import out, out_json
from adws.runs import Refused, RunRequest

if TYPE_CHECKING:
    import argparse

__all__ = ["add_submit", "cmd_submit"]


def add_submit(parser: argparse.ArgumentParser) -> None:
    """Declare `adws submit WORKFLOW [-i KEY=VALUE ...]`."""
    parser.description = (
        "Check the inputs as adws run does, then queue a run of WORKFLOW (status "
        "queued, no host) with its inputs and options (--agent, --max-cost, ...), and print its "
        "id. An adws worker on any host sharing the journal starts it."
    )
    add_workflows(parser)
    add_journal(parser)
    add_running(parser)
    parser.add_argument("workflow", help="workflow name")


def cmd_submit(args: argparse.Namespace) -> int:
    """Queue a run with the inputs and options given, checked as `adws run` checks them.

    Prints its id (`--json`: its id, workflow and status); a worker records
    its host when it takes it.
    """
    request = RunRequest(
        args.workflow,
        inputs_of(args.input, args.inputs),
        options=given_options(args),
        workflows=args.workflows,
    )
    run_id = runs_of(args).submit(request)
    if isinstance(run_id, Refused):
        return refused(run_id)
    if args.json:
        out_json({"run_id": run_id, "workflow": args.workflow, "status": "queued"})
    else:
        out(run_id)
    return 0
