"""`adws workers`: the live `adws worker` processes, from their heartbeats in the journal."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws import io_ops
from adws.cli._options import add_journal, journal_of
from adws.cli._output import out, out_json
from adws.journal.store.queue import workers
from adws.render import table

if TYPE_CHECKING:
    import argparse


__all__ = ["add_workers", "cmd_workers"]


def add_workers(parser: argparse.ArgumentParser) -> None:
    """Declare `adws workers [--json]`."""
    parser.description = (
        "List the adws worker processes whose heartbeat the journal holds and is "
        "recent (within 3 of their poll intervals; on this host, their process exists)."
    )
    add_journal(parser)
    parser.add_argument("--json", action="store_true", help="print a JSON list")


def cmd_workers(args: argparse.Namespace) -> int:
    """List live workers: host, pid, since, the runs each holds (`--json`: a list)."""
    journal = journal_of(args, readonly=True)
    now = io_ops.wall_clock()
    live = [worker for worker in workers(journal) if worker.live(now)]
    if args.json:
        out_json([worker.to_dict() for worker in live])
        return 0
    if not live:
        out(f"no live adws worker in {journal.path}")
        return 0
    rows = [
        (worker.host, str(worker.pid), worker.since, " ".join(worker.runs) or "-")
        for worker in live
    ]
    out(table(("HOST", "PID", "SINCE", "RUNS"), rows))
    return 0
