"""`adws batch`: one run per line of a JSONL file, on a local pool of workers or Dask."""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final, TypeAlias

from adws import io_ops
from adws._exceptions import RefusedError
from adws._optional import import_optional
from adws.agents.offline import OFFLINE
from adws.agents.swap import AgentChoiceError, select_agent
from adws.batch import BatchInputError, iter_lines, run_batch
from adws.batch.coordinator import Resuming
from adws.batch.tasks import Batch
from adws.cli import EXIT_CODES
from adws.cli._args import UsageError
from adws.cli._options import (
    add_agent_options,
    add_going_on,
    add_journal,
    add_journal_wait,
    add_transcripts,
    add_workflows,
    add_worktrees,
    given_options,
    opened,
    runs_of,
)
from adws.cli._output import err, out, out_json
from adws.cli._values import money, positive
from adws.cli.cancel import said
from adws.cli.workflows import load_workflow
from adws.discovery import workflows_dir
from adws.journal.store.batches import batch_runs, batch_status, find_batch, finish_batch
from adws.render.words import ended
from adws.runs import Refused
from adws.runs._settings import journal_wait
from adws.runs.batches import hold, new_batch_id, queue_runs, resume_batch
from adws.runs.interrupts import EXIT_BY_SIGNAL

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterator

    from adws.batch import BatchReport
    from adws.batch.pool import Pool
    from adws.batch.report import Progress
    from adws.engine.step import Workflow
    from adws.journal import Journal
    from adws.journal.records.options import RunOptions
    from adws.runs.batches import BatchRun

__all__ = ["DEFAULT_CONCURRENCY", "add_batch", "cmd_batch"]

DEFAULT_CONCURRENCY: Final = 8
"""Runs at a time when `--concurrency` is not given, whatever the CPU count.

A batch's runs spend their time waiting on agents (other processes, or a
model's API), not on this machine's CPU, so more runs than cores overlap
well; eight keeps the workers' memory modest (about 40 MB each) and stays
under the concurrent-session limits agent APIs commonly set.
"""


def _add_dask(parser: argparse.ArgumentParser) -> None:
    """Add `--dask ADDRESS`: where the batch's runs run."""
    parser.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="run on a Dask cluster: a scheduler address (tls://, with credentials in Dask's "
        "configuration), or local:N for a local cluster of N worker processes that only this "
        "batch can use (TLS with credentials made for it, no dashboard; needs the extra: "
        "pip install 'adws[dask]')",
    )


def add_batch(parser: argparse.ArgumentParser) -> None:
    """Declare `adws batch WORKFLOW INPUTS.jsonl`, `--resume BATCH` and `--cancel BATCH`."""
    parser.description = (
        "Start one run of WORKFLOW per line of INPUTS.jsonl (a JSON object of "
        "inputs per line), N at a time; every event goes to one journal. The agent and budget "
        "options apply to each run and are recorded with it (`adws resume RUN` and `batch "
        "--resume` use them again). --cancel BATCH cancels every run of the batch that has not "
        "ended, as adws cancel does each. Exit codes: 0 all succeeded, 1 any failed (or not "
        "started, or not recorded, or cancelled), 2 usage (or the batch or a run is held by "
        "another process), 3 any blocked (or waiting for approval) and none failed, 75 any "
        "parked on an agent's limit and none failed or blocked, 130 interrupted."
    )
    add_workflows(parser)
    add_journal(parser)
    parser.add_argument("workflow", nargs="?", help="workflow name")
    parser.add_argument(
        "inputs_file", nargs="?", metavar="INPUTS.jsonl", help="one JSON object per line"
    )
    parser.add_argument(
        "--concurrency",
        type=positive,
        metavar="N",
        help="runs at a time (default: 8, whatever the CPU count: runs mostly wait on agents)",
    )
    add_agent_options(parser)
    parser.add_argument(
        "--batch-max-cost",
        type=money,
        metavar="USD",
        help="cap the whole batch's spend: past it no new run starts and runs in flight fail "
        "BudgetExceeded at their next agent call (recorded; --resume keeps it unless given)",
    )
    parser.add_argument(
        "--resume",
        metavar="BATCH",
        help="resume every run of this batch that did not succeed; start those never started",
    )
    parser.add_argument(
        "--cancel",
        metavar="BATCH",
        help="cancel every run of this batch that has not ended (queued ones at once, running "
        "ones through the process running them), with --reason TEXT",
    )
    parser.add_argument("--reason", default="", metavar="TEXT", help="with --cancel: why")
    parser.add_argument(
        "--rerun-changed",
        action="store_true",
        help="with --resume: run each run again from its first finished step that changed "
        "(--force, --keep-changed and --accept-drift go with --resume too)",
    )
    add_going_on(parser, batch=True)
    _add_dask(parser)
    add_transcripts(parser)
    add_journal_wait(parser)
    add_worktrees(parser)
    parser.add_argument("--json", action="store_true", help="print the batch as JSON on stdout")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress line on stderr")
    parser.set_defaults(record=None, replay=None)


