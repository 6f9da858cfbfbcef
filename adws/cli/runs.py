"""`adws run`, `adws runs`, `adws status` and `adws resume`: running and recorded runs."""

from __future__ import annotations

import contextlib
import functools
from typing import TYPE_CHECKING, Final

from adws import io_ops
from adws.cli import EXIT_CODES
from adws.cli._args import (
    UsageError,
    open_journal,
    parse_inputs,
    recorded,
    require_journal,
    select_agent,
)
from adws.cli._interrupts import Interrupts
from adws.cli._output import err, out, out_json
from adws.cli.workflows import load_workflow

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator, Mapping, Sequence

    from adws.context import WorkflowContext
    from adws.errors import PipelineError
    from adws.events import RunEvent, RunObserver
    from adws.journal import Journal, JournalObserver, RunRecord, StepPlan
    from adws.step import Workflow
    from adws.summary import RunSummary
    from adws.usage import Budget, Usage

# Each command imports what it needs when it runs; see adws.cli.workflows.

__all__ = ["cmd_resume", "cmd_run", "cmd_runs", "cmd_status", "execute"]

EXIT_OK: Final = EXIT_CODES["succeeded"]
EXIT_FAILED: Final = EXIT_CODES["failed"]


def _progress(event: RunEvent) -> None:
    from adws.render import format_event  # noqa: PLC0415 - see the note on imports

    err(format_event(event))


def _print_error_details(error: PipelineError) -> None:
    from adws.errors import ErrorType  # noqa: PLC0415 - see the note on imports

    problems = error.context.get("problems")
    if error.error_type == ErrorType.CONTRACT_VIOLATION and problems:
        err("problems with the agent's answer:")
        for problem in problems:
            err(f"  - {problem}")
    for late in error.context.get("always_run_failures", ()):
        err(f"also failed while cleaning up: {late}")


@contextlib.contextmanager
def _children_recorded(
    journal: Journal | None, run_id: str, unrecorded: list[str]
) -> Iterator[None]:
    """Record in the journal which process groups the step in flight has started.

    `adws resume` reads them to refuse resuming a run whose child still runs.
    A write that fails is kept in `unrecorded`, never raised into the step.
    """
    if journal is None:
        yield
        return

    def record(groups: tuple[int, ...]) -> None:
        try:
            journal.record_children(run_id, groups)
        except Exception as exc:  # noqa: BLE001 - never break a step over bookkeeping; reported
            unrecorded.append(f"child process groups {list(groups)}: {exc}")

    io_ops.GROUPS.on_change = record
    try:
        yield
    finally:
        io_ops.GROUPS.on_change = None


def _journal_problems(
    journal: Journal | None,
    recorder: JournalObserver | None,
    summary: RunSummary,
    problems: list[str],
) -> list[str]:
    """Say what the journal did not record; try once more to record how the run ended."""
    if journal is None or recorder is None:
        return problems
    if recorder.failure is not None:
        problems = [recorder.failure, *problems]
    if problems and summary.run_id:
        with contextlib.suppress(Exception):  # best effort: the message below says what is missing
            journal.mark(summary.run_id, summary.status)
    return problems


def execute(  # noqa: PLR0913 - a run, plus the three things `resume` knows already
    args: argparse.Namespace,
    workflow: Workflow,
    ctx: WorkflowContext,
    *,
    run_id: str | None = None,
    resume_from: str | None = None,
    steps: Mapping[str, str] | None = None,
    reuse: Mapping[str, Mapping[str, object]] | None = None,
    spent: Usage | None = None,
) -> int:
    """Run `workflow` from `ctx` with journal, progress and signals; return the exit code.

    `--max-cost` and `--max-tokens` become the run's budget; `spent` is what
    a resumed run's earlier sessions cost, so that budget counts it.
    """
    from adws.executor import new_run_id, run_workflow  # noqa: PLC0415 - see the note on imports
    from adws.journal.fingerprint import (  # noqa: PLC0415 - see the note on imports
        fingerprint,
        step_fingerprints,
    )
    from adws.summary import RunSummary  # noqa: PLC0415 - see the note on imports

    journal = open_journal(args)
    run_id = run_id or new_run_id()
    summary = RunSummary()

    mark = functools.partial(journal.mark, run_id, "interrupted") if journal else None
    interrupts = Interrupts(mark or (lambda: None))
    observers: list[RunObserver] = [interrupts.observe, summary]
    recorder = None
    if journal is not None:
        steps = steps if steps is not None else step_fingerprints(workflow)
        recorder = journal.observer(fingerprint(workflow, steps), steps)
        observers.insert(1, recorder)
    if not args.quiet:
        observers.append(_progress)
    unrecorded: list[str] = []
    with interrupts.installed(), _children_recorded(journal, run_id, unrecorded):
        run_workflow(
            workflow,
            ctx,
            observers=observers,
            run_id=run_id,
            resume_from=resume_from,
            max_agents=args.max_agents,
            reuse=reuse,
            budget=_budget(args),
            spent=spent,
        )
    _report(args, summary, ctx)
    code = EXIT_CODES.get(summary.status, EXIT_FAILED)
    if summary.status == "interrupted":
        code = interrupts.exit_code
    problems = _journal_problems(journal, recorder, summary, unrecorded)
    if problems and journal is not None:
        err(
            f"adws: the journal {journal.path} did not record this run completely "
            f"({'; '.join(problems)}); `adws resume {run_id}` may run finished steps again"
        )
        code = code or EXIT_FAILED
    return code


def _with_agents(args: argparse.Namespace) -> Workflow:
    """Load `args.workflow` with the agents `--agent`, `--record` and `--replay` chose."""
    chosen = select_agent(load_workflow(args), args.agent, args.model, args.agent_output)
    return recorded(chosen, args)


