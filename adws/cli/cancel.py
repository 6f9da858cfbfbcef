"""`adws cancel RUN [--reason TEXT]`: a person ends a run.

A queued, failed, blocked or interrupted run ends `cancelled` at once; a
waiting or parked one runs its cleanup steps here first, as a rejection
does (on another host, that host's `adws worker` runs them); a running one
is stopped by its holder, the process running it on whatever host, within
a few seconds of the request, its cleanup steps seeing a `Cancelled`
failure. A cancelled run is never resumed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from adws.cli._options import add_journal, add_workflows, refused, runs_of
from adws.cli._output import out, out_json
from adws.cli._runs import printer
from adws.runs import Refused

if TYPE_CHECKING:
    import argparse

    from adws.runs import CancelOutcome

__all__ = ["add_cancel", "cmd_cancel", "said"]

EXIT_OK: Final = 0


def add_cancel(parser: argparse.ArgumentParser) -> None:
    """Declare `adws cancel RUN [--reason TEXT] [--by NAME] [--json]`."""
    parser.description = (
        "End a run on a person's word, recording who (--by, else your login name), when and why "
        "(--reason). A queued, failed, blocked or interrupted run ends cancelled at once; a run "
        "waiting for approval or parked runs its cleanup steps first (here, or on its own host "
        "through adws worker), seeing a Cancelled failure, as a rejection does; a running run "
        "is stopped by the process running it, on whatever host, within a few seconds, as "
        "Ctrl-C stops it (its children too), then its cleanup steps run. The cancel is a "
        "compare-and-set claim: against an approval at the same moment exactly one acts (the "
        "other is told the run changed, exit 2). A cancelled run is never resumed. Exit codes: "
        "0 cancelled or asked of its holder, 2 refused (already succeeded, changed meanwhile)."
    )
    add_workflows(parser)
    add_journal(parser)
    parser.add_argument("run", help="run id (or a unique prefix)")
    parser.add_argument("--reason", default="", metavar="TEXT", help="why, kept with the run")
    parser.add_argument("--by", metavar="NAME", help="who cancels (default: your login name)")
    parser.add_argument("--json", action="store_true", help="print what was done as JSON")
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no progress of the cleanup steps on stderr"
    )


def said(outcome: CancelOutcome) -> str:
    """Say what a cancel did, in a line.

    >>> from adws.runs import CancelOutcome
    >>> said(CancelOutcome("r1", "requested", holder="process 42 on box"))
    'run r1: cancel asked of process 42 on box, which stops it within a few seconds'
    >>> said(CancelOutcome("r1", "cancelled"))
    'run r1 cancelled'
    """
    if outcome.state == "requested":
        return (
            f"run {outcome.run_id}: cancel asked of {outcome.holder}, "
            "which stops it within a few seconds"
        )
    return f"run {outcome.run_id} cancelled"


def cmd_cancel(args: argparse.Namespace) -> int:
    """Cancel a run; print what was done (its cleanup's progress, unless `-q`)."""
    observers = () if args.quiet else (printer(),)
    outcome = runs_of(args, create=False).cancel(
        args.run, args.reason, by=args.by, observers=observers
    )
    if isinstance(outcome, Refused):
        return refused(outcome)
    if args.json:
        out_json(
            {
                "run_id": outcome.run_id,
                "state": outcome.state,
                "holder": outcome.holder,
                "status": None if outcome.outcome is None else outcome.outcome.status,
            }
        )
    else:
        out(said(outcome))
    return EXIT_OK
