"""`adws submit`: queue a run of a workflow for an `adws worker` to start, on whatever host."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws.cli._args import given_options, parse_inputs, require_journal
from adws.cli._execute import with_agents
from adws.cli._output import out, out_json
from adws.cli.run import check_inputs

if TYPE_CHECKING:
    import argparse

# Each command imports what it needs when it runs; see adws.cli.workflows.

__all__ = ["cmd_submit"]


def cmd_submit(args: argparse.Namespace) -> int:
    """Queue a run with the inputs and options given, checked as `adws run` checks them.

    Prints its id (`--json`: its id, workflow and status); a worker records
    its host when it takes it.
    """
    from adws.engine.context import WorkflowContext  # noqa: PLC0415 - see the note on imports
    from adws.engine.executor import new_run_id  # noqa: PLC0415 - as above
    from adws.journal.codec import encode_context  # noqa: PLC0415 - as above
    from adws.journal.fingerprint import fingerprint, step_fingerprints  # noqa: PLC0415 - as above
    from adws.journal.queue import submit  # noqa: PLC0415 - as above

    inputs = parse_inputs(args.input, args.inputs)
    workflow = with_agents(args)
    check_inputs(workflow, inputs)
    options = given_options(args)
    journal = require_journal(args, create=True)
    run_id = new_run_id()
    submit(
        journal,
        run_id,
        workflow.name,
        fingerprint=fingerprint(workflow, step_fingerprints(workflow)),
        steps=[step.name for step in workflow.steps],
        inputs=encode_context(WorkflowContext(inputs=inputs)),
        options=options.to_json(),
    )
    if args.json:
        out_json({"run_id": run_id, "workflow": workflow.name, "status": "queued"})
    else:
        out(run_id)
    return 0
