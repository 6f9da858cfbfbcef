"""`adws worker`: continue, on this host, every run that is due; and the run a worker hands over.

`adws worker` claims runs through `adws.runs.Runs` (see `adws.batch.worker`)
and starts, for each, `adws held-run RUN --kind K` (not listed in `adws
--help`): a process of its own, which takes the run over from its worker
and runs it through `Runs.run_held`, the path every run takes. The worker
forks it from a server that imported adws and the modules a run needs
once (`PRELOAD`, see `adws.io_ops.forked`), started at its first run and
stopped as it stops: `held_in_fork` runs, in the child, the `adws
held-run` arguments the worker parsed once, the journal's location and
the worker's pid handed over as arguments (pickled, through the pipe the
forkserver gives the child). `adws held-run` stays a command, for `adws
mcp` and for a run started by hand (refused: no worker holds it for it).
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Final

from adws import io_ops
from adws.batch.worker import Worker
from adws.cli import dispatch
from adws.cli._options import (
    add_journal,
    add_journal_wait,
    add_running,
    add_workflows,
    add_worktrees,
    given_options,
    opened,
    runs_of,
)
from adws.cli._output import err, out
from adws.cli._parser import build_parser
from adws.cli._runs import ended
from adws.cli._values import positive, seconds
from adws.cli.resume import worst
from adws.cli.worktrees import roots_of, said
from adws.journal.store.journal import ENV_VAR
from adws.render.words import ended as ended_words
from adws.runs.worktrees import collect

if TYPE_CHECKING:
    from adws.journal import Journal

__all__ = ["PRELOAD", "add_held_run", "add_worker", "cmd_held_run", "cmd_worker", "held_in_fork"]

EXIT_OK: Final = 0
PRELOAD: Final = (
    "adws.cli.worker",
    "adws.cli.run",
    "adws.cli.resume",
    "adws.runs._service",
    "adws.runs._execute",
    "adws.runs._continue",
    "adws.engine",
    "adws.agents",
    "adws.journal.store.journal",
    "adws.journal.store.postgres",
    "psycopg",
)
"""What the forkserver imports once, so a held run imports none of it (one missing is skipped)."""


def add_worker(parser: argparse.ArgumentParser) -> None:
    """Declare `adws worker [--once] [--poll S] [--concurrency N]`."""
    parser.description = (
        "Continue, on this host, every run that is due: queued runs (adws submit; "
        "workers on several hosts split them), runs of this host approved, rejected or cancelled "
        "on another, parked runs whose time has come, and runs nobody runs any more: "
        "interrupted ones and those whose process died (each taken back once per worker). "
        "Each run runs in a process of its own (forked from a forkserver that imported adws "
        "once: a fresh fork for each run, in its own process group, with the worker's "
        "environment and folder), "
        "as adws run or adws resume would run it; a run that fails does not stop the worker, "
        "and a journal it cannot reach is tried again every poll interval. Ctrl-C or SIGTERM "
        "stops it: the runs it holds end interrupted (adws resume continues them), exit 130 or "
        "143. With --once, its exit code is the worst of its runs' (as adws resume --due), 0 "
        "when none was due."
    )
    add_workflows(parser)
    add_journal(parser)
    add_journal_wait(parser)
    add_worktrees(parser)
    parser.add_argument("--once", action="store_true", help="continue what is due now, then exit")
    parser.add_argument(
        "--poll",
        type=seconds,
        default=5.0,
        metavar="S",
        help="look for due runs and beat every S seconds (default 5); sooner at a parked "
        "run's wake time, and on a PostgreSQL journal as soon as a run is due (LISTEN/NOTIFY)",
    )
    parser.add_argument(
        "--concurrency", type=positive, default=1, metavar="N", help="runs at a time (default 1)"
    )
    parser.add_argument(
        "--gc",
        action="store_true",
        help="every hour, remove the worktrees of ended runs whose branch is merged, as "
        "`adws worktrees gc` does",
    )


def add_held_run(parser: argparse.ArgumentParser) -> None:
    """Declare `adws held-run RUN --kind K --journal-fd N`: what a worker starts for each run."""
    add_workflows(parser)
    add_journal(parser)
    add_running(parser)
    add_journal_wait(parser)
    add_worktrees(parser)
    parser.add_argument("run")
    parser.add_argument(
        "--kind", choices=["queued", "waiting", "parked", "interrupted", "running"], required=True
    )
    parser.add_argument("--journal-fd", type=int, metavar="N", help=argparse.SUPPRESS)
    parser.set_defaults(holder=None)  # a forked run's worker (`held_in_fork`); else its parent


def held_in_fork(args: argparse.Namespace, journal: str, holder: int) -> int:
    """Run `adws held-run` as `args` say, in this process, forked for it: the run `holder` claimed.

    `args` were parsed by the worker, once (`_held`): a fork parses nothing.
    `journal` is where the journal is (a URL may hold a password: it came
    pickled through the forkserver's pipe, and goes nowhere else).
    """
    args.journal, args.holder = journal, holder
    return dispatch(args)


def _held(args: argparse.Namespace) -> tuple[argparse.Namespace, dict[str, str]]:
    """Return the child's `adws held-run` arguments (its run id and kind to fill in) and its env.

    The journal is handed over as an argument (see `held_in_fork`), never
    in the environment, which every step of the run would inherit, nor on
    the command line, where `ps` shows it: so `ADWS_JOURNAL` is left out
    of the child's environment.
    """
    env = {key: value for key, value in os.environ.items() if key != ENV_VAR}
    command = ["held-run", "-q"]
    if args.workflows is not None:
        command += ["--workflows", args.workflows]
    if args.journal_wait is not None:
        command += ["--journal-wait", str(args.journal_wait)]
    if args.worktrees is not None:
        command += ["--worktrees", args.worktrees]
    return build_parser(only="held-run").parse_args([*command, "RUN", "--kind", "queued"]), env


def _one(held: argparse.Namespace, run_id: str, kind: str) -> argparse.Namespace:
    """Return the held-run arguments of `run_id`, due as `kind`."""
    return argparse.Namespace(**{**vars(held), "run": run_id, "kind": kind})


def _collected(journal: Journal, chosen: str | None) -> str:
    """Collect the merged worktrees of ended runs; say what went (git's failures pass over one)."""
    return "worktrees gc: " + said(collect(journal, roots=roots_of(chosen)), dry=False)


def _ended(journal: Journal, run_id: str, code: int) -> None:
    """Say how a run the worker ran ended: its status as the journal has it, and its exit code."""
    run = journal.find(run_id)
    said = run if isinstance(run, str) else f"{run.workflow}: {ended_words(run.status, run.error)}"
    out(f"{run_id} {said} (exit {code})")


def cmd_worker(args: argparse.Namespace) -> int:
    """Continue every due run of this host until stopped (`--once`: until none is due).

    Exit code: a signal's (130, 143) when stopped by one; with `--once`, the
    worst of the runs' (as `adws resume --due`), 0 when none was due.
    """
    runs = runs_of(args, create=True)
    journal = opened(runs)
    held, env = _held(args)
    forks = io_ops.ForkServer(PRELOAD, env, err)
    holder = os.getpid()
    worker = Worker(
        runs,
        held=lambda run_id, kind, where: forks.start(
            held_in_fork, _one(held, run_id, kind), where, holder
        ),
        ended=lambda run_id, code: _ended(journal, run_id, code),
        say=err,
        poll=args.poll,
        concurrency=args.concurrency,
        once=args.once,
        tidy=(lambda: _collected(journal, args.worktrees)) if args.gc else None,
    )
    err(
        f"adws worker: process {worker.me.pid} on {worker.me.host} continues what is due in "
        f"{journal.path}" + ("" if args.once else f", every {args.poll:g}s until Ctrl-C")
    )
    try:
        stopped = worker.run()
    finally:
        forks.stop()
    if stopped is not None:
        return stopped
    return worst(worker.codes) if worker.codes else EXIT_OK


def _handed(fd: int) -> str:
    """Read the journal's location from the descriptor the worker passed, and close it."""
    with os.fdopen(fd, "rb") as handed:
        return handed.read().decode("utf-8", "surrogateescape")


def cmd_held_run(args: argparse.Namespace) -> int:
    """Run a run this process's parent `adws worker` claimed for it (and nothing else)."""
    if args.journal_fd is not None:
        args.journal = _handed(args.journal_fd)
    runs = runs_of(args, create=False)
    outcome = runs.run_held(
        args.run, args.kind, holder=args.holder, options=given_options(args, resume=True)
    )
    return ended(args, outcome)