def _summary(report: BatchReport) -> str:

    counts = report.counts()
    lines = [f"batch {report.batch_id} · {report.workflow} · {report.status}"]
    lines += [f"  {status:<12} {count}" for status, count in sorted(counts.items())]
    trouble = [run for run in report.runs if run.status != "succeeded"]
    if report.over_budget is not None:
        lines.append(
            f"the batch spent its ${report.over_budget:.4f} budget (--batch-max-cost): no new "
            "run started past it"
        )
    if trouble:
        lines.append("runs that did not succeed:")
        for run in trouble:
            lines.append(f"  line {run.line}  run {run.run_id}  {ended(run.status, run.error)}")
        more = " --batch-max-cost USD" if report.over_budget is not None else ""
        lines.append(f"resume them with: adws batch --resume {report.batch_id}{more}")
    return "\n".join(lines)


def _exit_code(report: BatchReport, signum: int) -> int:
    if report.status == "interrupted":
        return EXIT_BY_SIGNAL.get(signum, EXIT_CODES["interrupted"])
    return EXIT_CODES.get(report.status, EXIT_CODES["failed"])


def agent_checked(workflow: Workflow, options: RunOptions) -> None:
    """Refuse agent options no worker could use, before anything runs (exit 2)."""
    try:
        select_agent(workflow, options.agent, options.model, options.agent_output)
    except AgentChoiceError as exc:
        raise UsageError(str(exc)) from exc


_Started: TypeAlias = "tuple[Journal, Workflow, str, list[BatchRun], float | None, str]"
"""A batch ready to run: its journal, workflow, id, runs, spending cap and workflows folder."""


def _say_parked(journal: Journal, batch_id: str) -> None:
    """Name the batch's parked runs whose time has not come: they stay parked."""
    now = io_ops.wall_clock()
    waiting = [run for run in journal.runs(batch=batch_id, status="parked") if not run.due(now)]
    if waiting:
        first = min(run.wake_at or now for run in waiting)  # not due: each has a wake_at
        due = datetime.fromtimestamp(first, tz=UTC).isoformat(timespec="seconds")
        err(
            f"left parked, not due yet: {len(waiting)} run(s) (the first due {due}); "
            "adws worker, or adws batch --resume then, continues them"
        )


def _resumed(args: argparse.Namespace, connect: Callable[[str], None]) -> _Started:
    journal = opened(runs_of(args, create=False))
    found = find_batch(journal, args.resume)
    if isinstance(found, str):
        raise UsageError(found)
    batch_id, name, _, recorded_cap = found
    given = given_options(args, resume=True)
    first = journal.runs(batch=batch_id, limit=1)
    recorded = first[0].options if first else given
    options, changed = recorded.merged(given)
    folder = str(workflows_dir(options.workflows))  # the recorded one, unless --workflows
    workflow = load_workflow(name, folder)
    agent_checked(workflow, options)
    connect(batch_id)  # before anything is recorded: a cluster out of reach changes nothing
    # The claim is the check: atomic, so of two resumes started at once one runs the batch.
    ended = batch_status(journal, batch_id)
    refused = hold(journal, batch_id, force=args.force, max_cost=args.batch_max_cost)
    if refused is not None:
        raise UsageError(refused)
    runs = resume_batch(
        journal,
        workflow,
        batch_id,
        given,
        rerun_changed=args.rerun_changed,
        keep_changed=args.keep_changed,
        accept_drift=args.accept_drift,
        force=args.force,
    )
    if isinstance(runs, str):
        finish_batch(journal, batch_id, ended)  # let it go as it was
        msg = f"cannot resume batch {batch_id}: {runs}"
        raise UsageError(msg)
    if not args.quiet:
        described = options.describe(changed, hide=("workflows",))
        used = f" with {described}" if described else ""
        err(f"resuming batch {batch_id}: {len(runs)} run{'s' * (len(runs) != 1)}{used}")
        _say_parked(journal, batch_id)
    cap = args.batch_max_cost if args.batch_max_cost is not None else recorded_cap
    return journal, workflow, batch_id, runs, cap, folder


