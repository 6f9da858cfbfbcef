"""The parsers of the commands a team's journal adds: submit, worker, workers (and held-run)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from adws.cli._values import positive, seconds

if TYPE_CHECKING:
    import argparse

__all__ = ["add_team"]


def add_team(commands: Any, parents: list[argparse.ArgumentParser]) -> None:  # noqa: ANN401 - argparse's private subparsers type
    """Add `submit`, `worker`, `workers`, and `held-run` (not listed: a worker's child)."""
    common, journaled, running = parents
    submit = commands.add_parser(
        "submit",
        parents=[common, journaled, running],
        help="queue a run for an adws worker to start, on whatever host it runs",
        description="Check the inputs as adws run does, then queue a run of WORKFLOW (status "
        "queued, no host) with its inputs and options (--agent, --max-cost, ...), and print its "
        "id. An adws worker on any host sharing the journal starts it.",
    )
    submit.add_argument("workflow", help="workflow name")
    submit.set_defaults(plan=False)
    worker = commands.add_parser(
        "worker",
        parents=[common, journaled],
        help="continue, on this host, every run that is due, until Ctrl-C",
        description="Continue, on this host, every run that is due: queued runs (adws submit; "
        "workers on several hosts split them), runs of this host approved or rejected on "
        "another, and parked runs whose time has come. Each run runs in a process of its own, "
        "as adws run or adws resume would run it; a run that fails does not stop the worker, "
        "and a journal it cannot reach is tried again every poll interval. Ctrl-C or SIGTERM "
        "stops it: the runs it holds end interrupted (adws resume continues them), exit 130 or "
        "143. With --once, its exit code is the worst of its runs' (as adws resume --due), 0 "
        "when none was due.",
    )
    worker.add_argument("--once", action="store_true", help="continue what is due now, then exit")
    worker.add_argument(
        "--poll",
        type=seconds,
        default=5.0,
        metavar="S",
        help="look for due runs and beat every S seconds (default 5)",
    )
    worker.add_argument(
        "--concurrency", type=positive, default=1, metavar="N", help="runs at a time (default 1)"
    )
    workers = commands.add_parser(
        "workers",
        parents=[journaled],
        help="list the live adws workers: host, pid, since, runs held",
        description="List the adws worker processes whose heartbeat the journal holds and is "
        "recent (within 3 of their poll intervals; on this host, their process exists).",
    )
    workers.add_argument("--json", action="store_true", help="print a JSON list")
    held = commands.add_parser("held-run", parents=[common, journaled, running])
    held.add_argument("run")
    held.add_argument("--kind", choices=["queued", "waiting", "parked"], required=True)
    held.set_defaults(
        from_step=None,
        rerun_changed=False,
        keep_changed=False,
        accept_drift=False,
        force=True,
        here=False,
        plan=False,
        now=False,
        due=False,
    )