def _budget(args: argparse.Namespace) -> Budget | None:
    from adws.usage import Budget  # noqa: PLC0415 - see the note on imports

    if args.max_cost is None and args.max_tokens is None:
        return None
    return Budget(args.max_cost, args.max_tokens)


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
                err(f"{key}: {final[key]}")
    if args.json:
        out_json(summary.to_dict())


def cmd_run(args: argparse.Namespace) -> int:
    """Run a workflow with the inputs given."""
    from adws.context import WorkflowContext  # noqa: PLC0415 - see the note on imports

    inputs = parse_inputs(args.input, args.inputs)
    workflow = _with_agents(args)
    missing = workflow.missing_inputs(inputs)
    if missing:
        flags = " ".join(f"-i {key}=..." for key in missing)
        msg = f"workflow {workflow.name!r} needs input {', '.join(missing)}: add {flags}"
        raise UsageError(msg)
    return execute(args, workflow, WorkflowContext(inputs=inputs))


def _prune(journal: Journal, args: argparse.Namespace) -> int:
    if args.older_than is None and args.keep is None:
        msg = "--prune needs --older-than DAYS or --keep N"
        raise UsageError(msg)
    if (args.older_than is not None and args.older_than < 0) or (
        args.keep is not None and args.keep < 0
    ):
        msg = "--older-than and --keep must not be negative"
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
        found = journal.batch(args.batch)
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
    return EXIT_OK


def _find_run(journal: Journal, run_id: str) -> RunRecord:
    found = journal.find(run_id)
    if isinstance(found, str):
        raise UsageError(found)
    return found


def cmd_status(args: argparse.Namespace) -> int:
    """Show one run's steps, attempts and errors."""
    journal = require_journal(args, readonly=True)
    record = _find_run(journal, args.run)
    attempts = journal.attempts(record.run_id)
    if args.mermaid:
        from adws.render import step_outcomes, to_mermaid  # noqa: PLC0415 - see the note on imports

        args.workflow = record.workflow
        out(to_mermaid(load_workflow(args), step_outcomes(attempts)))
        return EXIT_OK
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
    return EXIT_OK


def _stop_children(record: RunRecord, *, force: bool) -> None:
    """Refuse to resume over a child the run left running, or (`--force`) stop it first."""
    alive = record.live_children()
    if not alive:
        return
    groups = ", ".join(str(pgid) for pgid in alive)
    if not force:
        msg = (
            f"run {record.run_id} left child process group {groups} running; "
            "pass --force to stop it and resume"
        )
        raise UsageError(msg)
    for pgid in alive:
        io_ops.stop_group(pgid)
    err(f"adws: stopped process group {groups} left by run {record.run_id}")


def _refuse_changed(record: RunRecord, plan: Sequence[StepPlan]) -> None:
    changed = [item.step for item in plan if item.action == "changed"]
    names = ", ".join(repr(name) for name in changed)
    noun = "step" if len(changed) == 1 else "steps"
    msg = (
        f"{noun} {names} of run {record.run_id} changed since it finished; pass "
        "--rerun-changed to run again from the first of them, or --force to keep "
        f"the outputs it made (see `adws resume {record.run_id} --plan`)"
    )
    raise UsageError(msg)


def cmd_resume(args: argparse.Namespace) -> int:
    """Continue a run from its first step that did not succeed (or show the plan)."""
    from adws.context import WorkflowContext  # noqa: PLC0415 - see the note on imports
    from adws.journal import (  # noqa: PLC0415 - see the note on imports
        plan_resume,
        resume_point,
        stored_branches,
    )
    from adws.journal.fingerprint import step_fingerprints  # noqa: PLC0415 - see the note on imports

    journal = require_journal(args, readonly=args.plan)
    record = _find_run(journal, args.run)
    if record.status == "succeeded" and not args.plan:
        err(f"run {record.run_id} already succeeded; nothing to resume")
        return EXIT_OK
    args.workflow = record.workflow
    workflow = _with_agents(args)
    steps = step_fingerprints(workflow)
    names = [step.name for step in workflow.steps]
    attempts = journal.attempts(record.run_id)
    plan = plan_resume(names, attempts, steps)
    if args.plan:
        from adws.render import plan_text  # noqa: PLC0415 - see the note on imports

        out(plan_text(record, plan))
        return EXIT_OK
    changed = [item.step for item in plan if item.action == "changed"]
    if changed and not args.rerun_changed and not args.force:
        _refuse_changed(record, plan)
    until = changed[0] if changed and args.rerun_changed else None
    resume_from, ctx = resume_point(names, attempts, record.inputs(), until=until)
    if resume_from is None:
        err(f"every step of run {record.run_id} already succeeded; nothing to resume")
        return EXIT_OK
    if record.status != "running" or record.stale:
        _stop_children(record, force=args.force)  # what a crashed run may have left behind
    # The claim is the check: atomic, so of several resumes started at once one runs.
    refused = journal.claim(record.run_id, force=args.force)
    if refused is not None:
        raise UsageError(refused)
    extra = parse_inputs(args.input, args.inputs)
    if extra:
        journal.add_inputs(record.run_id, extra)  # a later resume needs them too
    start = WorkflowContext(inputs={**ctx.inputs, **extra})
    # A parallel step that failed keeps its branches that succeeded: only the others run.
    reuse = stored_branches(attempts, resume_from)
    return execute(
        args,
        workflow,
        start,
        run_id=record.run_id,
        resume_from=resume_from,
        steps=steps,
        reuse=reuse,
        spent=record.usage,
    )