def _started(args: argparse.Namespace, connect: Callable[[str], None]) -> _Started:
    if args.workflow is None or args.inputs_file is None:
        msg = "batch needs WORKFLOW and INPUTS.jsonl (or --resume BATCH)"
        raise UsageError(msg)
    if args.rerun_changed or args.force or args.keep_changed or args.accept_drift:
        msg = "--rerun-changed, --force, --keep-changed and --accept-drift go with --resume BATCH"
        raise UsageError(msg)
    workflow = load_workflow(args.workflow, args.workflows)
    options = given_options(args)
    agent_checked(workflow, options)
    batch_id = new_batch_id()
    connect(batch_id)  # before anything is recorded: a cluster out of reach queues nothing
    path = Path(args.inputs_file)
    for _ in _checked_lines(path, workflow):  # every line checked before anything is recorded
        pass
    journal = opened(runs_of(args))
    # Read again, a line at a time, straight into the journal (memory stays flat); a line
    # that changed meanwhile is checked again and rolls the whole batch back.
    try:
        batch_id, runs = queue_runs(
            journal,
            workflow,
            _checked_lines(path, workflow),
            source=str(args.inputs_file),
            options=options,
            max_cost=args.batch_max_cost,
            batch_id=batch_id,
        )
    except RefusedError as exc:  # a --runs cap with no room for every run: none starts
        raise UsageError(str(exc)) from None
    return (
        journal,
        workflow,
        batch_id,
        runs,
        args.batch_max_cost,
        str(workflows_dir(args.workflows)),
    )


def _checked_lines(path: Path, workflow: Workflow) -> Iterator[tuple[int, dict[str, object]]]:
    """Yield an inputs file's runs a line at a time; raise `UsageError` at a bad line or none.

    Raised while the batch is queued, it rolls the whole batch back: nothing
    is recorded and nothing runs.
    """
    count = 0
    try:
        for number, inputs in iter_lines(path):
            missing = workflow.missing_inputs(inputs)
            if missing:
                needed = ", ".join(missing)
                msg = f"{path}, line {number}: workflow {workflow.name!r} needs input {needed}"
                raise UsageError(msg)
            count += 1
            yield number, inputs
    except BatchInputError as exc:
        raise UsageError(str(exc)) from exc
    if not count:
        msg = f"{path} holds no runs: write one JSON object of inputs per line"
        raise UsageError(msg)


def _slots(address: str | None) -> int | None:
    """Check that `local:N` names a number of worker processes."""
    if address is None or not address.startswith("local:"):
        return None
    workers = address.removeprefix("local:")
    if not workers.isdigit() or int(workers) < 1:
        msg = f"--dask {address}: write local:N with N a number of worker processes"
        raise UsageError(msg)
    return int(workers)


def _dask_ready(address: str | None) -> None:
    """Check that the extra is installed before anything is recorded."""
    if address is None:
        return

    try:
        for name in ("dask", "distributed", "cryptography"):  # cryptography: TLS for local:N
            import_optional(name)
        import adws.batch.dask  # noqa: F401, PLC0415 - the pool, on the extra just checked
    except ImportError as exc:
        msg = f"--dask needs Dask distributed and cryptography: pip install 'adws[dask]' ({exc})"
        raise UsageError(msg) from exc


