"""`adws batch`: one run per line of a JSONL file, on a local pool of workers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from adws.cli import EXIT_CODES
from adws.cli._args import UsageError, require_journal
from adws.cli._interrupts import EXIT_BY_SIGNAL
from adws.cli._output import err, out, out_json
from adws.cli.workflows import load_workflow

if TYPE_CHECKING:
    import argparse

    from adws.batch import BatchReport
    from adws.batch.coordinator import Pool, Progress
    from adws.batch.tasks import Task
    from adws.journal import Journal
    from adws.step import Workflow

__all__ = ["cmd_batch"]


def _summary(report: BatchReport) -> str:
    counts = report.counts()
    lines = [f"batch {report.batch_id} · {report.workflow} · {report.status}"]
    lines += [f"  {status:<12} {count}" for status, count in sorted(counts.items())]
    trouble = [run for run in report.runs if run.status != "succeeded"]
    if trouble:
        lines.append("runs that did not succeed:")
        for run in trouble:
            why = f": {run.error}" if run.error is not None else ""
            lines.append(f"  line {run.line}  run {run.run_id}  {run.status}{why}")
        lines.append(f"resume them with: adws batch --resume {report.batch_id}")
    return "\n".join(lines)


def _exit_code(report: BatchReport, signum: int) -> int:
    if report.status == "interrupted":
        return EXIT_BY_SIGNAL.get(signum, EXIT_CODES["interrupted"])
    return EXIT_CODES.get(report.status, EXIT_CODES["failed"])


def _resumed(args: argparse.Namespace, folder: str) -> tuple[Journal, Workflow, str, list[Task]]:
    from adws.batch.coordinator import resume_task  # noqa: PLC0415 - see the note on imports
    from adws.journal.batches import batch_runs, find_batch  # noqa: PLC0415 - see the note on imports

    journal = require_journal(args)
    found = find_batch(journal, args.resume)
    if isinstance(found, str):
        raise UsageError(found)
    batch_id, args.workflow, _ = found
    workflow = load_workflow(args)
    tasks = [
        task
        for _, run_id, status, _ in batch_runs(journal, batch_id)
        if status != "succeeded"
        and (task := resume_task(journal, workflow, run_id, folder)) is not None
    ]
    return journal, workflow, batch_id, tasks


def _started(args: argparse.Namespace, folder: str) -> tuple[Journal, Workflow, str, list[Task]]:
    from adws.batch import BatchInputError, read_lines  # noqa: PLC0415 - see the note on imports
    from adws.batch.coordinator import plan_batch  # noqa: PLC0415 - as above

    if args.workflow is None or args.inputs_file is None:
        msg = "batch needs WORKFLOW and INPUTS.jsonl (or --resume BATCH)"
        raise UsageError(msg)
    workflow = load_workflow(args)
    try:
        lines = read_lines(Path(args.inputs_file))
    except BatchInputError as exc:
        raise UsageError(str(exc)) from exc
    for number, inputs in lines:
        missing = workflow.missing_inputs(inputs)
        if missing:
            needed = ", ".join(missing)
            where = f"{args.inputs_file}, line {number}"
            msg = f"{where}: workflow {workflow.name!r} needs input {needed}"
            raise UsageError(msg)
    journal = require_journal(args, create=True)
    batch_id, tasks = plan_batch(
        journal, workflow, lines, source=str(args.inputs_file), workflows_dir=folder
    )
    return journal, workflow, batch_id, tasks


def _slots(address: str | None) -> int | None:
    """Default to one run per worker of a `local:N` cluster (and check N is a number)."""
    if address is None or not address.startswith("local:"):
        return None
    workers = address.removeprefix("local:")
    if not workers.isdigit():
        msg = f"--dask {address}: write local:N with N a number of worker processes"
        raise UsageError(msg)
    return int(workers)


def _dask_pool(address: str, batch_id: str, concurrency: int) -> Pool:
    try:
        from adws.batch.dask import DaskPool  # noqa: PLC0415 - the optional extra

        return DaskPool(address, batch_id, concurrency)
    except ImportError as exc:
        msg = f"--dask needs Dask distributed: pip install 'adws[dask]' ({exc})"
        raise UsageError(msg) from exc


def cmd_batch(args: argparse.Namespace) -> int:
    """Start one run per input line (or resume a batch), and report how they all ended."""
    from adws.batch import run_batch  # noqa: PLC0415 - see the note on imports
    from adws.discovery import workflows_dir  # noqa: PLC0415 - as above

    folder = str(workflows_dir(args.workflows))
    started = _resumed if args.resume is not None else _started
    journal, workflow, batch_id, tasks = started(args, folder)

    def progress(state: Progress) -> None:
        if not args.quiet:
            err(state.line(batch_id))

    workers = _slots(args.dask)  # checks local:N before anything starts
    concurrency = args.concurrency or workers or os.cpu_count() or 1
    pool = None if args.dask is None else _dask_pool(args.dask, batch_id, concurrency)
    report, signum = run_batch(
        journal,
        workflow,
        tasks,
        batch_id=batch_id,
        concurrency=concurrency,
        on_progress=progress,
        pool=pool,
    )
    if args.json:
        out_json(report.to_dict())
    else:
        out(_summary(report))
    return _exit_code(report, signum)
