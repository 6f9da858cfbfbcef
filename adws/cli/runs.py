"""`adws run`, `adws runs` and `adws status`: starting a run, and the runs recorded."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from adws.cli import EXIT_CODES
from adws.cli._args import UsageError, given_options, parse_inputs, require_journal
from adws.cli._execute import execute, with_agents
from adws.cli._output import err, out, out_json
from adws.cli.workflows import load_workflow

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping, Sequence

    from adws.journal import AttemptRecord, Journal, RunRecord
    from adws.step import Workflow

# Each command imports what it needs when it runs; see adws.cli.workflows.

__all__ = ["cmd_run", "cmd_runs", "cmd_status", "find_run", "unreadable"]

EXIT_OK: Final = EXIT_CODES["succeeded"]
EXIT_FAILED: Final = EXIT_CODES["failed"]


def unreadable(
    journal: Journal, records: Sequence[RunRecord], attempts: Sequence[AttemptRecord] = ()
) -> int:
    """Name the rows of the journal that could not be read whole; return the exit code.

    What could be read was shown already: one bad row never hides the rest.
    """
    problems = [
        f"run {record.run_id}: {problem}" for record in records for problem in record.problems
    ]
    problems += [
        f"attempt of {attempt.step}: {problem}"
        for attempt in attempts
        for problem in attempt.problems
    ]
    if not problems:
        return EXIT_OK
    err(f"adws: the journal {journal.path} holds rows it cannot read:")
    for problem in problems:
        err(f"  {problem}")
    return EXIT_FAILED


def cmd_run(args: argparse.Namespace) -> int:
    """Run a workflow with the inputs given."""
    from adws.context import WorkflowContext  # noqa: PLC0415 - see the note on imports

    inputs = parse_inputs(args.input, args.inputs)
    workflow = with_agents(args)
    _refuse_unknown(workflow, inputs)
    missing = workflow.missing_inputs(inputs)
    if missing:
        flags = " ".join(f"-i {key}=..." for key in missing)
        msg = f"workflow {workflow.name!r} needs input {', '.join(missing)}: add {flags}"
        raise UsageError(msg)
    _refuse_failing_check(workflow, inputs)
    return execute(args, workflow, WorkflowContext(inputs=inputs), options=given_options(args))


def _refuse_unknown(workflow: Workflow, inputs: Mapping[str, object]) -> None:
    """Refuse `-i` keys no step reads and the workflow does not declare (a typo, say)."""
    from adws.check import known_inputs  # noqa: PLC0415 - see the note on imports

    known = known_inputs(workflow)
    unknown = [key for key in inputs if known is not None and key not in known]
    if unknown and known is not None:
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


def _prune(journal: Journal, args: argparse.Namespace) -> int:
    if args.older_than is None and args.keep is None:
        msg = "--prune needs --older-than DAYS or --keep N"
        raise UsageError(msg)
    deleted = journal.prune(older_than_days=args.older_than, keep=args.keep)
    err(f"deleted {deleted} run{'' if deleted == 1 else 's'} from {journal.path}")
    return EXIT_OK


def cmd_runs(args: argparse.Namespace) -> int:
    """List recorded runs, newest first (or prune old ones)."""
    journal = require_journal(args, readonly=not args.prune)
    if args.prune:
        return _prune(journal, args)
    batch = None
    if args.batch is not None:
        from adws.journal.batches import find_batch  # noqa: PLC0415 - see the note on imports

        found = find_batch(journal, args.batch)
        if isinstance(found, str):
            raise UsageError(found)
        batch = found[0]
    records = journal.runs(
        workflow=args.workflow, status=args.status, limit=args.limit, batch=batch
    )
    if args.json:
        out_json([record.to_dict() for record in records])
    elif records:
        from adws.render import runs_table  # noqa: PLC0415 - see the note on imports

        out(runs_table(records))
    else:
        err(f"no runs recorded in {journal.path}")
    return unreadable(journal, records)


def find_run(journal: Journal, run_id: str) -> RunRecord:
    """Find a run by id or unique prefix, or raise a `UsageError` saying why not."""
    found = journal.find(run_id)
    if isinstance(found, str):
        raise UsageError(found)
    return found


def cmd_status(args: argparse.Namespace) -> int:
    """Show one run's steps, attempts and errors."""
    journal = require_journal(args, readonly=True)
    record = find_run(journal, args.run)
    attempts = journal.attempts(record.run_id)
    if args.mermaid:
        from adws.render import step_outcomes, to_mermaid  # noqa: PLC0415 - see the note on imports

        args.workflow = record.workflow
        out(to_mermaid(load_workflow(args), step_outcomes(attempts)))
        return unreadable(journal, [record], attempts)
    if args.json:
        payload = {
            **record.to_dict(),
            "error": None if record.error is None else record.error.to_dict(),
            "attempts": [
                {
                    "step": a.step,
                    "attempt": a.attempt,
                    "status": a.status,
                    "recorded": a.recorded,
                    "seconds": a.seconds,
                    "error": None if a.error is None else a.error.to_dict(),
                    "usage": None if a.usage is None else a.usage.to_dict(),
                }
                for a in attempts
            ],
        }
        out_json(payload)
    else:
        from adws.render import status_text  # noqa: PLC0415 - see the note on imports

        out(status_text(record, attempts))
    return unreadable(journal, [record], attempts)