class _Connection:
    """The Dask pool of a batch, made when the batch's id is known and before it is recorded."""

    def __init__(self, address: str | None, concurrency: int) -> None:
        self.address, self.concurrency = address, concurrency
        self.pool: Pool | None = None

    def __call__(self, batch_id: str) -> None:
        """Reach the cluster (start it, for local:N), or say why not: exit 2, nothing recorded."""
        if self.address is None:
            return
        from adws.batch.dask import DaskPool  # noqa: PLC0415 - the optional extra, checked above

        try:
            self.pool = DaskPool(self.address, batch_id, self.concurrency)
        except Exception as exc:  # whatever Dask raises for an address it cannot use, reported
            msg = (
                f"--dask {self.address}: cannot reach that scheduler ({type(exc).__name__}: {exc})"
            )
            raise UsageError(msg) from exc

    def close(self) -> None:
        """Let go of a pool no batch will use."""
        if self.pool is not None:
            self.pool.close()


def _cancelled(args: argparse.Namespace) -> int:
    """Cancel every run of a batch that has not ended, as `adws cancel` cancels each."""
    if args.workflow is not None or args.inputs_file is not None or args.resume is not None:
        msg = "--cancel BATCH cancels a batch's runs; leave out WORKFLOW, INPUTS.jsonl and --resume"
        raise UsageError(msg)
    runs = runs_of(args, create=False)
    journal = opened(runs)
    found = find_batch(journal, args.cancel)
    if isinstance(found, str):
        raise UsageError(found)
    worst = EXIT_CODES["succeeded"]
    listed = batch_runs(journal, found[0])
    # Queued runs first: a coordinator still running must not hand one out meanwhile.
    ordered = sorted(listed, key=lambda run: run[2] != "queued")
    for _, run_id, status, _ in ordered:
        if status in {"succeeded", "cancelled"}:
            continue
        outcome = runs.cancel(run_id, args.reason)
        if isinstance(outcome, Refused):
            err(f"adws: run {run_id} was not cancelled: {outcome}")
            worst = max(worst, outcome.code)
        else:
            out(said(outcome))
    return worst


def cmd_batch(args: argparse.Namespace) -> int:
    """Start one run per input line (or resume a batch), and report how they all ended."""
    if args.cancel is not None:
        return _cancelled(args)
    _slots(args.dask)  # checks local:N before anything starts
    io_ops.become_subreaper()  # what a lost worker's runs left comes here, stopped at the end
    _dask_ready(args.dask)
    if args.dask is not None and not args.dask.startswith(("local:", "tls://")):
        err(
            f"adws: warning: {args.dask} is not a tls:// address: whoever can reach that "
            "scheduler can run code on its workers, and read what the runs send"
        )
    concurrency = args.concurrency or DEFAULT_CONCURRENCY
    connection = _Connection(args.dask, concurrency)
    started = _resumed if args.resume is not None else _started
    try:
        journal, workflow, batch_id, runs, cap, folder = started(args, connection)
    except BaseException:
        connection.close()  # reached, but the batch did not start
        raise
    batch = Batch(
        batch_id,
        workflow.name,
        str(Path(folder).resolve()),
        (os.getpid(), socket.gethostname()),
        offline=OFFLINE.enabled,
        max_cost=cap,
        worktrees=args.worktrees or "",
    )

    def progress(state: Progress) -> None:
        if not args.quiet:
            err(state.line(batch_id))

    try:
        report, signum = run_batch(
            journal,
            workflow,
            batch,
            runs,
            concurrency=concurrency,
            on_progress=progress,
            pool=connection.pool,
            resuming=Resuming(
                rerun_changed=args.rerun_changed,
                keep_changed=args.keep_changed,
                accept_drift=args.accept_drift,
                force=args.force,
            ),
            journal_wait=journal_wait(args.journal_wait),
        )
    finally:
        io_ops.kill_adopted(frozenset(io_ops.GROUPS.current()))
    if args.json:
        out_json(report.to_dict())
    else:
        out(_summary(report))
    for reason in report.skipped:
        err(f"adws: {reason}")
    for warning in report.warnings:
        err(f"adws: warning: {warning}")
    if report.unrecorded:
        err(
            f"adws: the journal {journal.path} did not record this batch completely "
            f"({'; '.join(report.unrecorded)}); `adws batch --resume {batch_id}` may run "
            "finished steps again"
        )
    return _exit_code(report, signum)
