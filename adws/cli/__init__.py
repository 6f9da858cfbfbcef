"""The `adws` command line: what is printed, and the exit code a command ends with.

One module per command or group (`workflows`, `run`, `runs`, `status`,
`report`, `resume`, `batch`, `cost`, `new`, `approvals`, `submit`, `worker`,
`workers`); `_parser` builds
the parser, `_args` turns arguments into values, `_execute` runs a
workflow (with `adws.runs.interrupts` handling signals), `_waits` ends an
approval's wait past its timeout, `_output` prints (through
`adws.io_ops.terminal`). `main` is the entry point and the single boundary
where a mistake on the command line becomes exit code 2 (and journal rows
a command needs but cannot read, exit code 1); only a second
signal during a run exits from elsewhere (`adws.runs.interrupts`, at once).

Exit codes: 0 succeeded, 1 failed, 2 usage or invalid workflow, 3 blocked
(or waiting for approval), 75 parked on an agent's usage limit (`EX_TEMPFAIL`),
130 Ctrl-C, 143 SIGTERM, 129 SIGHUP. After a run, every input the run
produced whose name ends in `_path` is printed, so a workflow can tell its
user where its artifacts went (`report_path: reports/...md`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Final

from adws.cli._args import UnreadableRowsError, UsageError
from adws.cli._output import err, err_unreadable
from adws.cli._parser import build_parser

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["EXIT_CODES", "main"]

EXIT_USAGE: Final = 2
EXIT_UNREADABLE: Final = 1
EXIT_CODES: Final = {
    "succeeded": 0,
    "failed": 1,
    "blocked": 3,
    "waiting": 3,
    "parked": 75,
    "interrupted": 130,
}
"""75 is `EX_TEMPFAIL` (sysexits.h): try again later, as a parked run asks."""

# Each command's module is imported when it runs, so `adws --help` imports only argparse.
_HANDLERS: Final = {
    "list": ("adws.cli.workflows", "cmd_list"),
    "show": ("adws.cli.workflows", "cmd_show"),
    "validate": ("adws.cli.workflows", "cmd_validate"),
    "check": ("adws.cli.workflows", "cmd_check"),
    "new": ("adws.cli.new", "cmd_new"),
    "run": ("adws.cli.run", "cmd_run"),
    "runs": ("adws.cli.runs", "cmd_runs"),
    "status": ("adws.cli.status", "cmd_status"),
    "report": ("adws.cli.report", "cmd_report"),
    "resume": ("adws.cli.resume", "cmd_resume"),
    "approvals": ("adws.cli.approvals", "cmd_approvals"),
    "approve": ("adws.cli.approvals", "cmd_approve"),
    "reject": ("adws.cli.approvals", "cmd_reject"),
    "batch": ("adws.cli.batch", "cmd_batch"),
    "eval": ("adws.cli.eval", "cmd_eval"),
    "cost": ("adws.cli.cost", "cmd_cost"),
    "submit": ("adws.cli.submit", "cmd_submit"),
    "worker": ("adws.cli.worker", "cmd_worker"),
    "held-run": ("adws.cli.worker", "cmd_held_run"),
    "workers": ("adws.cli.workers", "cmd_workers"),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse exits for --help and usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    module, name = _HANDLERS[args.command]
    handler = getattr(importlib.import_module(module), name)
    try:
        code: int = handler(args)
    except UsageError as exc:
        err(f"adws: error: {exc}")
        return EXIT_USAGE
    except UnreadableRowsError as exc:
        err_unreadable(exc.path, exc.problems)
        return EXIT_UNREADABLE
    return code
