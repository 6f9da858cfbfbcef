"""Run a workflow for `adws run` and `adws resume`: journal, progress, signals, exit code."""

from __future__ import annotations

import contextlib
import functools
import os
from typing import TYPE_CHECKING, Final

from adws import io_ops
from adws.cli import EXIT_CODES
from adws.cli._args import (
    UsageError,
    journal_home,
    max_wait,
    open_journal,
    recorded,
    select_agent,
)
from adws.cli._output import err, out_json
from adws.cli.workflows import load_workflow
from adws.interrupts import Interrupts

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Collection, Iterator, Mapping

    from adws.engine.context import WorkflowContext
    from adws.engine.errors import PipelineError
    from adws.engine.events import RunEvent, RunObserver
    from adws.engine.scope import AgentSession, Decision
    from adws.engine.step import Workflow
    from adws.engine.usage import Budget, Usage
    from adws.journal import Journal, JournalObserver
    from adws.journal.options import RunOptions
    from adws.otel import Tracing
    from adws.summary import RunSummary

# Each command imports what it needs when it runs; see adws.cli.workflows.

__all__ = ["execute", "printer", "with_agents"]

EXIT_FAILED: Final = EXIT_CODES["failed"]
_OTLP_ENDPOINTS: Final = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def printer(*, verbose: bool = False, kept: str | None = None) -> Callable[[RunEvent], None]:
    """Return an observer that prints a run's progress on stderr (see `adws.render.Progress`)."""
    from adws.render import Progress  # noqa: PLC0415 - see the note on imports

    lines = Progress(verbose=verbose, kept=kept).lines

    def progress(event: RunEvent, /) -> None:
        for line in lines(event):
            err(line)

    return progress


def _print_error_details(error: PipelineError, *, quiet: bool, verbose: bool) -> None:
    """Say what the progress lines did not: all of it under -q, else what cleanup broke."""
    from adws.render import error_lines  # noqa: PLC0415 - see the note on imports
    from adws.render.errors import cleanup_lines  # noqa: PLC0415 - see the note on imports

    details = [f"  {line}" for line in error_lines(error, verbose=verbose)] if quiet else []
    for line in details + cleanup_lines(error, verbose=verbose):
        err(line)


@contextlib.contextmanager
def _children_recorded(
    journal: Journal | None, run_id: str, unrecorded: list[str]
) -> Iterator[None]:
    """Record in the journal, off the step's thread, which process groups the step has started.

    `adws resume` reads them to refuse resuming a run whose child still runs.
    A write that fails is kept in `unrecorded`, never raised into the step.
    """
    if journal is None:
        yield
        return
    from adws.journal.children import ChildrenRecorder  # noqa: PLC0415 - see the note on imports
    from adws.journal.store import BUSY_TIMEOUT_SECONDS  # noqa: PLC0415 - as above

    recorder = ChildrenRecorder(journal, run_id, unrecorded)
    io_ops.GROUPS.on_change = recorder
    try:
        yield
    finally:
        io_ops.GROUPS.on_change = None
        recorder.close(BUSY_TIMEOUT_SECONDS + 1.0)


@contextlib.contextmanager
def _run_marked(run_id: str) -> Iterator[None]:
    """Put `ADWS_RUN_ID` in the environment every process of the run inherits, then restore it.

    `adws resume --force` signals a recorded process group only when one of
    its processes still carries the run's id (see `adws.io_ops.marks`).
    """
    before = os.environ.get(io_ops.RUN_MARK)
    os.environ[io_ops.RUN_MARK] = run_id
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(io_ops.RUN_MARK, None)
        else:
            os.environ[io_ops.RUN_MARK] = before


