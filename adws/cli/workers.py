"""`adws workers`: the live `adws worker` processes, from their heartbeats in the journal."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws import io_ops
from adws.cli._args import require_journal
from adws.cli._output import out, out_json

if TYPE_CHECKING:
    import argparse

# Each command imports what it needs when it runs; see adws.cli.workflows.

__all__ = ["cmd_workers"]


def cmd_workers(args: argparse.Namespace) -> int:
    """List live workers: host, pid, since, the runs each holds (`--json`: a list)."""
    from adws.journal.queue import workers  # noqa: PLC0415 - see the note on imports
    from adws.render import table  # noqa: PLC0415 - as above

    journal = require_journal(args, readonly=True)
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
