"""`adws worker`: continue, on this host, every run that is due; and the run a worker hands over.

`adws worker` claims runs (see `adws.batch.worker`) and starts, for each,
`adws held-run RUN --kind K` (not listed in `adws --help`), which takes the
run over from its parent worker and runs it through the paths `adws run`
(a queued run) and `adws resume` (a run to continue) use.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Final

from adws.cli._args import (
    UsageError,
    apply_options,
    given_options,
    require_journal,
)
from adws.cli._execute import execute, with_agents
from adws.cli._output import err, out
from adws.cli.resume import continue_run, worst
from adws.cli.runs import find_run

if TYPE_CHECKING:
    import argparse

    from adws.journal import Journal

# Each command imports what it needs when it runs; see adws.cli.workflows.

__all__ = ["cmd_held_run", "cmd_worker"]

EXIT_OK: Final = 0


def _held(args: argparse.Namespace) -> tuple[list[str], dict[str, str]]:
    """Return the child's command line (its tail: run id and kind) and its environment.

    The journal goes in the environment, never on the command line, where
    `ps` would show a server's password.
    """
    from adws.cli._args import journal_path  # noqa: PLC0415 - see the note on imports
    from adws.journal.dialect import JournalUrl  # noqa: PLC0415 - as above

    path = journal_path(args)
    env = {**os.environ, "ADWS_JOURNAL": path.url if isinstance(path, JournalUrl) else str(path)}
    command = [sys.executable, "-m", "adws", "held-run", "-q"]
    if args.workflows is not None:
        command += ["--workflows", args.workflows]
    return command, env


def _ended(journal: Journal, run_id: str, code: int) -> None:
    """Say how a run the worker ran ended: its status as the journal has it, and its exit code."""
    from adws.render.words import ended  # noqa: PLC0415 - see the note on imports

    run = journal.find(run_id)
    said = run if isinstance(run, str) else f"{run.workflow}: {ended(run.status, run.error)}"
    out(f"{run_id} {said} (exit {code})")


def cmd_worker(args: argparse.Namespace) -> int:
    """Continue every due run of this host until stopped (`--once`: until none is due).

    Exit code: a signal's (130, 143) when stopped by one; with `--once`, the
    worst of the runs' (as `adws resume --due`), 0 when none was due.
    """
    from adws.batch.worker import Worker  # noqa: PLC0415 - see the note on imports

    journal = require_journal(args, create=True)
    command, env = _held(args)
    worker = Worker(
        journal,
        held=lambda run_id, kind: [*command, run_id, "--kind", kind],
        env=env,
        ended=lambda run_id, code: _ended(journal, run_id, code),
        say=err,
        poll=args.poll,
        concurrency=args.concurrency,
        once=args.once,
    )
    err(
        f"adws worker: process {worker.me.pid} on {worker.me.host} continues what is due in "
        f"{journal.path}" + ("" if args.once else f", every {args.poll:g}s until Ctrl-C")
    )
    stopped = worker.run()
    if stopped is not None:
        return stopped
    return worst(worker.codes) if worker.codes else EXIT_OK


def cmd_held_run(args: argparse.Namespace) -> int:
    """Run a run this process's parent `adws worker` claimed for it (and nothing else)."""
    import socket  # noqa: PLC0415 - see the note on imports

    journal = require_journal(args)
    record = find_run(journal, args.run)
    if (record.status, record.pid, record.host) != ("running", os.getppid(), socket.gethostname()):
        msg = (
            f"run {record.run_id} is not held for this process by an adws worker; "
            f"adws worker runs it (or adws resume {record.run_id})"
        )
        raise UsageError(msg)
    args.force = True  # its holder is the worker that started this process
    if args.kind != "queued":
        return continue_run(args, journal, record)
    options, _ = record.options.merged(given_options(args, resume=True))
    apply_options(args, options)
    args.workflow = record.workflow
    workflow = with_agents(args)
    return execute(
        args, workflow, record.inputs(), run_id=record.run_id, options=options, queued=True
    )
