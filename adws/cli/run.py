"""`adws run`: start a run of a workflow with the inputs given."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws.cli._args import (
    UsageError,
    given_options,
    journal_path,
    parse_inputs,
    require_journal,
)
from adws.cli._execute import execute, with_agents
from adws.cli._output import err, out

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping

    from adws.engine.step import Workflow

# Each command imports what it needs when it runs; see adws.cli.workflows.

__all__ = ["check_inputs", "cmd_run"]


def cmd_run(args: argparse.Namespace) -> int:
    """Run a workflow with the inputs given (or, `--plan`, say what it should cost)."""
    from adws.engine.context import WorkflowContext  # noqa: PLC0415 - see the note on imports

    inputs = parse_inputs(args.input, args.inputs)
    workflow = with_agents(args)
    check_inputs(workflow, inputs)
    if args.plan:
        return _plan(args, workflow)
    return execute(args, workflow, WorkflowContext(inputs=inputs), options=given_options(args))


def check_inputs(workflow: Workflow, inputs: Mapping[str, object]) -> None:
    """Refuse inputs a run of `workflow` cannot start with (`adws run`, `adws submit`): exit 2."""
    _refuse_unknown(workflow, inputs)
    missing = workflow.missing_inputs(inputs)
    if missing:
        flags = " ".join(f"-i {key}=..." for key in missing)
        msg = f"workflow {workflow.name!r} needs input {', '.join(missing)}: add {flags}"
        raise UsageError(msg)
    _refuse_failing_check(workflow, inputs)


def _plan(args: argparse.Namespace, workflow: Workflow) -> int:
    """Print what a run of `workflow` should cost by the journal's history; run nothing."""
    from pathlib import Path  # noqa: PLC0415 - see the note on imports

    from adws.journal.estimates import (  # noqa: PLC0415 - see the note on imports
        FinishEstimate,
        finish_estimate,
    )

    steps = [step.name for step in workflow.steps]
    estimate = FinishEstimate(0.0, 0.0, 0)
    where = journal_path(args)  # a file that may not exist yet, or a server's URL
    if not args.no_journal and (not isinstance(where, Path) or where.exists()):
        journal = require_journal(args, readonly=True)
        estimate = finish_estimate(journal, workflow.name, steps)
    count = f"{len(steps)} step{'' if len(steps) == 1 else 's'}"
    out(f"to run {workflow.name} ({count}): {estimate.describe()}")
    return 0


def _refuse_unknown(workflow: Workflow, inputs: Mapping[str, object]) -> None:
    """Refuse `-i` keys no step reads and the workflow does not declare (a typo, say).

    When a Python step declares no `reads=`, any key might be read, so one
    the workflow does not declare is only a warning, naming the declared ones.
    """
    from adws.check import known_inputs  # noqa: PLC0415 - see the note on imports

    known = known_inputs(workflow)
    if known is None:
        declared = {*workflow.inputs, *workflow.optional_inputs}
        unknown = [key for key in inputs if key not in declared]
        if unknown:
            names = ", ".join(repr(key) for key in unknown)
            takes = ", ".join(sorted(declared)) or "none"
            err(
                f"adws: warning: workflow {workflow.name!r} declares no input {names}; the"
                f" inputs it declares: {takes} (a step without reads= may still read it)"
            )
        return
    unknown = [key for key in inputs if key not in known]
    if unknown:
        names = ", ".join(repr(key) for key in unknown)
        takes = ", ".join(sorted(known)) or "none"
        msg = f"workflow {workflow.name!r} takes no input {names}; the inputs it reads: {takes}"
        raise UsageError(msg)


def _refuse_failing_check(workflow: Workflow, inputs: Mapping[str, object]) -> None:
    """Refuse to run a workflow whose dataflow `adws check` reports errors for."""
    from adws.check import check_workflow  # noqa: PLC0415 - see the note on imports

    errors = [p for p in check_workflow(workflow, given=inputs) if p.severity == "error"]
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        msg = (
            f"workflow {workflow.name!r} fails adws check: {errors[0]}{more};"
            f" see `adws check {workflow.name}`"
        )
        raise UsageError(msg)