@contextlib.contextmanager
def _adopted_stopped() -> Iterator[None]:
    """Kill the orphans adws adopted during the run (`env -i setsid daemon &`), however it ends."""
    try:
        yield
    finally:
        io_ops.kill_adopted(frozenset(io_ops.GROUPS.current()))


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
    rerun: Collection[str] = (),
    options: RunOptions | None = None,
    bases: Mapping[str, str] | None = None,
    decisions: Mapping[str, Decision] | None = None,
    kept: str | None = None,
    sessions: Mapping[tuple[str, str], AgentSession] | None = None,
    queued: bool = False,
) -> int:
    """Run `workflow` from `ctx` with journal, progress and signals; return the exit code.

    `--max-cost` and `--max-tokens` become the run's budget; `spent` is what
    a resumed run's earlier sessions cost, so that budget counts it.
    `rerun` names the earlier steps a resume runs again first; `options`
    are journaled with the run, for the next resume. Worktrees go beside
    the journal (`<its folder>/worktrees`); a resume passes their recorded
    `bases`, the `decisions` made at its approval steps and the agent
    `sessions` it continues. A run that ends waiting for approval runs
    `--notify CMD RUN_ID MESSAGE`. `kept` (a resume's kept steps and their
    cost) goes on the final line. `queued`: the run's row was made by `adws
    submit`, and its start updates it.
    """
    from adws.engine.executor import new_run_id, run_workflow  # noqa: PLC0415 - see the note on imports
    from adws.engine.parking import DEFAULT_MAX_WAIT  # noqa: PLC0415 - as above
    from adws.journal import JournalObserver  # noqa: PLC0415 - see the note on imports
    from adws.journal.exchanges import keeps_transcripts  # noqa: PLC0415 - see the note on imports
    from adws.journal.fingerprint import (  # noqa: PLC0415 - see the note on imports
        fingerprint,
        step_fingerprints,
    )
    from adws.summary import RunSummary  # noqa: PLC0415 - see the note on imports

    journal = open_journal(args)
    waits = max_wait(args)
    run_id = run_id or new_run_id()
    summary = RunSummary()

    mark = functools.partial(journal.mark, run_id, "interrupted") if journal else None
    interrupts = Interrupts(mark or (lambda: None))
    observers: list[RunObserver] = [interrupts.observe, summary]
    recorder = None
    if journal is not None:
        steps = steps if steps is not None else step_fingerprints(workflow)
        transcripts = keeps_transcripts(refused=bool(args.no_transcripts))
        recorder = JournalObserver(
            journal,
            fingerprint(workflow, steps),
            steps,
            options,
            transcripts=transcripts,
            queued=queued,
        )
        observers.insert(1, recorder)
    if not args.quiet:
        observers.append(printer(verbose=args.verbose, kept=kept))
    unrecorded: list[str] = []
    tracing = _tracing(args)
    if tracing is not None:
        observers.append(tracing.observe)
    io_ops.become_subreaper()  # a run's orphans come to adws, which stops them as it ends
    with (
        interrupts.installed(),
        _children_recorded(journal, run_id, unrecorded),
        _run_marked(run_id),
        _adopted_stopped(),
        tracing or contextlib.nullcontext(),
    ):
        run_workflow(
            workflow,
            ctx,
            observers=observers,
            run_id=run_id,
            resume_from=resume_from,
            max_agents=args.max_agents,
            reuse=reuse,
            budget=_budget(args),
            raised=None if options is None else options.raised_budget(),
            estimate=_estimates(journal, workflow),
            spent=spent,
            rerun=rerun,
            worktrees=str(journal_home(args) / "worktrees"),
            bases=bases,
            decisions=decisions,
            sessions=sessions,
            max_wait=DEFAULT_MAX_WAIT if waits is None else waits,
        )
    _report(args, summary, ctx, options)
    if summary.status == "waiting" and getattr(args, "notify", None):
        _notify(args.notify, run_id, summary.error)
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


def _notify(command: str, run_id: str, error: PipelineError | None) -> None:
    """Tell someone the run waits (`--notify`); a command that fails is only a warning."""
    from adws.workspaces.notify import notify  # noqa: PLC0415 - see the note on imports

    warning = notify(command, run_id, "" if error is None else error.message)
    if warning is not None:
        err(f"adws: warning: {warning}")


def with_agents(args: argparse.Namespace) -> Workflow:
    """Load `args.workflow` with the agents `--agent`, `--record` and `--replay` chose."""
    chosen = select_agent(load_workflow(args), args.agent, args.model, args.agent_output)
    return recorded(chosen, args)


def _tracing(args: argparse.Namespace) -> Tracing | None:
    """Export the run as OpenTelemetry spans when `--otel` or the OTLP endpoint asks for it."""
    endpoint = any(os.environ.get(name) for name in _OTLP_ENDPOINTS)
    if not (args.otel or endpoint):
        return None
    from adws._optional import import_optional  # noqa: PLC0415 - see the note on imports

    try:
        import_optional("opentelemetry")  # the installed SDK, never a workflow of that name
        from adws.journal.exchanges import keeps_transcripts  # noqa: PLC0415 - as below
        from adws.otel import Tracing  # noqa: PLC0415 - imports the OpenTelemetry SDK

        return Tracing.over_otlp(transcripts=keeps_transcripts(refused=bool(args.no_transcripts)))
    except ImportError as exc:
        msg = f"--otel needs the OpenTelemetry SDK: pip install 'adws[otel]' ({exc})"
        raise UsageError(msg) from exc


def _budget(args: argparse.Namespace) -> Budget | None:
    from adws.journal.options import RunOptions  # noqa: PLC0415 - see the note on imports

    asks = getattr(args, "on_budget", None)
    return RunOptions(max_cost=args.max_cost, max_tokens=args.max_tokens, on_budget=asks).budget()


def _estimates(journal: Journal | None, workflow: Workflow) -> Callable[[str], Usage | None] | None:
    """Estimate agent calls from the journal's history of this workflow (see reservations).

    The history is read on the first estimate a budget asks for: a run
    under no budget never reads it.
    """
    if journal is None:
        return None
    from adws.journal.estimates import call_estimates  # noqa: PLC0415 - see the note on imports

    read: list[dict[str, Usage]] = []

    def estimate(step: str) -> Usage | None:
        if not read:
            read.append(call_estimates(journal, workflow.name))
        return read[0].get(step)

    return estimate


def _report(
    args: argparse.Namespace,
    summary: RunSummary,
    ctx: WorkflowContext,
    options: RunOptions | None,
) -> None:
    """Print what a finished run left: why it failed, where its files went, its JSON."""
    quiet = bool(args.quiet)
    if quiet and summary.finished is not None and summary.status != "succeeded":
        printer()(summary.finished)  # -q hides progress, never why a run did not succeed
    if summary.error is not None:
        _print_error_details(summary.error, quiet=quiet, verbose=bool(args.verbose))
    if summary.finished is not None and not args.quiet:
        final = summary.finished.context.inputs
        for key in final:
            if key.endswith("_path") and key not in ctx.inputs:
                err(f"{key}: {final[key]}")
    if args.json:
        payload = summary.to_dict()
        payload["options"] = {} if options is None else options.to_dict()
        out_json(payload)
