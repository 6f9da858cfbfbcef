"""The `adws` command line: the one place that prints and picks exit codes.

Exit codes: 0 succeeded, 1 failed, 2 usage or invalid workflow, 3 blocked,
130 interrupted. After a run, every input the run produced whose name ends
in `_path` is printed, so a workflow can tell its user where its artifacts
went (`report_path: reports/...md`).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import TYPE_CHECKING, Final

from adws._cli_args import (
    UsageError,
    build_parser,
    open_journal,
    parse_inputs,
    read_answer,
    require_journal,
    select_agent,
)
from adws._terminal import escape_controls, escape_json

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence

    from adws.context import WorkflowContext
    from adws.discovery import Catalog
    from adws.errors import PipelineError
    from adws.events import RunEvent, RunObserver
    from adws.journal import Journal, RunRecord
    from adws.step import Workflow
    from adws.summary import RunSummary

# Each command imports what it needs when it runs, so `adws --help` starts in a
# few milliseconds instead of importing the executor, cattrs and sqlite3.

__all__ = ["EXIT_CODES", "main"]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
EXIT_BLOCKED: Final = 3
EXIT_INTERRUPTED: Final = 130
EXIT_CODES: Final = {
    "succeeded": EXIT_OK,
    "failed": EXIT_FAILED,
    "blocked": EXIT_BLOCKED,
    "interrupted": EXIT_INTERRUPTED,
}


class Interrupts:
    """Handle SIGINT: the first stops the current step, a second exits at once.

    The first Ctrl-C raises `KeyboardInterrupt`, which the executor turns into
    an `Interrupted` failure after running the `always_run` steps. A second
    one marks the run interrupted in the journal and exits with 130 without
    waiting for cleanup to finish.
    """

    def __init__(
        self,
        journal: Journal | None,
        summary: RunSummary,
        exit_now: Callable[[int], object] = os._exit,
    ) -> None:
        """Remember what to mark and how to leave."""
        self.journal = journal
        self.summary = summary
        self.exit_now = exit_now
        self.count = 0

    def __call__(self, _signum: int, _frame: object) -> None:
        """React to one SIGINT."""
        self.count += 1
        if self.count == 1:
            raise KeyboardInterrupt
        _err("adws: interrupted again; exiting without waiting for cleanup")
        if self.journal is not None and self.summary.run_id:
            self.journal.mark(self.summary.run_id, "interrupted")
        self.exit_now(EXIT_INTERRUPTED)


def _err(message: str) -> None:
    print(escape_controls(message), file=sys.stderr)


def _out(message: str) -> None:
    print(escape_controls(message))


def _out_json(payload: object) -> None:
    """Print JSON with the exact text of every value, nothing a terminal would obey."""
    print(escape_json(json.dumps(payload, indent=2, ensure_ascii=False)))


# -- workflows -----------------------------------------------------------------


def _catalog(args: argparse.Namespace) -> Catalog:
    from adws.discovery import discover_workflows, workflows_dir  # noqa: PLC0415 - see the note on imports

    return discover_workflows(workflows_dir(args.workflows))


def _report_load_errors(catalog: Catalog) -> None:
    for error in catalog.errors:
        _err(f"warning: could not load {error}")


def _workflow(args: argparse.Namespace) -> Workflow:
    catalog = _catalog(args)
    found = catalog.workflows.get(args.workflow)
    if found is not None:
        return found
    _report_load_errors(catalog)
    known = ", ".join(sorted(catalog.workflows)) or "none"
    msg = f"unknown workflow {args.workflow!r} in {catalog.directory}; known workflows: {known}"
    raise UsageError(msg)


# -- inputs --------------------------------------------------------------------


def _cmd_list(args: argparse.Namespace) -> int:
    catalog = _catalog(args)
    _report_load_errors(catalog)
    if not catalog.workflows:
        _err(f"no workflows found in {catalog.directory}")
        return EXIT_USAGE if catalog.errors else EXIT_OK
    width = max(len(name) for name in catalog.workflows)
    for name in sorted(catalog.workflows):
        description = catalog.workflows[name].description.strip().splitlines()
        _out(f"{name:<{width}}  {description[0] if description else ''}".rstrip())
    return EXIT_OK


def _cmd_show(args: argparse.Namespace) -> int:
    workflow = _workflow(args)
    from adws.render import show_text, to_mermaid  # noqa: PLC0415 - see the note on imports

    _out(to_mermaid(workflow) if args.mermaid else show_text(workflow))
    return EXIT_OK


def _progress(event: RunEvent) -> None:
    from adws.render import format_event  # noqa: PLC0415 - see the note on imports

    _err(format_event(event))


def _print_error_details(error: PipelineError) -> None:
    from adws.errors import ErrorType  # noqa: PLC0415 - see the note on imports

    problems = error.context.get("problems")
    if error.error_type == ErrorType.CONTRACT_VIOLATION and problems:
        _err("problems with the agent's answer:")
        for problem in problems:
            _err(f"  - {problem}")
    for late in error.context.get("always_run_failures", ()):
        _err(f"also failed while cleaning up: {late}")


def _execute(  # noqa: PLR0913 - a run, plus the three things `resume` knows already
    args: argparse.Namespace,
    workflow: Workflow,
    ctx: WorkflowContext,
    *,
    run_id: str | None = None,
    resume_from: str | None = None,
    workflow_fingerprint: str | None = None,
) -> int:
    from adws.executor import new_run_id, run_workflow  # noqa: PLC0415 - see the note on imports
    from adws.fingerprint import fingerprint  # noqa: PLC0415 - see the note on imports
    from adws.summary import RunSummary  # noqa: PLC0415 - see the note on imports

    journal = open_journal(args)
    summary = RunSummary()
    observers: list[RunObserver] = [summary]
    if journal is not None:
        observers.insert(0, journal.observer(workflow_fingerprint or fingerprint(workflow)))
    if not args.quiet:
        observers.append(_progress)
    run_id = run_id or new_run_id()
    interrupts = Interrupts(journal, summary)
    previous = signal.signal(signal.SIGINT, interrupts)
    try:
        run_workflow(workflow, ctx, observers=observers, run_id=run_id, resume_from=resume_from)
    except KeyboardInterrupt:
        # Ctrl-C outside any step: while the run's start or end was being recorded.
        _err("adws: interrupted")
        if journal is not None:
            journal.mark(run_id, "interrupted")
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGINT, previous)
    _report(args, summary, ctx)
    return EXIT_CODES.get(summary.status, EXIT_FAILED)


def _report(args: argparse.Namespace, summary: RunSummary, ctx: WorkflowContext) -> None:
    """Print what a finished run left: why it failed, where its files went, its JSON."""
    if args.quiet and summary.finished is not None and summary.status != "succeeded":
        _progress(summary.finished)  # -q hides progress, never why a run did not succeed
    if summary.error is not None:
        _print_error_details(summary.error)
    if summary.finished is not None and not args.quiet:
        final = summary.finished.context.inputs
        for key in final:
            if key.endswith("_path") and key not in ctx.inputs:
                _err(f"{key}: {final[key]}")
    if args.json:
        _out_json(summary.to_dict())


def _cmd_run(args: argparse.Namespace) -> int:
    from adws.context import WorkflowContext  # noqa: PLC0415 - see the note on imports

    inputs = parse_inputs(args.input, args.inputs)
    workflow = select_agent(_workflow(args), args.agent, args.model)
    missing = workflow.missing_inputs(inputs)
    if missing:
        flags = " ".join(f"-i {key}=..." for key in missing)
        msg = f"workflow {workflow.name!r} needs input {', '.join(missing)}: add {flags}"
        raise UsageError(msg)
    return _execute(args, workflow, WorkflowContext(inputs=inputs))


def _cmd_runs(args: argparse.Namespace) -> int:
    journal = require_journal(args)
    records = journal.runs(workflow=args.workflow, status=args.status, limit=args.limit)
    if args.json:
        _out_json([record.to_dict() for record in records])
    elif records:
        from adws.render import runs_table  # noqa: PLC0415 - see the note on imports

        _out(runs_table(records))
    else:
        _err(f"no runs recorded in {journal.path}")
    return EXIT_OK


def _find_run(journal: Journal, run_id: str) -> RunRecord:
    found = journal.find(run_id)
    if isinstance(found, str):
        raise UsageError(found)
    return found


def _cmd_status(args: argparse.Namespace) -> int:
    journal = require_journal(args)
    record = _find_run(journal, args.run)
    attempts = journal.attempts(record.run_id)
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
                }
                for a in attempts
            ],
        }
        _out_json(payload)
    else:
        from adws.render import status_text  # noqa: PLC0415 - see the note on imports

        _out(status_text(record, attempts))
    return EXIT_OK


def _cmd_resume(args: argparse.Namespace) -> int:
    from adws.context import WorkflowContext  # noqa: PLC0415 - see the note on imports
    from adws.fingerprint import fingerprint  # noqa: PLC0415 - see the note on imports
    from adws.journal import resume_point  # noqa: PLC0415 - see the note on imports

    journal = require_journal(args)
    record = _find_run(journal, args.run)
    if record.status == "succeeded":
        _err(f"run {record.run_id} already succeeded; nothing to resume")
        return EXIT_OK
    if record.status == "running" and not record.stale and not args.force:
        msg = (
            f"run {record.run_id} is still running (process {record.pid}); "
            "pass --force if it is not"
        )
        raise UsageError(msg)
    args.workflow = record.workflow
    workflow = select_agent(_workflow(args), args.agent, args.model)
    current = fingerprint(workflow)
    if current != record.fingerprint and not args.force:
        msg = (
            f"workflow {workflow.name!r} changed since run {record.run_id} started "
            "(its fingerprint differs); pass --force to resume with the new definition"
        )
        raise UsageError(msg)
    names = [step.name for step in workflow.steps]
    resume_from, ctx = resume_point(names, journal.attempts(record.run_id))
    if resume_from is None:
        _err(f"every step of run {record.run_id} already succeeded; nothing to resume")
        return EXIT_OK
    start = ctx if ctx is not None else record.inputs()
    extra = parse_inputs(args.input, args.inputs)
    start = WorkflowContext(inputs={**start.inputs, **extra})
    return _execute(
        args,
        workflow,
        start,
        run_id=record.run_id,
        resume_from=resume_from,
        workflow_fingerprint=current,
    )


def _cmd_validate(args: argparse.Namespace) -> int:
    from returns.result import Failure  # noqa: PLC0415 - see the note on imports

    from adws.agent_step import AgentSpec  # noqa: PLC0415 - see the note on imports
    from adws.contract import validate_agent_output  # noqa: PLC0415 - see the note on imports
    from adws.errors import json_safe  # noqa: PLC0415 - see the note on imports
    from adws.step import iter_steps  # noqa: PLC0415 - see the note on imports

    workflow = _workflow(args)
    steps = {step.name: step for step in iter_steps(workflow.steps)}
    step = steps.get(args.step)
    if step is None:
        msg = f"workflow {workflow.name!r} has no step {args.step!r}; steps: {', '.join(steps)}"
        raise UsageError(msg)
    if not isinstance(step.spec, AgentSpec):
        msg = f"step {args.step!r} is a {step.kind} step; only agent steps have an output contract"
        raise UsageError(msg)
    text = read_answer(args.file)
    result = validate_agent_output(text, step.spec.contract, step_name=step.name)
    if isinstance(result, Failure):
        error = result.failure()
        _out(f"invalid: {error.error_type}")
        for problem in error.context.get("problems", (error.message,)):
            _out(f"  - {problem}")
        return EXIT_FAILED
    report = result.unwrap()
    payload = {"status": report.status, "fields": dict(report.fields), "data": report.data}
    _out_json(json_safe(payload))
    return EXIT_OK


# -- the parser ----------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse exits for --help and usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "list": _cmd_list,
        "show": _cmd_show,
        "run": _cmd_run,
        "runs": _cmd_runs,
        "status": _cmd_status,
        "resume": _cmd_resume,
        "validate": _cmd_validate,
    }
    handler = handlers[args.command]
    try:
        return handler(args)
    except UsageError as exc:
        _err(f"adws: error: {exc}")
        return EXIT_USAGE
